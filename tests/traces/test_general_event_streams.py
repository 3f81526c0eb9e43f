"""Events beside the messages of an agent UI's event log (issue 30; ``formats/_events.py``; docs/traces.md,
"Events beside the messages"): stream chunks a complete message restates, the client's records of running a
call, and run metadata are not read (counted); a chunk or a call run nothing restates is refused. Documents are
hand-made in the layout such logs use (one JSON array of typed events), not copies of real files."""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest

from .conftest import codes, totals


def _events(*, drop=()):
    call = {"id": "c1", "type": "function", "function": {"name": "get_location", "arguments": "{}"}}
    events = [
        {"id": "e1", "type": "user_message", "timestamp": 1, "content": "Weather today?"},
        {"id": "e2", "type": "agent_run_start", "timestamp": 1, "sessionId": "s", "model": "m"},
        {"id": "e3", "type": "assistant_streaming_message", "content": "Let me", "messageId": "m1"},
        {"id": "e4", "type": "assistant_streaming_tool_call", "toolCallId": "c1", "toolName": "get_location",
         "arguments": "", "messageId": "m1"},
        {"id": "e5", "type": "assistant_message", "content": "Let me find you.", "toolCalls": [call],
         "finishReason": "tool_calls", "messageId": "m1"},
        {"id": "e6", "type": "tool_call", "toolCallId": "c1", "name": "get_location", "arguments": {}},
        {"id": "e7", "type": "tool_result", "toolCallId": "c1", "name": "get_location", "content": "Boston"},
        {"id": "e8", "type": "assistant_streaming_message", "content": "Sunny", "messageId": "m2"},
        {"id": "e9", "type": "assistant_message", "content": "Sunny in Boston.", "finishReason": "stop",
         "messageId": "m2"},
    ]
    return [e for e in events if e["id"] not in drop]


def _read(tmp_path, events):
    path = tmp_path / "event-stream.jsonl"
    path.write_text(json.dumps(events))
    return ingest([path], scrub=False)


def test_an_event_stream_reads_its_messages_and_counts_the_rest(tmp_path):
    result = _read(tmp_path, _events())
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert first.completion.text == "Let me find you." and [c.id for c in first.completion.tool_calls] == ["c1"]
    assert [m.role for m in second.context] == ["user", "assistant", "tool"]
    assert second.completion.text == "Sunny in Boston."
    (skipped,) = [w for w in result.report.warnings if w.code == "records_not_messages"]
    assert skipped.message.startswith("5 record(s)")  # the run start, three chunks, the call's run


def test_a_chunk_no_complete_message_restates_is_refused(tmp_path):
    result = _read(tmp_path, _events(drop=("e9",)))
    assert "stream_not_joined" in codes(result) and not result.report.ok


def test_the_run_of_a_call_no_message_holds_is_refused(tmp_path):
    events = _events()
    events[5] = {**events[5], "toolCallId": "c9"}
    result = _read(tmp_path, events)
    assert "content_not_mapped" in codes(result) and not result.report.ok


def test_an_event_holding_content_under_an_unknown_type_is_not_skipped(tmp_path):
    events = _events() + [{"id": "e10", "type": "critic_note", "content": "Good answer."}]
    result = _read(tmp_path, events)
    assert codes(result) == ["unknown_role"] and not result.conversations


def test_a_metadata_line_without_a_role_heads_a_session_log(tmp_path):
    lines = [{"_type": "metadata", "key": "cli:direct", "created_at": "2026-01-01T00:00:00", "metadata": {}},
             {"role": "user", "content": "hi", "timestamp": "t1"},
             {"role": "assistant", "content": "hello", "timestamp": "t2"}]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 1, 0)
    assert "records_not_messages" in codes(result, "warnings")
    lines[0] = {"note": "a line holding content under no role", "content": "lost?"}
    path.write_text("\n".join(json.dumps(line) for line in lines))
    assert "unknown_role" in codes(ingest([path], scrub=False))
