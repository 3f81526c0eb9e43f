"""Detection falls through: a reader that reads nothing from a file hands it to the next candidate, and the
report names every candidate tried and why each declined.

``fixtures/shapes/anthropic_array.json``: a top-level array of Anthropic-shaped messages (a coding agent's
saved history) that the OpenAI chat sniffer claims; 2 assistant turns, 1 tool call.
"""

from __future__ import annotations

import json

import pytest

from drafters.traces.detect import candidate_formats
from drafters.traces.ingest import ingest
from drafters.traces.report import TraceError

from .conftest import totals
from .test_bad_input import SHAPES


def test_anthropic_array_falls_through_to_a_reader_that_reads_it():
    path = SHAPES / "anthropic_array.json"
    raw = json.loads(path.read_text())
    names = [f.name for f in candidate_formats(path.read_text(), path.name)]
    assert names[0] == "openai_chat" and len(names) > 1  # the most confident guess is wrong
    result = ingest([path], scrub=False)
    assert result.report.ok, result.report.errors
    want_calls = sum(1 for m in raw if m["role"] == "assistant")
    want_tools = sum(1 for m in raw for b in m["content"] if b["type"] == "tool_use")
    assert totals(result.conversations) == (1, want_calls, want_tools)
    entry = result.report.files[str(path)]
    assert entry["candidates"][0]["format"] == "openai_chat"
    assert entry["candidates"][0]["declined"].startswith("not_an_object x4")
    assert entry["candidates"][-1] == {"format": entry["format"], "declined": ""}
    fall = [w for w in result.report.warnings if w.code == "format_fallthrough"]
    assert len(fall) == 1 and "openai_chat (not_an_object x4)" in fall[0].message


def test_when_every_candidate_declines_the_first_ones_problems_are_reported(tmp_path):
    path = tmp_path / "nothing.json"
    path.write_text(json.dumps([{"role": "user", "content": "a"}, {"role": "assistant", "content": {"x": 1}}]))
    result = ingest([path], scrub=False)
    assert not result.report.ok and not result.conversations
    entry = result.report.files[str(path)]
    assert [c["format"] for c in entry["candidates"]] == [f.name for f in candidate_formats(path.read_text(), "x")]
    assert all(c["declined"] for c in entry["candidates"])
    if len(entry["candidates"]) > 1:
        assert any(w.code == "candidates_declined" for w in result.report.warnings)


def test_fail_mode_still_raises_at_the_first_error_of_the_reader_that_reads():
    with pytest.raises(TraceError) as err:
        ingest([SHAPES / "deep_in_record.jsonl"], on_error="fail", scrub=False)
    assert err.value.code == "too_deep"
