"""An in-house trace export that no format module reads (a support bot's ``turns`` of ``speaker`` /
``utterance`` / ``actions``), its declared mapping (the traces fixture ``inhouse_support.mapping.yaml``),
and what it holds, counted by walking the raw records here rather than by the ingest code under test."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

MAPPING = Path(__file__).parent / "traces" / "fixtures" / "generic" / "inhouse_support.mapping.yaml"
MAPPING_FORMAT = "mapping:support-bot"  # the fixture's `name`


def inhouse_export(n: int = 30, refused_every: int = 7) -> bytes:
    """``n`` support sessions as JSONL, each different; every ``refused_every``-th (from the fourth) has a
    ``supervisor`` turn, a speaker the mapping does not list."""
    lines = []
    for i in range(n):
        turns = [
            {"speaker": "customer", "utterance": f"Where is my order {5000 + i}?"},
            {"speaker": "agent", "utterance": "Let me look it up.",
             "actions": [{"action_id": f"a{i}", "tool": "order_status", "params": {"order": 5000 + i}}]},
            {"speaker": "tool", "action_id": f"a{i}", "output": f"order {5000 + i}: shipped on day {i % 28 + 1}"},
            {"speaker": "agent", "utterance": f"Order {5000 + i} shipped on day {i % 28 + 1}."},
        ]
        if i % refused_every == 3:
            turns.insert(1, {"speaker": "supervisor", "utterance": "(internal note)"})
        lines.append(json.dumps({"session": f"s-{i}", "turns": turns, "tool_specs": [{
            "name": "order_status", "description": "Status of an order",
            "parameters": {"type": "object", "properties": {"order": {"type": "integer"}}, "required": ["order"]}}]}))
    return ("\n".join(lines) + "\n").encode()


@dataclass(frozen=True)
class ExportCounts:
    """What an export holds under the mapping: sessions whose every speaker the mapping lists (and that
    have an assistant turn), and sessions with a speaker it does not list."""

    readable: int
    unknown_speaker: int


def count_sessions(data: bytes, mapping_path: Path = MAPPING) -> ExportCounts:
    """Walk the raw JSONL with the mapping's ``roles`` table, read with plain YAML."""
    roles = yaml.safe_load(mapping_path.read_text(encoding="utf-8"))["roles"]
    readable = unknown = 0
    for line in data.decode().splitlines():
        speakers = [t["speaker"] for t in json.loads(line)["turns"]]
        if any(s not in roles for s in speakers):
            unknown += 1
        elif any(roles[s] == "assistant" for s in speakers):
            readable += 1
    return ExportCounts(readable, unknown)
