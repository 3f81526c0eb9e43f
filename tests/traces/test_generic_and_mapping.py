"""The general path (message lists found by their shape) and declared mappings.

Fixtures under fixtures/generic/ (fixtures/README.md): written from the documented shapes of exports that
have no module here (LangChain ``FileChatMessageHistory`` / ``messages_to_dict``, Cohere v1 chat request
bodies with ``chat_history``), a preference-pair file (two lists per record), and an in-house export with
its declared mapping. Expected values are walked from the raw JSON here and were checked by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drafters.traces.detect import detect_format
from drafters.traces.ingest import ingest
from drafters.traces.json_paths import jsonpath
from drafters.traces.mapping_file import load_mapping, mapping_from_dict, parse_mapping
from drafters.traces.report import TraceError

G = Path(__file__).parent / "fixtures" / "generic"


def _warning(report, code):
    (w,) = [p for p in report.warnings if p.code == code]
    return w.message


def test_langchain_message_dicts_by_shape():
    raw = json.loads((G / "langchain_chat_history.json").read_text(encoding="utf-8"))
    n_ai = sum(m["type"] == "ai" for m in raw)
    n_calls = sum(len(m["data"].get("tool_calls") or []) for m in raw)
    assert (n_ai, n_calls) == (2, 1)  # by hand
    text = (G / "langchain_chat_history.json").read_text(encoding="utf-8")
    assert detect_format(text, "langchain_chat_history.json").name == "generic"
    result = ingest([G / "langchain_chat_history.json"], scrub=False)
    report = result.report
    assert report.ok and (report.counts["calls"], report.counts["tool_calls"]) == (n_ai, n_calls)
    conv = result.conversations[0]
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert conv.messages[3].tool_results[0].call_id == conv.messages[2].tool_calls[0].id == "call_77"
    mapping = _warning(report, "generic_mapping")
    assert "messages at $ " in mapping and "role from type" in mapping and "content from data.content" in mapping


def test_cohere_chat_history_and_what_was_not_read():
    rows = [json.loads(line) for line in (G / "cohere_chat_history.jsonl").read_text(encoding="utf-8").splitlines()]
    n_bot = sum(m["role"] == "CHATBOT" for r in rows for m in r["chat_history"])
    result = ingest([G / "cohere_chat_history.jsonl"], scrub=False)
    report = result.report
    assert report.ok and (report.counts["conversations"], report.counts["calls"]) == (2, n_bot) == (2, 3)
    first = result.conversations[0].messages
    assert (first[0].role, first[0].text) == ("system", rows[0]["preamble"])  # the record's preamble is read
    tool = first[3]
    assert tool.role == "tool" and tool.tool_results[0].content == '[{"temp_c": 21}]'
    mapping = _warning(report, "generic_mapping")
    assert "$.chat_history" in mapping and "content from message" in mapping
    assert "record keys not read: model (2), message (2)" in mapping
    assert "without a parameter schema (1)" in mapping


def test_two_message_lists_in_a_record_are_refused_not_guessed():
    report = ingest([G / "preference_pairs.json"], scrub=False).report
    assert not report.ok and [p.code for p in report.errors] == ["ambiguous_shape"]
    assert "$.chosen" in report.errors[0].message and "$.rejected" in report.errors[0].message


def test_a_message_outside_the_one_list_read_refuses_the_record(tmp_path):
    """A map of recorded calls (a hash per call: its input and its output) is an object of records keyed by id,
    each a request/response record: read as such, the calls chained. With a value of another kind beside them it
    is no such object: only the first call's input holds a list with an answer, but its own output and the other
    call's messages would be lost: refused, not read."""
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "bye"}]
    doc = {"a1": {"input": {"messages": msgs}, "output": {"message": {"role": "assistant", "content": "Bye!"}}},
           "b2": {"input": {"messages": msgs[:1]}, "output": {"message": {"role": "assistant", "content": "Hello!"}}}}
    path = tmp_path / "recorded.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False)
    assert result.report.ok, result.report.errors
    (conv,) = result.conversations
    assert [(len(c.context), c.completion.text) for c in conv.calls()] == [(1, "Hello!"), (3, "Bye!")]
    doc["settings"] = {"model": "gpt-4o", "temperature": 0}
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False)
    assert result.conversations == [] and "content_not_mapped" in [p.code for p in result.report.errors]
    assert any("$.a1.output.message" in p.message for p in result.report.errors)


def test_in_house_format_refused_by_shape_then_read_with_its_declared_mapping():
    data = G / "inhouse_support.jsonl"
    assert not ingest([data], scrub=False).report.ok  # unknown speakers, unknown keys: refused
    result = ingest([data], scrub=False, mapping=G / "inhouse_support.mapping.yaml")
    report = result.report
    assert report.formats == {"mapping:support-bot": 1}
    (conv,) = result.conversations
    assert conv.id.endswith(":s-1001")
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    call = conv.messages[1].tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("a1", "order_status", {"order": 5521})
    assert conv.messages[2].tool_results[0].call_id == "a1"
    assert conv.tools[0].parameters["required"] == ["order"]
    assert (report.counts["calls"], report.counts["tool_calls"]) == (2, 1)
    (err,) = report.errors  # the second record's "supervisor" is not in the mapping: said, with where
    assert (err.code, err.line, err.field) == ("unknown_role", 2, "$.turns[1]") and "supervisor" in err.message


@pytest.mark.parametrize("change, field", [
    ({"roles": {"customer": "human"}}, "roles"),
    ({"messages": "turns"}, "messages"),
    ({"colour": "blue"}, "colour"),
    ({"content": {"key": "utterance"}}, "content"),
    ({"tool_call": {"id": ["action_id"]}}, "tool_call"),
    ({"tool_result": {"output": "text"}}, "tool_result"),
    ({"name": "n" * 41}, "name"),
    ({"roles": {"customer": ["user"]}}, "roles"),
])
def test_bad_mapping_is_refused_with_the_field(change, field):
    base = {"messages": "$.turns", "role": "speaker", "roles": {"customer": "user"}}
    with pytest.raises(TraceError) as info:
        mapping_from_dict({**base, **change}, "m.yaml")
    assert info.value.code == "bad_mapping" and field in info.value.where


def test_mapping_text_is_bounded_before_it_is_read():
    """A YAML alias bomb (9**8 leaves from a few lines) is refused by counting, not by expanding it."""
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    lines += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]
    with pytest.raises(TraceError) as info:
        parse_mapping("\n".join([*lines, "messages: $.turns", "role: speaker", "roles: {customer: user}"]), "b.yaml")
    assert info.value.code == "bad_mapping" and info.value.where == "b.yaml ((file))"
    with pytest.raises(TraceError) as info:
        parse_mapping("[" * 100_000, "deep.yaml")
    assert info.value.code == "bad_mapping" and info.value.where == "deep.yaml"
    m = parse_mapping((G / "inhouse_support.mapping.yaml").read_text(encoding="utf-8").replace("name: support-bot", ""),
                      "in-house.mapping.yaml")
    assert m.format().name == "mapping:in-house.mapping"  # no name: the file's, never a path


def test_jsonpath_subset():
    doc = {"a b": [{"m": [1]}, {"m": [2, 3]}], "x": {"y": 5}}
    assert jsonpath(doc, "$['a b'][*].m") == [("$.a b[0].m", [1]), ("$.a b[1].m", [2, 3])]
    assert jsonpath(doc, "$.x.y") == [("$.x.y", 5)] and jsonpath(doc, "$['a b'][1].m[0]")[0][1] == 2
    assert jsonpath(doc, "$.nope") == []
    with pytest.raises(ValueError):
        jsonpath(doc, "$..m")
    assert load_mapping(G / "inhouse_support.mapping.yaml").tool_call["name"] == "tool"


def test_a_mapping_never_reads_past_a_history_it_does_not_read(tmp_path):
    """Rows of one prompt and one answer beside the earlier turns (``history`` as ``[query, response]`` pairs, or
    as messages): a mapping reading only ``query`` / ``response`` would lose the history, so such a record is
    refused (``content_not_mapped``); a record without one is read."""
    rows = [{"query": "And 3+3?", "response": "6", "history": [["2+2?", "4"]]},
            {"query": "Hi", "response": "Hello!", "history": [],  # spans typed like roles hold no history
             "spans": [{"type": "agent", "name": "planner"}, {"type": "llm", "name": "chat"}]},
            {"query": "Next?", "response": "Done.", "history": [{"role": "user", "content": "Go"},
                                                                {"role": "assistant", "content": "Going."}]}]
    path = tmp_path / "swift.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    mapping = mapping_from_dict({"name": "qa", "messages": "$.query", "response": "$.response", "role": "role",
                             "roles": {"user": "user"}, "content": "content"})
    result = ingest([path], scrub=False, mapping=mapping)
    assert not result.report.ok
    assert [(e.code, e.line, e.field) for e in result.report.errors] == [
        ("content_not_mapped", 1, "history"), ("content_not_mapped", 3, "history")]
    assert len(result.conversations) == 1


def test_a_tool_result_linked_to_no_call_is_never_kept(tmp_path):
    """Open Interpreter's saved conversation with ``computer`` declared a tool: the code the model ran is a message
    of type ``code`` (read as text, not as a call), so the console output after it answers no call the reading
    found: the conversation is refused (``tool_result_without_call``), never kept with a result linked to nothing."""
    msgs = [{"role": "user", "type": "message", "content": "Which files are over 500 MB?"},
            {"role": "assistant", "type": "message", "content": "I'll list them."},
            {"role": "assistant", "type": "code", "format": "shell", "content": "find ~ -size +500M"},
            {"role": "computer", "type": "console", "format": "output", "content": "/Users/ana/big.iso"},
            {"role": "assistant", "type": "message", "content": "One file: big.iso."}]
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps(msgs))
    mapping = mapping_from_dict({"name": "oi", "records": "messages", "messages": "$", "role": "role",
                                 "roles": {"user": "user", "assistant": "assistant", "computer": "tool"},
                                 "content": "content"}, "oi")
    result = ingest([path], scrub=False, mapping=mapping)
    assert result.conversations == [] and "tool_result_without_call" in [e.code for e in result.report.errors]
