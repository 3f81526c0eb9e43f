"""Messages written compactly (issue 30; docs/traces.md, "Messages in wrappers"): LangChain's message tuples
(``[["system", "..."], ["human", "Hi"], ["ai", "Hello"]]``), one-key objects keyed by the role (``{"user": "Hi"}``),
each perhaps a JSON string (Monocle's span events), and a reply written as a JSON string of ``{"assistant": ...}``.
The general path reads them as the messages they are; Gradio's ``[user, reply]`` text pairs stay pairs (a role word
alone in the first place of every pair is what makes a tuple a message). Documents are hand-made here."""

from __future__ import annotations

import json

from drafters.traces.formats._wrapped_messages import compact_messages

from .conftest import codes, ingest_json, totals

CHAT = [["system", "You are terse."], ["human", "What is 2+2?"], ["ai", "4"], ["human", "And 3+3?"], ["ai", "6"]]


def test_message_tuples_are_messages_not_user_reply_pairs(tmp_path):
    # read as Gradio pairs, each role word became a user message and each text a reply: 5 calls instead of 2
    result = ingest_json(tmp_path, {"messages": CHAT})
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    first, second = result.conversations[0].calls()
    assert [(m.role, m.text) for m in first.context] == [("system", "You are terse."), ("user", "What is 2+2?")]
    assert first.completion.text == "4" and second.completion.text == "6"


def test_role_keyed_objects_are_messages(tmp_path):
    doc = {"history": [{role: text} for role, text in CHAT]}
    result = ingest_json(tmp_path, doc)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    assert [m.role for m in list(result.conversations[0].calls())[1].context] == ["system", "user", "assistant", "user"]


def test_role_keyed_json_strings_with_a_role_keyed_reply(tmp_path):
    # Monocle's data.input / data.output events, as one request/response record per line
    record = {"input": [json.dumps({"system": "Classify the sentiment."}), json.dumps({"user": "I love it"})],
              "response": json.dumps({"assistant": '{"label": "positive"}'})}
    result = ingest_json(tmp_path, record)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 1, 0)
    (call,) = result.conversations[0].calls()
    assert [m.role for m in call.context] == ["system", "user"]
    assert call.completion.text == '{"label": "positive"}'


def test_a_tool_result_keyed_by_a_role_word_is_data_not_a_reply(tmp_path):
    """A tool returning ``{"assistant": "Bob"}`` (Pydantic AI's ``tool-return`` content, an Agents SDK handoff's
    ``function_call_output``): kept whole as the result (was read as a reply, the result text ``Bob``)."""
    history = [{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "Who handles billing?"}]},
               {"kind": "response", "model_name": "m", "parts": [
                   {"part_kind": "tool-call", "tool_name": "owner", "args": {"team": "billing"}, "tool_call_id": "c1"}]},
               {"kind": "request", "parts": [{"part_kind": "tool-return", "tool_name": "owner",
                                              "content": {"assistant": "Bob"}, "tool_call_id": "c1"}]},
               {"kind": "response", "model_name": "m", "parts": [{"part_kind": "text", "content": "Bob."}]}]
    items = [{"role": "user", "content": "Book it"},
             {"type": "function_call", "call_id": "c1", "name": "transfer", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": json.dumps({"assistant": "Concierge"})},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}]
    for doc, want in [(history, {"assistant": "Bob"}), (items, {"assistant": "Concierge"})]:
        result = ingest_json(tmp_path, doc)
        assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)
        last = list(result.conversations[0].calls())[-1]
        assert json.loads(last.context[-1].parts[0].content) == want


def test_what_is_not_compact_is_left_alone():
    assert compact_messages([["Hi", "Hello!"], ["2+2?", "4"]]) is None  # Gradio pairs: texts, not role words
    assert compact_messages([{"assistant": "4"}]) is None  # no user's or system's message: not a chat
    assert compact_messages([{"answer": "4", "user": "x"}]) is None  # two keys: a record, not a message
    assert compact_messages([["user", 3]]) is None  # content neither text nor blocks
    assert compact_messages([["prompt", "x"], ["answer", "y"]]) is None  # not chat role words


def test_named_speakers_turns_are_not_read_as_user_reply_pairs(tmp_path):
    # a simulation's transcript as [speaker, utterance] pairs: read as Gradio pairs, each name became a prompt
    turns = [["Alice", "Want to trade apples for pears?"], ["Bob", "How many apples?"], ["Alice", "Three."],
             ["Bob", "Deal."]]
    result = ingest_json(tmp_path, {"episode": 3, "turns": turns})
    assert not result.report.ok and totals(result.conversations) == (0, 0, 0)
    assert "unknown_format" in codes(result)
    gradio = [["Hello", "Hi! How can I help?"], ["What is 2+2?", "4"], ["Thanks", "You're welcome."]]
    result = ingest_json(tmp_path, {"history": gradio}, name="gradio.json")
    assert result.report.ok and totals(result.conversations) == (1, 3, 0)
