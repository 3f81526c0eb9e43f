"""The declared mapping expresses every shape of issue 30: the file is the message list, one message per
line (grouped by a session id), a call's response stored beside its input (chained into conversations), an
agent step's observation, envelopes with JSON-string payloads. Counts are walked from the raw records here."""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import mapping_from_dict

from .conftest import totals

ROLES = {"user": "user", "assistant": "assistant", "tool": "tool", "system": "system"}
OPENAI_CALL = {"id": "id", "name": "function.name", "arguments": "function.arguments"}


def _read(tmp_path, name, text, **mapping):
    path = tmp_path / name
    path.write_text(text)
    result = ingest([path], mapping=mapping_from_dict({"name": "t", **mapping}), scrub=False)
    return result, path


def _call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


TURNS = [
    {"role": "user", "content": "weather in Oslo?"},
    {"role": "assistant", "content": None, "tool_calls": [_call("c1", "weather", {"city": "Oslo"})]},
    {"role": "tool", "tool_call_id": "c1", "content": "-3C"},
    {"role": "assistant", "content": "It is -3C in Oslo."},
]


def test_the_file_is_the_message_list(tmp_path):
    result, _ = _read(tmp_path, "history.json", json.dumps(TURNS), records="file", messages="$", role="role",
                      roles=ROLES, content="content", tool_calls="tool_calls", tool_call=OPENAI_CALL)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (1, 2, 1)


def test_one_message_per_line_grouped_by_session_in_an_envelope(tmp_path):
    lines = [{"session": s, "event": "message", "payload": json.dumps({**m, "content": m["content"] and m["content"] + s})}
             for s in ("a", "b") for m in TURNS]
    lines.insert(0, {"session": "a", "event": "start", "cwd": "/w"})  # not a message
    result, _ = _read(tmp_path, "events.jsonl", "\n".join(json.dumps(x) for x in lines), records="messages",
                      messages="$.payload", group="$.session", role="role", roles=ROLES, content="content",
                      tool_calls="tool_calls", tool_call=OPENAI_CALL)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (2, 4, 2)
    assert [w.code for w in result.report.warnings if w.code == "records_not_messages"] == ["records_not_messages"]


def test_a_calls_response_beside_its_input_chains_calls(tmp_path):
    runs = [{"inputs": {"messages": TURNS[:1]}, "outputs": {"choices": [{"message": TURNS[1]}]}},
            {"inputs": {"messages": TURNS[:3]}, "outputs": {"choices": [{"message": TURNS[3]}]}},
            {"inputs": {"messages": [{"role": "user", "content": "hi"}]},
             "outputs": {"choices": [{"message": {"role": "assistant", "content": "hello"}}]}}]
    mapping = {"messages": "$.inputs.messages", "response": "$.outputs.choices[0].message", "role": "role",
               "roles": ROLES, "content": "content", "tool_calls": "tool_calls", "tool_call": OPENAI_CALL}
    result, _ = _read(tmp_path, "runs.jsonl", "\n".join(json.dumps(r) for r in runs), **mapping)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (2, 3, 1)  # runs 1-2 are one agent loop, run 3 another conversation
    runs[1]["outputs"] = {}
    result, _ = _read(tmp_path, "runs2.jsonl", "\n".join(json.dumps(r) for r in runs), **mapping)
    assert "mapping_field_missing" in {e.code for e in result.report.errors}


STEPS = {"task": "Count files in /w", "steps": [
    {"thought": "list them", "action": {"tool": "ls", "args": {"path": "/w"}}, "observation": "a.py b.py"},
    {"thought": "two", "answer": "There are 2 files."}]}
STEP_MAPPING = {"records": "each", "messages": "$.steps", "role": "kind", "roles": {"*": "assistant"},
                "content": "answer", "reasoning": "thought", "tool_calls": "action",
                "tool_call": {"name": "tool", "arguments": "args"}, "prompt": {"user": "$.task"}}


def test_agent_steps_with_observation(tmp_path):
    result, _ = _read(tmp_path, "steps.json", json.dumps(STEPS), observation="observation", **STEP_MAPPING)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (1, 2, 1)
    conv = result.conversations[0]
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    assert conv.messages[2].tool_results[0].content == "a.py b.py"


def test_a_mapping_that_does_not_reach_the_tool_results_is_not_ok(tmp_path):
    steps = json.loads(json.dumps(STEPS))
    steps["steps"][0]["action"]["id"] = "s1"  # ids make the missing result detectable
    mapping = {**STEP_MAPPING, "tool_call": {"id": "id", "name": "tool", "arguments": "args"}}
    result, _ = _read(tmp_path, "steps.json", json.dumps(steps), **mapping)  # no observation declared
    assert "tool_result_not_found" in {e.code for e in result.report.errors}
    result, _ = _read(tmp_path, "steps2.json", json.dumps(steps), observation="observation", **mapping)
    assert result.report.ok, result.report.errors


def test_a_response_beside_the_messages_that_the_mapping_does_not_declare_is_not_ok(tmp_path):
    runs = [{"inputs": {"messages": TURNS[:3]}, "outputs": {"choices": [{"message": TURNS[3]}]}}]
    result, _ = _read(tmp_path, "runs.jsonl", json.dumps(runs[0]), messages="$.inputs.messages", role="role",
                      roles=ROLES, content="content", tool_calls="tool_calls", tool_call=OPENAI_CALL)
    (err,) = result.report.errors
    assert err.code == "mapping_field_never_matched" and "$.outputs.choices[0]" in err.message


def test_a_role_value_marked_skip_is_a_record_of_another_kind(tmp_path):
    # a dialogue tracker's events (Rasa's): slots and actions beside the user's and the bot's utterances
    events = [{"event": "user", "text": "Book a table for two"}, {"event": "slot", "text": "party_size=2"},
              {"event": "bot", "text": "For what time?"}, {"event": "user", "text": "At eight"},
              {"event": "action", "text": "action_book"}, {"event": "bot", "text": "Booked for 20:00."}]
    path = tmp_path / "tracker.json"
    path.write_text(json.dumps({"events": events}))
    mapping = tmp_path / "m.yaml"
    mapping.write_text("name: tracker\nmessages: $.events\nrole: event\ncontent: text\n"
                       "roles: {user: user, bot: assistant, slot: skip, action: skip}\n")
    result = ingest([path], mapping=mapping, scrub=False)
    assert result.report.ok
    assert [m.role for m in result.conversations[0].messages] == ["user", "assistant", "user", "assistant"]
    assert [w.code for w in result.report.warnings].count("messages_not_read") == 1


def test_histories_keyed_by_user_id_each_a_message_list(tmp_path):
    # a chat bot's memory {"<user id>": [messages], ...}: records: values, messages: $ reads each list as a record
    doc = {"1112357298489266206": [{"role": "user", "content": "What is an SSH key?"},
                                   {"role": "assistant", "content": "A key pair used to log in."},
                                   {"role": "user", "content": "How do I make one?"},
                                   {"role": "assistant", "content": "Run ssh-keygen."}],
           "1409507036647133184": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]}
    result, _ = _read(tmp_path, "conversations.json", json.dumps(doc), records="values", messages="$", role="role",
                      roles=ROLES, content="content")
    assert result.report.ok
    assert totals(result.conversations) == (2, 3, 0)
