"""UI messages whose tool calls live in ``parts`` beside a text ``content`` (issue 30; docs/traces.md, "Calls in
UI message parts"): the AI SDK's ``useChat`` messages keep the reply's text in ``content`` and, in ``parts``, each
tool call with its result (v4 ``tool-invocation`` parts, v5 ``tool-NAME`` parts) between ``step-start`` markers.
Read from the content alone, the calls were lost while the file was reported ok; the general path reads the parts
(a result ends its call, as a result block inside a reply does), and the mapping ``infer-mapping`` writes names
the key it does not read.

Fixture ``fixtures/shapes/ui_message_parts.json``: hand-made, not a copy of a real file.
"""

from __future__ import annotations

import json

from drafters.traces.formats._shapes import calls_not_read
from drafters.traces.formats._spellings import tool_invocation
from drafters.traces.ingest import ingest
from drafters.traces.model import ToolCallPart, ToolResultPart

from .conftest import codes, totals
from .test_bad_input import SHAPES

PARTS = SHAPES / "ui_message_parts.json"


def test_calls_in_parts_are_read_with_their_results():
    result = ingest([PARTS], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 4, 2)
    calls = list(result.conversations[0].calls())
    assert [c.completion.text for c in calls] == ["", "It is 18 C in Paris.", "", "21 C in Lima."]
    assert [c.completion.tool_calls[0].arguments for c in calls[::2]] == [{"city": "Paris"}, {"city": "Lima"}]
    assert calls[2].completion.tool_calls[0].name == "weather"  # v5: the name is in the part's type
    results = [p for m in calls[3].context for p in m.parts if isinstance(p, ToolResultPart)]
    assert [(r.call_id, json.loads(r.content) if r.content.startswith("{") else r.content) for r in results] == [
        ("call_1", {"temp": 18}), ("call_2", "21 C")]


def test_tool_invocation_parts_and_the_unread_key_they_make():
    assert tool_invocation({"type": "step-start"}) == []
    assert tool_invocation({"type": "text", "text": "x"}) is None
    pending = tool_invocation({"type": "tool-invocation", "toolInvocation": {"state": "call", "toolCallId": "c",
                                                                             "toolName": "f", "args": {}}})
    assert [type(p) for p in pending] == [ToolCallPart]  # not run yet: the call alone
    msgs = json.loads(PARTS.read_text())
    assert calls_not_read(msgs, ["parts", "id"]) == ["parts"]  # a mapping reading content alone would lose them


def test_calls_under_a_key_no_rule_reads_refuse_the_conversation(tmp_path):
    msgs = [{"role": "user", "content": "Go."},
            {"role": "assistant", "content": "On it.", "actions": [{"name": "run", "arguments": {"cmd": "ls"}}]},
            {"role": "user", "content": "Thanks."}, {"role": "assistant", "content": "Done."}]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"history": msgs}))  # no chat format claims it: the general path reads it
    result = ingest([path], scrub=False)
    assert not result.report.ok and result.conversations == []  # never ok with the call lost
    assert any(p.code == "content_not_mapped" and "actions" in p.message for p in result.report.errors)


def test_a_tool_result_part_is_a_result_not_a_tool_named_result(tmp_path):
    # TanStack AI's UI parts: "tool-call" {id, name, arguments, output} then "tool-result" {toolCallId, content};
    # "tool-result" was read as the AI SDK's "tool-NAME" part, a call of a tool named "result": ok, counts wrong
    parts = [{"type": "text", "content": "Let me look at the schema."},
             {"type": "tool-call", "id": "t1", "name": "getSchemaInfo", "arguments": "{}", "state": "input-complete",
              "output": {"tables": ["customers"]}},
             {"type": "tool-result", "toolCallId": "t1", "content": "{\"tables\":[\"customers\"]}", "state": "complete"},
             {"type": "text", "content": "There is one table: customers."}]
    doc = {"prompt": "Which tables?", "messages": [
        {"id": "m1", "role": "user", "parts": [{"type": "text", "content": "Which tables?"}]},
        {"id": "m2", "role": "assistant", "parts": parts}]}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert [t.name for t in first.completion.tool_calls] == ["getSchemaInfo"]
    assert second.context[-1].tool_results[0].content == "{\"tables\":[\"customers\"]}"
    assert tool_invocation({"type": "tool-result", "toolCallId": "t1", "content": "x"}) is None
