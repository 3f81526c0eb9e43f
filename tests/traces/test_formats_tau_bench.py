"""tau-bench results and tau2-bench simulations."""

from __future__ import annotations

import json

from drafters.traces.model import ReasoningPart

from ._helpers_b import codes, parse_text, read
from .conftest import parse_file, sample, totals

TAU = "tau_bench_results/tau-bench__gpt-4o-airline__first40.json"

# A tau2-bench results file in the layout of sierra-research/tau2-bench (src/tau2/data_model):
# top-level roles are authoritative; raw_data is the provider response of whichever LLM wrote it.
TAU2 = {
    "info": {"agent_info": {"llm": "claude-3-7-sonnet"}, "user_info": {"llm": "gpt-4.1"},
             "environment_info": {"domain_name": "telecom"}},
    "tasks": [{"id": "t0"}],
    "simulations": [{
        "id": "sim-0", "task_id": "t0", "trial": 0,
        "messages": [
            {"role": "assistant", "content": "Hi! How can I help you today?", "turn_idx": 0},
            {"role": "user", "content": "My phone has no signal.", "turn_idx": 1,
             "raw_data": {"message": {"role": "assistant", "content": "My phone has no signal."}}},
            {"role": "assistant", "content": None, "turn_idx": 2, "tool_calls": [
                {"id": "tc1", "name": "get_line", "arguments": {"phone": "555"}, "requestor": "assistant"}],
             "raw_data": {"message": {"role": "assistant", "thinking_blocks": [
                 {"type": "thinking", "thinking": "check the line", "signature": "EqQBCkgIARAB+sig=="}]}}},
            {"role": "tool", "id": "tc1", "content": "{\"status\": \"suspended\"}", "requestor": "assistant", "turn_idx": 3},
            {"role": "assistant", "content": "Please toggle airplane mode.", "turn_idx": 4},
            {"role": "user", "content": None, "turn_idx": 5, "tool_calls": [
                {"id": "u1", "name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"}],
             "raw_data": {"message": {"role": "assistant", "tool_calls": []}}},
            {"role": "tool", "id": "u1", "content": "airplane mode off", "requestor": "user", "turn_idx": 6},
            {"role": "user", "content": "Done, still nothing.", "turn_idx": 7,
             "raw_data": {"message": {"role": "assistant", "content": "Done, still nothing."}}},
            {"role": "assistant", "content": "Your line is suspended.", "turn_idx": 8},
        ],
    }],
}


def test_tau_sample_counts():
    # Independent count (python json.load): 40 records; over all traj lists 571 messages with role
    # assistant, 254 of them with one tool_call each (Counter of len(tool_calls) = {0: 317, 1: 254}).
    convs, report = parse_file("tau_bench", sample(TAU))
    assert not report.errors
    assert totals(convs) == (40, 571, 254)
    first = convs[0]
    assert first.messages[0].role == "system" and first.source.record == "$[0]"
    call = next(m for m in first.messages if m.tool_calls).tool_calls[0]
    assert call.id.startswith("call_") and isinstance(call.arguments, dict)  # arguments: a JSON string, parsed
    res = next(m for m in first.messages if m.role == "tool").tool_results[0]
    assert res.call_id == call.id and res.name == call.name


def test_tau2_simulated_user_is_never_the_assistant():
    """README: in tau2 results the user simulator's raw_data.message.role is "assistant"; simulated-user
    turns must stay user turns (and the user's own tool calls are not agent context)."""
    (conv,), report = parse_text("tau_bench", json.dumps(TAU2), "tau2.json")
    assert not report.errors
    assert [m.role for m in conv.messages] == ["assistant", "user", "assistant", "tool", "assistant", "user", "assistant"]
    assert [m.text for m in conv.messages if m.role == "user"] == ["My phone has no signal.", "Done, still nothing."]
    assert totals([conv]) == (1, 3, 1)  # the first assistant greeting has no context: not a call
    think = conv.messages[2].parts[0]
    assert isinstance(think, ReasoningPart) and think.signature == "EqQBCkgIARAB+sig=="
    assert conv.messages[2].tool_calls[0].raw_arguments == '{"phone":"555"}'
    assert conv.messages[3].tool_results[0].call_id == "tc1"
    assert conv.models == {"claude-3-7-sonnet"} and conv.id == "sim-0"


def test_corrupted_record_is_reported_and_others_kept():
    text = read(sample(TAU))
    lines = text.split("\n")
    i = next(k for k, line in enumerate(lines) if '"traj"' in line)
    lines[i + 3] = lines[i + 3][:15]  # tear a line inside record $[0].traj
    convs, report = parse_text("tau_bench", "\n".join(lines), "torn.json")
    assert codes(report)[0] == "invalid_json" and report.errors[0].record == "$[0]"
    assert len(convs) == 39


def test_a_function_given_as_a_string_is_named_as_such():
    """A tool call whose ``function`` is a string (the name itself) is a bad_tool_call that says so, not
    "a tool call without a name"."""
    rec = [{"task_id": 1, "reward": 1.0, "traj": [
        {"role": "user", "content": "cancel order 7"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": "cancel_order"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "Cancelled."}]}]
    _, report = parse_text("tau_bench", json.dumps(rec))
    (err,) = report.errors
    assert err.code == "bad_tool_call" and "'function' is a string" in err.message
