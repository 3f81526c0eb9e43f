"""YAML and TOML documents read by the general path, declared mappings and ``infer-mapping`` (issue 30;
``formats/_documents.py``, ``yaml_documents.py``, ``toml_documents.py``; docs/traces.md, "YAML and TOML"): each
document a record, read as JSON records are. Documents are hand-made in the layouts such tools write (a harness's
report of one conversation-agent run: the agent's chat log inside an event trace; an LLM response cache's entry per
request), not copies of real files."""

from __future__ import annotations

import json

import pytest

from drafters.traces.infer import infer_mapping, mapping_yaml
from drafters.traces.infer_example import learn_mapping
from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import mapping_from_dict, parse_mapping
from drafters.traces.report import TraceError

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


#: A response cache's entry (one request per file): the messages sent as an array of tables, the reply beside them.
CACHE_ENTRY = """\
transform = "CommentTransfer"
identifier = "quickSort"
model = "gemini-3-pro-preview"
created = 2025-12-14T10:02:11Z
response = '''
```rust
/* Sort the elements before and after the pivot */
fn quick_sort(arr: &mut [i32]) {}
```'''

[[messages]]
role = "system"
content = "You carry C comments over to Rust."

[[messages]]
role = "user"
content = '''Carry the comments of this C function over.
void quickSort(int *arr) { /* Sort the elements before and after the pivot */ }'''
"""


def test_a_toml_cache_entry_is_one_request_and_its_response(tmp_path):
    result = _read(tmp_path, CACHE_ENTRY, "d124abd1.toml")
    assert result.report.ok, codes(result)
    assert result.report.formats == {"toml_documents": 1}
    assert totals(result.conversations) == (1, 1, 0)
    (call,) = result.conversations[0].calls()
    assert [m.role for m in call.context] == ["system", "user"]
    assert "fn quick_sort" in call.completion.text


def test_a_toml_file_that_does_not_parse_is_reported_at_its_line_and_prose_is_not_claimed(tmp_path):
    result = _read(tmp_path, 'model = "m"\nresponse = "one line"\n\n[[messages]]\nrole = 3 4\n', "bad.toml")
    (err,) = result.report.errors
    assert err.code == "invalid_toml" and err.line == 5 and not result.conversations
    result = _read(tmp_path, "Notes about a run.\n", "notes.toml")
    assert not result.conversations and codes(result) == ["unknown_format"]


def test_infer_mapping_and_a_declared_mapping_read_toml_and_yaml(tmp_path):
    path = tmp_path / "entry.toml"
    path.write_text(CACHE_ENTRY)
    inferred = infer_mapping(path)
    written = tmp_path / "m.yaml"
    written.write_text(mapping_yaml(inferred))
    again = ingest([path], mapping=parse_mapping(written.read_text(), str(written)), scrub=False, dedup=False)
    assert again.report.ok, again.report.errors
    assert totals(again.conversations) == (1, 1, 0)
    chats = tmp_path / "chats.yaml"
    chats.write_text("".join(f"---\nturns:\n- who: human\n  said: question {n}\n- who: bot\n  said: answer {n}\n"
                             for n in (1, 2)))
    declared = {"name": "chats", "messages": "$.turns", "role": "who", "content": "said",
                "roles": {"human": "user", "bot": "assistant"}}
    result = ingest([chats], mapping=mapping_from_dict(declared), scrub=False, dedup=False)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (2, 2, 0)


def test_a_reply_example_learns_a_toml_layout_the_general_path_does_not_find(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[request]\ninstruction = "Translate the Fortran loop to C++."\n\n'
                    '[result]\nanswer = "Here is the loop in C++ with OpenMP."\n')
    assert codes(_read(tmp_path, path.read_text(), "run.toml"))  # the general path finds no call here
    learned = learn_mapping(path, "Here is the loop in C++")
    result = ingest([path], mapping=mapping_from_dict(learned.mapping), scrub=False, dedup=False)
    assert result.report.ok, result.report.errors
    (call,) = result.conversations[0].calls()
    assert call.completion.text == "Here is the loop in C++ with OpenMP."
    assert call.context[-1].text == "Translate the Fortran loop to C++."


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


def test_infer_mapping_does_not_read_the_history_of_one_result_of_many(tmp_path):
    """An eval's results (promptfoo's output YAML): each result a prompt, its message list as a JSON string, and the
    response beside it. Only the second result's list has a reply (its history); a mapping reading that one list
    (``results[1].prompt.raw``) would read 1 call of the file's 2, ok. No such mapping is inferred."""
    raw = ('[{"role":"user","content":"Capital of France?"}]',
           '[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!"},{"role":"user","content":"Spain?"}]')
    path = tmp_path / "output.yaml"
    path.write_text("evalId: eval-1\nresults:\n  results:\n" + "".join(
        f"  - id: r{i}\n    prompt:\n      raw: '{r}'\n    response:\n      output: {a}\n"
        for i, (r, a) in enumerate(zip(raw, ("Paris.", "Madrid.")))))
    with pytest.raises(TraceError) as refused:
        infer_mapping(path)
    assert refused.value.code == "no_messages_found"


def test_a_yaml_recording_s_streamed_body_is_joined_as_in_json(tmp_path):
    """A mock server's recorded mapping (WireMock YAML, an instrumentation's tests): the request under
    ``bodyPatterns[0].equalToJson``, the reply a streamed SSE body of two parallel tool calls, joined before the
    shape is inferred, as a JSON file's is (it had been refused, no_messages_found)."""
    def chunk(delta: dict, finish: str | None = None) -> str:
        return "data: " + json.dumps({"object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"
    calls = [(0, "call_a", "New York"), (1, "call_b", "London")]
    body = chunk({"role": "assistant", "content": None}) + "".join(
        chunk({"tool_calls": [{"index": i, "id": c, "type": "function", "function": {
            "name": "get_weather", "arguments": json.dumps({"location": where})}}]}) for i, c, where in calls) + \
        chunk({}, "tool_calls") + "data: [DONE]\n\n"
    request = {"model": "gpt-4o-mini", "stream": True, "messages": [
        {"role": "user", "content": "What is the weather in New York and London?"}]}
    text = "---\nname: v1_chat_completions\nrequest:\n  url: /chat/completions\n  method: POST\n  bodyPatterns:\n" \
           "  - equalToJson: " + json.dumps(json.dumps(request)) + "\nresponse:\n  status: 200\n  body: |+\n" + \
           "".join(f"    {line}\n" for line in body.splitlines()) + "persistent: true\n"
    result = _read(tmp_path, text, "chattest.yaml")
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 1, 2)
    (call,) = result.conversations[0].calls()
    assert [c.arguments for c in call.completion.tool_calls] == [{"location": "New York"}, {"location": "London"}]
