"""Message lines inside a ``turn`` envelope, with content blocks typed by ``kind`` and their payload under the
key their kind names (issue 30; docs/traces.md, "Session logs"): ``{"kind": "entry", "turn": {"message":
{role, content: [{"kind": "tool_call", "tool_call": {id, name, arguments}}]}}}`` (Evener's transcripts). A
``kind`` that names no block kind the reader knows (VS Code chat's ``markdownContent``) is not read as a type.

Fixture ``fixtures/shapes/turn_entries.jsonl``: hand-made, not a copy of a real file.
"""

from __future__ import annotations

from drafters.traces.formats._spellings import block_part
from drafters.traces.ingest import ingest
from drafters.traces.model import ReasoningPart, TextPart, ToolCallPart, ToolResultPart

from .conftest import codes, totals
from .test_bad_input import SHAPES

TURNS = SHAPES / "turn_entries.jsonl"


def test_turn_entries_with_kind_typed_blocks_are_read():
    result = ingest([TURNS], scrub=False)
    assert result.report.ok, codes(result)
    assert "records_not_messages" in codes(result, "warnings")  # the header, counted
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert [type(p) for p in first.completion.parts] == [ReasoningPart, TextPart, ToolCallPart]
    assert first.completion.tool_calls[0].arguments == {"cmd": "pwd"}
    (res,) = [p for m in second.context for p in m.parts if isinstance(p, ToolResultPart)]
    assert (res.call_id, res.content) == ("c1", "/home/dev") and second.completion.text == "In /home/dev."


def test_a_kind_that_is_no_block_kind_is_not_a_type():
    assert block_part({"kind": "markdownContent", "value": "Hi"}) == TextPart("Hi")
    assert isinstance(block_part({"kind": "tool_use", "tool_use": {"id": "u", "name": "f", "input": {}}}), ToolCallPart)
