"""A declared mapping whose key is not in the records is an error, never a quiet loss of content.

The export here is an in-house shape written for these tests (a helpdesk log of ``who`` / ``txt`` turns with
``calls``); the expected counts are walked from the raw records, not from the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import mapping_from_dict
from drafters.traces.report import TraceError

from .conftest import totals

RECORDS = [
    {"conv": "c1", "log": [
        {"who": "u", "txt": "Is ticket 41 closed?"},
        {"who": "a", "txt": "Checking.", "calls": [{"cid": "k1", "fn": "ticket", "params": {"n": 41}}]},
        {"who": "t", "cid": "k1", "out": "ticket 41: open"},
        {"who": "a", "txt": "Ticket 41 is still open."}]},
    {"conv": "c2", "log": [
        {"who": "u", "txt": "Close 7 and 8."},
        {"who": "a", "calls": [{"cid": "k2", "fn": "close", "params": {"n": 7}},
                               {"cid": "k3", "fn": "close", "params": {"n": 8}}]},
        {"who": "t", "cid": "k2", "out": "closed 7"},
        {"who": "t", "cid": "k3", "out": "closed 8"},
        {"who": "a", "txt": "Both are closed."}]},
    {"conv": "c3", "log": [{"who": "u", "txt": "hello"}, {"who": "a", "txt": "Hi, how can I help?"}]},
]
MAPPING = {"name": "helpdesk", "messages": "$.log", "role": "who", "roles": {"u": "user", "a": "assistant", "t": "tool"},
           "content": "txt", "tool_calls": "calls", "tool_call": {"id": "cid", "name": "fn", "arguments": "params"},
           "tool_result": {"id": "cid", "content": "out"}, "id": "$.conv"}


def _raw_turns():
    """(line, index, turn) of every turn of the export."""
    return [(line, i, t) for line, r in enumerate(RECORDS, 1) for i, t in enumerate(r["log"])]


def _ingest(tmp_path: Path, on_error: str = "skip", records=RECORDS, **change):
    path = tmp_path / "helpdesk.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path, ingest([path], scrub=False, on_error=on_error, mapping=mapping_from_dict({**MAPPING, **change}))


def _codes(report):
    return sorted(p.code for p in report.errors)


def test_correct_mapping_reads_everything(tmp_path):
    _, result = _ingest(tmp_path)
    report = result.report
    assert report.ok and report.counts["conversations"] == len(RECORDS)
    n_calls = sum(len(t.get("calls", [])) for _, _, t in _raw_turns())
    assert report.counts["tool_calls"] == n_calls == 3


def test_content_key_absent_is_an_error_per_message_not_empty_text(tmp_path):
    path, result = _ingest(tmp_path, content="text")
    report = result.report
    # Every user turn and every assistant turn without calls needs its content: walked from the raw turns.
    want = [(line, f"$.log[{i}].text") for line, i, t in _raw_turns() if t["who"] == "u" or
            (t["who"] == "a" and not t.get("calls"))]
    assert len(want) == 6
    assert [(p.line, p.field) for p in report.errors] == want
    assert _codes(report) == ["mapping_field_missing"] * 6 and not report.ok
    assert "content key 'text'" in report.errors[0].message and "$.log[0].text" in report.errors[0].message
    assert report.counts["conversations"] == 0 and report.files[str(path)]["status"] == "refused"


def test_content_key_absent_fails_with_where_on_error_fail(tmp_path):
    path = tmp_path / "helpdesk.jsonl"
    with pytest.raises(TraceError) as info:
        _ingest(tmp_path, on_error="fail", content="text")
    assert info.value.code == "mapping_field_missing" and info.value.where == f"{path}:1 ($.log[0].text)"


def test_tool_result_content_key_absent(tmp_path):
    _, result = _ingest(tmp_path, tool_result={"id": "cid", "content": "output"})
    report = result.report
    want = [(line, f"$.log[{i}].output") for line, i, t in _raw_turns() if t["who"] == "t"]
    assert len(want) == 3 and [(p.line, p.field) for p in report.errors] == want
    assert _codes(report) == ["mapping_field_missing"] * 3 and "tool_result.content" in report.errors[0].message
    assert report.counts["conversations"] == 1  # only c3 has no tool result


def test_tool_call_name_key_absent(tmp_path):
    _, result = _ingest(tmp_path, tool_call={"id": "cid", "name": "function", "arguments": "params"})
    report = result.report
    want = [(line, f"$.log[{i}].calls[{k}].function") for line, i, t in _raw_turns()
            for k, _ in enumerate(t.get("calls", []))]
    assert [(p.line, p.field) for p in report.errors] == want
    assert _codes(report) == ["mapping_field_missing"] * 3 and "tool_call.name" in report.errors[0].message


def test_tool_calls_key_that_never_matches_is_a_file_error(tmp_path):
    path, result = _ingest(tmp_path, tool_calls="invocation")
    report = result.report
    # c2's first answer is only calls: read without them it has no content either, so that is said too.
    missing, err = report.errors
    assert (missing.code, missing.line, missing.field) == ("mapping_field_missing", 2, "$.log[1].txt")
    assert (err.code, err.file, err.line, err.field) == ("mapping_field_never_matched", str(path), None, "tool_calls")
    n_assistant = sum(t["who"] == "a" for _, _, t in _raw_turns())
    n_with_calls = sum(bool(t.get("calls")) for _, _, t in _raw_turns())
    assert f"none of the file's {n_assistant} assistant messages" in err.message
    assert f"'calls' x{n_with_calls}" in err.message and "'invocation'" in err.message
    assert report.files[str(path)]["status"] == "partial"


def test_arguments_key_that_never_matches_is_a_file_error(tmp_path):
    _, result = _ingest(tmp_path, tool_call={"id": "cid", "name": "fn", "arguments": "args"})
    report = result.report
    (err,) = report.errors
    assert (err.code, err.field) == ("mapping_field_never_matched", "tool_call.arguments")
    assert "'params' x3" in err.message and "none of the file's 3 tool calls" in err.message


def test_optional_keys_absent_without_other_data_stay_ok(tmp_path):
    """An export without any tool calls, whose mapping declares them: nothing is lost, nothing said."""
    records = [{"conv": "c9", "log": [{"who": "u", "txt": "hi"}, {"who": "a", "txt": "hello", "ts": "12:00"}]}]
    _, result = _ingest(tmp_path, records=records)
    assert result.report.ok and result.report.counts["conversations"] == 1


@pytest.mark.parametrize("field", ["tools", "id"])
def test_record_path_that_never_matches_is_a_file_error(tmp_path, field):
    """A declared ``tools`` or ``id`` JSONPath that finds nothing in any record (``$.tool_box`` where the
    export says ``toolbox``) used to leave the file ok while the tool definitions (or the ids) were lost."""
    records = [{**r, "toolbox": [{"name": "ticket", "parameters": {"type": "object"}}]} for r in RECORDS]
    good = {"tools": "$.toolbox", "id": "$.conv"}
    _, result = _ingest(tmp_path, records=records, **good)
    assert result.report.ok and all(c.tools for c in result.conversations)
    path, result = _ingest(tmp_path, records=records, **{**good, field: "$.tool_box"})
    (err,) = result.report.errors
    assert (err.code, err.file, err.field) == ("mapping_field_never_matched", str(path), field)
    assert f"none of the file's {len(RECORDS)} records" in err.message and "'toolbox' x3" in err.message
    assert "'log'" not in err.message  # the messages are mapped
    assert result.report.files[str(path)]["status"] == "partial"


def test_a_message_without_the_role_key_says_so(tmp_path):
    records = [{"conv": "c1", "log": [{"txt": "Is ticket 41 closed?"}, {"who": "a", "txt": "Yes."}]}]
    _, result = _ingest(tmp_path, records=records)
    (err,) = result.report.errors
    assert (err.code, err.line, err.field) == ("unknown_role", 1, "$.log[0]")
    assert "has no role key 'who'" in err.message


def test_reasoning_key_is_read_as_reasoning(tmp_path):
    """A mapping's ``reasoning`` key: an assistant's thoughts are reasoning (they were dropped, file ok,
    0 reasoning characters); an answer with thoughts and calls but no text needs no content key."""
    records = [{"conv": "c1", "log": [
        {"who": "u", "txt": "Is ticket 41 closed?"},
        {"who": "a", "think": "Look it up first.", "calls": [{"cid": "k1", "fn": "ticket", "params": {"n": 41}}]},
        {"who": "t", "cid": "k1", "out": "ticket 41: open"},
        {"who": "a", "think": "It is open.", "txt": "Ticket 41 is still open."},
        {"who": "u", "txt": "Thanks."}, {"who": "a", "txt": "You're welcome."}]}]  # no thoughts: no reasoning
    _, dropped = _ingest(tmp_path, records=records)
    assert dropped.report.chars["reasoning"] == 0  # without the key the thoughts are not read
    _, result = _ingest(tmp_path, records=records, reasoning="think")
    report = result.report
    assert report.ok and report.chars["reasoning"] == len("Look it up first.") + len("It is open.")
    kinds = [[type(p).__name__ for p in m.parts] for m in result.conversations[0].messages if m.role == "assistant"]
    assert kinds == [["ReasoningPart", "ToolCallPart"], ["ReasoningPart", "TextPart"], ["TextPart"]]


def test_tool_calls_under_a_key_the_mapping_does_not_read_are_an_error(tmp_path):
    """A mapping without ``tool_calls`` reads every text, but calls kept under ``actions`` (a name and arguments)
    would be lost: the message keeping them is ``content_not_mapped`` at its path and its conversation dropped; a
    tool message keeping the call it answers (LobeChat's ``plugin``) is refused the same way."""
    mapping = mapping_from_dict({"name": "bot", "messages": "$.log", "role": "who", "content": "txt",
                                 "roles": {"u": "user", "a": "assistant", "t": "tool"},
                                 "tool_result": {"id": "cid", "content": "out"}})
    records = [{"log": [{"who": "u", "txt": "Is ticket 41 closed?"},
                        {"who": "a", "txt": "Checking.", "actions": [{"id": "k1", "name": "ticket",
                                                                      "arguments": {"n": 41}}]},
                        {"who": "t", "cid": "k1", "out": "ticket 41: open"}, {"who": "a", "txt": "Still open."}]},
               {"log": [{"who": "u", "txt": "hello"}, {"who": "a", "txt": "Hi, how can I help?"}]},
               {"log": [{"who": "t", "cid": "w", "out": "sunny, 25 C",
                         "plugin": {"apiName": "weather", "arguments": "{\"city\": \"Hangzhou\"}"}},
                        {"who": "u", "txt": "Weather in Hangzhou?"}, {"who": "a", "txt": "Sunny, 25 C."}]}]
    path = tmp_path / "bot.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = ingest([str(path)], mapping=mapping, scrub=False)
    errors = [e for e in result.report.errors if e.code == "content_not_mapped"]
    assert [e.field for e in errors] == ["$.log[1].actions", "$.log[0].plugin"]
    assert not result.report.ok and len(result.conversations) == 1  # only the conversation without calls


def test_an_id_with_records_messages_is_refused_not_ignored():
    """With ``records: messages`` each record is one message: an ``id`` path was read nowhere, silently (a new
    user's trial declared ``id: $.session`` to part two interleaved sessions); the error names ``group``."""
    with pytest.raises(TraceError) as err:
        mapping_from_dict({"name": "events", "records": "messages", "messages": "$", "role": "author",
                           "roles": {"agent": "assistant", "human": "user"}, "content": "body", "id": "$.session"})
    assert err.value.code == "bad_mapping" and "group: PATH" in err.value.message
    mapping_from_dict({"name": "events", "records": "messages", "messages": "$", "role": "author",  # group: accepted
                       "roles": {"agent": "assistant", "human": "user"}, "content": "body", "group": "$.session"})


def test_tool_definitions_the_readers_do_not_know_are_an_error(tmp_path):
    """A declared ``tools`` path holding ``{fn, params}`` entries (a new user's own layout) was read as no tools,
    with only a ``no_tool_definitions`` warning; hosted tools without a schema stay unflagged."""
    record = {"req": {"fns": [{"fn": "get_weather", "params": {"city": "string"}}],
                      "msgs": [{"who": "usr", "text": "Weather in Lyon?"}, {"who": "bot", "text": "Sunny."}]}}
    path = tmp_path / "log.json"
    path.write_text(json.dumps(record))
    mapping = {"name": "log", "messages": "$.req.msgs", "role": "who", "roles": {"usr": "user", "bot": "assistant"},
               "content": "text", "tools": "$.req.fns"}
    result = ingest([path], scrub=False, mapping=mapping_from_dict(mapping))
    assert not result.report.ok and "tools_not_understood" in _codes(result.report)
    record["req"]["fns"] = [{"type": "web_search_preview"}, {"googleSearch": {}},
                            {"name": "get_weather", "parameters": {"type": "object"}}]
    path.write_text(json.dumps(record))
    result = ingest([path], scrub=False, mapping=mapping_from_dict(mapping))
    assert result.report.ok, _codes(result.report)
    assert [t.name for t in result.conversations[0].tools] == ["get_weather"]


def test_a_message_per_line_is_reported_at_its_line(tmp_path):
    """``records: messages`` reads a run of lines as one list, but the user's file holds a message a line: a missing
    key is placed at that line (line 5, ``$.txt``), not at the run's first line as ``$[4].txt``."""
    lines = [{"s": "a", "who": "u", "txt": "hello"}, {"s": "a", "who": "a", "txt": "hi"},
             {"s": "a", "who": "u", "txt": "how are you?"}, {"s": "a", "who": "a", "txt": "fine"},
             {"s": "a", "who": "u", "body": "and you?"}, {"s": "a", "who": "a", "txt": "well"}]
    path = tmp_path / "lines.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    mapping = mapping_from_dict({"name": "lines", "records": "messages", "messages": "$", "group": "$.s",
                                 "role": "who", "roles": {"u": "user", "a": "assistant"}, "content": "txt"})
    result = ingest([path], scrub=False, mapping=mapping)
    (error,) = [e for e in result.report.errors if e.code == "mapping_field_missing"]
    assert (error.line, error.field) == (5, "$.txt") and "($.txt)" in error.message


def test_content_not_understood_names_the_message_holding_it(tmp_path):
    path = tmp_path / "odd.jsonl"
    rows = [{"role": "user", "content": "q1 about the weather"}, {"role": "assistant", "content": "sunny"},
            {"role": "user", "content": {"weird": [1, 2]}}, {"role": "assistant", "content": "ok"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = ingest([path], scrub=False)
    (error,) = [e for e in result.report.errors if e.code == "unknown_content"]
    assert "the first in message 3 of the conversation, the user's" in error.message


def test_observation_objects_are_read_with_the_declared_tool_result_keys(tmp_path):
    """A step's ``observation`` holding result objects: the declared ``tool_result`` keys pick each result's text
    and call (the whole object was read as the result's text, and a misspelt key was never checked)."""
    steps = [{"who": "u", "txt": "Look up invoice 55 and 56."},
             {"who": "a", "txt": "", "calls": [{"cid": 7, "fn": "invoice", "params": {"n": 55}},
                                               {"cid": 8, "fn": "invoice", "params": {"n": 56}}],
              "obs": [{"cid": 8, "out": "total 80.0", "ms": 30}, {"cid": 7, "out": "total 120.0", "ms": 31}]},
             {"who": "a", "txt": "They total 120.00 and 80.00."}]
    path = tmp_path / "steps.jsonl"
    path.write_text(json.dumps({"conv": "c9", "log": steps}) + "\n")
    declared = {**MAPPING, "observation": "obs", "tool_result": {"id": "cid", "content": "out"}}
    result = ingest([path], scrub=False, mapping=mapping_from_dict(declared))
    assert result.report.ok and totals(result.conversations) == (1, 2, 2), result.report.errors
    results = list(result.conversations[0].calls())[1].context[-1].parts
    assert [(r.call_id, r.content) for r in results] == [("8", "total 80.0"), ("7", "total 120.0")]
    wrong = {**declared, "tool_result": {"id": "cid", "content": "outptu"}}
    result = ingest([path], scrub=False, mapping=mapping_from_dict(wrong))
    assert not result.conversations and {e.code for e in result.report.errors} == {"mapping_field_missing"}
