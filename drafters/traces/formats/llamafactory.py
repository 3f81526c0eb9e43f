"""LLaMA-Factory's typed-part data format (the "v1" data engine): every message's ``content`` is a list of
parts ``{"type": ..., "value": ...}``.

Record shape (JSON array or JSONL)::

    {"messages": [{"role": "system"|"user"|"assistant"|"tool",
                   "content": [{"type": "text"|"reasoning"|"tool_call"|"tool_calls"|"tools"|"image_url",
                                "value": "..."}],
                   "loss_weight": 0.0 | 1.0}],
     "tools": "<JSON list of tool definitions>"}

- ``tool_call`` values are JSON (usually a string) ``{"name", "arguments"}``; ``tool_calls`` a list of them.
  The format has no call ids (a part may carry ``tool_call_id``), so tool messages answer the calls of the
  assistant message before them by position (``call_id=None`` unless an id was given).
- ``tools`` as a part (in the system message) or as the record's ``tools`` field: tool definitions.
- ``loss_weight`` 0 on an assistant message: the message is context, not trained
  (``Message.supervised=False``).
- A part of any other type is kept as a placeholder of that type, which ingestion reports as lost
  content (``unknown_content``) rather than training on a conversation with holes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import IO, Any

from drafters.traces.formats import _reading
from drafters.traces.formats._content import as_text, tool_defs, trained
from drafters.traces.formats._records import RECORD_ERRORS
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import (
    Conversation,
    Message,
    ReasoningPart,
    Source,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
    UnsupportedPart,
)

NAME = "llamafactory"
_ROLES = {"system": "system", "user": "user", "human": "user", "assistant": "assistant", "gpt": "assistant",
          "tool": "tool", "observation": "tool", "function": "tool"}
_MEDIA = {"image_url": "image", "image": "image", "video": "video", "video_url": "video", "audio": "audio",
          "audio_url": "audio", "file": "file"}
# A typed part with a "value" (either key order), as it appears in a pretty-printed or one-line file.
_PART_RE = re.compile(r'"content"\s*:\s*\[\s*\{\s*("type"\s*:\s*"[a-z_]+"\s*,\s*"value"|"value"\s*:)')


class PartError(ValueError):
    """A part that cannot be read (a tool call that is not ``{"name", "arguments"}`` JSON)."""


def _is_record(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        return False
    for msg in value["messages"][:4]:
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list) and content:
            return all(isinstance(p, dict) and "type" in p and "value" in p for p in content)
    return False


def sniff(head: str, filename: str) -> bool:
    """A JSON/JSONL record whose messages' ``content`` is a list of ``{"type", "value"}`` parts."""
    first = _reading.first_json_line(head)
    if isinstance(first, list) and first:
        first = first[0]
    if first is not None:
        return _is_record(first)
    return '"messages"' in head[:4000] and bool(_PART_RE.search(head[:20000]))


def _tool_call(value: Any, call_id: Any) -> ToolCallPart:
    data = value
    if isinstance(value, str):
        try:
            data = json.loads(value)
        except ValueError as exc:
            raise PartError(f"tool call is not JSON: {exc.msg}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise PartError("tool call is not an object with a 'name'")
    return ToolCallPart.from_raw(call_id if isinstance(call_id, str) else None, data["name"], data.get("arguments"))


def _parts(role: str, content: Any, tools: list[ToolDef]) -> list:
    """One message's typed parts -> canonical parts (tool definitions found in parts go to ``tools``)."""
    if isinstance(content, str):
        content = [{"type": "text", "value": content}]
    if not isinstance(content, list):
        raise PartError(f"content is a {type(content).__name__}, not a list of parts")
    out: list = []
    for j, part in enumerate(content):
        if not isinstance(part, dict):
            raise PartError(f"part {j} is a {type(part).__name__}, not an object")
        kind, value = part.get("type"), part.get("value")
        if kind == "text":
            if role == "tool":
                out.append(ToolResultPart(call_id=part.get("tool_call_id"), content=as_text(value)))
            elif as_text(value):
                out.append(TextPart(as_text(value)))
        elif kind == "reasoning":
            out.append(ReasoningPart(as_text(value)))
        elif kind == "tool_call":
            out.append(_tool_call(value, part.get("tool_call_id")))
        elif kind == "tool_calls":
            calls = json.loads(value) if isinstance(value, str) else value
            for call in calls if isinstance(calls, list) else [calls]:
                out.append(_tool_call(call, call.get("id") if isinstance(call, dict) else None))
        elif kind == "tools":
            tools.extend(tool_defs(value))
        elif kind in _MEDIA:
            out.append(UnsupportedPart(_MEDIA[kind]))
        else:
            out.append(UnsupportedPart(str(kind)))
    return out


def _conversation(record: dict[str, Any], source: Source, conv_id: str) -> Conversation:
    tools = tool_defs(record.get("tools"))
    messages: list[Message] = []
    for i, msg in enumerate(record["messages"]):
        if not isinstance(msg, dict):
            raise PartError(f"messages[{i}] is a {type(msg).__name__}, not an object")
        role = _ROLES.get(msg.get("role"))  # type: ignore[arg-type]
        if role is None:
            raise PartError(f"messages[{i}] has unknown role {msg.get('role')!r}")
        try:
            parts = _parts(role, msg.get("content"), tools)
        except PartError as exc:
            raise PartError(f"messages[{i}]: {exc}") from exc
        supervised = role != "assistant" or trained(msg)
        if role == "tool" and messages and messages[-1].role == "tool":
            messages[-1].parts.extend(parts)  # consecutive results answer one assistant message
            continue
        messages.append(Message(role, parts, supervised=supervised))  # type: ignore[arg-type]
    return Conversation(id=conv_id, source=source, tools=tools, messages=messages)


def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """One Conversation per record; a record that cannot be read is reported (``bad_record``) and skipped."""
    stem = filename.rsplit("/", 1)[-1]
    for source, value in _reading.load_json_or_lines(stream, filename, problems, NAME):
        items = [(source, value)]
        if isinstance(value, list):  # a JSONL line holding an array of records
            items = [(Source(NAME, filename, line=source.line, record=f"$[{i}]"), v) for i, v in enumerate(value)]
        for src, record in items:
            if not _is_record(record):
                problems.error("not_an_object", "record is not a LLaMA-Factory record (a 'messages' list whose "
                               "content is a list of {type, value} parts)", src)
                continue
            loc = src.line if src.line is not None else src.record
            try:
                yield _conversation(record, src, f"{NAME}:{stem}:{loc}")
            except (PartError, *RECORD_ERRORS) as exc:
                problems.error("bad_record", f"record not understood: {exc}", src)


FORMAT = TraceFormat(
    name=NAME,
    description="LLaMA-Factory typed-part records (content = [{type: text|reasoning|tool_call|..., value}])",
    sniff=sniff,
    parse=parse,
)
