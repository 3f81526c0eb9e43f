"""SWE-agent .traj trajectories (classic text actions and function calling)."""

from __future__ import annotations

import json

from drafters.traces.model import ToolCallPart

from ._helpers_b import codes, parse_text, read
from .conftest import parse_file, sample, totals

D = "swe_agent_traj/"


def test_sample_counts():
    # Independent count (python json.load; history entries with role == "assistant" and not is_demo,
    # and the length of their tool_calls lists):
    #   6e44b9...: 4 assistant / 4 tool calls in history; its trajectory has 5 steps, the 5th (response
    #     text + action "submit") is not in history and is read as the final turn: 5 / 5 (checked by hand)
    #   demo__function_calling_simple: 5 / 5;  demo_function_calling__marshmallow: 11 / 11
    #   demo_ctf__networking_1: 4 / 0 and swe-agent__test-repo-i1: 5 / 0 (classic text actions)
    expected = {
        "6e44b9__sweagenttestrepo-1c2844.traj": (1, 5, 5),
        "demo__function_calling_simple.traj": (1, 5, 5),
        "demo_ctf__networking_1.traj": (1, 4, 0),
        "demo_function_calling__marshmallow-code__marshmallow-1867.traj": (1, 11, 11),
        "swe-agent__test-repo-i1.traj": (1, 5, 0),
    }
    for name, want in expected.items():
        convs, report = parse_file("swe_agent", sample(D + name))
        assert not report.errors, name
        assert totals(convs) == want, name


def test_history_used_not_trajectory_twice():
    """README: the same steps are stored twice (trajectory and history); history is what the model saw."""
    (conv,), report = parse_file("swe_agent", sample(D + "6e44b9__sweagenttestrepo-1c2844.traj"))
    assert report.warnings == [] and report.errors == []
    call = conv.messages[2].tool_calls[0]
    assert call.id == "call_fJuazlMUN5fQDQ73G6XSpYpx" and call.name == "find_file"
    assert call.raw_arguments == '{"file_name":"missing_colon.py"}' and call.arguments == {"file_name": "missing_colon.py"}
    res = conv.messages[3]
    assert res.role == "tool" and res.tool_results[0].call_id == "call_fJuazlMUN5fQDQ73G6XSpYpx"  # via tool_call_ids
    assert {m.model for m in conv.messages if m.role == "assistant"} == {"gpt-4o"}


def test_classic_run_keeps_command_as_text_and_demo_as_context():
    (conv,), _ = parse_file("swe_agent", sample(D + "swe-agent__test-repo-i1.traj"))
    assert not any(isinstance(p, ToolCallPart) for m in conv.messages for p in m.parts)
    assert [m.role for m in conv.messages][:3] == ["system", "user", "user"]  # is_demo demonstration = context
    assert "```" in conv.messages[3].text  # the command is written in the completion text


def test_truncated_traj_reports_invalid_json():
    text = read(sample(D + "demo__function_calling_simple.traj"))
    convs, report = parse_text("swe_agent", text[:-200], "cut.traj")
    assert convs == [] and codes(report) == ["invalid_json"] and report.errors[0].file == "cut.traj"
    convs, report = parse_text("swe_agent", '{"history": [{"role": "robot", "content": "x"}, {"role": "user", "content": "y"}]}', "h.traj")
    assert codes(report) == ["bad_record"] and report.errors[0].field == "history[0]"
    assert len(convs) == 1 and convs[0].messages[0].text == "y"


def test_final_step_missing_from_history_is_the_last_turn():
    """6e44b9...: history ends with the observation of step 4; trajectory[4] (response + ``submit``) is not in
    history. Its response is the final assistant turn, with the submit call (this run calls functions)."""
    path = sample(D + "6e44b9__sweagenttestrepo-1c2844.traj")
    doc = json.loads(read(path))
    step = doc["trajectory"][4]
    assert step["action"] == "submit" and doc["history"][-1]["role"] == "tool"
    (conv,), _ = parse_file("swe_agent", path)
    last = conv.messages[-1]
    assert last.role == "assistant" and last.text == step["response"]
    assert last.text.endswith("I will now submit the changes to finalize the fix.")
    (call,) = last.tool_calls
    assert (call.id, call.name, call.arguments) == (None, "submit", {})
    assert len(conv.messages) == len(doc["history"]) + 1 and last.model == "gpt-4o"


def _traj(history_turns: int, steps: list[dict]) -> str:
    history = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
    for k in range(history_turns):
        history += [{"role": "assistant", "content": f"step {k}\n```\nls\n```"}, {"role": "user", "content": "out"}]
    return json.dumps({"history": history, "trajectory": steps})


def test_classic_run_last_step_is_text_and_two_missing_steps_still_warn():
    steps = [{"response": f"step {k}", "action": "ls", "observation": "out", "thought": ""} for k in range(2)]
    steps.append({"response": "done\n```\nsubmit\n```", "action": "submit", "observation": "", "thought": ""})
    (conv,), report = parse_text("swe_agent", _traj(2, steps), "c.traj")
    assert report.warnings == [] and conv.messages[-1].text == "done\n```\nsubmit\n```"
    assert conv.messages[-1].tool_calls == []  # a classic run writes the command in its text
    (conv,), report = parse_text("swe_agent", _traj(1, steps), "c.traj")
    assert [w.code for w in report.warnings] == ["history_shorter_than_trajectory"]
    assert conv.messages[-1].role == "user"  # two steps missing: nothing invented
