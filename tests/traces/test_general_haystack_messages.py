"""Haystack's chat messages (issue 30; docs/traces.md, "Messages as tagged variants"): ``ChatMessage.to_dict``
writes each content part as a one-key object naming its kind, ``{"text": ...}``, ``{"tool_call": {tool_name,
arguments, id}}``, ``{"tool_call_result": {result, origin: the call, error}}``, ``{"reasoning": {reasoning_text}}``;
before Haystack 2.9 a message was the dataclass's private fields (``_role``, ``_content``, ``_name``, ``_meta``); a
chat generator's output is ``{"replies": [message]}``. The general path reads all three.

Fixture ``fixtures/shapes/haystack_messages.json``: hand-made after Haystack's ``ChatMessage.to_dict`` (its tests,
``test/dataclasses/test_chat_message.py``), not a copy of a real file.
"""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest
from drafters.traces.model import ReasoningPart, ToolResultPart

from .conftest import codes, totals
from .test_bad_input import SHAPES

MESSAGES = SHAPES / "haystack_messages.json"


def _check(result) -> None:
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert [m.role for m in first.context] == ["system", "user"]
    (call,) = first.completion.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_Fx1", "weather", {"city": "Berlin"})
    assert [p.text for p in first.completion.parts if isinstance(p, ReasoningPart)] == \
        ["The user wants Berlin's weather."]
    (res,) = [p for m in second.context for p in m.parts if isinstance(p, ToolResultPart)]
    assert res.call_id == "call_Fx1" and res.content == "{'weather': 'sunny', 'temperature': 21}" and not res.is_error
    assert second.completion.text == "It is sunny in Berlin, 21 degrees."


def test_keyed_content_parts_are_read():
    _check(ingest([MESSAGES], scrub=False))


def test_private_field_messages_are_read(tmp_path):
    old = [{f"_{k}": v for k, v in m.items()} for m in json.loads(MESSAGES.read_text())]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(old))
    _check(ingest([path], scrub=False))


def test_a_failed_tool_result_is_an_error_result(tmp_path):
    msgs = json.loads(MESSAGES.read_text())
    msgs[3]["content"][0]["tool_call_result"]["error"] = True
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(msgs))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    second = list(result.conversations[0].calls())[1]
    (res,) = [p for m in second.context for p in m.parts if isinstance(p, ToolResultPart)]
    assert res.is_error


def test_a_generator_run_with_its_replies_is_one_call(tmp_path):
    msgs = json.loads(MESSAGES.read_text())
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"messages": msgs[:2], "replies": [msgs[2]]}))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 1, 1)
    (call,) = result.conversations[0].calls()
    assert call.completion.tool_calls[0].name == "weather"
