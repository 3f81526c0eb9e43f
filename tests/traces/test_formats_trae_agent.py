"""Trae Agent trajectories: per-interaction new input messages are concatenated into each call's context.

Fixtures (written from the open-source writer, ``trae_agent/utils/trajectory_recorder.py``; no public
trajectory file was available here, see fixtures/README.md): ``trae_agent_trajectory.json`` records only
the new input messages per interaction, ``trae_agent_full_history.json`` repeats the whole history in every
interaction (the leaderboard variant). Expected values are walked from the raw JSON below.
"""

from __future__ import annotations

import json
from pathlib import Path

from drafters.traces.detect import detect_format
from drafters.traces.ingest import ingest

from ._helpers_b import codes, parse_text

FIX = Path(__file__).parent / "fixtures"
OPEN, FULL = FIX / "trae_agent_trajectory.json", FIX / "trae_agent_full_history.json"


def test_open_source_writer_calls_and_contexts():
    raw = json.loads(OPEN.read_text(encoding="utf-8"))
    inter = raw["llm_interactions"]
    want_tool_calls = sum(len(i["response"]["tool_calls"] or []) for i in inter)
    assert (len(inter), want_tool_calls) == (3, 4)  # by hand
    assert detect_format(OPEN.read_text(encoding="utf-8")[:65536], OPEN.name).name == "trae_agent"
    result = ingest([OPEN], scrub=False)
    report = result.report
    assert report.ok and [p.code for p in report.warnings] == ["no_tool_definitions"]
    assert (report.counts["calls"], report.counts["tool_calls"], report.counts["parallel_calls"]) == (3, 4, 1)
    conv = result.conversations[0]
    assert conv.append_only
    c1, c2, c3 = conv.explicit_calls
    assert [m.role for m in c1.context] == ["system", "user"]
    # context of call 2 = call 1's input + its response + the new tool result
    assert [m.role for m in c2.context] == ["system", "user", "assistant", "tool"]
    assert c2.context[3].tool_results[0].call_id == c1.completion.tool_calls[0].id == "toolu_01A9"
    results = c3.context[-1].tool_results  # two results of the parallel calls, one message
    assert [r.call_id for r in results] == ["toolu_01B2", "toolu_01B3"] and results[1].is_error
    assert "Permission denied" in results[1].content
    assert c3.completion.text == raw["final_result"]


def test_full_history_variant_gives_the_same_calls():
    a = ingest([OPEN], scrub=False).conversations[0].explicit_calls
    b = ingest([FULL], scrub=False).conversations[0].explicit_calls
    assert [(c.context, c.completion) for c in a] == [(c.context, c.completion) for c in b]


def test_bad_interaction_is_reported_and_the_rest_read():
    raw = json.loads(OPEN.read_text(encoding="utf-8"))
    raw["llm_interactions"][1]["input_messages"] = "[{\"role\": \"user\"}]"  # a JSON string, not a list
    convs, report = parse_text("trae_agent", json.dumps(raw), "t.json")
    assert codes(report) == ["bad_record"] and report.errors[0].field == "llm_interactions[1]"
    assert len(convs[0].explicit_calls) == 2
    _, cut = parse_text("trae_agent", OPEN.read_text(encoding="utf-8")[:3000], "t.json")
    assert codes(cut) == ["invalid_json"] and cut.errors[0].line is not None
