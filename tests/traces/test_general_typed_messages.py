"""Messages typed as a tool call or a tool result by a message-level ``type`` key (issue 30; docs/traces.md,
"Messages typed as calls"): watsonx Orchestrate's evaluation messages keep the call and the result as the
message's content, a JSON text. They were read as assistant text, turns in a row joined into one call: ``ok`` with
the calls lost. Hand-made records in that layout.
"""

from __future__ import annotations

import json

from drafters.traces.formats._typed_messages import typed_message

from .conftest import ingest_json, totals


def _call(name: str, args: dict, call_id: str) -> dict:
    return {"role": "assistant", "type": "tool_call", "event": "run.step.delta",
            "content": json.dumps({"type": "tool_call", "name": name, "args": args, "id": call_id})}


def _result(name: str, text: str, call_id: str) -> dict:
    return {"role": "assistant", "type": "tool_response", "event": "run.step.delta",
            "content": json.dumps({"type": "tool_response", "content": text, "name": name, "tool_call_id": call_id})}


def _say(role: str, text: str) -> dict:
    return {"role": role, "type": "text", "event": "message.created" if role == "assistant" else None, "content": text}


MESSAGES = [_say("user", "My time off this year?"),
            _call("get_assignment_id", {"username": "nwaters"}, "c1"), _result("get_assignment_id", "157", "c1"),
            _call("get_timeoff", {"assignment_id": "157", "year": 2025}, "c2"), _result("get_timeoff", "[\"0105\"]", "c2"),
            _say("assistant", "You are off on January 5."),
            _say("user", "Thanks!"), _say("assistant", "You're welcome.")]


def test_a_message_list_of_typed_calls_and_results(tmp_path):
    result = ingest_json(tmp_path, MESSAGES, "messages.json")
    assert result.report.ok, [(e.code, e.message) for e in result.report.errors]
    assert totals(result.conversations) == (1, 4, 2)
    calls = list(result.conversations[0].calls())
    assert [c.completion.tool_calls[0].name if c.completion.tool_calls else c.completion.text for c in calls] == [
        "get_assignment_id", "get_timeoff", "You are off on January 5.", "You're welcome."]
    assert calls[1].completion.tool_calls[0].arguments == {"assignment_id": "157", "year": 2025}
    assert [m.role for m in calls[2].context] == ["user", "assistant", "tool", "assistant", "tool"]
    assert calls[2].context[-1].tool_results[0].content == "[\"0105\"]"


def test_typed_messages_inside_envelopes(tmp_path):
    # the evaluation's analysis file: each message under "message" beside the judge's "reason"
    result = ingest_json(tmp_path, [{"message": m, "reason": None} for m in MESSAGES], "messages.json")
    assert result.report.ok, [(e.code, e.message) for e in result.report.errors]
    assert totals(result.conversations) == (1, 4, 2)


def test_a_typed_message_whose_content_is_no_call_is_left_as_it_is():
    raw = {"role": "assistant", "type": "tool_call", "content": "calling the HR tool now"}
    assert typed_message(raw) is None
    assert typed_message({"role": "assistant", "type": "text", "content": "{\"name\": \"x\"}"}) is None
    assert typed_message({"type": "tool_call", "content": "{\"name\": \"x\"}"}) is None  # no role: no message
