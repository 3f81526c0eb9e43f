"""A declared mapping's ``observation`` (docs/traces.md, the declared mapping): an agent step's tool results kept
beside its calls, read as the tool message after the step. ``mapping`` is the ``Mapping`` (not imported: mapping.py
calls this). Torch-free."""

from __future__ import annotations

from typing import Any

from drafters.traces.formats._content import as_text
from drafters.traces.formats._spellings import get
from drafters.traces.handoff import result_list
from drafters.traces.mapping_reading import ABSENT, Reading
from drafters.traces.model import Message, TextPart, ToolCallPart, ToolResultPart


def observation_messages(mapping: Any, raw: dict, message: Message, at: str, reading: Reading) -> list[Message]:
    """An agent step's tool result (the ``observation`` key beside its calls) as the tool message after it: a
    list holds one result per call, in order; anything else is the result of the step's (first) call. Objects
    are read with the declared ``tool_result`` keys (``content`` required, ``id`` naming the call)."""
    if not mapping.observation or message.role != "assistant":
        return []
    value = get(raw, mapping.observation, ABSENT)
    if value is ABSENT or value is None:
        return []
    calls = message.tool_calls
    listed = result_list(value)
    if listed is not None:  # ATIF: {"results": [{"source_call_id", "content"}, ...]}
        if not calls:  # no call to answer: the environment's reply (a parser's complaint) is the next input
            text = "\n".join(c for _, c in listed if c)
            return [Message("user", [TextPart(text)])] if text else []
        by_id = {c.id: c for c in calls if c.id}
        results = []
        for i, (rid, content) in enumerate(listed):
            call = by_id.get(rid) if rid is not None else calls[i] if i < len(calls) else None
            results.append(ToolResultPart(call.id if call else rid, content, name=call.name if call else None))
        return [Message("tool", results)]
    items = value if isinstance(value, list) else [value]
    if "content" in mapping.tool_result and items and all(isinstance(v, dict) for v in items):
        return [Message("tool", [_declared_result(mapping, item, calls, i, f"{at}.{mapping.observation}[{i}]", reading)
                                 for i, item in enumerate(items)])]
    values = value if isinstance(value, list) and len(value) == len(calls) > 1 else [value]
    results = [ToolResultPart(calls[i].id if i < len(calls) else None, v if isinstance(v, str) else as_text(v),
                              name=calls[i].name if i < len(calls) else None) for i, v in enumerate(values)]
    return [Message("tool", results)]


def _declared_result(mapping: Any, item: dict, calls: list[ToolCallPart], i: int, at: str, reading: Reading
                     ) -> ToolResultPart:
    """One observation object read with the declared ``tool_result`` keys: its call by ``id``, else the i-th."""
    content = reading.required(item, mapping.tool_result["content"], "tool_result.content", at)
    rid = as_text(get(item, mapping.tool_result["id"])) if "id" in mapping.tool_result else None
    call = next((c for c in calls if rid is not None and c.id == rid), calls[i] if rid is None and i < len(calls)
                else None)
    text = content if isinstance(content, str) else "" if content is None else as_text(content)
    return ToolResultPart(call.id if call else rid, text, name=call.name if call else None)
