"""Consecutive assistant messages in the general path (issue 30; docs/traces.md, "Consecutive assistant
messages"): a message flagged as a thought is the reasoning of the answer it precedes, never a call of its
own; chunks of a streamed reply are one answer; two unflagged assistant messages with nothing between them are
two calls only when each shows a call of its own (step / response id, usage, another author), else one call
written as two records (joined, with an ``adjacent_answers_joined`` warning; a mapping declares otherwise).

Fixture ``fixtures/shapes/thought_chunks.json``: hand-made (a saved prompt whose model turns are written as a
thought chunk, or two, followed by the reply chunk; a last turn without a thought); not a copy of a real file.
"""

from __future__ import annotations

import json

import pytest

from drafters.traces.ingest import ingest

from .conftest import codes, totals
from .test_bad_input import SHAPES


def _write(tmp_path, doc, name="doc.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _ingest_lines(tmp_path, lines):
    path = tmp_path / "lines.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return ingest([path], scrub=False)


def _turns(*msgs):
    return {"conversation": {"turns": [dict(m) for m in msgs]}}



def test_thought_chunks_are_the_reasoning_of_the_answer_they_precede():
    doc = json.loads((SHAPES / "thought_chunks.json").read_text())
    turns = doc["prompt"]["turns"]
    answers = [t for i, t in enumerate(turns) if t["role"] == "model" and not t.get("isThought")]
    result = ingest([SHAPES / "thought_chunks.json"], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, len(answers), 0) == (1, 3, 0)
    calls = list(result.conversations[0].calls())
    assert [c.completion.text for c in calls] == [a["text"] for a in answers]
    assert calls[0].completion.reasoning == "2^10 is 1024; 10^3 is 1000."
    assert calls[1].completion.reasoning == "1024 - 1000 = 24.Check: 1000 + 24 = 1024."
    assert calls[2].completion.reasoning == ""
    # the thought is in no context as visible text or as an assistant turn of its own
    assert [m.role for m in calls[1].context] == ["user", "assistant", "user"]
    assert "1024; 10^3" not in "".join(m.text for m in calls[1].context)
    # the keys the reading ignored are listed, the ones it read (isThought) are not
    (warning,) = [w for w in result.report.warnings if w.code == "generic_mapping"]
    assert "finishReason" in warning.message and "isThought" not in warning.message.split("keys not read")[1]


def test_a_thought_with_no_answer_after_it_is_refused(tmp_path):
    doc = _turns({"role": "user", "text": "q"}, {"role": "model", "isThought": True, "text": "hmm"},
                 {"role": "user", "text": "hello?"}, {"role": "model", "text": "a"})
    result = ingest([_write(tmp_path, doc)], scrub=False)
    assert not result.report.ok and codes(result) == ["ambiguous_turns"] and not result.conversations


def test_thought_by_type_and_gemini_thought_parts(tmp_path):
    doc = {"dialog": [{"role": "user", "content": "q"},
                        {"role": "assistant", "type": "reasoning", "content": "think"},
                        {"role": "assistant", "content": "a"}]}
    result = ingest([_write(tmp_path, doc)], scrub=False)
    assert result.report.ok and totals(result.conversations) == (1, 1, 0)
    (call,) = result.conversations[0].calls()
    assert (call.completion.reasoning, call.completion.text) == ("think", "a")
    doc = {"contents": [{"role": "user", "parts": [{"text": "q"}]},
                        {"role": "model", "parts": [{"text": "think", "thought": True}, {"text": "a"}]}]}
    result = ingest([_write(tmp_path, doc, "g.json")], scrub=False)
    assert result.report.ok and totals(result.conversations) == (1, 1, 0)
    (call,) = result.conversations[0].calls()
    assert (call.completion.reasoning, call.completion.text) == ("think", "a")


def test_stream_chunks_are_one_answer(tmp_path):
    doc = _turns({"role": "user", "text": "q"}, {"role": "assistant", "partial": True, "text": "Hel"},
                 {"role": "assistant", "partial": True, "text": "lo"}, {"role": "assistant", "text": "!"})
    result = ingest([_write(tmp_path, doc)], scrub=False)
    assert result.report.ok and totals(result.conversations) == (1, 1, 0)
    assert next(result.conversations[0].calls()).completion.text == "Hello!"


def test_two_unflagged_answers_in_a_row_are_one_call_and_the_report_says_so(tmp_path):
    doc = _turns({"role": "user", "text": "q"}, {"role": "assistant", "text": "a"},
                 {"role": "assistant", "text": "b", "tool_calls": [{"id": "c1", "function": {
                     "name": "f", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": "c1", "text": "r"}, {"role": "assistant", "text": "c"})
    result = ingest([_write(tmp_path, doc)], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert first.completion.text == "ab" and [p.name for p in first.completion.tool_calls] == ["f"]
    assert [m.role for m in second.context] == ["user", "assistant", "tool"]
    (warning,) = [w for w in result.report.warnings if w.code == "adjacent_answers_joined"]
    assert warning.message.startswith("1 pair(s)") and "adjacent_answers: separate" in warning.message


def test_two_answers_each_with_a_call_of_its_own_are_two_calls(tmp_path):
    for a, b in (({"usage": {"output_tokens": 1}}, {"usage": {"output_tokens": 2}}),
                 ({"step_id": 2}, {"step_id": 3}), ({"author": "planner"}, {"author": "writer"})):
        doc = _turns({"role": "user", "text": "q"}, {"role": "assistant", "text": "a", **a},
                     {"role": "assistant", "text": "b", **b})
        result = ingest([_write(tmp_path, doc)], scrub=False)
        assert result.report.ok and totals(result.conversations) == (1, 2, 0), (a, codes(result))
    doc = _turns({"role": "user", "text": "q"}, {"role": "assistant", "text": "a", "step_id": 2},
                 {"role": "assistant", "text": "b", "step_id": 2})
    result = ingest([_write(tmp_path, doc)], scrub=False)
    assert result.report.ok and totals(result.conversations) == (1, 1, 0)  # the same step: one call


def test_a_mapping_says_what_two_answers_in_a_row_are(tmp_path):
    """The mapping infer-mapping writes joins them as the general path does; one line declares otherwise."""
    from drafters.traces.mapping_file import mapping_from_dict, parse_mapping
    from drafters.traces.report import TraceError

    doc = _turns({"role": "user", "text": "q"}, {"role": "assistant", "text": "a"},
                 {"role": "assistant", "text": "b"})
    path = _write(tmp_path, doc)
    base = {"name": "t", "messages": "$.conversation.turns", "role": "role",
            "roles": {"user": "user", "assistant": "assistant"}, "content": "text"}
    expected = {"refuse": None, "join": (1, 1, 0), "separate": (1, 2, 0), None: (1, 2, 0)}  # None: the default
    for mode, want in expected.items():
        mapping = mapping_from_dict({**base, **({"adjacent_answers": mode} if mode else {})})
        result = ingest([path], scrub=False, mapping=mapping)
        if want is None:
            assert codes(result) == ["ambiguous_turns"] and "adjacent_answers" in result.report.errors[0].message
        else:
            assert result.report.ok and totals(result.conversations) == want, mode
    joined = ingest([path], scrub=False, mapping=mapping_from_dict({**base, "adjacent_answers": "join"}))
    assert next(iter(joined.conversations[0].calls())).completion.text == "ab"
    with pytest.raises(TraceError, match="adjacent_answers") as e:
        parse_mapping(json.dumps({**base, "adjacent_answers": "guess"}))
    assert e.value.code == "bad_mapping"


def test_infer_mapping_writes_the_general_paths_reading_of_adjacent_answers():
    from drafters.traces.formats import _shapes
    from drafters.traces.model import Source

    lines = [{"sid": "s", "role": "user", "content": "q"}, {"sid": "s", "role": "assistant", "content": "a"},
             {"sid": "s", "role": "assistant", "content": "b"}]
    shape = _shapes.infer([(Source("generic", "f.jsonl", line=i), v) for i, v in enumerate(lines, 1)])
    assert shape.mapping.adjacent_answers == "join" and shape.mapping.to_dict()["adjacent_answers"] == "join"


def test_an_answer_re_sent_as_it_grew_is_read_as_its_last_version(tmp_path):
    """A chat app saving each update of a streamed reply writes the message again, grown: joining the copies would
    repeat the text (the trial's "The capitalThe capital of France is..."). Each grown copy replaces the one before,
    with a ``resent_versions_read_last`` warning; records of one id written block by block are still joined."""
    lines = [{"session_id": "s", "id": "m1", "role": "user", "content": "Capital of France?"},
             {"session_id": "s", "id": "m2", "role": "assistant", "content": "The capital"},
             {"session_id": "s", "id": "m2", "role": "assistant", "content": "The capital of France is"},
             {"session_id": "s", "id": "m2", "role": "assistant", "content": "The capital of France is Paris."},
             {"session_id": "s", "id": "m3", "role": "user", "content": "And of Italy?"},
             {"session_id": "s", "id": "m4", "role": "assistant", "content": "Rome."},
             {"session_id": "s", "id": "m4", "role": "assistant", "content": " It has been since 1871."}]
    result = _ingest_lines(tmp_path, lines)
    assert result.report.ok and totals(result.conversations) == (1, 2, 0), codes(result)
    first, second = result.conversations[0].calls()
    assert first.completion.text == "The capital of France is Paris."
    assert second.completion.text == "Rome. It has been since 1871."  # two blocks, neither holding the other
    (warning,) = [w for w in result.report.warnings if w.code == "resent_versions_read_last"]
    assert warning.message.startswith("2 assistant record(s)")


def test_re_sent_copies_under_a_join_mapping_and_as_stream_chunks_are_one_answer(tmp_path):
    from drafters.traces.mapping_file import mapping_from_dict

    grown = [{"role": "assistant", "text": "Paris"}, {"role": "assistant", "text": "Paris is the capital."}]
    doc = _turns({"role": "user", "text": "q"}, *grown)
    mapping = mapping_from_dict({"name": "t", "messages": "$.conversation.turns", "role": "role", "content": "text",
                                 "roles": {"user": "user", "assistant": "assistant"}, "adjacent_answers": "join"})
    for kwargs, flag in (({"mapping": mapping}, {}), ({}, {"partial": True}), ({}, {})):
        doc = _turns({"role": "user", "text": "q"}, {**grown[0], **flag}, grown[1])
        result = ingest([_write(tmp_path, doc)], scrub=False, **kwargs)
        assert result.report.ok and totals(result.conversations) == (1, 1, 0), (kwargs, flag, codes(result))
        assert next(result.conversations[0].calls()).completion.text == "Paris is the capital."
        assert "resent_versions_read_last" in [w.code for w in result.report.warnings]


def test_re_sent_versions_with_a_trimmed_space_or_a_tool_call_growing(tmp_path):
    """A later save trims the trailing space (``"Hi there! "`` then ``"Hi there!"``); a tool call re-sent as its
    arguments stream in (same id and name): each is the last version, not a second text or a second call."""
    lines = [{"id": "u", "role": "user", "content": "Say hi, then list the disk."},
             {"id": "a", "role": "assistant", "content": "Hi"}, {"id": "a", "role": "assistant", "content": "Hi there! "},
             {"id": "a", "role": "assistant", "content": "Hi there!"},
             {"id": "v", "role": "user", "content": "Now the disk."},
             {"id": "b", "role": "assistant", "content": "Running df.", "tool_calls": [
                 {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": '{"cmd": "d'}}]},
             {"id": "b", "role": "assistant", "content": "Running df.", "tool_calls": [
                 {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": '{"cmd": "df -h"}'}}]},
             {"id": "t", "role": "tool", "tool_call_id": "c1", "content": "/dev/sda1 50%"}]
    result = _ingest_lines(tmp_path, lines)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)
    first, second = result.conversations[0].calls()
    assert first.completion.text == "Hi there!"
    assert second.completion.text == "Running df." and second.completion.tool_calls[0].arguments == {"cmd": "df -h"}
