"""AgentBench ``runs.jsonl`` (one task run per line).

Line: ``{index, error, info, output{index, status, result, history[{role: user|agent, content}]},
time{timestamp, str}}``. The assistant role is called ``agent``: it maps to ``assistant`` (a reader
that only knows OpenAI roles drops every model turn). Tool calls are plain text the model writes
(``GET url``, ``POST url`` + JSON body, ``FINISH([...])``, sometimes in a ```tool_code fence) and
results come back as ``user`` turns; they stay text (0 structured tool calls), exactly as the model
produced and saw them. Streams line by line; a bad line is reported with its line number.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO

from drafters.traces.formats._content import as_str, content_parts
from drafters.traces.formats._reading import iter_json_lines, src
from drafters.traces.formats._records import RECORD_ERRORS
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import Conversation, Message

NAME = "agentbench"
ROLE_MAP = {"user": "user", "agent": "assistant", "assistant": "assistant", "system": "system"}


def sniff(head: str, filename: str) -> bool:
    """JSON Lines whose first record has ``"output"`` with a ``"history"`` of ``"role": "agent"`` turns."""
    first = head.lstrip()[:200000].split("\n", 1)[0]
    return first.startswith("{") and '"output"' in first and '"history"' in first and (
        '"role": "agent"' in first or '"role":"agent"' in first)


def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """One conversation per line."""
    base = Path(filename).name
    for lineno, rec in iter_json_lines(stream, filename, problems, NAME):
        source = src(NAME, filename, line=lineno)
        out = rec.get("output") if isinstance(rec, dict) else None
        history = out.get("history") if isinstance(out, dict) else None
        if not isinstance(history, list):
            problems.error("bad_record", "line has no output.history list", source, "output.history")
            continue
        messages: list[Message] = []
        bad = False
        for i, m in enumerate(history):
            role = ROLE_MAP.get(as_str(m.get("role"))) if isinstance(m, dict) else None
            if role is None:
                problems.error("unknown_role", f"history entry with role {m.get('role') if isinstance(m, dict) else m!r}",
                               source, f"output.history[{i}].role")
                bad = True
                break
            try:
                messages.append(Message(role, content_parts(m.get("content"))))
            except RECORD_ERRORS as exc:
                problems.error("bad_record", f"malformed turn ({type(exc).__name__}: {exc})", source,
                               f"output.history[{i}]")
                bad = True
                break
        if bad:
            continue
        index = rec.get("index", out.get("index"))
        yield Conversation(id=f"{base}#{index if index is not None else lineno}", source=source, messages=messages)


FORMAT = TraceFormat(
    name=NAME,
    description="AgentBench runs.jsonl (role 'agent' = assistant; tool calls are plain text)",
    sniff=sniff,
    parse=parse,
)
