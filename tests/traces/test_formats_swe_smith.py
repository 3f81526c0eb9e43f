"""SWE-smith trajectory rows (SWE-agent history as ``messages``: a list, or a JSON string).

Fixture ``fixtures/swe_smith_trajectories.jsonl``: built from the first 8 history entries of the real
SWE-agent demonstration ``demo_function_calling__marshmallow-code__marshmallow-1867.traj`` (SWE-agent/
SWE-agent, MIT) in the row shape SWE-smith's collector writes (see fixtures/README.md). Expected counts
are walked from the raw JSON here and were checked by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

from drafters.traces.detect import detect_format
from drafters.traces.ingest import ingest

from ._helpers_b import codes, parse_text

FIXTURE = Path(__file__).parent / "fixtures" / "swe_smith_trajectories.jsonl"


def _rows() -> list[dict]:
    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        if isinstance(row["messages"], str):
            row["messages"] = json.loads(row["messages"])
    return rows


def test_detected_and_counted():
    rows = _rows()
    n_assistant = sum(m["role"] == "assistant" for r in rows for m in r["messages"])
    n_tool_calls = sum(len(m.get("tool_calls") or []) for r in rows for m in r["messages"])
    assert (n_assistant, n_tool_calls) == (5, 5)  # by hand: 3 + 2 turns, one call each
    text = FIXTURE.read_text(encoding="utf-8")
    assert detect_format(text, FIXTURE.name).name == "swe_smith"
    result = ingest([FIXTURE], scrub=False)
    report = result.report
    assert report.ok and report.formats == {"swe_smith": 1}
    assert (report.counts["conversations"], report.counts["calls"], report.counts["tool_calls"]) == (
        2, n_assistant, n_tool_calls)
    # tool_call_ids (a list) pair every result with its call: no unpaired warnings
    assert sorted({p.code for p in report.warnings}) == ["no_tool_definitions"]
    conv = result.conversations[0]
    assert conv.messages[0].role == "system" and {m.model for m in conv.messages if m.role == "assistant"} == {"gpt-4o"}
    call = conv.messages[2].tool_calls[0]
    assert (call.name, call.arguments) == ("create", {"filename": "reproduce.py"})
    assert conv.messages[3].tool_results[0].call_id == call.id


def test_list_rows_read_as_plain_openai_chat_pair_tool_call_ids():
    """The collector's list rows also pass for OpenAI chat; its tool messages' tool_call_ids now pair."""
    row = FIXTURE.read_text(encoding="utf-8").splitlines()[1]
    report = ingest([FIXTURE], format="openai_chat", scrub=False).report
    assert "unpaired_tool_call" not in {p.code for p in report.warnings}
    assert json.loads(row)["messages"][3]["tool_call_ids"]  # the list form is what is being tested


def test_messages_string_that_is_not_json_is_reported_and_the_rest_read():
    good = FIXTURE.read_text(encoding="utf-8").splitlines()[0]
    bad = json.dumps({"messages": "[{\"role\": \"user\", \"content\": ", "instance_id": "x", "traj_id": "x.1"})
    convs, report = parse_text("swe_smith", "\n".join([good, bad, good[: len(good) // 2], good]) + "\n", "t.jsonl")
    assert len(convs) == 2
    assert codes(report) == ["not_an_object", "invalid_json"]
    assert [p.line for p in report.errors] == [2, 3]
