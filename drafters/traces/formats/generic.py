"""The general path: message sequences found by their shape anywhere in a JSON / JSONL document.

Tried after every format module (it is last in the registry), for files no module recognizes. In each
record (a JSONL line, an array element, or the whole document) it looks for lists of objects that all
carry a role in one of the common spellings (``role`` / ``from`` / ``speaker`` / ``author`` / ``sender`` /
``type`` with values such as user, human, assistant, ai, gpt, model, bot, tool, function, ...; see
``_spellings.py``) and at least one assistant turn. Exactly one such list per record is the conversation;
its content (``content`` / ``value`` / ``text`` / ``message`` / ``parts`` / ``data.content``), tool calls
(``tool_calls``, ``function_call``, content blocks) and tool results are read in the common spellings.

What it does not guess:

- a record holding several message lists (``chosen``/``rejected``, per-step inputs, ...) is refused with
  ``ambiguous_shape`` naming the paths found: write a declared mapping (``drafters/traces/mapping.py``);
- a record without any is ``no_messages_found``;
- a message whose fields were not read (no known content key, nothing understood) makes its conversation
  an error ``content_not_mapped`` naming the keys, never a silently empty turn.

Every file read this way gets one ``generic_mapping`` warning saying where the messages were found, which
keys gave role and content, and which message keys were not read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from drafters.traces.formats import _reading
from drafters.traces.formats._content import tool_defs
from drafters.traces.formats._spellings import (
    CALL_KEYS,
    CONTENT_KEYS,
    RESULT_ID_KEYS,
    ROLE_KEYS,
    block_parts,
    calls_of,
    first,
    get,
    result_parts,
    role_of,
)
from drafters.traces.formats._text_calls import with_text_tool_calls
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import Conversation, Message, ReasoningPart, Source, ToolResultPart

NAME = "generic"
MAX_DEPTH = 6
_READ_KEYS = {"name", "id", "tool_results", "tool_call_ids"} | {k.split(".")[0] for k in CALL_KEYS + RESULT_ID_KEYS}


@dataclass
class _Found:
    """A message list in a record: its JSONPath, the list, and the keys that give role and content."""

    path: str
    messages: list
    role_key: str
    content_key: str | None


@dataclass
class _Tally:
    """What the file's records had in common, for the one ``generic_mapping`` warning."""

    paths: Counter = field(default_factory=Counter)
    role_keys: Counter = field(default_factory=Counter)
    content_keys: Counter = field(default_factory=Counter)
    roles: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    tools: Counter = field(default_factory=Counter)
    record_skipped: Counter = field(default_factory=Counter)


def _role_key(items: list) -> str | None:
    dicts = [m for m in items if isinstance(m, dict)]
    if len(dicts) < 2 or len(dicts) != len(items):
        return None
    for key in ROLE_KEYS:
        roles = [role_of(get(m, key)) for m in dicts]
        if all(roles) and "assistant" in roles:
            return key
    return None


def find_message_lists(value: Any, path: str = "$", depth: int = 0) -> list[_Found]:
    """Every message list in ``value`` (not looking inside a found list's messages)."""
    if depth > MAX_DEPTH:
        return []
    if isinstance(value, list):
        key = _role_key(value)
        if key is not None:
            content = next((k for k in CONTENT_KEYS if any(get(m, k) is not None for m in value)), None)
            return [_Found(path, value, key, content)]
        out: list[_Found] = []
        for i, item in enumerate(value[:1000]):
            out += find_message_lists(item, f"{path}[{i}]", depth + 1)
        return out
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            if isinstance(v, (list, dict)):
                out += find_message_lists(v, f"{path}.{k}", depth + 1)
        return out
    return []


def message_of(raw: dict, role: str, content_key: str | None) -> Message:
    """One raw message in the common spellings -> a canonical message."""
    parts = block_parts(get(raw, content_key)) if content_key else []
    if role == "tool":
        return Message("tool", result_parts(raw, parts))
    if role == "assistant":
        for key in ("reasoning_content", "reasoning", "thinking"):
            if isinstance(raw.get(key), str) and raw[key]:
                parts.insert(0, ReasoningPart(raw[key]))
                break
        parts += calls_of(first(raw, CALL_KEYS))
        model = raw.get("model") if isinstance(raw.get("model"), str) else None
        return Message("assistant", parts, model=model)
    if parts and all(isinstance(p, ToolResultPart) for p in parts):
        return Message("tool", parts)
    return Message(role, parts)  # type: ignore[arg-type]


def _unread(raw: dict, found: _Found) -> list[str]:
    used = {found.role_key.split(".")[0], (found.content_key or "").split(".")[0]} | _READ_KEYS
    return [k for k, v in raw.items() if k not in used and v not in (None, "", [], {})]


def conversation_of(found: _Found, source: Source, conv_id: str, tools: Any, problems: ProblemSink,
                    tally: _Tally | None = None) -> Conversation | None:
    """The conversation of a found message list; None (reported) when a message's content was not mapped."""
    messages: list[Message] = []
    for i, raw in enumerate(found.messages):
        role = role_of(get(raw, found.role_key))
        message = message_of(raw, role, found.content_key)  # type: ignore[arg-type]
        unread = _unread(raw, found)
        if tally is not None:
            tally.roles[role] += 1
            tally.skipped.update(unread)
        empty = not message.parts or (role == "tool" and not any(
            p.content for p in message.parts if isinstance(p, ToolResultPart)))
        if empty and unread:
            problems.error("content_not_mapped", f"message {i} has no content in a known spelling; its keys "
                           f"{', '.join(sorted(unread)[:8])} were not read", source, f"{found.path}[{i}]")
            return None
        if role == "tool" and messages and messages[-1].role == "tool":
            messages[-1].parts.extend(message.parts)
        else:
            messages.append(message)
    return Conversation(id=conv_id, source=source, tools=tool_defs(tools), messages=messages)


def sniff(head: str, filename: str) -> bool:
    """Any JSON or JSONL document whose first record holds a message list (see ``find_message_lists``)."""
    start = head.lstrip()[:1]
    if start not in ("{", "["):
        return False
    value = _reading.first_json_line(head)
    if value is None:
        try:
            import json

            value = json.loads(head)
        except ValueError:
            return ('"role"' in head or '"from"' in head) and ('"content"' in head or '"value"' in head)
    return bool(find_message_lists(value))


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and any(role_of(get(value, k)) for k in ROLE_KEYS) and not find_message_lists(value)


def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """One conversation per record whose single message list is found; see the module docstring."""
    stem = filename.rsplit("/", 1)[-1]
    tally = _Tally()
    records = _reading.load_json_or_lines(stream, filename, problems, NAME)
    for source, value in records:
        if source.record == "$[0]" and _is_message(value):  # the document is one bare message list
            source, value = Source(NAME, filename, record="$"), [value] + [v for _, v in records]
        yield from _record(source, value, stem, problems, tally)
    if tally.paths:
        problems.warning("generic_mapping", f"read by the general path: messages at {_top(tally.paths)}; "
                         f"role from {_top(tally.role_keys)}; content from {_top(tally.content_keys)}; "
                         f"roles {_top(tally.roles)}; tool definitions: {_top(tally.tools) or 'none'}; "
                         f"message keys not read: {_top(tally.skipped) or 'none'}; record keys not read: "
                         f"{_top(tally.record_skipped) or 'none'}",
                         Source(NAME, filename))


def _record(source: Source, value: Any, stem: str, problems: ProblemSink, tally: _Tally) -> Iterator[Conversation]:
    found = find_message_lists(value)
    if not found:
        problems.error("no_messages_found", "no list of messages with roles (and an assistant turn) in this "
                       "record", source)
        return
    if len(found) > 1:
        paths = ", ".join(f.path for f in found[:5]) + (" ..." if len(found) > 5 else "")
        problems.error("ambiguous_shape", f"{len(found)} message lists in one record ({paths}): which one is "
                       "the conversation is not guessed; declare it in a mapping file (--mapping)", source)
        return
    (f,) = found
    tally.paths[f.path] += 1
    tally.role_keys[f.role_key] += 1
    tally.content_keys[f.content_key or "(none)"] += 1
    tools = first(value, ("tools", "functions", "tool_definitions")) if isinstance(value, dict) else None
    for t in tools if isinstance(tools, list) else []:
        schema = first(t, ("parameters", "input_schema", "inputSchema", "function.parameters")) \
            if isinstance(t, dict) else None
        tally.tools["with parameters" if isinstance(schema, dict) else "without a parameter schema"] += 1
    if isinstance(value, dict):
        used = {f.path.split(".")[1].split("[")[0] if "." in f.path else "", "tools", "functions", "tool_definitions"}
        tally.record_skipped.update(k for k, v in value.items() if k not in used and v not in (None, "", [], {}))
    loc = source.line if source.line is not None else source.record
    conv = conversation_of(f, source, f"{NAME}:{stem}:{loc}", tools, problems, tally)
    if conv is not None:
        yield conv


def _top(counts: Counter) -> str:
    return ", ".join(f"{k} ({n})" for k, n in counts.most_common(4))


FORMAT = TraceFormat(
    name=NAME,
    description="General path: message lists found by their shape in any JSON/JSONL (common spellings)",
    sniff=sniff,
    parse=with_text_tool_calls(parse),
)
