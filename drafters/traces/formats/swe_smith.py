"""SWE-smith trajectory rows: SWE-agent histories collected into JSON Lines for fine-tuning.

One record per run: ``{messages, instance_id, resolved, model, traj_id, patch}``. ``messages`` is the
SWE-agent ``history`` (``{role, content, agent, message_type, thought?, action?, tool_calls?,
tool_call_ids?}``) either as a list (what SWE-smith's collector writes) or as a JSON string holding the
list (how the published trajectory datasets store it). Tool messages point back to their call through
``tool_call_ids``, a list. The history is read by ``swe_agent.history_to_messages``, so both carry the
same meaning; the record's ``model`` names the model of the assistant messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from drafters.traces.formats import _reading
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.formats.swe_agent import history_to_messages
from drafters.traces.model import Conversation

NAME = "swe_smith"
_SWE_KEYS = ('"message_type"', '"tool_call_ids"', '"agent"')


def _messages(record: Any) -> list | None:
    """The record's history list (decoded when stored as a JSON string), or None."""
    if not isinstance(record, dict):
        return None
    msgs = record.get("messages")
    if isinstance(msgs, str) and msgs.lstrip().startswith("["):
        try:
            msgs = json.loads(msgs)
        except ValueError:
            return None
    return msgs if isinstance(msgs, list) else None


def _is_record(record: Any) -> bool:
    msgs = _messages(record)
    if not msgs:
        return False
    head = [m for m in msgs[:4] if isinstance(m, dict)]
    return any("message_type" in m or "agent" in m for m in head) or (
        "traj_id" in record and "instance_id" in record)


def sniff(head: str, filename: str) -> bool:
    """A JSON/JSONL record with ``messages`` (list or JSON string) of SWE-agent history entries."""
    first = _reading.first_json_line(head)
    if first is not None:
        return _is_record(first)
    window = head[:20000]
    return '"messages"' in window and '"instance_id"' in window and any(k in window for k in _SWE_KEYS)


def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """One Conversation per record; records that are not SWE-smith rows are reported and skipped."""
    stem = filename.rsplit("/", 1)[-1]
    for source, record in _reading.load_json_or_lines(stream, filename, problems, NAME):
        msgs = _messages(record)
        if msgs is None:
            what = "messages is a string that is not a JSON list" if isinstance(record, dict) and isinstance(
                record.get("messages"), str) else "no 'messages' history"
            problems.error("not_an_object", f"record is not a SWE-smith trajectory row ({what})", source, "messages")
            continue
        model = record.get("model") if isinstance(record.get("model"), str) else None
        messages = history_to_messages(msgs, source, problems, model, key="messages")
        rid = record.get("traj_id") or record.get("instance_id")
        loc = source.line if source.line is not None else source.record
        yield Conversation(id=f"{NAME}:{stem}:{rid or loc}", source=source, messages=messages)


FORMAT = TraceFormat(
    name=NAME,
    description="SWE-smith trajectory rows (SWE-agent history as 'messages', list or JSON string)",
    sniff=sniff,
    parse=parse,
)
