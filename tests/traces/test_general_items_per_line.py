"""Responses-like items written one per line beside the messages (issue 30; docs/traces.md, "Items one per
line"): a session log whose records are messages (``role``) and role-less items typed ``function_call`` /
``function_call_output`` (or ``function_call_result``, CodeBuddy's spelling), with or without call ids, is read
as a Responses item list per session: a call item joins the assistant turn before it, a result is a tool
message. A record of another type (a session header) is no item: skipped and counted, never a message lost.

Fixture ``fixtures/shapes/items_per_line.jsonl``: hand-made, not a copy of a real file.
"""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest
from drafters.traces.model import ToolResultPart

from .conftest import codes, totals
from .test_bad_input import SHAPES

ITEMS = SHAPES / "items_per_line.jsonl"



def test_items_one_per_line_join_the_turn_before_them():
    result = ingest([ITEMS], scrub=False)
    assert result.report.ok, codes(result)
    assert "records_not_messages" in codes(result, "warnings")  # the session header, counted
    assert totals(result.conversations) == (1, 4, 2)
    calls = list(result.conversations[0].calls())
    assert [c.completion.text for c in calls] == ["Listing them.", "Two files: main.py and util.py.", "",
                                                  "It prints hi."]
    assert [p.name for p in calls[0].completion.tool_calls] == ["list_dir"]
    assert calls[0].completion.tool_calls[0].arguments == {"path": "src"}
    results = [p for m in calls[3].context for p in m.parts if isinstance(p, ToolResultPart)]
    assert [(r.call_id, r.content) for r in results] == [("fc_1", "main.py\nutil.py"), (None, "print('hi')")]
    assert [m.role for m in calls[1].context] == ["user", "assistant", "tool"]


def test_a_record_of_another_type_holding_a_message_is_not_skipped(tmp_path):
    lines = ITEMS.read_text().splitlines()
    lines.insert(2, json.dumps({"type": "note", "session": "s9", "entry": {"role": "user", "content": "Quick!"}}))
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(lines))
    result = ingest([path], scrub=False)
    assert "content_not_mapped" in codes(result)
