"""Gemini CLI sessions: .json and the .jsonl with {"$set": ...} patch lines."""

from __future__ import annotations

import json

from drafters.traces.model import ReasoningPart, ToolCallPart

from ._helpers_b import codes, parse_text, read
from .conftest import parse_file, sample, totals

JSON_31 = "gemini_cli_chat/VibeCodingTracker__test_conversation_gemini.json"
JSON_25 = "gemini_cli_chat/agentcmd__session-2025-10-27T19-55-981c87cb.json"
JSONL = "gemini_cli_chat/VibeCodingTracker__test_conversation_gemini.jsonl"


def test_sample_counts():
    # Independent count (python json.load): gemini-3.1 file has 4 messages, 3 of type gemini (one LLM
    # call each) carrying 7 toolCalls; the gemini-2.5 file has 15 gemini messages with 13 toolCalls.
    # The .jsonl (jq -c 'select(.type=="gemini") | [.id, (.toolCalls|length)]') has 11 gemini lines but
    # only 6 distinct ids (the CLI rewrites a message when its calls finish); the last copy of each has
    # 5, 3, 1, 1, 0 and 2 toolCalls: 6 calls, 12 tool calls.
    assert totals(parse_file("gemini_cli", sample(JSON_31))[0]) == (1, 3, 7)
    assert totals(parse_file("gemini_cli", sample(JSON_25))[0]) == (1, 15, 13)
    assert totals(parse_file("gemini_cli", sample(JSONL))[0]) == (1, 6, 12)


def test_set_lines_are_patches_not_messages():
    """README: the $set lines are updates to the session object; a reader that treats every line as a
    message breaks or produces junk."""
    (conv,), report = parse_file("gemini_cli", sample(JSONL))
    assert not report.errors and not report.warnings
    assert [m.role for m in conv.messages].count("user") == 3  # 3 user lines; info lines dropped
    assert all(m.parts for m in conv.messages)
    models = [m.model for m in conv.messages if m.role == "assistant"]
    assert models == ["gemini-3-flash-preview"] * 5 + ["gemini-3.1-pro-preview"]
    # a $set that replaces the message list wins over the lines before it
    lines = [json.dumps({"sessionId": "s", "projectHash": "h", "startTime": "t"}),
             json.dumps({"id": "u1", "type": "user", "content": "old"}),
             json.dumps({"$set": {"messages": [{"id": "u2", "type": "user", "content": "new"},
                                               {"id": "g", "type": "gemini", "content": "hi", "model": "m"}]}}),
             json.dumps({"$set": {"lastUpdated": "later"}})]
    (c2,), r2 = parse_text("gemini_cli", "\n".join(lines), "s.jsonl")
    assert [(m.role, m.text) for m in c2.messages] == [("user", "new"), ("assistant", "hi")]


def test_nested_results_parallel_calls_thoughts():
    """README: results are nested in the call (no tool message); one message can carry 5 calls;
    thoughts are summaries; resultDisplay is the UI copy and is not what the model got."""
    (conv,), _ = parse_file("gemini_cli", sample(JSONL))
    first_call_msg = next(m for m in conv.messages if m.tool_calls)
    assert len(first_call_msg.tool_calls) == 5
    assert isinstance(first_call_msg.parts[0], ReasoningPart)
    assert first_call_msg.parts[0].text.startswith("Initiating File Generation: ")
    ids = [c.id for c in first_call_msg.tool_calls]
    assert ids == ["b5qo7ls5", "aao1q07o", "fkoen8u1", "celsd0yz", "hfq6e93w"]
    results = conv.messages[conv.messages.index(first_call_msg) + 1]
    assert results.role == "tool" and [r.call_id for r in results.tool_results] == ids
    (old,), _ = parse_file("gemini_cli", sample(JSON_25))
    call = next(p for m in old.messages for p in m.parts if isinstance(p, ToolCallPart))
    assert call.id.startswith("list_directory-1761594964607-")  # the older name-timestamp-hex ids
    res = old.messages[2].tool_results[0]
    assert res.content == "Directory /Users/dev/Dev/playground/src/test-project/ is empty."  # not resultDisplay
    errors = [r for m in old.messages for r in m.tool_results if r.is_error]
    assert len(errors) == 2  # one cancelled, one error status


def test_corrupted_jsonl_line_reports_line():
    text = read(sample(JSONL))
    convs, report = parse_text("gemini_cli", text.replace('{"$set"', '{"$set', 1), "torn.jsonl")
    assert codes(report) == ["invalid_json"] and report.errors[0].line == 3
    assert totals(convs) == (1, 6, 12)
    convs, report = parse_text("gemini_cli", '{"sessionId": "s", "projectHash": "h"}\n[1, 2]\n', "odd.jsonl")
    assert convs == [] and codes(report) == ["bad_record"]  # valid JSON, not an object: line 2
