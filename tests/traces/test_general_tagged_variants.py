"""Messages written as externally tagged variants (issue 30; docs/traces.md, "Messages as tagged variants"):
Rust serde writes an enum as a one-key object, so a conversation dump may hold ``{"text": {role, content,
tool_calls}}`` and ``{"tool": {name, call_id, output}}`` items (Forge). The general path reads the message each
variant holds, a result variant as a tool message (its text under ``output`` when there is no ``content``), and
leaves a list with a variant of another kind as it is (refused, never guessed).

Fixture ``fixtures/shapes/tagged_variants.json``: hand-made, not a copy of a real file.
"""

from __future__ import annotations

import json

from drafters.traces.formats._wrapped_messages import untagged_variants
from drafters.traces.ingest import ingest
from drafters.traces.model import ToolResultPart

from .conftest import codes, totals
from .test_bad_input import SHAPES

TAGGED = SHAPES / "tagged_variants.json"


def test_tagged_variants_are_read_as_the_messages_they_hold():
    result = ingest([TAGGED], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert [m.role for m in first.context] == ["system", "user"] and first.completion.text == "Reading it."
    assert first.completion.tool_calls[0].arguments == {"path": "a.txt"}
    (res,) = [p for m in second.context for p in m.parts if isinstance(p, ToolResultPart)]
    assert res.call_id == "t1" and json.loads(res.content) == {"is_error": False, "values": [{"text": "x\ny\n"}]}
    assert second.completion.text == "It has 2 lines."  # the usage beside the variant is metadata


def test_a_variant_of_another_kind_leaves_the_list_as_it_is(tmp_path):
    doc = json.loads(TAGGED.read_text())
    doc["context"]["messages"].insert(2, {"image": {"url": "file://a.png"}})
    assert untagged_variants(doc) == doc  # which message an image variant is would be a guess
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False)
    assert not result.report.ok and result.conversations == []


def test_message_and_marks_pairs_are_read_as_the_messages(tmp_path):
    """AgentScope's memory: ``[[message, marks], ...]``; a system-role message of tool results is tool input; the
    agent's ``_sys_prompt``, two levels above the list, heads the conversation."""
    pairs = [[{"role": "user", "name": "user", "content": [{"type": "text", "text": "Read a.md"}]}, []],
             [{"role": "assistant", "name": "Friday", "content": [
                 {"type": "tool_use", "id": "u1", "name": "read_file", "input": {"path": "a.md"}}]}, ["hint"]],
             [{"role": "system", "name": "system", "content": [
                 {"type": "tool_result", "id": "u1", "name": "read_file", "output": [{"type": "text", "text": "# A"}]}]},
              []],
             [{"role": "assistant", "name": "Friday", "content": [{"type": "text", "text": "It is a heading."}]}, []]]
    path = tmp_path / "session.json"
    path.write_text(json.dumps({"agent": {"memory": {"content": pairs}, "name": "Friday", "_sys_prompt": "Be brief."}}))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    second = list(result.conversations[0].calls())[1]
    assert [m.role for m in second.context] == ["system", "user", "assistant", "tool"]  # the agent's prompt too
    assert second.context[0].parts[0].text == "Be brief."
    assert second.context[3].parts[0].content == "# A" and second.completion.text == "It is a heading."


def _lc(cls: str, **kwargs) -> dict:
    """A LangChain message as ``dumpd`` serializes it."""
    return {"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", cls],
            "kwargs": {"additional_kwargs": {}, "response_metadata": {}, **kwargs}}


def test_langchain_serialized_messages_are_the_messages_they_hold(tmp_path):
    msgs = [_lc("SystemMessage", content="You are a weather bot."), _lc("HumanMessage", content="Paris?"),
            _lc("AIMessage", content="", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "c1",
                                                      "type": "tool_call"}], invalid_tool_calls=[]),
            _lc("ToolMessage", content="18C", tool_call_id="c1", name="get_weather"),
            _lc("AIMessage", content="It is 18C.", tool_calls=[], invalid_tool_calls=[])]
    path = tmp_path / "checkpoint.json"
    path.write_text(json.dumps({"channel_values": {"messages": msgs}}, indent=2))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert [m.role for m in first.context] == ["system", "user"]
    assert first.completion.tool_calls[0].arguments == {"city": "Paris"}
    assert second.context[-1].tool_results[0].call_id == "c1" and second.completion.text == "It is 18C."
    # an lc object that is no message (a prompt template, a secret) is left as it is
    assert untagged_variants({"lc": 1, "type": "secret", "id": ["OPENAI_API_KEY"]}) == {
        "lc": 1, "type": "secret", "id": ["OPENAI_API_KEY"]}
