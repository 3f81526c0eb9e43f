"""Replies cut by the output length limit (``drafters/traces/cut_replies.py``): an answer whose stop reason says so,
or whose tool call's arguments stop mid-JSON, is reported (``reply_cut``, with the count) in every format; its call
stays a call (the context is exact; regeneration writes the answer whole). Found by new-user trials: such answers
were read with no word (a stop reason) or an ``arguments_not_json`` warning only (a tool call cut mid-JSON)."""

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


def test_a_cut_reply_is_reported_and_stays_a_call(tmp_path):
    """An agent's chat log: the second reply's call was cut (``finish_reason: "length"``), the agent sent back the
    tool's complaint and the model retried. Four calls, one reported cut; the cut reply is in the next contexts
    as the server sent it on."""
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
    assert result.report.ok and totals(result.conversations) == (1, 4, 3), codes(result)
    (warning,) = [w for w in result.report.warnings if w.code == "reply_cut"]
    assert warning.message.startswith("1 answer(s)")
    calls = list(result.conversations[0].calls())
    assert [p.raw_arguments for p in calls[2].context[4].tool_calls] == ['{"city": "Lyo']


@pytest.mark.parametrize("layout", ["request_response", "openai_chat"])
def test_a_file_of_one_cut_call_says_so(tmp_path, layout):
    """A logged request whose only reply was cut: read, and reported (was ``ok`` with ``arguments_not_json``)."""
    history = [{"role": "user", "content": "Weather in Paris?"}]
    reply = {"role": "assistant", "content": None, "tool_calls": [_call("c1", '{"city": "Par')]}
    row = ({"request": {"model": "m", "messages": history, "tools": TOOLS},
            "response": {"choices": [{"index": 0, "message": reply, "finish_reason": "length"}]}}
           if layout == "request_response" else {"messages": [*history, reply], "tools": TOOLS})
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(row) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and "reply_cut" in codes(result, "warnings") and totals(result.conversations) == (1, 1, 1)


def test_plain_text_arguments_are_still_a_completion(tmp_path):
    """A free-form tool's input (a shell command, not JSON) is no cut call: trained on, ``arguments_not_json``."""
    messages = [{"role": "user", "content": "List /tmp"},
                {"role": "assistant", "content": None, "tool_calls": [_call("c1", "ls /tmp")]},
                {"role": "tool", "tool_call_id": "c1", "content": "a b"}, {"role": "assistant", "content": "a, b"}]
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"messages": messages}) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1)
    assert "reply_cut" not in codes(result, "warnings")


ASK = [{"role": "user", "content": "Explain TCP."}]
CUT_RESPONSES = {  # one call's record whose answer the server stopped at the length limit, in each API's words
    "openai": {"request": {"messages": ASK}, "response": {"choices": [
        {"index": 0, "message": {"role": "assistant", "content": "TCP is a"}, "finish_reason": "length"}]}},
    "anthropic_tool_use": {"request": {"messages": ASK}, "response": {
        "type": "message", "role": "assistant", "stop_reason": "max_tokens",
        "content": [{"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}]}},
    "responses_incomplete": {"id": "r1", "object": "response", "status": "incomplete",
                             "incomplete_details": {"reason": "max_output_tokens"}, "input": ASK,
                             "output": [{"type": "message", "role": "assistant", "status": "incomplete",
                                         "content": [{"type": "output_text", "text": "TCP is a"}]}]},
    "ollama": {"model": "m", "messages": ASK, "message": {"role": "assistant", "content": "TCP is a"},
               "done": True, "done_reason": "length"},
    "vllm_text": {"prompt": "Explain TCP.", "choices": [{"index": 0, "text": "TCP is a", "finish_reason": "length"}]},
}


@pytest.mark.parametrize("layout", sorted(CUT_RESPONSES))
def test_an_answer_stopped_by_the_length_limit_is_reported(tmp_path, layout):
    """The server's own stop reason says the answer was cut (was read with no word): beside a complete call in
    the same file, both are calls and the cut one is counted in ``reply_cut``."""
    cut = CUT_RESPONSES[layout]
    whole = json.loads(json.dumps(cut).replace('"length"', '"stop"').replace('"max_tokens"', '"end_turn"')
                       .replace('"incomplete"', '"completed"').replace('"max_output_tokens"', '"none"')
                       .replace("TCP", "UDP"))  # another call (the same prompt twice would be one call's samples)
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(whole) + "\n" + json.dumps(cut) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations)[1] == 2, codes(result)
    (warning,) = [w for w in result.report.warnings if w.code == "reply_cut"]
    assert warning.message.startswith("1 answer(s)")
    path.write_text(json.dumps(whole) + "\n")
    assert "reply_cut" not in codes(ingest([path], scrub=False, dedup=False), "warnings")


def test_a_cut_answer_inside_a_transcript_is_reported(tmp_path):
    """A transcript whose message records its own stop reason (pi / Vercel AI messages' ``stopReason``): the cut
    answer, the user's "go on" and the rest: two calls, one reported cut."""
    messages = [{"role": "user", "content": "Explain TCP."},
                {"role": "assistant", "content": "TCP is a", "stopReason": "length"},
                {"role": "user", "content": "Go on."},
                {"role": "assistant", "content": "connection-oriented protocol.", "stopReason": "stop"}]
    path = tmp_path / "session.json"
    path.write_text(json.dumps({"session": "s1", "turns": messages}))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 0), codes(result)
    assert "reply_cut" in codes(result, "warnings")


def test_a_stop_reason_in_a_modules_format_or_in_langchains_metadata_is_reported(tmp_path):
    """Claude Code's assistant line with ``stop_reason: "max_tokens"``; a LangChain AI message keeping its
    ``finish_reason`` under ``response_metadata`` (neither was reported: new-user trials)."""
    lines = [{"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1", "timestamp": "2025-01-01T00:00:00Z",
              "message": {"role": "user", "content": "Explain TCP."}},
             {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s1",
              "timestamp": "2025-01-01T00:00:01Z", "message": {"id": "msg_1", "role": "assistant", "model": "claude",
                                                               "stop_reason": "max_tokens",
                                                               "content": [{"type": "text", "text": "TCP is a"}]}}]
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.formats == {"claude_code": 1} and "reply_cut" in codes(result, "warnings"), codes(result)
    history = [{"type": "human", "content": "Explain TCP."},
               {"type": "ai", "content": "TCP is a", "response_metadata": {"finish_reason": "length"}},
               {"type": "human", "content": "Go on."}, {"type": "ai", "content": "protocol."}]
    path = tmp_path / "history.json"
    path.write_text(json.dumps({"thread": "t1", "messages": history}))
    assert "reply_cut" in codes(ingest([path], scrub=False, dedup=False), "warnings")
