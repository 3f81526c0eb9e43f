"""AgentBench runs.jsonl (role "agent" = assistant; tool calls are plain text)."""

from __future__ import annotations

import json

from drafters.traces.model import ToolCallPart

from ._helpers_b import codes, parse_text, read, truncate_line
from .conftest import parse_file, sample, totals

RUNS = "agentbench_runs/medagentbench-std__gemini-2.0__runs.jsonl"


def test_sample_counts():
    # Independent count (jq -c '.output.history[] | .role' | sort | uniq -c): 46 lines; 86 "agent" and
    # 86 "user" turns; every history starts with user, so each agent turn is one LLM call: 86 calls.
    convs, report = parse_file("agentbench", sample(RUNS))
    assert not report.errors
    assert totals(convs) == (46, 86, 0)


def test_agent_role_is_the_assistant_and_calls_stay_text():
    """README: the assistant role is called "agent"; tool calls are plain text (GET/POST/FINISH)."""
    convs, _ = parse_file("agentbench", sample(RUNS))
    roles = {m.role for c in convs for m in c.messages}
    assert roles == {"user", "assistant"}
    texts = [m.text for c in convs for m in c.messages if m.role == "assistant"]
    assert any(t.lstrip().startswith(("GET ", "POST ", "FINISH(", "```tool_code")) for t in texts)
    assert not any(isinstance(p, ToolCallPart) for c in convs for m in c.messages for p in m.parts)
    assert convs[0].id.endswith("#99") and convs[0].source.line == 1


def test_truncated_line_and_unknown_role():
    text = read(sample(RUNS))
    convs, report = parse_text("agentbench", truncate_line(text, 5), "runs.jsonl")
    assert codes(report) == ["invalid_json"] and report.errors[0].line == 5 and len(convs) == 45
    bad = {"index": 1, "output": {"history": [{"role": "user", "content": "x"}, {"role": "bot", "content": "y"}]}}
    convs, report = parse_text("agentbench", json.dumps(bad) + "\n", "r.jsonl")
    assert convs == [] and codes(report) == ["unknown_role"] and report.errors[0].field == "output.history[1].role"
