"""A tool part holding its call and its result (OpenCode's ``tool`` parts: ``state.input`` beside
``state.output``), and messages whose text sits under another spelling than the list's content key (OpenCode
rows: a user's ``data.text``, an assistant's ``data.content``); issue 30, docs/traces.md. Documents are
hand-made in those layouts, not copies of real files."""

from __future__ import annotations

import json

from drafters.traces.formats._spellings import tool_invocation
from drafters.traces.ingest import ingest
from drafters.traces.model import ToolCallPart, ToolResultPart

from .conftest import codes, totals


def _row(kind, **data):
    return {"id": f"msg_{kind}", "type": kind, "seq": 1, "time_created": 1, "data": data}


def _tool(status, **state):
    return {"type": "tool", "id": "call_1", "name": "read", "state": {"status": status, "input": {"path": "a"},
                                                                     **state}}


def test_rows_with_tool_parts_read_as_calls_results_and_later_context(tmp_path):
    rows = [_row("user", text="Read a."),
            _row("assistant", content=[{"type": "reasoning", "text": "I read it."},
                                       _tool("completed", output="alpha\nbeta\n")]),
            _row("system", text="Skills are available."),
            _row("assistant", content=[{"type": "text", "text": "It holds alpha and beta."}])]
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(rows))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert first.completion.reasoning == "I read it." and [c.name for c in first.completion.tool_calls] == ["read"]
    assert [m.role for m in second.context] == ["user", "assistant", "tool", "system"]
    (res,) = second.context[2].tool_results
    assert (res.call_id, res.content, res.is_error) == ("call_1", "alpha\nbeta\n", False)
    assert second.completion.text == "It holds alpha and beta."


def test_a_tool_part_gives_its_call_and_its_result_once_run():
    call, res = tool_invocation(_tool("completed", output="x"))
    assert isinstance(call, ToolCallPart) and (call.id, call.name, call.arguments) == ("call_1", "read", {"path": "a"})
    assert isinstance(res, ToolResultPart) and (res.call_id, res.content, res.is_error) == ("call_1", "x", False)
    (_, err) = tool_invocation(_tool("error", error="no such file"))
    assert (err.content, err.is_error) == ("no such file", True)
    (_, structured) = tool_invocation(_tool("completed", content=[], structured={"uri": "f", "content": "text"}))
    assert structured.content == "text"  # v2: an empty content list, the file's text under structured
    (pending,) = tool_invocation(_tool("running"))  # not run yet: the call alone
    assert isinstance(pending, ToolCallPart)
    assert tool_invocation({"type": "tool", "id": "c", "state": {"status": "completed"}}) is None  # no input


def test_a_message_without_the_lists_content_key_is_read_from_another_spelling(tmp_path):
    doc = {"messages": [{"role": "user", "text": "q"}, {"role": "assistant", "content": "a"},
                        {"role": "user", "content": "more"}, {"role": "assistant", "content": "b"}]}
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    first, _ = result.conversations[0].calls()
    assert [m.text for m in first.context] == ["q"]
    assert not any("keys not read: text" in w.message for w in result.report.warnings)
