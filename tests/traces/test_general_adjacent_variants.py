"""Messages and blocks written as serde adjacently tagged variants (issue 30; docs/traces.md, "Adjacently
tagged variants"): ``{"kind": "Prompt" | "AssistantMessage" | "ToolResults", "content": [...]}`` messages whose
blocks are ``{"kind": "text", "data": "..."}`` / ``{"kind": "toolUse", "data": {toolUseId, name, input}}`` /
``{"kind": "toolResult", "data": {toolUseId, content, status}}`` (a Rust agent CLI's session lines). Hand-made
lines in that layout, not copies of a real file."""

from __future__ import annotations

import json

from drafters.traces.formats._spellings import block_part
from drafters.traces.ingest import ingest
from drafters.traces.model import TextPart, ToolCallPart, ToolResultPart

from .conftest import codes, totals


def _line(kind, *blocks):
    return {"kind": kind, "message_id": f"m-{kind}", "content": list(blocks), "meta": {"timestamp": 1}}


def test_a_session_of_adjacently_tagged_lines(tmp_path):
    lines = [_line("Prompt", {"kind": "text", "data": "Read a.py"}),
             _line("AssistantMessage", {"kind": "text", "data": "Reading it."},
                   {"kind": "toolUse", "data": {"toolUseId": "t1", "name": "fsRead", "input": {"path": "a.py"}}}),
             _line("ToolResults", {"kind": "toolResult", "data": {
                 "toolUseId": "t1", "content": [{"kind": "text", "data": "print(1)"}], "status": "success"}}),
             _line("AssistantMessage", {"kind": "text", "data": "It prints 1."})]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert first.completion.text == "Reading it." and first.completion.tool_calls[0].arguments == {"path": "a.py"}
    assert [m.role for m in second.context] == ["user", "assistant", "tool"]
    assert second.context[2].tool_results[0].content == "print(1)"


def test_an_adjacently_tagged_block_is_its_payload_typed_by_its_tag():
    assert block_part({"kind": "text", "data": "hi"}) == TextPart("hi")
    call = block_part({"type": "tool_use", "data": {"id": "c", "name": "f", "input": {}}})
    assert isinstance(call, ToolCallPart) and (call.id, call.name) == ("c", "f")
    res = block_part({"kind": "toolResult", "data": {"toolUseId": "c", "content": "ok", "status": "error"}})
    assert isinstance(res, ToolResultPart) and (res.call_id, res.content, res.is_error) == ("c", "ok", True)
