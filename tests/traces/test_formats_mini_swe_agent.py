"""mini-swe-agent .traj.json (object form and the bare-list fixture)."""

from __future__ import annotations

from drafters.traces.model import ReasoningPart

from ._helpers_b import codes, parse_text, read
from .conftest import parse_file, sample, totals

RUN = "mini_swe_agent_traj/gemini-3-pro__django__django-15731.traj.json"
LIST = "mini_swe_agent_traj/github_issue.traj.json"


def test_sample_counts():
    # Independent count (python json.load; messages with role == "assistant"): the run has 60 messages,
    # 29 assistant (info.model_stats.api_calls is 29 too); the fixture is a bare list of 22 with 10
    # assistant. No structured tool calls in either: bash is written in fenced text.
    assert totals(parse_file("mini_swe_agent", sample(RUN))[0]) == (1, 29, 0)
    assert totals(parse_file("mini_swe_agent", sample(LIST))[0]) == (1, 10, 0)


def test_reasoning_from_extra_response_with_encrypted_signature():
    """README: reasoning lives only in extra.response...reasoning / reasoning_details, not in content."""
    (conv,), report = parse_file("mini_swe_agent", sample(RUN))
    assert not report.errors
    first = next(m for m in conv.messages if m.role == "assistant")
    r = first.parts[0]
    assert isinstance(r, ReasoningPart) and r.text.startswith("**Examining the Signature Bug**")
    assert r.signature.startswith("CiQB4/H/XrkFd9OepFBDRypiP4lNkIu/")  # reasoning.encrypted data, verbatim
    assert "```bash\nls -R django/db/models/manager.py\n```" in first.text
    assert first.model == "google/gemini-3-pro-preview"
    assert sum(1 for m in conv.messages for p in m.parts if isinstance(p, ReasoningPart)) == 2
    # results are user messages with <returncode>/<output> tags, as the model saw them
    assert conv.messages[3].role == "user" and "<returncode>" in conv.messages[3].text


def test_truncated_copy():
    text = read(sample(LIST))
    convs, report = parse_text("mini_swe_agent", text[: len(text) // 3], "cut.traj.json")
    assert convs == [] and codes(report) == ["invalid_json"] and report.errors[0].line >= 1
