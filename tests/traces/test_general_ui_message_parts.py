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


def _ui_chat(tmp_path, assistant_parts, **assistant):
    doc = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in SF and LA?"}]},
           {"id": "a1", "role": "assistant", "parts": assistant_parts, **assistant}]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(doc))
    return ingest([path], scrub=False, dedup=False)


def _tool(call_id, city, **done):
    return {"type": "tool-getWeather", "toolCallId": call_id, "input": {"city": city}, **done}


def test_a_steps_parallel_tool_parts_are_one_reply(tmp_path):
    """Two tool parts in one step, each with its output: one reply of two calls, then both results (read before as
    call, result, call, result: an invented reply calling LA after SF's result, 4 calls instead of 3)."""
    ok = {"state": "output-available"}
    result = _ui_chat(tmp_path, [{"type": "step-start"}, _tool("c1", "SF", **ok, output={"tempF": 60}),
                                 _tool("c2", "LA", **ok, output={"tempF": 78}), {"type": "step-start"},
                                 {"type": "text", "text": "SF 60F, LA 78F."}])
    assert result.report.ok and totals(result.conversations) == (1, 2, 2), codes(result)
    first, second = result.conversations[0].calls()
    assert [p.arguments for p in first.completion.tool_calls] == [{"city": "SF"}, {"city": "LA"}]
    assert [m.role for m in second.context] == ["user", "assistant", "tool"]


def test_a_tool_part_that_failed_keeps_its_error_and_steps_stay_apart(tmp_path):
    """v5 ``output-error`` keeps the tool's error in ``errorText`` (was lost: the call had no result and was glued to
    the next step's text); v4 invocations numbered by ``step`` are calls of their own steps, not parallel."""
    result = _ui_chat(tmp_path, [{"type": "step-start"}, _tool("c1", "SF", state="output-available", output="60F"),
                                 {"type": "step-start"}, _tool("c2", "Atlantis", state="output-error",
                                                               errorText="unknown city"),
                                 {"type": "step-start"}, {"type": "text", "text": "SF is 60F; Atlantis is unknown."}])
    assert result.report.ok and totals(result.conversations) == (1, 3, 2), codes(result)
    last = list(result.conversations[0].calls())[-1]
    (error,) = [p for p in last.context[-1].parts if isinstance(p, ToolResultPart)]
    assert error.is_error and error.content == "unknown city"
    v4 = [{"type": "tool-invocation", "toolInvocation": {"state": "result", "step": n, "toolCallId": f"c{n}",
                                                          "toolName": "getWeather", "args": {"city": city},
                                                          "result": "ok"}} for n, city in enumerate(["SF", "LA"])]
    result = _ui_chat(tmp_path, [*v4, {"type": "text", "text": "Both fine."}])
    assert result.report.ok and totals(result.conversations) == (1, 3, 2), codes(result)


def test_flat_content_beside_tool_parts_is_not_read_alone(tmp_path):
    """AI SDK v4 ``useChat`` messages: ``content`` holds the last step's text, ``parts`` / ``toolInvocations`` the
    calls. The OpenAI chat reader took the content alone (``ok``, 1 call, no tool call); it now declines, and the
    general path reads the parts."""
    invocation = {"state": "result", "step": 0, "toolCallId": "c1", "toolName": "getWeather",
                  "args": {"city": "SF"}, "result": "60F"}
    doc = {"id": "chat-1", "messages": [
        {"id": "u1", "role": "user", "content": "Weather in SF?"},
        {"id": "a1", "role": "assistant", "content": "SF is 60F.", "toolInvocations": [invocation],
         "parts": [{"type": "tool-invocation", "toolInvocation": invocation}, {"type": "text", "text": "SF is 60F."}]}]}
    path = tmp_path / "usechat.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)  # the call, then the text


def test_text_between_a_steps_tool_parts_is_the_same_reply(tmp_path):
    """One step (between ``step-start`` markers) holding text, a tool, text, a tool: one reply of both calls, then
    their results (the text between them had split the step into two replies, the second after a result the model
    had not seen, ``ok``: a new-user trial)."""
    ok = {"state": "output-available"}
    result = _ui_chat(tmp_path, [{"type": "step-start"}, {"type": "text", "text": "SF first."},
                                 _tool("c1", "SF", **ok, output="60F"), {"type": "text", "text": "Now LA."},
                                 _tool("c2", "LA", **ok, output="78F"), {"type": "step-start"},
                                 {"type": "text", "text": "SF 60F, LA 78F."}])
    assert result.report.ok and totals(result.conversations) == (1, 2, 2), codes(result)
    first = next(iter(result.conversations[0].calls()))
    assert first.completion.text == "SF first.Now LA." and len(first.completion.tool_calls) == 2


def test_a_source_part_is_a_counted_citation_not_lost_content(tmp_path):
    """The AI SDK's ``source-url`` parts (a provider's citations attached to the reply): counted placeholders, left
    out (were ``unknown_content``, the file refused)."""
    result = _ui_chat(tmp_path, [{"type": "step-start"}, {"type": "text", "text": "SF is 60F."},
                                 {"type": "source-url", "sourceId": "s1", "url": "https://weather.example/sf"}])
    assert result.report.ok and totals(result.conversations) == (1, 1, 0), codes(result)
    assert "unsupported_content" in codes(result, "warnings")


def test_v4_tool_invocations_with_or_without_parts(tmp_path):
    """AI SDK v4 ``useChat`` messages: before 4.2 the calls only in ``toolInvocations`` (numbered by ``step``), from
    4.2 also as ``parts``. Read by their steps, the list beside the parts being the same calls (both were refused,
    ``content_not_mapped``)."""
    invs = [{"state": "result", "step": 0, "toolCallId": "c1", "toolName": "weather", "args": {"city": "SF"},
             "result": "60F"},
            {"state": "result", "step": 0, "toolCallId": "c2", "toolName": "weather", "args": {"city": "LA"},
             "result": "78F"},
            {"state": "result", "step": 1, "toolCallId": "c3", "toolName": "alerts", "args": {"city": "LA"},
             "result": "none"}]
    message = {"id": "a1", "role": "assistant", "content": "SF 60F, LA 78F, no alerts.", "toolInvocations": invs}
    doc = [{"id": "u1", "role": "user", "content": "Weather in SF and LA?"}, message]
    for name, msg in [("old.json", message), ("new.json", {**message, "parts": [
            {"type": "step-start"}, *({"type": "tool-invocation", "toolInvocation": i} for i in invs[:2]),
            {"type": "step-start"}, {"type": "tool-invocation", "toolInvocation": invs[2]}, {"type": "step-start"},
            {"type": "text", "text": message["content"]}]})]:
        path = tmp_path / name
        path.write_text(json.dumps([doc[0], msg]))
        result = ingest([path], scrub=False, dedup=False)
        assert result.report.ok and totals(result.conversations) == (1, 3, 3), (name, codes(result))
        assert [len(c.completion.tool_calls) for c in result.conversations[0].calls()] == [2, 1, 0]


def test_a_tool_returning_a_list_keeps_its_json(tmp_path):
    """A tool's output that is a JSON list of strings (``["a.txt", "b.txt"]``) is that JSON, not the strings joined
    (``a.txtb.txt``, ``ok``: a new-user trial); a list of content blocks is still read as its text."""
    result = _ui_chat(tmp_path, [{"type": "step-start"}, _tool("c1", "SF", state="output-available",
                                                               output=["a.txt", "b.txt"]),
                                 {"type": "step-start"}, {"type": "text", "text": "Two files."}])
    assert result.report.ok, codes(result)
    last = list(result.conversations[0].calls())[-1]
    (res,) = [p for p in last.context[-1].parts if isinstance(p, ToolResultPart)]
    assert json.loads(res.content) == ["a.txt", "b.txt"]
    assert tool_invocation(_tool("c2", "LA", state="output-available",
                                 output=[{"type": "text", "text": "78F"}]))[1].content == "78F"


def test_parts_inside_a_content_object_are_read(tmp_path):
    """Mastra's stored messages (format 2): ``content`` is an object holding the UI parts, the flat text and the
    v4 ``toolInvocations``. The OpenAI chat reader took the ``{"messages": [...]}`` file and wrote each content
    object as JSON text; the general path read the bare list's text alone, the call and its result dropped (both
    ``ok``, a new-user trial)."""
    inv = {"state": "result", "step": 0, "toolCallId": "call_1", "toolName": "weatherTool",
           "args": {"location": "Oslo"}, "result": {"temperature": 7, "conditions": "Overcast"}}
    msgs = [{"id": "u1", "role": "user", "type": "v2", "threadId": "t1",
             "content": {"format": 2, "parts": [{"type": "text", "text": "Weather in Oslo?"}],
                         "content": "Weather in Oslo?"}},
            {"id": "a1", "role": "assistant", "type": "v2", "threadId": "t1",
             "content": {"format": 2, "parts": [{"type": "step-start"}, {"type": "tool-invocation", "toolInvocation": inv},
                                                {"type": "step-start"}, {"type": "text", "text": "Oslo is 7C."}],
                         "toolInvocations": [inv], "content": "Oslo is 7C."}}]
    for name, doc in {"list.json": msgs, "thread.json": {"messages": msgs}}.items():
        (tmp_path / name).write_text(json.dumps(doc))
        result = ingest([tmp_path / name], scrub=False, dedup=False)
        assert result.report.ok and totals(result.conversations) == (1, 2, 1), (name, codes(result))
        first, second = result.conversations[0].calls()
        assert first.completion.tool_calls[0].arguments == {"location": "Oslo"} and second.completion.text == "Oslo is 7C."
        assert [p.call_id for m in second.context for p in m.parts if isinstance(p, ToolResultPart)] == ["call_1"]
