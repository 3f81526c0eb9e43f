"""Object-update event streams (OpenCode's server events as its clients capture them: ``message.updated`` /
``message.part.updated`` re-sending a message or a part whole each time it changes), read as each message's last
version (``formats/_update_events.py``); issue 30, docs/traces.md. Streams are hand-made in that layout, not copies
of real files."""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest
from drafters.traces.model import TextPart, ToolCallPart

from .conftest import codes, totals

SES = "ses_1"


def _msg(mid, role, **info):
    return {"type": "message.updated", "properties": {"info": {"id": mid, "role": role, "sessionID": info.pop(
        "session", SES), "time": {"created": 1}, **info}}}


def _part(mid, pid, kind, session=SES, **part):
    return {"type": "message.part.updated", "properties": {"part": {
        "id": pid, "messageID": mid, "sessionID": session, "type": kind, **part}}}


def _tool(mid, pid, status, **state):
    return _part(mid, pid, "tool", callID="call_" + pid, tool="read",
                 state={"status": status, "input": {"filePath": "a.txt"}, **state})


def _session() -> list[dict]:
    """A user turn with a system text of its own, a reply streamed as growing text then a tool call moving from
    pending to completed, a second step answering; events of other kinds in between."""
    return [
        {"type": "server.connected", "properties": {}},
        _msg("m1", "user", system="Cite files as file:// links."),
        _part("m1", "p1", "text", text="What is in a.txt?"),
        _msg("m2", "assistant", modelID="gpt-4.1"),
        _part("m2", "p2", "step-start", snapshot="abc"),
        _part("m2", "p3", "text", text="Let me"),
        _part("m2", "p3", "text", text="Let me read it."),
        _tool("m2", "p4", "pending"),
        _tool("m2", "p4", "running"),
        _tool("m2", "p4", "completed", output="alpha\n"),
        _part("m2", "p5", "step-finish", reason="tool-calls", tokens={"input": 9, "output": 3}, cost=0),
        {"type": "session.updated", "properties": {"info": {"id": SES, "title": "a.txt"}}},
        _msg("m2", "assistant", modelID="gpt-4.1", finish="tool-calls"),
        _msg("m3", "assistant", modelID="gpt-4.1"),
        _part("m3", "p6", "text", text="It holds"),
        _part("m3", "p6", "text", text="It holds alpha."),
        _part("m3", "p7", "patch", hash="def", files=["a.txt"]),
        {"type": "session.idle", "properties": {"sessionID": SES}},
    ]


def test_a_stream_is_read_as_each_messages_last_version(tmp_path):
    path = tmp_path / "events.json"
    path.write_text(json.dumps(_session(), indent=2))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert [m.role for m in first.context] == ["system", "user"]
    assert first.context[0].parts == [TextPart("Cite files as file:// links.")]
    assert "".join(p.text for p in first.completion.parts if isinstance(p, TextPart)) == "Let me read it."
    (call,) = [p for p in first.completion.parts if isinstance(p, ToolCallPart)]
    assert call.name == "read" and call.id == "call_p4"
    assert [m.role for m in second.context] == ["system", "user", "assistant", "tool"]
    assert second.context[-1].tool_results[0].content == "alpha\n"
    assert "".join(p.text for p in second.completion.parts if isinstance(p, TextPart)) == "It holds alpha."
    warned = {p.code: p.message for p in result.report.warnings}
    assert "18 events" in warned["update_events_folded"]
    assert "3 event(s)" in warned["records_not_messages"] and "session.updated x1" in warned["records_not_messages"]


def test_one_event_per_line_and_sessions_apart(tmp_path):
    other = [_msg("n1", "user", session="ses_2"), _part("n1", "q1", "text", session="ses_2", text="Hi."),
             _msg("n2", "assistant", session="ses_2"), _part("n2", "q2", "text", session="ses_2", text="Hello.")]
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in _session() + other))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 3, 1)


def test_removed_parts_and_messages_are_not_read(tmp_path):
    events = _session() + [
        {"type": "message.part.removed", "properties": {"sessionID": SES, "messageID": "m3", "partID": "p6"}},
        _part("m3", "p8", "text", text="It holds alpha, and nothing else."),
        _msg("m4", "assistant"), _part("m4", "p9", "text", text="A draft the user discarded."),
        {"type": "message.removed", "properties": {"sessionID": SES, "messageID": "m4"}}]
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    last = list(result.conversations[0].calls())[-1].completion
    assert "".join(p.text for p in last.parts if isinstance(p, TextPart)) == "It holds alpha, and nothing else."


def test_parts_of_a_message_no_event_describes_refuse_the_session(tmp_path):
    events = [e for e in _session() if e["properties"].get("info", {}).get("id") != "m3"]  # m3's parts stay
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    result = ingest([path], scrub=False)
    assert not result.report.ok and result.conversations == []
    (err,) = [p for p in result.report.errors if p.code == "missing_field"]
    assert "m3" in err.message


def test_a_step_marker_holding_text_is_no_marker(tmp_path):
    events = _session()
    events[10] = _part("m2", "p5", "step-finish", text="a summary the model wrote")
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    result = ingest([path], scrub=False)
    assert not result.report.ok
    assert "unknown_content" in codes(result)
