"""ShareGPT conversations (``from``/``value``), with function calling and the typed-parts variant.

Shape (LLaMA-Factory's glaive-function-calling demo and most ShareGPT sets): a JSON array (or JSON
Lines) of ``{"conversations": [{"from": human|gpt|system|function_call|observation, "value": ...}],
"tools": "<JSON string of tool definitions>", "system"?: str}``. The typed-parts variant keeps the
same record but uses ``role``/``content`` keys and/or a list of typed parts as the value
(``[{"type": "text", "text": ...}, {"type": "image", ...}]``).

Mapping: ``human``/``user`` -> user; ``gpt``/``assistant`` -> assistant; ``function_call`` ->
assistant message with one tool call per ``{"name", "arguments"}`` object (the value is a JSON string
holding an object whose ``arguments`` is an object: object inside a string); ``observation`` ->
tool message. ShareGPT has no call ids, so results pair with calls by position (``call_id=None``,
``name`` copied from the call at the same position).

Roles in ShareGPT sets must alternate, so a model turn that produced text and then a call is
stored as a ``gpt`` turn followed by a ``function_call`` turn (hiyouga/LlamaFactory#9107); such
adjacent assistant turns are merged back into one assistant message (one LLM call).
Unknown role tags (hiyouga/LlamaFactory#2529) are reported as ``unknown_role`` and the record is
skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from drafters.traces.formats._content import content_parts, tool_defs, trained
from drafters.traces.formats._reading import iter_values, src
from drafters.traces.formats._spellings import calls_of
from drafters.traces.formats._records import RECORD_ERRORS
from drafters.traces.formats._text_calls import with_text_tool_calls
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import Conversation, Message, TextPart, ToolCallPart, ToolResultPart

NAME = "sharegpt"

ROLE_MAP = {
    "human": "user", "user": "user",
    "gpt": "assistant", "assistant": "assistant", "chatgpt": "assistant", "model": "assistant",
    "system": "system",
    "function_call": "call", "tool_call": "call", "tool_calls": "call",
    "observation": "tool", "function": "tool", "tool": "tool", "function_response": "tool",
}
_TURN_LIST_KEYS = ("conversations", "conversation", "messages")


def sniff(head: str, filename: str) -> bool:
    """A ShareGPT turn list: ``"conversations": [ {"from": ..., "value": ...}`` near the start.

    Anchored on the ``from``/``value`` pair (or typed-parts ``"from"`` + ``"role"``-less values) so
    OpenAI ``messages`` lists and ToolBench ``train_messages`` never match.
    """
    return bool(
        re.search(r'"conversations?"\s*:\s*\[\s*\{\s*"(from|value|role|content)"\s*:', head)
        or re.search(r'"messages"\s*:\s*\[\s*\{\s*"(from|value)"\s*:', head)
    )


class _BadRecord(Exception):
    def __init__(self, code: str, message: str, field: str):
        super().__init__(message)
        self.code, self.message, self.field = code, message, field


def _parse_calls(value: Any, field: str) -> list[ToolCallPart]:
    """Tool calls from a ``function_call`` value: a JSON string (or object/list) of {name, arguments}."""
    raw = value
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise _BadRecord("arguments_not_json", f"function_call value is not JSON: {exc}", field)
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise _BadRecord("bad_tool_call", f"function_call needs {{name, arguments}}, got {str(raw)[:80]!r}", field)
        args = item.get("arguments", item.get("parameters"))
        calls.append(ToolCallPart.from_raw(item.get("id"), item["name"], args))
    return calls


def record_to_conversation(record: Any, conv_id: str, source, problems: ProblemSink) -> Conversation | None:
    """One ShareGPT record -> Conversation, or None after reporting why it was skipped."""
    if not isinstance(record, dict):
        problems.error("bad_record", f"record is a {type(record).__name__}, not an object", source)
        return None
    turns = next((record[k] for k in _TURN_LIST_KEYS if isinstance(record.get(k), list)), None)
    if turns is None:
        problems.error("bad_record", "record has no 'conversations' list", source, "conversations")
        return None
    messages: list[Message] = []
    if isinstance(record.get("system"), str) and record["system"]:
        messages.append(Message("system", [TextPart(record["system"])]))
    pending: list[ToolCallPart] = []  # calls of the last assistant turn, to pair results by position
    result_index = 0
    try:
        for i, turn in enumerate(turns):
            field = f"conversations[{i}]"
            if not isinstance(turn, dict):
                raise _BadRecord("bad_record", "turn is not an object", field)
            tag = turn.get("from", turn.get("role"))
            value = turn.get("value", turn.get("content"))
            role = ROLE_MAP.get(str(tag).lower()) if tag is not None else None
            if role is None:
                raise _BadRecord("unknown_role", f"unknown role tag {tag!r}", field + ".from")
            if role == "call":
                calls = _parse_calls(value, field + ".value")
                if messages and messages[-1].role == "assistant" and not messages[-1].tool_calls:
                    messages[-1].parts.extend(calls)  # text turn + call turn = one model turn (#9107)
                else:
                    messages.append(Message("assistant", list(calls), supervised=trained(turn)))
                pending, result_index = calls, 0
            elif role == "tool":
                name = pending[result_index].name if result_index < len(pending) else None
                if result_index >= len(pending):
                    problems.warning("tool_result_without_call", "observation with no preceding call at this position",
                                     source, field)
                result_index += 1
                text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                part = ToolResultPart(call_id=None, content=text, name=name)
                if messages and messages[-1].role == "tool":
                    messages[-1].parts.append(part)
                else:
                    messages.append(Message("tool", [part]))
            else:
                parts = content_parts(value)
                # the role/content variant keeps an assistant turn's calls beside its text (OpenAI-style)
                calls = calls_of(turn["tool_calls"]) if role == "assistant" and turn.get("tool_calls") else []
                if role == "assistant" and messages and messages[-1].role == "assistant" and not messages[-1].tool_calls:
                    messages[-1].parts.extend(parts + calls)
                else:
                    messages.append(Message(role, parts + calls, supervised=role != "assistant" or trained(turn)))
                if calls:
                    pending, result_index = calls, 0
                elif role != "assistant":
                    pending, result_index = [], 0
    except _BadRecord as bad:
        problems.error(bad.code, bad.message, source, bad.field)
        return None
    tools = tool_defs(record.get("tools")) if record.get("tools") else []
    return Conversation(id=str(record.get("id") or conv_id), source=source, tools=tools, messages=messages)


def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """Stream the records of a ShareGPT JSON array / JSON Lines file (see module docstring)."""
    base = Path(filename).name
    for line, ordinal, record in iter_values(stream, filename, NAME, problems):
        source = src(NAME, filename, line=line, record=f"$[{ordinal}]")
        try:
            conv = record_to_conversation(record, f"{base}#{ordinal}", source, problems)
        except RECORD_ERRORS as exc:
            problems.error("bad_record", f"malformed record ({type(exc).__name__}: {exc})", source)
            continue
        if conv is not None:
            yield conv


FORMAT = TraceFormat(
    name=NAME,
    description="ShareGPT from/value turns (function_call/observation, typed parts); results pair by position",
    sniff=sniff,
    parse=with_text_tool_calls(parse),
)
