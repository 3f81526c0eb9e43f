"""Pydantic AI's message history (``ModelMessagesTypeAdapter.dump_json(result.all_messages())``) as role messages.

A run's history is a list of ``ModelRequest`` (``kind: "request"``) and ``ModelResponse`` (``kind: "response"``)
objects, each a list of ``parts`` typed by ``part_kind``. One request holds several sides at once (the system
prompt, the user's prompt, the tool returns the model asked for), so it becomes several messages:

- request: ``instructions`` (when they change) and ``system-prompt`` parts as system messages, ``user-prompt`` as
  a user message, ``tool-return`` as a tool message answering its ``tool_call_id``, ``retry-prompt`` as the tool's
  (with a tool name) or the user's message asking for a retry;
- response: one assistant message, ``text`` and ``thinking`` parts as its content, ``tool-call`` parts as its tool
  calls (``args`` a JSON string or an object).

A part of another kind is kept as a block of its own kind, which the readers refuse as content they do not read
(a built-in tool the provider ran, a file), never dropped. Not a format (no ``FORMAT``); standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from drafters.traces.model import Source

KINDS = ("request", "response")


def is_model_message(value: Any) -> bool:
    """A ``ModelRequest`` / ``ModelResponse`` dump: ``kind`` request or response, ``parts`` typed by ``part_kind``."""
    return isinstance(value, dict) and value.get("kind") in KINDS and isinstance(value.get("parts"), list) and all(
        isinstance(p, dict) and isinstance(p.get("part_kind"), str) for p in value["parts"])


def expand(items: Any) -> list[tuple[int, dict]] | None:
    """``(index of the item it came from, role message)`` for a list of Pydantic AI messages (see the module
    docstring), None for any other value (a list with one item of another kind is not guessed)."""
    if not isinstance(items, list) or not items or not all(is_model_message(i) for i in items):
        return None
    out: list[tuple[int, dict]] = []
    instructions = None
    for i, item in enumerate(items):
        if item["kind"] == "response":
            out.append((i, _response(item["parts"])))
            continue
        given = item.get("instructions")
        if isinstance(given, str) and given.strip() and given != instructions:
            out.append((i, {"role": "system", "content": given}))
            instructions = given
        out += [(i, _request_part(p)) for p in item["parts"]]
    return out


def expanded_records(records: Iterator[tuple[Source, Any]]) -> Iterator[tuple[Source, Any]]:
    """A file that is a Pydantic AI history (its items dumps of requests and responses) as the role messages they
    hold, each at its item's path (a request is several messages); any other file's records as they are."""
    first = next(records, None)
    if first is None:
        return
    if first[0].record != "$[0]" or not is_model_message(first[1]):
        yield first
        yield from records
        return
    items = [first, *records]
    messages = expand([v for _, v in items])
    if messages is None:  # an item of another kind: read as they are (and refused by shape)
        yield from items
        return
    yield from ((items[i][0], message) for i, message in messages)


def _request_part(part: dict) -> dict:
    kind = part["part_kind"]
    if kind == "system-prompt":
        return {"role": "system", "content": part.get("content")}
    if kind == "user-prompt":
        return {"role": "user", "content": part.get("content")}
    if kind == "tool-return" or kind == "retry-prompt" and part.get("tool_name"):
        content = part.get("content")
        return {"role": "tool", "tool_call_id": part.get("tool_call_id"), "name": part.get("tool_name"),
                "content": content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)}
    if kind == "retry-prompt":  # the output failed validation: the retry request is the user's side
        content = part.get("content")
        return {"role": "user", "content": content if isinstance(content, str) else json.dumps(content)}
    return {"role": "user", "content": [{**part, "type": kind}]}  # another kind: refused by the reader


def _response(parts: list[dict]) -> dict:
    content: list[dict] = []
    calls: list[dict] = []
    for p in parts:
        kind = p["part_kind"]
        if kind == "text":
            content.append({"type": "text", "text": p.get("content")})
        elif kind == "thinking":
            content.append({"type": "thinking", "thinking": p.get("content"), "signature": p.get("signature")})
        elif kind == "tool-call":
            args = p.get("args")
            calls.append({"id": p.get("tool_call_id"), "type": "function", "function": {
                "name": p.get("tool_name"), "arguments": args if isinstance(args, str) else json.dumps(args)}})
        else:
            content.append({**p, "type": kind})  # a built-in tool the provider ran, a file: refused by the reader
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return message
