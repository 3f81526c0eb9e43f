"""Tool definitions inferred from logged calls (drafters/traces/infer_tools.py), for formats that keep the
calls but not the definitions: names, keys in written order, JSON types, required = written every time."""

from __future__ import annotations

import pytest

from drafters.traces.infer_tools import infer_tools, json_type, with_inferred_tools
from drafters.traces.model import Conversation, Message, Source, TextPart, ToolCallPart, ToolDef


def conv(cid: str, *calls: tuple[str, object], tools: list[ToolDef] | None = None) -> Conversation:
    msgs = [Message("user", [TextPart("hi")])]
    for i, (name, args) in enumerate(calls):
        msgs.append(Message("assistant", [ToolCallPart.from_raw(f"c{i}", name, args)]))
        msgs.append(Message("tool", [TextPart("ok")]))
    return Conversation(cid, Source("openai_chat", "x.json"), tools or [], msgs)


def test_names_keys_types_and_required():
    convs = [conv("a", ("search", {"origin": "JFK", "date": "2024-05-20"}), ("get_user", '{"user_id": "u1"}')),
             conv("b", ("search", {"origin": "SFO", "date": "2024-05-21", "max_stops": 1}),
                  ("search", {"origin": "SEA", "date": "2024-05-22", "max_stops": None}),
                  ("broken", "{not json"))]
    tools = {t.name: t for t in infer_tools(convs)}
    assert list(tools) == ["search", "get_user", "broken"]
    s = tools["search"].parameters
    assert list(s["properties"]) == ["origin", "date", "max_stops"]
    assert s["properties"]["max_stops"] == {"type": ["integer", "null"]}
    assert s["required"] == ["origin", "date"]  # max_stops is missing from one of three calls
    assert tools["search"].description == "(inferred from 3 logged calls)"
    assert tools["broken"].parameters == {"type": "object", "properties": {}, "required": []}


def test_only_conversations_without_tools_get_them():
    own = [ToolDef("mine")]
    convs = [conv("a", ("search", {"q": "x"})), conv("b", ("search", {"q": "y"}), tools=own),
             Conversation("c", Source("openai_chat", "x.json"), [], [Message("user", [TextPart("no calls")])])]
    tools = infer_tools(convs)
    out = with_inferred_tools(convs, tools)
    assert out[0].tools == tools and out[1].tools == own and out[2].tools == []
    assert convs[0].tools == []  # copies: the input is left as it was


def test_json_types():
    assert [json_type(v) for v in (True, 1, 1.5, "s", [], {}, None)] == [
        "boolean", "integer", "number", "string", "array", "object", "null"]
    with pytest.raises(TypeError):
        json_type(object())
