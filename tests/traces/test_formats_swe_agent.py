"""SWE-agent .traj trajectories (classic text actions and function calling)."""

from __future__ import annotations

from drafters.traces.model import ToolCallPart

from ._helpers_b import codes, parse_text, read
from .conftest import parse_file, sample, totals

D = "swe_agent_traj/"


def test_sample_counts():
    # Independent count (python json.load; history entries with role == "assistant" and not is_demo,
    # and the length of their tool_calls lists):
    #   6e44b9...: 4 assistant / 4 tool calls (its trajectory has 5 steps: the final submit is not in history)
    #   demo__function_calling_simple: 5 / 5;  demo_function_calling__marshmallow: 11 / 11
    #   demo_ctf__networking_1: 4 / 0 and swe-agent__test-repo-i1: 5 / 0 (classic text actions)
    expected = {
        "6e44b9__sweagenttestrepo-1c2844.traj": (1, 4, 4),
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
    assert [w.code for w in report.warnings] == ["history_shorter_than_trajectory"]
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
