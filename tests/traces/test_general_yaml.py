"""YAML documents read by the general path (issue 30; ``formats/yaml_documents.py``; docs/traces.md, "YAML"): each
document a record, read as JSON records are. Documents are hand-made in the layouts such tools write (a harness's
report of one conversation-agent run: the agent's chat log inside an event trace), not copies of real files."""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest

from .conftest import codes, ingest_json, totals

REPORT = """\
# one task run of a conversation agent
uuid: 2f672ba0
task:
  input_text: Pause the music
response: Music paused.
context:
  conversation_trace:
  - event_type: async_process
    data:
      text: Pause the music
    timestamp: 2026-01-25 19:17:04.305681+00:00
  - event_type: agent_detail
    data:
      messages:
      - role: system
        content: You are a voice assistant.
      - role: user
        content: Pause the music
        created: 2026-01-25 19:17:04.305681+00:00
      - role: assistant
        content: Pausing the speakers.
        tool_calls:
        - tool_name: HassMediaPause
          tool_args:
            name: Outdoor Speakers
          id: call_1
          external: false
      - role: tool_result
        tool_call_id: call_1
        tool_name: HassMediaPause
        tool_result:
          success: true
          speech: Music paused.
      - role: assistant
        content: Music paused.
"""


def _read(tmp_path, text, name="run.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return ingest([path], scrub=False, dedup=False)


def test_a_yaml_report_is_read_as_a_json_record(tmp_path):
    result = _read(tmp_path, REPORT)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    (call,) = first.completion.tool_calls
    assert (call.name, call.arguments, call.id) == ("HassMediaPause", {"name": "Outdoor Speakers"}, "call_1")
    result_message = second.context[-1]
    assert result_message.role == "tool"
    assert json.loads(result_message.parts[0].content) == {"success": True, "speech": "Music paused."}


def test_each_document_is_a_record_and_a_bad_document_is_reported_at_its_line(tmp_path):
    chat = "messages:\n- role: user\n  content: hi {n}\n- role: assistant\n  content: hello {n}\n"
    text = "---\n" + chat.format(n=1) + "---\n" + chat.format(n=2) + "---\nmessages: [unclosed\n"
    result = _read(tmp_path, text, "chats.yml")
    assert totals(result.conversations) == (2, 2, 0)
    (err,) = result.report.errors
    assert err.code == "invalid_yaml" and err.line == 15  # where the parser stops: the unclosed list's end


def test_yaml_that_is_no_mapping_is_not_claimed(tmp_path):
    result = _read(tmp_path, "Just some notes\nabout a run.\n", "notes.yaml")
    assert not result.conversations and codes(result) == ["unknown_format"]


def test_tool_call_arguments_under_an_unknown_key_are_refused_not_read_as_empty(tmp_path):
    messages = [{"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "get_weather",
                                                                     "call_payload": {"city": "Paris"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "Sunny"},
                {"role": "assistant", "content": "Sunny."}]
    result = ingest_json(tmp_path, {"run": {"chat_log": messages}})  # the general path
    assert not result.conversations and codes(result) == ["content_not_mapped"]
    assert "call_payload" in result.report.errors[0].message
    result = ingest_json(tmp_path, {"messages": messages})  # the OpenAI chat reader: a call it cannot read
    assert not result.conversations and codes(result) == ["unknown_content"]


def test_messages_in_one_event_of_a_trace_are_no_request_of_a_text_beside_the_trace(tmp_path):
    """An agent's chat log in one event of a run's trace, ending with a tool result (the run stopped), and the
    run's ``response`` text at the top: the log is the conversation (two calls), not the input of one call
    answered by that text."""
    log = [{"role": "user", "content": "Close the garage"},
           {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
               "name": "close", "arguments": "{}"}}]},
           {"role": "tool", "tool_call_id": "c1", "content": "failed"},
           {"role": "assistant", "content": None, "tool_calls": [{"id": "c2", "type": "function", "function": {
               "name": "close", "arguments": "{\"area\": \"Garage\"}"}}]},
           {"role": "tool", "tool_call_id": "c2", "content": "failed"}]
    doc = {"response": "Unable to get response",
           "trace": [{"event": "start", "data": {"text": "Close the garage"}}, {"event": "agent", "data": {
               "messages": log}}]}
    result = ingest_json(tmp_path, doc)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 2)
