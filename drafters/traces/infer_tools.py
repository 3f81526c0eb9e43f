"""Tool definitions inferred from the calls a trace logged, for formats that record the calls an agent made
but not the definitions it was given (tau-bench's results files, Claude Code transcripts).

A serving engine is handed the request's tools; the renderer writes them into the prompt and the
tool-schema proposer (drafters/baselines/tool_schema.py) drafts from them. Where a trace kept none, the
logged calls still say what each tool looks like: its name, the argument keys in the order the agent
wrote them, and each value's JSON type. ``infer_tools`` builds one ``ToolDef`` per tool name from them:
properties in first-written order, typed by the JSON types seen ("string", "integer", "number",
"boolean", "array", "object", "null"; several types as a list), required = the keys present in every
call of that tool. Its description says it was inferred and from how many calls, so nobody mistakes it
for the agent's own definition. It is an approximation: keys no logged call wrote are missing, and
optional keys written every time look required.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from drafters.traces.model import Conversation, ToolCallPart, ToolDef

_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"),
               (dict, "object"), (type(None), "null"))  # bool before int: True is an int in Python


def json_type(value: Any) -> str:
    """The JSON Schema type name of a parsed JSON value. Raises TypeError for anything JSON cannot hold."""
    for py, name in _JSON_TYPES:
        if isinstance(value, py):
            return name
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def logged_calls(conversations: Iterable[Conversation]) -> Iterable[ToolCallPart]:
    """Every tool call the assistant messages of ``conversations`` hold, in order."""
    for conv in conversations:
        for m in conv.messages:
            if m.role == "assistant":
                yield from (p for p in m.parts if isinstance(p, ToolCallPart))


def infer_tools(conversations: Iterable[Conversation]) -> list[ToolDef]:
    """One ToolDef per tool name the logged calls use (first-used order), inferred as the module docstring
    says. Calls whose arguments are not a JSON object count toward the tool but add no property."""
    seen: dict[str, dict[str, Any]] = {}
    for call in logged_calls(conversations):
        t = seen.setdefault(call.name, {"calls": 0, "props": {}, "counts": {}})
        t["calls"] += 1
        for k, v in (call.arguments or {}).items():
            types, ty = t["props"].setdefault(k, []), json_type(v)
            if ty not in types:
                types.append(ty)
            t["counts"][k] = t["counts"].get(k, 0) + 1
    tools = []
    for name, t in seen.items():
        props = {k: {"type": types[0] if len(types) == 1 else types} for k, types in t["props"].items()}
        required = [k for k in props if t["counts"][k] == t["calls"]]
        tools.append(ToolDef(name, f"(inferred from {t['calls']} logged call{'s' * (t['calls'] != 1)})",
                             {"type": "object", "properties": props, "required": required}))
    return tools


def with_inferred_tools(conversations: Sequence[Conversation], tools: Sequence[ToolDef]) -> list[Conversation]:
    """``conversations`` with ``tools`` given to each that records none and calls a tool (copies; the
    others as they are). Explicit per-call records keep their own tools."""
    out = []
    for conv in conversations:
        calls_tools = next(iter(logged_calls([conv])), None) is not None
        out.append(replace(conv, tools=list(tools)) if not conv.tools and calls_tools
                   and conv.explicit_calls is None else conv)
    return out
