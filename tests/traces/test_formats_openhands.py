"""OpenHands V0 event-stream trajectories."""

from __future__ import annotations

import json

from ._helpers_b import codes, parse_text, read
from .conftest import parse_file, sample, totals

BASIC = "openhands_trajectory/basic.json"
GUI = "openhands_trajectory/basic_gui_mode.json"


def test_sample_counts():
    # Independent count (python json.load): basic.json has 2 agent actions with tool_call_metadata
    # (edit, finish) from 2 distinct model_response ids, 1 tool call each: 2 calls, 2 tool calls.
    # basic_gui_mode.json has 4 such actions (run, edit, edit, run; 4 distinct response ids) plus one
    # agent 'message' action without metadata (a text-only model turn): 5 calls, 4 tool calls.
    assert totals(parse_file("openhands", sample(BASIC))[0]) == (1, 2, 2)
    assert totals(parse_file("openhands", sample(GUI))[0]) == (1, 5, 4)


def test_calls_from_model_response_and_state_events_skipped():
    """README: the call is rebuilt from the raw provider response (arguments a JSON string);
    agent_state_changed / change_agent_state / null observations are not messages."""
    (conv,), report = parse_file("openhands", sample(GUI))
    assert not report.errors
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant",
                                                "tool", "assistant", "tool", "assistant"]
    call = conv.messages[1].tool_calls[0]
    assert call.id == "toolu_01W9Z8jBctr8X2frZV9p1RYs" and call.name == "execute_bash"
    assert call.arguments["command"] == "mkdir -p /workspace/todo-app"
    assert conv.messages[2].tool_results[0].call_id == call.id
    assert conv.messages[1].model == "claude-3-5-sonnet-20241022"
    assert conv.messages[1].text.startswith("I'll")  # the model's text before the call


def test_parallel_response_expanded_once_and_fallback_without_response():
    resp = {"id": "r1", "model": "m", "choices": [{"message": {"content": "two", "tool_calls": [
        {"id": "a", "function": {"name": "f", "arguments": "{\"x\": 1}"}},
        {"id": "b", "function": {"name": "f", "arguments": "{bad"}}]}}]}
    events = [
        {"id": 1, "source": "user", "action": "message", "args": {"content": "go"}, "timestamp": "t"},
        {"id": 2, "source": "agent", "action": "run", "args": {"command": "ls"}, "timestamp": "t",
         "tool_call_metadata": {"function_name": "f", "tool_call_id": "a", "model_response": resp}},
        {"id": 3, "source": "agent", "action": "run", "args": {"command": "pwd"}, "timestamp": "t",
         "tool_call_metadata": {"function_name": "f", "tool_call_id": "b", "model_response": resp}},
        {"id": 4, "source": "agent", "observation": "run", "content": "out-a", "cause": 2, "timestamp": "t",
         "tool_call_metadata": {"function_name": "f", "tool_call_id": "a", "model_response": resp}},
        {"id": 5, "source": "agent", "action": "run", "args": {"command": "id", "thought": "hm"}, "timestamp": "t",
         "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "c"}},
        "junk",
    ]
    (conv,), report = parse_text("openhands", json.dumps(events), "ev.json")
    assert [len(m.tool_calls) for m in conv.messages if m.role == "assistant"] == [2, 1]
    bad = conv.messages[1].tool_calls[1]
    assert bad.arguments is None and bad.raw_arguments == "{bad"
    assert conv.messages[-1].tool_calls[0].arguments == {"command": "id"}
    assert [w.code for w in report.warnings] == ["arguments_not_json"]
    assert codes(report) == ["bad_record"] and report.errors[0].field == "[5]"


def test_truncated_copy():
    text = read(sample(BASIC))
    convs, report = parse_text("openhands", text[:5000], "cut.json")
    assert convs == [] and codes(report) == ["invalid_json"]


def test_the_system_event_is_every_calls_system_prompt_and_tool_list(tmp_path):
    """OpenHands V0 event streams open with ``action: "system"`` holding the system prompt and the tools the agent
    sends with every call: read as the system message and the tool definitions (were dropped, ``ok`` with
    ``no_tool_definitions``: a new-user trial)."""
    from drafters.traces.ingest import ingest

    tools = [{"type": "function", "function": {"name": "execute_bash", "parameters": {"type": "object"}}}]
    events = [{"id": 0, "timestamp": "t0", "source": "agent", "action": "system", "message": "You are OpenHands.",
               "args": {"content": "You are OpenHands.", "tools": tools}},
              {"id": 1, "timestamp": "t1", "source": "user", "action": "message", "args": {"content": "List files"}},
              {"id": 2, "timestamp": "t2", "source": "agent", "action": "run", "args": {"command": "ls"},
               "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "c1"}},
              {"id": 3, "timestamp": "t3", "source": "agent", "observation": "run", "content": "a.txt", "cause": 2,
               "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "c1"}},
              {"id": 4, "timestamp": "t4", "source": "agent", "action": "message", "args": {"content": "a.txt"}}]
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and result.report.formats == {"openhands": 1}, [e.code for e in result.report.errors]
    (conv,) = result.conversations
    assert conv.messages[0].role == "system" and [t.name for t in conv.tools] == ["execute_bash"]
    assert "no_tool_definitions" not in [w.code for w in result.report.warnings]
