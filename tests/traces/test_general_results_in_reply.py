"""A tool result inside an assistant message (issue 30; docs/traces.md, "Tool results inside an assistant
message"): a ``tool_result`` block after the model's ``tool_use`` in the same message (a Claude.ai export) is
the environment's, not the model's. The call ends before it, the result is a tool message (its text found
under ``content`` / ``output`` / ``text`` / ..., nested block lists joined), and what the message holds after it
is a new call whose context includes the call and its result. A result block whose text is under no known key
is refused with a code, never read as an empty result.

Fixtures ``fixtures/shapes/results_in_reply.json`` (two conversations in a chat-export layout: sequential calls
with results under ``text`` and a nested ``content`` list; two parallel calls with results under ``output``, one
a JSON object) and ``fixtures/shapes/results_in_reply_calls.jsonl`` (a request/response record whose response
holds the call, its result and the answer): hand-made, not copies of real files.
"""

from __future__ import annotations

import json

from drafters.traces.formats._turns import split_at_results
from drafters.traces.ingest import ingest
from drafters.traces.model import Message, TextPart, ToolCallPart, ToolResultPart

from .conftest import codes, totals
from .test_bad_input import SHAPES


def _write(tmp_path, doc, name="doc.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_results_inside_an_assistant_message_end_its_calls():
    path = SHAPES / "results_in_reply.json"
    raw = json.loads(path.read_text())
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    # by hand: a result block ends a call; text after it is a new call (A: 3 + 1 after "Thanks!", B: 2)
    n_results = sum(b["type"] == "tool_result" for c in raw for m in c["chat_messages"] for b in m["content"])
    n_uses = sum(b["type"] == "tool_use" for c in raw for m in c["chat_messages"] for b in m["content"])
    assert (n_results, n_uses) == (4, 4)
    assert totals(result.conversations) == (2, 6, 4)
    a, b = result.conversations
    calls = list(a.calls())
    assert [m.role for m in a.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant", "user",
                                           "assistant"]
    # no completion holds a tool result: the model did not write it
    assert not any(c.completion.tool_results for conv in result.conversations for c in conv.calls())
    assert calls[0].completion.text == "Let me look for it." and calls[0].completion.tool_calls[0].name == "list_dir"
    assert [p.name for p in calls[1].completion.tool_calls] == ["read_file"]
    assert [m.role for m in calls[1].context] == ["user", "assistant", "tool"]
    assert calls[1].context[-1].tool_results[0].content == "todo.md\nideas.md"  # under "text"
    assert calls[2].context[-1].tool_results[0].content == "- water the plants\n- call Ana"  # nested content list
    assert calls[2].completion.text.startswith("It lists two tasks")
    assert [m.role for m in calls[3].context][-2:] == ["assistant", "user"]
    b_calls = list(b.calls())
    assert [len(c.completion.tool_calls) for c in b_calls] == [2, 0]
    (results,) = [m for m in b_calls[1].context if m.role == "tool"]
    assert [(r.call_id, r.content) for r in results.tool_results] == [
        ("w1", "Oslo: 2 C, snow"), ("w2", '{"temp_c": 19, "sky": "clear"}')]


def test_results_inside_a_recorded_response_end_its_call():
    path = SHAPES / "results_in_reply_calls.jsonl"
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert [p.name for p in first.completion.tool_calls] == ["shell"] and not first.completion.text
    assert [m.role for m in second.context] == ["user", "assistant", "tool"]
    assert second.context[-1].tool_results[0].content == "42 log.txt"
    assert second.completion.text == "log.txt has 42 lines." and not second.completion.tool_results


def _one_result(block, role="role"):
    return {"messages": [
        {role: "user", "content": "list it"},
        {role: "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}, block,
                                        {"type": "text", "text": "Two files."}]}]}


def test_a_result_block_whose_text_is_under_no_known_key_is_refused(tmp_path):
    # a chat-export layout (sender, chat_messages): the general path's
    messages = _one_result({"type": "tool_result", "tool_use_id": "t1", "stdout_lines": ["a", "b"]}, "sender")
    doc = [{"uuid": "c1", "chat_messages": messages["messages"]}]
    result = ingest([_write(tmp_path, doc)], scrub=False)
    assert result.conversations == [] and not result.report.ok
    assert codes(result) == ["content_not_mapped"] and "tool result" in result.report.errors[0].message
    assert result.report.errors[0].format == "generic"


def test_the_anthropic_reader_splits_the_same_layout_and_refuses_a_result_without_text(tmp_path):
    # role/content messages with Anthropic blocks are the Anthropic reader's: the same rule holds there
    ok = ingest([_write(tmp_path, _one_result({"type": "tool_result", "id": "t1", "text": "a b"}))], scrub=False)
    assert ok.report.ok, codes(ok)
    (conv,) = ok.conversations
    assert conv.source.format == "anthropic_messages" and totals(ok.conversations) == (1, 2, 1)
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    assert (conv.messages[2].tool_results[0].call_id, conv.messages[2].tool_results[0].content) == ("t1", "a b")
    bad = _one_result({"type": "tool_result", "tool_use_id": "t1", "stdout_lines": ["a", "b"]})
    result = ingest([_write(tmp_path, bad, "bad.json")], scrub=False)
    assert not result.report.ok and "unknown_content" in codes(result) and not result.conversations


def test_a_result_block_without_text_in_a_recorded_response_is_refused(tmp_path):
    rec = {"request": {"messages": [{"role": "user", "content": "list it"}]},
           "response": {"role": "assistant", "content": _one_result(
               {"type": "tool_result", "tool_use_id": "t1", "lines": ["a"]})["messages"][1]["content"]}}
    result = ingest([_write(tmp_path, rec, "calls.jsonl")], scrub=False)
    assert not result.report.ok and "unknown_content" in codes(result) and not result.conversations


def test_an_empty_result_text_is_an_empty_result_not_an_error(tmp_path):
    doc = _one_result({"type": "tool_result", "tool_use_id": "t1", "content": ""})
    result = ingest([_write(tmp_path, doc)], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    assert result.conversations[0].messages[2].tool_results[0].content == ""


def test_split_at_results_keeps_the_rest_of_the_message_as_it_was():
    call, res = ToolCallPart.from_raw("c", "f", {}), ToolResultPart("c", "out")
    plain = Message("assistant", [TextPart("hi")], model="m")
    split = Message("assistant", [res, TextPart("after")], model="m", supervised=False)
    out, raws = split_at_results([Message("tool", [ToolResultPart("x", "0")]), split, plain], ["t", "s", "p"])
    assert [m.role for m in out] == ["tool", "assistant", "assistant"]  # a leading result joins the tool message
    assert [r.call_id for r in out[0].tool_results] == ["x", "c"] and raws == ["t", "s", "p"]
    assert out[1].model == "m" and out[1].supervised is False and out[2] is plain
    out, raws = split_at_results([Message("assistant", [call, res])], ["r"])
    assert [m.role for m in out] == ["assistant", "tool"] and raws == ["r", None]
