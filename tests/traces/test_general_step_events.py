"""Step event logs (issue 30; docs/traces.md, "Step event logs"): model output logged as events of loop steps
(step begin, content parts, tool calls, tool results) beside input messages in a ``message`` envelope, as Kimi
Code CLI's wire log writes it. Each step with output is one call; a step whose request produced nothing is no
call. What is not known is refused with a code, never guessed.

Fixture ``fixtures/shapes/step_events.jsonl``: hand-made (a system prompt set beside, one user turn answered in
two steps with a tool call between, a second user turn whose step produced nothing); not a copy of a real file.
"""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest
from drafters.traces.model import ReasoningPart

from .conftest import codes
from .test_bad_input import SHAPES

FIXTURE = SHAPES / "step_events.jsonl"


def _rows():
    return [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def _write(tmp_path, rows):
    path = tmp_path / "wire.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path



def _why(result):
    """The codes of the refusal: errors, and the general path's code where an earlier candidate reader was tried
    first (the ``candidates_declined`` warning names it)."""
    return " ".join(codes(result) + [w.message for w in result.report.warnings if w.code == "candidates_declined"])


def test_each_step_with_output_is_one_call():
    result = ingest([FIXTURE], scrub=False)
    assert result.report.ok, codes(result)
    (conv,) = result.conversations
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert conv.messages[0].text == "You are a careful shell assistant."
    first = conv.messages[2]
    assert [p.text for p in first.parts if isinstance(p, ReasoningPart)] == ["I will list them."]
    assert first.text == "Listing."
    assert [(c.id, c.name) for c in first.tool_calls] == [("t1", "Shell")]
    (result_part,) = conv.messages[3].parts
    assert (result_part.call_id, result_part.content, result_part.is_error) == ("t1", "3\n", False)
    assert conv.messages[4].text == "There are 3 files."
    assert any(w.code == "generic_mapping" and "step event log" in w.message for w in result.report.warnings)


def test_output_after_a_tool_result_in_the_same_step_is_refused(tmp_path):
    rows = [r for r in _rows() if r.get("event", {}).get("type") != "step_begin" or r["event"]["step"] != 2]
    result = ingest([_write(tmp_path, rows)], scrub=False)
    assert not result.conversations
    assert "ambiguous_turns" in _why(result)


def test_calls_after_a_compaction_are_refused(tmp_path):
    rows = _rows()
    rows.insert(10, {"type": "context.apply_compaction", "summary": "We listed the files."})
    result = ingest([_write(tmp_path, rows)], scrub=False)
    assert not result.conversations
    assert "handoff_context_not_recorded" in _why(result)


def test_a_compaction_at_the_end_is_no_call(tmp_path):
    rows = [*_rows(), {"type": "context.apply_compaction", "summary": "We listed the files."}]
    result = ingest([_write(tmp_path, rows)], scrub=False)
    assert result.report.ok, codes(result)
    assert sum(m.role == "assistant" for m in result.conversations[0].messages) == 2


def test_an_unknown_part_or_event_is_refused(tmp_path):
    rows = _rows()
    rows[6] = {"type": "loop_event", "event": {"type": "content_part", "step": 1, "part": {"type": "audio"}}}
    result = ingest([_write(tmp_path, rows)], scrub=False)
    assert not result.conversations and "unknown_content" in _why(result)
    rows = _rows()
    rows[6] = {"type": "loop_event", "event": {"type": "step_retry", "step": 1}}
    result = ingest([_write(tmp_path, rows)], scrub=False)
    assert not result.conversations and "unknown_content" in _why(result)


def test_a_system_prompt_changed_before_a_call_is_refused(tmp_path):
    rows = _rows()
    rows.insert(10, {"type": "settings", "systemPrompt": "You are a different assistant."})
    result = ingest([_write(tmp_path, rows)], scrub=False)
    assert not result.conversations
    assert "system_prompt_not_read" in _why(result)


def test_a_result_without_its_call_is_refused(tmp_path):
    rows = _rows()
    rows[8]["event"]["toolCallId"] = "t9"
    result = ingest([_write(tmp_path, rows)], scrub=False)
    assert not result.conversations
    assert "tool_result_not_found" in _why(result)


def test_a_step_that_records_its_failure_is_a_failed_call(tmp_path):
    rows = _rows()
    rows[12]["event"]["finishReason"] = "error"
    result = ingest([_write(tmp_path, rows)], scrub=False)
    (conv,) = result.conversations
    assert [m.failed for m in conv.messages if m.role == "assistant"] == [False, True]


def test_a_message_outside_the_envelope_is_refused(tmp_path):
    rows = _rows()
    rows.insert(13, {"type": "assistant", "content": "A reply written as a record of its own."})
    result = ingest([_write(tmp_path, rows)], scrub=False)
    assert not result.conversations
    assert "ambiguous_shape" in _why(result)
