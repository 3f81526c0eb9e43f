"""Reasoning records between messages (issue 30; docs/traces.md, "Consecutive assistant messages"): a line whose
role value names reasoning (``type: reasoning``, a Responses API reasoning item written as a message line, as
Grok CLI's chat history does) is the model's thought before the answer after it: its ``summary`` texts become
reasoning of that answer, never a call of their own. A reasoning record followed by no answer, or whose summary
is not readable text, is refused with a code, not guessed.

Fixture ``fixtures/shapes/reasoning_records.jsonl``: hand-made (two calls, each preceded by a reasoning record);
not a copy of a real file.
"""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest
from drafters.traces.model import ReasoningPart

from .conftest import codes
from .test_bad_input import SHAPES

FIXTURE = SHAPES / "reasoning_records.jsonl"



def _lines(tmp_path, rows):
    path = tmp_path / "chat_history.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_reasoning_records_are_the_thought_of_the_answer_after_them():
    result = ingest([FIXTURE], scrub=False)
    assert result.report.ok, codes(result)
    (conv,) = result.conversations
    roles = [m.role for m in conv.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    first, second = conv.messages[2], conv.messages[4]
    assert [p.text for p in first.parts if isinstance(p, ReasoningPart)] == ["I should open main.py first."]
    assert [c.name for c in first.tool_calls] == ["open_file"]
    assert [p.text for p in second.parts if isinstance(p, ReasoningPart)] == ["It prints done."]
    assert second.text == "It prints `done`."


def test_a_reasoning_record_with_no_answer_after_it_is_refused(tmp_path):
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()][:-1]  # the last answer dropped
    result = ingest([_lines(tmp_path, rows)], scrub=False)
    assert not result.report.ok
    assert not result.conversations
    assert "ambiguous_turns" in codes(result)


def test_a_reasoning_record_without_readable_summary_is_refused(tmp_path):
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    rows[2] = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "<opaque>"}
    result = ingest([_lines(tmp_path, rows)], scrub=False)
    assert not result.report.ok
    assert not result.conversations
