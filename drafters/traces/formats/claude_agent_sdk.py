"""Claude Agent SDK message objects as a program logs them: the Python SDK's dataclasses (``SystemMessage``,
``UserMessage``, ``AssistantMessage``, ``ResultMessage``, ``StreamEvent``; content blocks ``TextBlock`` {text},
``ThinkingBlock`` {thinking, signature}, ``ToolUseBlock`` {id, name, input}, ``ToolResultBlock`` {tool_use_id,
content, is_error}) dumped with ``dataclasses.asdict`` / ``vars``, each message named by its class (under ``_type``,
``type``, ``message_type`` or ``class``), perhaps inside the logger's own envelope (``{timestamp, type:
"AssistantMessage", content: {...}}``, mcp-eval's ``detailed_log.json``). A JSON document (its message list found up
to four keys deep) or JSON Lines (one message or envelope per line).

Reading (the SDK's own semantics, docs.claude.com "Agent SDK reference: Python"):

- the SDK sends one ``AssistantMessage`` per content block of a reply: a run of them with no input between is one
  call; a ``UserMessage`` of tool results is the tool message after it, one with text the user's turn;
- the stream does not echo the prompt given to ``query()``: where no ``UserMessage`` holds text before the first
  reply, the prompt is the document's own prompt text (``prompt``, ``user_intent``, ``query``, ``task``, ...,
  at its top level); with none, the first call's context is unknown and the file is refused
  (``prompt_not_recorded``);
- ``SystemMessage`` (``init``: the session's tools and model) and ``ResultMessage`` (the run's summary, its
  ``result`` a copy of the last reply) are metadata; ``StreamEvent`` deltas repeat the messages;
- a message with a ``parent_tool_use_id`` belongs to a sub-agent's thread, which this reader does not rebuild:
  ``subagent_not_read`` (an error; the main thread is still read);
- a block neither named nor shaped as one of the four is kept as an unknown placeholder (``unknown_content``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from drafters.traces.formats._reading import iter_values, src
from drafters.traces.formats._records import guard_file
from drafters.traces.formats._spellings import block_part
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import (
    Conversation,
    Message,
    TextPart,
    ToolResultPart,
    UnsupportedPart,
)

NAME = "claude_agent_sdk"
MESSAGE_CLASSES = ("SystemMessage", "UserMessage", "AssistantMessage", "ResultMessage", "StreamEvent")
_CLASS_KEYS = ("_type", "type", "message_type", "class", "__class__")
_ENVELOPE_KEYS = ("content", "message", "data")
#: The document's own prompt text, where the stream does not echo it.
PROMPT_KEYS = ("prompt", "user_intent", "user_prompt", "query", "task", "instruction", "input", "question")


def sniff(head: str, filename: str) -> bool:
    """An ``AssistantMessage`` class name beside a name or field only this SDK has (AutoGen's messages share the
    message class names): ``ResultMessage``, a block class, ``parent_tool_use_id``, the ``init`` system message."""
    start = head[:20000].replace(" ", "")
    return '"AssistantMessage"' in start and any(f'"{c}"' in start for c in (
        "ResultMessage", "ToolUseBlock", "TextBlock", "ThinkingBlock", "parent_tool_use_id", 'subtype":"init'))


def message_of(value: Any) -> tuple[str, dict] | None:
    """(class name, the message's own fields) of an SDK message or a logger's envelope of one; None otherwise."""
    if not isinstance(value, dict):
        return None
    name = next((value[k] for k in _CLASS_KEYS if value.get(k) in MESSAGE_CLASSES), None)
    for key in _ENVELOPE_KEYS:
        inner = value.get(key)
        if isinstance(inner, dict) and (name is not None or any(inner.get(k) in MESSAGE_CLASSES for k in _CLASS_KEYS)):
            inner_name = next((inner[k] for k in _CLASS_KEYS if inner.get(k) in MESSAGE_CLASSES), name)
            if inner_name == name or name is None:
                return inner_name, inner
    return (name, value) if name is not None else None


def _message_list(doc: Any, depth: int = 0) -> list | None:
    """The first list (up to four keys deep) most of whose items are SDK messages."""
    if isinstance(doc, list):
        found = sum(message_of(v) is not None for v in doc)
        return doc if found and found * 2 >= len(doc) else None
    if isinstance(doc, dict) and depth < 4:
        for value in doc.values():
            got = _message_list(value, depth + 1)
            if got is not None:
                return got
    return None


#: The SDK's block classes and the Messages API type each is (a dump without the class: told by its fields).
_BLOCK_TYPES = {"TextBlock": "text", "ThinkingBlock": "thinking", "ToolUseBlock": "tool_use",
                "ToolResultBlock": "tool_result"}


def _block_type(block: dict) -> str | None:
    """The Messages API type of an SDK content block, by its class name or, dumped without one, by its fields."""
    kind = next((block[k] for k in _CLASS_KEYS if isinstance(block.get(k), str)), None)
    if kind is not None:
        return _BLOCK_TYPES.get(kind, kind)
    keys = set(block)
    return ("tool_use" if {"id", "name", "input"} <= keys else "tool_result" if "tool_use_id" in keys else
            "thinking" if "thinking" in keys else "text" if "text" in keys and keys <= {"text", "citations"} else None)


def _parts(content: Any) -> list:
    """A message's content as canonical parts (``_spellings.block_part`` reads each block once it is typed); a
    block of no known kind is an unknown placeholder."""
    if isinstance(content, str):
        return [TextPart(content)]
    out: list = []
    for block in content if isinstance(content, list) else [content]:
        kind = _block_type(block) if isinstance(block, dict) else None
        if kind is None:
            out.append(UnsupportedPart("+".join(sorted(block))[:60] if isinstance(block, dict) else type(block).__name__))
        else:
            part = block_part({**{k: v for k, v in block.items() if k not in _CLASS_KEYS}, "type": kind})
            out += [part] if part is not None else []
    return out


def _prompt(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return None
    return next((doc[k] for k in PROMPT_KEYS if isinstance(doc.get(k), str) and doc[k].strip()), None)


def _messages(items: list) -> tuple[list[Message], str | None, int]:
    """The canonical messages of the main thread, the session id, and the sub-agents' messages left out."""
    out: list[Message] = []
    session, nested = None, 0
    for item in items:
        got = message_of(item)
        if got is None:
            continue
        name, fields = got
        data = fields.get("data") if isinstance(fields.get("data"), dict) else fields
        session = session or data.get("session_id") or fields.get("session_id")
        if name not in ("UserMessage", "AssistantMessage"):
            continue  # SystemMessage, ResultMessage, StreamEvent: metadata or copies
        if fields.get("parent_tool_use_id"):
            nested += 1
            continue
        parts = _parts(fields.get("content"))
        if name == "AssistantMessage":
            if out and out[-1].role == "assistant":
                out[-1].parts.extend(parts)  # the SDK's one message per block of a reply
            else:
                out.append(Message("assistant", parts, model=fields.get("model")))
        elif parts and all(isinstance(p, ToolResultPart) for p in parts):
            out.append(Message("tool", parts))
        else:
            out.append(Message("user", parts))
    return out, session, nested


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """One conversation: the main thread of the SDK messages in the file (see the module docstring)."""
    values = [v for _, _, v in iter_values(stream, filename, NAME, problems)]
    doc = values[0] if len(values) == 1 and isinstance(values[0], dict) and message_of(values[0]) is None else None
    items = (_message_list(doc) or []) if doc is not None else values  # a document, or a message per value
    messages, session, nested = _messages(items)
    source = src(NAME, filename)
    if nested:
        problems.error("subagent_not_read", f"{nested} message(s) of sub-agents (parent_tool_use_id) are not read: "
                       "their threads are not rebuilt", source)
    first = next((i for i, m in enumerate(messages) if m.role == "assistant"), None)
    if first is None:
        problems.error("no_assistant_message", "no AssistantMessage in the file", source)
        return
    if not any(m.role == "user" for m in messages[:first]):
        prompt = _prompt(doc)
        if prompt is None:
            problems.error("prompt_not_recorded", "the SDK's stream does not echo the prompt given to query(), and "
                           f"the document holds none under {', '.join(PROMPT_KEYS)}: the first call's context is "
                           "unknown", source)
            return
        messages.insert(0, Message("user", [TextPart(prompt)]))
    yield Conversation(id=str(session or Path(filename).name), source=source, messages=messages)


FORMAT = TraceFormat(
    name=NAME,
    description="Claude Agent SDK message objects as logged (dataclass dumps named by class, in envelopes or not)",
    sniff=sniff,
    parse=parse,
)
