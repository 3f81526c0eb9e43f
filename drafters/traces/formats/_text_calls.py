"""Tool calls written as text: ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` inside an assistant
message (the Hermes / Qwen / NousResearch function-calling convention, as ShareGPT-like and chat datasets
store a model's raw output; or its XML body, ``<tool_name>NAME</tool_name><param name="k">v</param>``, as
chat.md's agent writes it, each argument a string), or a reply that is nothing but one ``{"name": ..., "arguments": {...}}`` object
(Llama 3.1's JSON tool calls), become ``ToolCallPart``s, so they count and render as the calls they are.

Not a format (no ``FORMAT``). Applied by the readers of dataset-style formats (ShareGPT, OpenAI chat, the
general path, declared mappings) through ``with_text_tool_calls``; agent formats with structured calls
never see it. A block whose body is neither a JSON object nor a Python literal dict with a ``name`` stays
text and is an error (``tool_call_text_not_parsed``): the text is kept, but a call would be miscounted.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator
from typing import IO

from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Conversation, Message, TextPart, ToolCallPart

_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_XML_NAME = re.compile(r"^<tool_name>\s*([^<>]+?)\s*</tool_name>", re.DOTALL)
_XML_PARAM = re.compile(r"<param\s+name=\"([^\"]*)\"\s*>(.*?)</param>", re.DOTALL)
WHOLE_CALL_KEYS = {"name", "arguments", "parameters", "id", "type"}
MAX_WHOLE_CALL = 64 * 1024  # characters of a reply tried as one call object


def split_text_calls(text: str) -> tuple[list, int] | None:
    """``text`` as text and tool-call parts in order, plus the number of blocks that did not parse; None
    when it holds no ``<tool_call>`` block and is not one call object (``_whole_call``)."""
    if "<tool_call>" not in text:
        call = _whole_call(text)
        return None if call is None else ([call], 0)
    parts: list = []
    bad = pos = 0
    for m in _BLOCK.finditer(text):
        call = _call_of(m.group(1))
        if call is None:
            bad += 1
            continue
        before = text[pos:m.start()].strip()
        if before:
            parts.append(TextPart(before))
        parts.append(call)
        pos = m.end()
    if pos == 0:
        return None if not bad else ([TextPart(text)], bad)
    after = text[pos:].strip()
    if after:
        parts.append(TextPart(after))
    return parts, bad


def _call_of(body: str) -> ToolCallPart | None:
    """The call a block's body holds: JSON, or a Python literal dict (Glaive-derived datasets write
    ``{'name': ..., 'arguments': {...}}``; ``ast.literal_eval`` evaluates literals only, never code), or the XML
    body (``<tool_name>`` first, then ``<param name=...>`` elements, nothing else but closing tags)."""
    xml = _XML_NAME.match(body)
    if xml is None:
        return _call(_literal(body))
    elements = body[xml.end():]
    if re.sub(r"</\w+>", "", _XML_PARAM.sub("", elements)).strip():
        return None  # text beside the elements: not only a call
    params = _XML_PARAM.findall(elements)
    return ToolCallPart.from_raw(None, xml[1], {k: v for k, v in params if k or v})  # <param name=""></param>: none


def _call(value: object) -> ToolCallPart | None:
    """A call object (a dict with a non-empty ``name``) as a ``ToolCallPart``, else None."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        return None
    arguments = value.get("arguments", value.get("parameters"))
    return ToolCallPart.from_raw(value.get("id") if isinstance(value.get("id"), str) else None, value["name"],
                                 arguments)


def _literal(body: str) -> object:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        try:
            return ast.literal_eval(body)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return None


def _whole_call(text: str) -> ToolCallPart | None:
    """A reply that is nothing but one call object, ``{"name": ..., "arguments": {...}}`` (Llama 3.1's JSON tool
    calls, a prompt asking for "only a tool call"): a name, arguments (or parameters) that are an object, perhaps
    an id and a type, no other key; a reply that is other JSON stays text."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")) or len(body) > MAX_WHOLE_CALL:
        return None
    value = _literal(body)
    if not isinstance(value, dict) or not set(value) <= WHOLE_CALL_KEYS or not isinstance(
            value.get("arguments", value.get("parameters")), dict):
        return None
    return _call(value)


_MARKED = re.compile(r"(?:[^\s{]{1,24}\s+)(\{.*\})", re.DOTALL)  # a tool's own marker, then the object


def _marked_call(text: str) -> bool:
    """Whether a reply is nothing but a marker of some tool's own (``[[TOOLS]]``, ChainForge's rendering) and one
    call object, ``{"name", "input" | "arguments" | "parameters"}``: a call written in no convention this module
    reads, which read as text would be miscounted."""
    found = _MARKED.fullmatch(text.strip()) if len(text) <= MAX_WHOLE_CALL else None
    value = _literal(found.group(1)) if found else None
    return isinstance(value, dict) and isinstance(value.get("name"), str) and any(
        isinstance(value.get(k), dict) for k in ("input", "arguments", "parameters"))


def text_calls_in(message: Message) -> int:
    """Rewrite an assistant message's text parts holding ``<tool_call>`` blocks in place; returns how many
    blocks did not parse, or calls were written after a marker of a tool's own (0 for any other message)."""
    if message.role != "assistant" or message.tool_calls:
        return 0
    out: list = []
    bad = 0
    for part in message.parts:
        split = split_text_calls(part.text) if isinstance(part, TextPart) else None
        if split is None:
            bad += isinstance(part, TextPart) and _marked_call(part.text)
            out.append(part)
            continue
        out.extend(split[0])
        bad += split[1]
    message.parts = out
    return bad


def with_text_tool_calls(parse: Callable[[IO[str], str, ProblemSink], Iterator[Conversation]]):
    """Wrap a format's ``parse``: every yielded conversation's assistant messages (transcript and explicit
    calls) get their text tool calls read (``text_calls_in``); unparsed blocks are an error."""

    def wrapped(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
        for conv in parse(stream, filename, problems):
            seen: set[int] = set()
            bad = 0
            for m in [*conv.messages, *(x for c in conv.explicit_calls or [] for x in [*c.context, c.completion])]:
                if id(m) not in seen:
                    seen.add(id(m))
                    bad += text_calls_in(m)
            if bad:
                problems.error("tool_call_text_not_parsed", f"{bad} tool call(s) written in assistant text (a "
                               "<tool_call> block that is not a JSON object or Python dict with a name, or a call "
                               "object after a marker of a tool's own) are kept as text, not counted as calls",
                               conv.source)
            yield conv

    wrapped.__doc__ = parse.__doc__
    wrapped.__name__ = getattr(parse, "__name__", "parse")
    return wrapped
