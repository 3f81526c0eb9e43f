"""Session logs read by the general path (issue 30; docs/traces.md, "Session logs: spellings, metadata lines,
failed turns"): camelCase role and block spellings (``toolResult``, ``toolCall``), envelope lines
(``{"type": "message", "message": {...}}``) beside header / settings lines that are skipped and counted, and
assistant turns that record their own failure (an aborted request with no output is no call; calls of a turn
that errored are never run, so no result is expected).

Fixture ``fixtures/shapes/session_entries.jsonl``: hand-made, not a copy of a real file.
"""

from __future__ import annotations

import json

from drafters.traces.formats._spellings import block_part, failed_turn, role_of, snake
from drafters.traces.ingest import ingest
from drafters.traces.model import ToolCallPart

from .conftest import codes, totals
from .test_bad_input import SHAPES


def _write(tmp_path, lines, name="log.jsonl"):
    if name.endswith(".json"):
        (tmp_path / name).write_text(json.dumps(lines))
        return tmp_path / name
    path = tmp_path / name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_camel_case_spellings():
    assert snake("toolResult") == "tool_result" and snake("Tool-Result") == "tool_result"
    assert role_of("toolResult") == "tool" and role_of("functionResult") == "tool"
    # message classes (AutoGen, LangChain): the role before "Message"
    assert [role_of(v) for v in ("AssistantMessage", "UserMessage", "SystemMessage", "AIMessage", "HumanMessage",
                                 "ToolMessage", "FunctionExecutionResultMessage")] == [
        "assistant", "user", "system", "assistant", "user", "tool", "tool"]
    assert role_of("ChatMessage") is None and role_of("message") is None and role_of("TextMessage") is None
    part = block_part({"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}})
    assert isinstance(part, ToolCallPart) and part.name == "read" and part.arguments == {"path": "a"}


def test_failed_turn_spellings():
    assert failed_turn({"stopReason": "aborted"}) and failed_turn({"finish_reason": "error"})
    assert failed_turn({"role": "assistant", "errorMessage": "terminated"})
    assert not failed_turn({"stopReason": "toolUse"}) and not failed_turn({"finish_reason": "stop", "error": None})


def test_session_log_with_header_lines_and_failed_turns():
    path = SHAPES / "session_entries.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    # by hand: 12 lines, 2 not messages (header, setting change); 5 assistant messages, one aborted with no
    # output (no call): 4 calls; tool calls c1, c2, c3 (c2 and c3 in a turn that errored, never run)
    assert sum(x["type"] != "message" for x in lines) == 2
    assert totals(result.conversations) == (1, 4, 3)
    warnings = codes(result, "warnings")
    assert warnings.count("unpaired_tool_call") == 2 and "failed_turn_skipped" in warnings
    assert "records_not_messages" in warnings and "tool_result_not_found" not in codes(result)
    (conv,) = result.conversations
    calls = list(conv.calls())
    assert [m.role for m in calls[1].context] == ["user", "assistant", "tool"]
    assert calls[1].context[-1].tool_results[0].content == "fern\nbasil\nmint"
    assert calls[1].completion.reasoning == "three lines"
    # the aborted turn is in no context: two user messages in a row
    assert [m.role for m in calls[2].context][-3:] == ["assistant", "user", "user"]
    assert calls[2].completion.failed and [p.name for p in calls[2].completion.tool_calls] == ["water", "water"]
    assert calls[3].completion.text == "No, that is all."


def test_unanswered_calls_without_a_failure_record_are_still_refused(tmp_path):
    lines = [json.loads(x) for x in (SHAPES / "session_entries.jsonl").read_text().splitlines()]
    for x in lines:
        if x.get("message", {}).get("stopReason") == "error":
            del x["message"]["stopReason"], x["message"]["errorMessage"]
    result = ingest([_write(tmp_path, lines)], scrub=False)
    assert not result.report.ok and "tool_result_not_found" in codes(result)


def test_a_message_outside_the_envelope_is_never_skipped(tmp_path):
    lines = [json.loads(x) for x in (SHAPES / "session_entries.jsonl").read_text().splitlines()]
    lines += [{"type": "note"}] * 60 + [{"role": "assistant", "content": "a reply written without the envelope"}]
    result = ingest([_write(tmp_path, lines)], scrub=False)
    assert not result.report.ok and "content_not_mapped" in codes(result)


def test_message_classes_with_untyped_calls_and_results():
    """Fixture ``fixtures/shapes/message_classes.json`` (hand-made, AutoGen-core-like): roles as message classes
    under ``type``, calls as untyped ``{id, name, arguments}`` blocks, results as untyped ``{content, call_id}``
    blocks, the text before the calls under ``thought``."""
    result = ingest([SHAPES / "message_classes.json"], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 2)
    (conv,) = result.conversations
    first_call, second = conv.calls()
    assert [p.name for p in first_call.completion.tool_calls] == ["read_sensor", "read_sensor"]
    assert first_call.completion.tool_calls[1].arguments == {"sensor": "humidity"}
    assert first_call.completion.reasoning == "Check both sensors first."
    assert [m.role for m in second.context] == ["system", "user", "assistant", "tool"]
    assert [(r.call_id, r.content) for r in second.context[-1].tool_results] == [("f1", "31 C"), ("f2", "80 %")]
    assert second.completion.text.startswith("Yes: 31 C")


def test_untyped_blocks_read_only_when_unambiguous():
    call = block_part({"id": "f1", "name": "read", "arguments": "{}"})
    assert isinstance(call, ToolCallPart) and call.id == "f1"
    assert not isinstance(block_part({"name": "read", "content": "x"}), ToolCallPart)  # text beside it: not a call
    result = block_part({"content": "ok", "call_id": "f1"})
    assert result.call_id == "f1" and result.content == "ok"


def test_recorded_calls_with_a_result_object_without_a_role(tmp_path):
    """Fixture ``fixtures/shapes/recorder_calls.json`` (hand-made, AutoGen-recorder-like): records of input
    messages and a role-less result ``{finish_reason, content, usage, ...}``; a record whose input extends an
    earlier record's input and answer continues its conversation."""
    path = SHAPES / "recorder_calls.json"
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 3, 0)
    first_conv = result.conversations[0]
    assert [c.completion.text for c in first_conv.calls()] == ["Basil, of the three.", "Fern needs the least."]
    # an identical copy right after its record: a call made twice or one written twice is not guessed
    recs = json.loads(path.read_text())
    result = ingest([_write(tmp_path, [*recs[:2], recs[1], *recs[2:]], "copies.json")], scrub=False)
    assert not result.report.ok and "ambiguous_shape" in codes(result)
    # other records between two identical ones: the same request made twice (a recorder, a test's snapshot)
    result = ingest([_write(tmp_path, [*recs, recs[1]], "twice.json")], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 4, 0)
    # a result object holding more than its text (a thought) is not read as the answer
    recs[0]["response"]["thought"] = "water needs"
    result = ingest([_write(tmp_path, recs, "thought.json")], scrub=False)
    assert not result.report.ok


def test_a_simulated_user_is_the_agents_user(tmp_path):
    """An eval's user simulator (ArkSim's ``simulated_user``) speaks to the agent as its user."""
    assert role_of("simulated_user") == "user" and role_of("user_simulator") == "user"
    doc = {"conversations": [{"conversation_id": f"c{i}", "conversation_history": [
        {"turn_id": 0, "role": "simulated_user", "content": f"Deductible of plan {i}?"},
        {"turn_id": 0, "role": "assistant", "content": "$500.", "tool_calls": None}]} for i in range(2)]}
    result = ingest([_write(tmp_path, doc, "simulation.json")], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 2, 0)
    assert [m.role for m in next(iter(result.conversations[0].calls())).context] == ["user"]


def test_a_thread_listed_newest_first_is_read_oldest_first(tmp_path):
    """An OpenAI Assistants thread's message list (``GET /threads/{id}/messages`` is newest first by default):
    text blocks ``{"type": "text", "text": {"value", "annotations"}}``, ``created_at`` falling."""
    def msg(role, text, t):
        return {"id": f"msg_{t}", "object": "thread.message", "created_at": t, "role": role,
                "content": [{"type": "text", "text": {"value": text, "annotations": []}}]}
    data = [msg("assistant", "Paris.", 1706009163), msg("user", "Capital of France?", 1706009161),
            msg("assistant", "Hello! How can I help?", 1706009159), msg("user", "hi", 1706009157)]
    result = ingest([_write(tmp_path, {"object": "list", "data": data, "has_more": False}, "messages.json")],
                    scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    first, second = result.conversations[0].calls()
    assert first.context[0].text == "hi" and first.completion.text == "Hello! How can I help?"
    assert second.completion.text == "Paris."
    assert "messages_newest_first" in codes(result, "warnings")
    # times that rise (oldest first) or do not all fall are read as written
    data.reverse()
    result = ingest([_write(tmp_path, {"data": data}, "oldest.json")], scrub=False)
    assert totals(result.conversations) == (1, 2, 0) and "messages_newest_first" not in codes(result, "warnings")


def test_a_json_array_of_messages_naming_their_threads(tmp_path):
    """Message rows of two threads saved as one JSON array (Mastra's memory export, a table dumped as JSON): a
    conversation per thread, as the same rows one per line are read (was one conversation, the second thread's
    call holding the first's messages as context, ``ok``)."""
    rows = [{"id": "m1", "threadId": "t1", "role": "user", "content": "Ping"},
            {"id": "m2", "threadId": "t1", "role": "assistant", "content": "Pong"},
            {"id": "m3", "threadId": "t2", "role": "user", "content": "Hello"},
            {"id": "m4", "threadId": "t2", "role": "assistant", "content": "Hi there"}]
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(rows))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (2, 2, 0), codes(result)
    assert [[m.text for m in c.messages] for c in result.conversations] == [["Ping", "Pong"], ["Hello", "Hi there"]]
    same = [{k: v for k, v in r.items() if k != "threadId"} for r in rows]  # no thread named: the file is one list
    path.write_text(json.dumps(same))
    assert totals(ingest([path], scrub=False, dedup=False).conversations) == (1, 2, 0)


def test_message_rows_exported_newest_first_are_read_oldest_first(tmp_path):
    """A table of message rows exported ``ORDER BY created_at DESC`` (times of day falling), two threads: each read
    oldest first (was read as written: each answer before its question, ``ok``)."""
    rows = [{"thread_id": t, "created_at": f"10:00:0{n}", "role": role, "content": text}
            for n, t, role, text in [(0, "t1", "user", "Hi"), (1, "t2", "user", "A joke?"), (2, "t1", "assistant", "Hello"),
                                     (3, "t2", "assistant", "Knock knock.")]][::-1]
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (2, 2, 0), codes(result)
    assert {c.context[0].text: c.completion.text for conv in result.conversations for c in conv.calls()} == {
        "Hi": "Hello", "A joke?": "Knock knock."}
