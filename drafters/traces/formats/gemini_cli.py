"""Gemini CLI chat sessions: ``session-*.json`` and the append-only ``.jsonl`` form.

``.json``: ``{sessionId, projectHash, startTime, lastUpdated, messages[], kind?}``; each message is
``{id, timestamp, type: user|gemini|info|error|..., content (string or [{text}]), thoughts[{subject,
description}], tokens{...}, model, toolCalls[{id, name, args{}, result[{functionResponse{id, name,
response{output|error}}}], status, resultDisplay, ...}]}``.

``.jsonl``: a header line with the session fields, then message lines, interleaved with patch lines
``{"$set": {...}}`` that update the session object (``lastUpdated``, or a whole ``messages`` list),
not messages. A message line whose ``id`` was already seen replaces the earlier copy (the CLI writes
a message again when its tool calls complete), so the last copy wins and keeps its place.

Mapping: ``user`` -> user; ``gemini`` -> one assistant message (= one LLM call) with its
``thoughts`` as ReasoningPart (summaries ``"subject: description"``, not raw reasoning), its text,
and one ToolCallPart per tool call (``args`` is an object); the calls' results, nested inside the
calls (``result[].functionResponse.response``), become one tool message right after it, paired by
call id. ``resultDisplay`` is the UI copy and is ignored. ``info``/``error``/``warning`` messages are
CLI notices the model never saw and are dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from drafters.traces.formats._content import as_list, as_text, content_parts
from drafters.traces.formats._reading import iter_values, src
from drafters.traces.formats._records import guard_file
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import (
    Conversation,
    Message,
    ReasoningPart,
    ToolCallPart,
    ToolResultPart,
)

NAME = "gemini_cli"


def sniff(head: str, filename: str) -> bool:
    """Gemini CLI session: ``"sessionId"`` with ``"projectHash"`` at the top (both .json and .jsonl)."""
    start = head.lstrip()[:2000]
    return start.startswith("{") and '"sessionId"' in start and '"projectHash"' in start


def _tool_result(call: dict) -> ToolResultPart:
    """The function response the model got for ``call`` (its ``result`` list), as one ToolResultPart."""
    texts: list[str] = []
    is_error = call.get("status") in ("error", "cancelled")
    for item in as_list(call.get("result")):
        fr = item.get("functionResponse") if isinstance(item, dict) else None
        if isinstance(fr, dict):
            resp = fr.get("response")
            if isinstance(resp, dict) and set(resp) <= {"output"} and isinstance(resp.get("output"), str):
                texts.append(resp["output"])
            elif isinstance(resp, dict) and set(resp) <= {"error"} and isinstance(resp.get("error"), str):
                texts.append(resp["error"])
                is_error = True
            else:
                texts.append(as_text(resp))
        elif isinstance(item, dict) and "text" in item:
            texts.append(str(item["text"]))
        elif item is not None:
            texts.append(as_text(item))
    return ToolResultPart(call_id=call.get("id"), content="\n".join(texts), is_error=is_error,
                          name=call.get("name"))


def messages_to_conversation(session: dict, messages: list, filename: str, source,
                             problems: ProblemSink) -> Conversation | None:
    """Canonical conversation from the session's message list (see module docstring)."""
    out: list[Message] = []
    for i, m in enumerate(messages):
        field = f"messages[{i}]"
        if not isinstance(m, dict):
            problems.error("bad_record", "message is not an object", source, field)
            continue
        kind = m.get("type")
        if kind == "user":
            out.append(Message("user", content_parts(m.get("content"))))
        elif kind in ("gemini", "model", "assistant"):
            parts: list = []
            for t in as_list(m.get("thoughts")):
                if isinstance(t, dict):
                    subject, desc = t.get("subject") or "", t.get("description") or ""
                    parts.append(ReasoningPart(f"{subject}: {desc}" if subject and desc else subject or desc))
            parts.extend(content_parts(m.get("content")))
            calls = [c for c in as_list(m.get("toolCalls")) if isinstance(c, dict)]
            for c in calls:
                if not isinstance(c.get("name"), str):
                    problems.error("bad_tool_call", "tool call without a name", source, field + ".toolCalls")
                    continue
                parts.append(ToolCallPart.from_raw(c.get("id"), c["name"], c.get("args")))
            out.append(Message("assistant", parts, model=m.get("model")))
            results = [_tool_result(c) for c in calls if isinstance(c.get("name"), str)]
            if results:
                out.append(Message("tool", results))
        # info / error / warning: CLI notices, never sent to the model
    if not out:
        return None
    conv_id = str(session.get("sessionId") or Path(filename).name)
    return Conversation(id=conv_id, source=source, messages=out)


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """Parse a .json session document or stream a .jsonl session (header, messages, ``$set`` lines)."""
    session: dict[str, Any] = {}
    by_id: dict[str, dict] = {}  # insertion order = first appearance; later copies replace content
    anonymous: list[tuple[int, dict]] = []
    order: list[str] = []
    first_line = None
    for line, ordinal, value in iter_values(stream, filename, NAME, problems):
        if first_line is None:
            first_line = line
        if not isinstance(value, dict):
            problems.error("bad_record", f"line holds a {type(value).__name__}, not an object",
                           src(NAME, filename, line=line))
            continue
        if "$set" in value:
            patch = value["$set"]
            if isinstance(patch, dict):
                if isinstance(patch.get("messages"), list):  # a patch may replace the whole list
                    by_id.clear(), order.clear(), anonymous.clear()
                    _add_messages(patch["messages"], by_id, order, anonymous, line)
                session.update({k: v for k, v in patch.items() if k != "messages"})
            else:
                problems.error("bad_record", "$set value is not an object", src(NAME, filename, line=line), "$set")
            continue
        if "messages" in value and isinstance(value["messages"], list):  # whole .json session
            session.update({k: v for k, v in value.items() if k != "messages"})
            _add_messages(value["messages"], by_id, order, anonymous, line)
            continue
        if "type" in value and ("content" in value or "toolCalls" in value):
            _add_messages([value], by_id, order, anonymous, line)
            continue
        if "sessionId" in value:  # .jsonl header
            session.update(value)
            continue
        problems.warning("unknown_record", "line is neither a message, a $set patch nor a session header",
                         src(NAME, filename, line=line))
    msgs = [by_id[k] for k in order] if not anonymous else _merge_order(by_id, order, anonymous)
    conv = messages_to_conversation(session, msgs, filename, src(NAME, filename, line=first_line), problems)
    if conv is not None:
        yield conv


def _add_messages(messages: list, by_id: dict, order: list, anonymous: list, line: int) -> None:
    for m in messages:
        if isinstance(m, dict) and isinstance(m.get("id"), str):
            if m["id"] not in by_id:
                order.append(m["id"])
            by_id[m["id"]] = m
        else:
            anonymous.append((len(order), m))


def _merge_order(by_id: dict, order: list, anonymous: list) -> list:
    out: list = []
    pending = list(anonymous)
    for idx, key in enumerate(order):
        while pending and pending[0][0] <= idx:
            out.append(pending.pop(0)[1])
        out.append(by_id[key])
    out.extend(m for _, m in pending)
    return out


FORMAT = TraceFormat(
    name=NAME,
    description="Gemini CLI sessions (.json, and .jsonl with {\"$set\": ...} patch lines)",
    sniff=sniff,
    parse=parse,
)
