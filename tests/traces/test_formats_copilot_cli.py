"""GitHub Copilot CLI sessions: old .json timeline and new .jsonl event stream."""

from __future__ import annotations

from drafters.traces.model import ReasoningPart

from ._helpers_b import codes, parse_text, read
from .conftest import parse_file, sample, totals

OLD = "copilot_cli_session/VibeCodingTracker__test_conversation_copilot.json"
NEW = "copilot_cli_session/VibeCodingTracker__test_conversation_copilot.jsonl"


def test_sample_counts():
    # Independent count: old timeline (python json.load) has 5 'copilot' items and 15
    # 'tool_call_completed' items, each after a copilot item: 5 calls, 15 tool calls. New stream
    # (jq -c 'select(.type=="assistant.message") | .data.toolRequests|length'): 6 assistant.message
    # events with 4, 3, 2, 1, 0, 1 toolRequests: 6 calls, 11 tool calls.
    assert totals(parse_file("copilot_cli", sample(OLD))[0]) == (1, 5, 15)
    assert totals(parse_file("copilot_cli", sample(NEW))[0]) == (1, 6, 11)


def test_old_timeline_links_calls_by_order():
    (conv,), report = parse_file("copilot_cli", sample(OLD))
    assert not report.errors
    roles = [m.role for m in conv.messages]
    assert roles[:3] == ["user", "assistant", "tool"]
    first = conv.messages[1]
    assert [c.name for c in first.tool_calls] == ["str_replace_editor"] * 3 + ["github-mcp-server-web_search"]
    assert [r.call_id for r in conv.messages[2].tool_results] == [c.id for c in first.tool_calls]
    assert first.tool_calls[0].id == "toolu_01Mx6TvUBjF3WtcTQtkgSq2k"


def test_new_stream_parallel_requests_reasoning_and_pseudo_tools():
    """README: parallel toolRequests (up to 4) with toolu_ ids, report_intent/task_complete pseudo-tools,
    detailedContent differs from what the model saw."""
    (conv,), report = parse_file("copilot_cli", sample(NEW))
    assert not report.errors and not report.warnings
    first = next(m for m in conv.messages if m.role == "assistant")
    assert [c.name for c in first.tool_calls] == ["report_intent", "view", "view", "web_search"]
    assert isinstance(first.parts[0], ReasoningPart) and first.parts[0].signature  # reasoningOpaque verbatim
    assert first.model == "claude-sonnet-4.6"
    results = conv.messages[conv.messages.index(first) + 1]
    assert [r.call_id for r in results.tool_results] == [c.id for c in first.tool_calls]
    assert conv.messages[-2].tool_calls[0].name == "task_complete"
    assert [m.role for m in conv.messages].count("system") == 1  # identical re-sent system prompt kept once
    # the second user turn has empty content: the model saw transformedContent
    users = [m for m in conv.messages if m.role == "user"]
    assert users[1].text.startswith("<current_datetime>") and users[1].meta and not users[0].meta


def test_corrupted_line_is_reported_and_rest_parses():
    text = read(sample(NEW))
    lines = text.split("\n")
    lines[9] = lines[9][:30]
    convs, report = parse_text("copilot_cli", "\n".join(lines), "torn.jsonl")
    assert codes(report) == ["invalid_json"] and report.errors[0].line == 10
    assert len(convs) == 1 and len(list(convs[0].calls())) >= 5
