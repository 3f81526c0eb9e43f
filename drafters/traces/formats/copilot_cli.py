"""GitHub Copilot CLI sessions, both generations (they share nothing, so two parsers).

Old ``.json`` timeline: ``{sessionId, startTime, chatMessages[], timeline[]}``; timeline items are
``{id, timestamp, type: info|user|copilot|tool_call_completed|..., text}`` and tool items carry
``callId, name, arguments{}, result{type, log}``. Calls are linked to the model turn only by order:
every ``tool_call_completed`` after a ``copilot`` item belongs to that assistant message, and their
results form the tool message after it. A run of tool items with no ``copilot`` text before it is an
assistant message with calls only.

New ``.jsonl`` event stream: ``{type, data, id, timestamp, parentId}``. ``system.message`` (the
full system prompt, re-sent per interaction: kept when it changes), ``user.message`` (``content``,
or ``transformedContent`` = what the model saw, when present), ``assistant.message{content,
reasoningText?, reasoningOpaque?, toolRequests[{toolCallId, name, arguments{}}]}`` (one LLM call
each; parallel requests stay in one message), ``tool.execution_complete{toolCallId, success,
result{content, detailedContent}}`` (``content`` is what the model saw; ``detailedContent`` is the
UI copy and is ignored). ``session.model_change`` sets the model of later messages. Bookkeeping
pseudo-tools (``report_intent``, ``task_complete``) are real calls the model emitted and are kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO

from drafters.traces.formats._content import as_list, as_str, as_text, content_parts
from drafters.traces.formats._reading import iter_values, src
from drafters.traces.formats._records import guard_file
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import (
    Conversation,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

NAME = "copilot_cli"


def sniff(head: str, filename: str) -> bool:
    """Old timeline (``"timeline"`` + ``"chatMessages"``) or new event stream (``"type":"session.start"``
    / ``assistant.turn_start`` events)."""
    start = head.lstrip()[:4000]
    if start.startswith("{") and '"sessionId"' in start and ('"timeline"' in head or '"chatMessages"' in start):
        return True
    return '"type": "session.start"' in start or '"type":"session.start"' in start or (
        '"type":"assistant.turn_start"' in head.replace(" ", "")[:20000] and '"data"' in start
    )


def _timeline(doc: dict, filename: str, problems: ProblemSink) -> Conversation | None:
    source = src(NAME, filename, record="$.timeline")
    out: list[Message] = []
    current: Message | None = None
    results: list[ToolResultPart] = []

    def flush() -> None:
        nonlocal current, results
        if current is not None:
            out.append(current)
            if results:
                out.append(Message("tool", results))
        current, results = None, []

    for i, item in enumerate(as_list(doc.get("timeline"))):
        if not isinstance(item, dict):
            problems.error("bad_record", "timeline item is not an object", source, f"timeline[{i}]")
            continue
        kind = item.get("type")
        if kind == "user":
            flush()
            out.append(Message("user", content_parts(item.get("text"))))
        elif kind == "copilot":
            flush()
            current = Message("assistant", content_parts(item.get("text")))
        elif kind in ("tool_call_completed", "tool_call"):
            if not isinstance(item.get("name"), str):
                problems.error("bad_tool_call", "tool item without a name", source, f"timeline[{i}]")
                continue
            if current is None:
                current = Message("assistant", [])
            call_id = as_str(item.get("callId"))
            current.parts.append(ToolCallPart.from_raw(call_id, item["name"], item.get("arguments")))
            res = item.get("result") if isinstance(item.get("result"), dict) else {}
            results.append(ToolResultPart(call_id=call_id, content=as_text(res.get("log")),
                                          is_error=res.get("type") not in (None, "success"), name=item["name"]))
        # info and other UI items are not model context
    flush()
    if not out:
        return None
    return Conversation(id=str(doc.get("sessionId") or Path(filename).name), source=source, messages=out)


def _events(first: list, rest: Iterator, filename: str, problems: ProblemSink) -> Conversation | None:
    out: list[Message] = []
    model: str | None = None
    session_id: str | None = None
    first_line: int | None = None
    last_system: str | None = None
    pending_results: dict[str, ToolResultPart] = {}
    open_calls: list[str] = []
    call_names: dict[str, str] = {}

    def flush_results() -> None:
        if open_calls:
            parts = [pending_results.pop(cid) for cid in open_calls if cid in pending_results]
            if parts:
                out.append(Message("tool", parts))
            open_calls.clear()

    def events():
        yield from first
        yield from rest

    for line, _, ev in events():
        if first_line is None:
            first_line = line
        source = src(NAME, filename, line=line)
        if not isinstance(ev, dict) or not isinstance(ev.get("type"), str):
            problems.error("bad_record", "event is not an object with a type", source)
            continue
        kind, data = ev["type"], ev.get("data") if isinstance(ev.get("data"), dict) else {}
        if kind == "session.start":
            session_id = data.get("sessionId") or session_id
        elif kind == "session.model_change":
            model = data.get("newModel") or model
        elif kind == "system.message":
            text = as_text(data.get("content"))
            if text != last_system:
                flush_results()
                out.append(Message("system", [TextPart(text)]))
                last_system = text
        elif kind == "user.message":
            flush_results()
            seen = data.get("transformedContent") or data.get("content")
            # empty content + transformedContent: the CLI wrote this turn (autopilot nudge), not the human
            injected = not data.get("content") and bool(data.get("transformedContent"))
            out.append(Message("user", content_parts(seen), meta=injected))
        elif kind == "assistant.message":
            flush_results()
            parts: list = []
            if data.get("reasoningText") or data.get("reasoningOpaque"):
                parts.append(ReasoningPart(data.get("reasoningText") or "", signature=data.get("reasoningOpaque"),
                                           redacted=not data.get("reasoningText")))
            parts.extend(content_parts(data.get("content")))
            for k, req in enumerate(as_list(data.get("toolRequests"))):
                if not isinstance(req, dict) or not isinstance(req.get("name"), str):
                    problems.error("bad_tool_call", "tool request without a name", source, f"data.toolRequests[{k}]")
                    continue
                parts.append(ToolCallPart.from_raw(req.get("toolCallId"), req["name"], req.get("arguments")))
                if as_str(req.get("toolCallId")):
                    open_calls.append(req["toolCallId"])
                    call_names[req["toolCallId"]] = req["name"]
            out.append(Message("assistant", parts, model=data.get("model") or model))
        elif kind == "tool.execution_complete":
            cid = as_str(data.get("toolCallId"))
            res = data.get("result") if isinstance(data.get("result"), dict) else {}
            content = res.get("content") if "content" in res else data.get("error")
            part = ToolResultPart(call_id=cid, content=as_text(content), is_error=data.get("success") is False,
                                  name=call_names.get(cid))
            if cid in open_calls:
                pending_results[cid] = part
            else:
                problems.warning("tool_result_without_call", f"result for unknown call {cid!r}", source, "data.toolCallId")
    flush_results()
    if not out:
        return None
    return Conversation(id=str(session_id or Path(filename).name), source=src(NAME, filename, line=first_line),
                        messages=out)


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """Dispatch on the first value: an object with ``timeline`` (old) or an event (new stream)."""
    values = iter_values(stream, filename, NAME, problems)
    first = next(values, None)
    if first is None:
        return
    _, _, value = first
    if isinstance(value, dict) and ("timeline" in value or "chatMessages" in value):
        conv = _timeline(value, filename, problems)
    else:
        conv = _events([first], values, filename, problems)
    if conv is not None:
        yield conv


FORMAT = TraceFormat(
    name=NAME,
    description="GitHub Copilot CLI sessions: old .json timeline and new .jsonl event stream",
    sniff=sniff,
    parse=parse,
)
