"""Replies cut by the output length limit (``drafters/traces/cut_replies.py``): a tool call whose arguments stop
mid-JSON is never a call's completion (the template would close it with tokens the model never wrote), in every
format; it stays in later calls' context. Found by a new-user trial: such a call was kept and trained on, ``ok``,
with an ``arguments_not_json`` warning only."""

from __future__ import annotations

import json

import pytest

from drafters.traces.cut_replies import ends_mid_json
from drafters.traces.ingest import ingest

from .conftest import codes, totals

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]


def _call(call_id: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": arguments}}


@pytest.mark.parametrize("raw", ['{"city": "Par', '{"city": "Paris", "days": 3', '{"city":', '{"city"', '{"ci',
                                 '{"city": "Pa\\', '{"cities": ["Paris", "Ly', '{"a": {"b": 1}, ', "{", '[{"x": 1}'])
def test_json_cut_short_is_cut(raw):
    assert ends_mid_json(raw)


@pytest.mark.parametrize("raw", ['{"city": "Paris"}', "cd /tmp && ls", "Paris", '{"city": "Paris"}}', "",
                                 '{"city": Paris}', '{"a": 1] ', "[1, 2]"])
def test_plain_text_complete_or_broken_json_is_not_cut(raw):
    assert not ends_mid_json(raw)


def test_a_cut_reply_is_context_not_a_completion(tmp_path):
    """An agent's chat log: the second reply's call was cut (``finish_reason: "length"``), the agent sent back the
    tool's complaint and the model retried. Three calls are trained on, not four; the cut reply stays in the
    third call's context as the server sent it on."""
    messages = [
        {"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [_call("c1", '{"city": "Paris"}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "12C"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c2", '{"city": "Lyo')]},
        {"role": "tool", "tool_call_id": "c2", "content": "error: arguments are not JSON"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c3", '{"city": "Lyon"}')]},
        {"role": "tool", "tool_call_id": "c3", "content": "9C"},
        {"role": "assistant", "content": "Paris 12C, Lyon 9C."}]
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"messages": messages, "tools": TOOLS}) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and "tool_call_cut" in codes(result, "warnings"), codes(result)
    (conv,) = result.conversations
    calls = list(conv.calls())
    assert len(calls) == 3 and all('"Lyo"' not in c.completion.tool_calls[0].raw_arguments
                                   for c in calls if c.completion.tool_calls)
    assert [p.raw_arguments for p in calls[1].context[4].tool_calls] == ['{"city": "Lyo']


@pytest.mark.parametrize("layout", ["request_response", "openai_chat"])
def test_a_file_of_one_cut_call_is_refused_with_the_code(tmp_path, layout):
    """A logged request whose only reply was cut: no complete reply, so an error (was ``ok``, one call)."""
    history = [{"role": "user", "content": "Weather in Paris?"}]
    reply = {"role": "assistant", "content": None, "tool_calls": [_call("c1", '{"city": "Par')]}
    row = ({"request": {"model": "m", "messages": history, "tools": TOOLS},
            "response": {"choices": [{"index": 0, "message": reply, "finish_reason": "length"}]}}
           if layout == "request_response" else {"messages": [*history, reply], "tools": TOOLS})
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(row) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert not result.report.ok and codes(result) == ["tool_call_cut"] and totals(result.conversations) == (0, 0, 0)


def test_plain_text_arguments_are_still_a_completion(tmp_path):
    """A free-form tool's input (a shell command, not JSON) is no cut call: trained on, ``arguments_not_json``."""
    messages = [{"role": "user", "content": "List /tmp"},
                {"role": "assistant", "content": None, "tool_calls": [_call("c1", "ls /tmp")]},
                {"role": "tool", "tool_call_id": "c1", "content": "a b"}, {"role": "assistant", "content": "a, b"}]
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"messages": messages}) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1)
    assert "tool_call_cut" not in codes(result, "warnings")
