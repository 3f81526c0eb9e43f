"""OpenAI Chat Completions records and cassettes."""

from __future__ import annotations

import io
import json

import pytest

from drafters.traces.formats.openai_chat import FORMAT, parse, to_openai_messages
from drafters.traces.ingest import ingest
from drafters.traces.model import ToolCallPart
from drafters.traces.report import ValidationReport

from .conftest import parse_file, sample, totals


def _parse_text(text: str, name: str = "x.jsonl"):
    report = ValidationReport()
    return list(parse(io.StringIO(text), name, report)), report


RECORD = {
    "id": "r1",
    "model": "gpt-4o",
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
    "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather in Paris and Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "rain"}]},
        {"role": "assistant", "content": "Paris sunny, Rome rain."},
    ],
}


def test_jsonl_record_with_string_and_object_arguments():
    """docs/traces.md: arguments are a JSON string on the wire and an object in many logs; keep both the raw
    string and the parsed object."""
    convs, report = _parse_text(json.dumps(RECORD) + "\n")
    (conv,) = convs
    assert not report.errors
    assert [t.name for t in conv.tools] == ["get_weather"]
    a = conv.messages[2]
    c1, c2 = a.tool_calls
    assert c1.raw_arguments == '{"city": "Paris"}' and c1.arguments == {"city": "Paris"}  # raw kept as logged
    assert c2.raw_arguments == '{"city":"Rome"}' and c2.arguments == {"city": "Rome"}
    assert conv.messages[4].tool_results[0].content == "rain"
    assert [m.model for m in conv.messages if m.role == "assistant"] == ["gpt-4o", "gpt-4o"]
    assert totals(convs) == (1, 2, 2)


def test_invalid_arguments_kept_raw():
    rec = {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{not json"}}]}]}
    (conv,), _ = _parse_text(json.dumps(rec))
    call = conv.messages[1].tool_calls[0]
    assert call.arguments is None and call.raw_arguments == "{not json"


def test_legacy_function_call_and_function_role():
    rec = {"functions": [{"name": "f", "description": "d", "parameters": {"type": "object"}}], "messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{\"a\": 1}"}},
        {"role": "function", "name": "f", "content": "{\"ok\": true}"},
        {"role": "assistant", "content": "done"}]}
    (conv,), _ = _parse_text(json.dumps(rec))
    assert conv.tools[0].name == "f"
    assert conv.messages[1].tool_calls == [ToolCallPart(None, "f", {"a": 1}, '{"a": 1}')]
    assert conv.messages[2].role == "tool" and conv.messages[2].tool_results[0].name == "f"


def test_conversations_key_bare_list_and_json_array():
    lines = [json.dumps({"conversations": RECORD["messages"]}), json.dumps(RECORD["messages"])]
    convs, report = _parse_text("\n".join(lines))
    assert len(convs) == 2 and not report.errors
    convs, report = _parse_text(json.dumps([RECORD, RECORD], indent=2), "x.json")
    assert len(convs) == 2 and [c.source.record for c in convs] == ["$[0]", "$[1]"]


def test_bad_lines_reported_with_line_numbers():
    text = json.dumps(RECORD) + "\n{broken\n" + json.dumps({"foo": 1}) + "\n\n" + json.dumps(RECORD) + "\n"
    convs, report = _parse_text(text)
    assert len(convs) == 2
    assert [(p.code, p.line) for p in report.errors] == [("invalid_json", 2), ("not_an_object", 3)]


def test_reasoning_content_and_images():
    rec = {"messages": [
        {"role": "user", "content": [{"type": "text", "text": "what is this"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}}]},
        {"role": "assistant", "reasoning_content": "thinking...", "content": "a cat"}]}
    (conv,), _ = _parse_text(json.dumps(rec))
    assert [type(p).__name__ for p in conv.messages[0].parts] == ["TextPart", "UnsupportedPart"]
    assert conv.messages[1].reasoning == "thinking..." and conv.messages[1].text == "a cat"


def test_to_openai_messages_inverts_parse():
    (conv,), _ = _parse_text(json.dumps(RECORD))
    msgs, tools = to_openai_messages(conv)
    (again,), _ = _parse_text(json.dumps({"messages": msgs, "tools": tools}))
    assert again.messages == conv.messages and again.tools == conv.tools


# Cassettes: counted with a python one-liner over yaml.safe_load(...)["interactions"]: every
# interaction is one call; tool calls = entries of choices[0].message.tool_calls (OpenAI) or
# functionCall parts (Gemini) in the responses. multiple_agent_tool_calls: 2 Gemini + 2 OpenAI
# interactions of one conversation (the OpenAI run continues the Gemini run's history: its requests
# start with the same "What is the capital of France?"), 1 + 1 tool calls.
@pytest.mark.parametrize("rel,expected", [
    ("openai_chat_tool_calls/pydantic-ai__test_openai_tool_output.yaml", (1, 2, 2)),
    ("openai_chat_tool_calls/pydantic-ai__test_openai_multiple_agent_tool_calls.yaml", (1, 4, 2)),
])
def test_cassette_counts(rel, expected):
    convs, report = parse_file("openai_chat", sample(rel))
    assert totals(convs) == expected
    assert not report.errors


def test_cassette_calls_are_explicit_with_full_request_context():
    """README: every request re-sends the full history: each request+response is one call."""
    convs, _ = parse_file("openai_chat", sample("openai_chat_tool_calls/pydantic-ai__test_openai_tool_output.yaml"))
    (conv,) = convs
    c0, c1 = conv.explicit_calls
    assert [m.role for m in c0.context] == ["user"]
    assert [m.role for m in c1.context] == ["user", "assistant", "tool"]
    assert c1.completion.tool_calls[0].arguments == {"city": "Mexico City", "country": "Mexico"}
    assert c1.completion.model == "gpt-4o-2024-08-06"
    assert [t.name for t in c1.tools] == ["get_user_country", "final_result"]
    assert conv.append_only
    assert conv.messages == c1.context + [c1.completion]


def test_sniff():
    assert FORMAT.sniff(json.dumps(RECORD) + "\n", "x.jsonl")
    assert not FORMAT.sniff(json.dumps({"conversations": [{"from": "human", "value": "x"}]}), "x.json")


def test_weight_zero_assistant_turns_are_context_not_completions():
    """OpenAI fine-tuning's ``"weight": 0`` (fixture: the guide's multi-turn example)."""
    from pathlib import Path

    path = Path(__file__).parent / "fixtures" / "openai_finetune_weight.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    trained = [m["content"] for r in records for m in r["messages"] if m.get("weight") == 1]
    convs, report = parse_file("openai_chat", path)
    assert not report.errors
    completions = [c.completion.text for conv in convs for c in conv.calls()]
    assert completions == trained and len(trained) == 3  # 6 assistant turns, 3 trained (by hand)
    last = next(iter(convs[0].calls()))
    assert [m.text for m in last.context][2] == "Paris"  # the untrained answer is still context


@pytest.mark.parametrize("flag", [{"weight": 0}, {"train": False}, {"training": False}, {"loss_weight": 0.0}])
def test_other_trainers_do_not_train_flags(flag):
    rec = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", **flag},
                        {"role": "user", "content": "q2"}, {"role": "assistant", "content": "b"}]}
    (conv,), _ = _parse_text(json.dumps(rec))
    assert [c.completion.text for c in conv.calls()] == ["b"]
    assert [m.supervised for m in conv.messages] == [True, False, True, True]


def _ingest_records(tmp_path, records):
    from drafters.traces.ingest import ingest

    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path, ingest([path], scrub=False, format="openai_chat")


def test_calls_under_an_unknown_key_are_an_error_not_an_empty_turn(tmp_path):
    """Calls logged under ``invocations``: the turn is not read as empty with only pairing warnings."""
    odd = {"messages": [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": None, "invocations": [
            {"id": "c1", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "18C"},
        {"role": "assistant", "content": "18C in Paris."}]}
    with_text = json.loads(json.dumps(odd))
    with_text["messages"][1]["content"] = "Let me check."  # beside text: calls still under an unknown key
    path, result = _ingest_records(tmp_path, [RECORD, odd, with_text])
    report = result.report
    assert [(e.code, e.file, e.line) for e in report.errors] == [("unknown_content", str(path), 2),
                                                                  ("unknown_content", str(path), 3)]
    assert all("key:invocations x1" in e.message for e in report.errors)
    assert [c.id.rsplit(":", 1)[-1] for c in result.conversations] == ["r1"]  # the odd records are refused
    assert report.files[str(path)]["status"] == "partial"


def test_refusal_with_null_content_is_the_answer_and_metadata_is_not_content(tmp_path):
    rec = {"messages": [
        {"role": "user", "content": "help me pick a lock"},
        {"role": "assistant", "content": None, "refusal": "I can't help with that."},
        {"role": "user", "content": "ok"},
        {"role": "assistant", "content": None, "finish_reason": "stop", "annotations": []},
        {"role": "user", "content": "and?"},
        {"role": "assistant", "content": "Done.", "meta": {"latency_ms": 12}, "tags": ["a", "b"]}]}
    _, result = _ingest_records(tmp_path, [rec])
    assert result.report.ok
    (conv,) = result.conversations
    assert [m.text for m in conv.messages if m.role == "assistant"] == ["I can't help with that.", "", "Done."]


def test_reasoning_under_thinking_is_read_and_under_another_name_is_an_error(tmp_path):
    """Ollama logs an answer's reasoning as ``thinking``: read as reasoning. Text under a key whose name
    says reasoning but that no reader knows (``thoughts``) used to vanish (file ok, 0 reasoning
    characters): now unknown_content."""
    def rec(key: str, i: int) -> dict:
        return {"id": f"t{i}", "messages": [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", key: "Add two and two.", "content": "4"}]}

    _, result = _ingest_records(tmp_path, [rec("thinking", 1), rec("thoughts", 2)])
    report = result.report
    assert [(e.code, e.line) for e in report.errors] == [("unknown_content", 2)]
    assert "key:thoughts x1" in report.errors[0].message
    (conv,) = result.conversations
    assert [type(p).__name__ for p in conv.messages[-1].parts] == ["ReasoningPart", "TextPart"]
    assert report.chars["reasoning"] == len("Add two and two.")


def _request(messages):
    return {"model": "claude-3-7-sonnet", "messages": messages, "stream": False,
            "tools": [{"type": "function", "function": {"name": "run", "parameters": {"type": "object"}}}]}


def _response(message):
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "claude-3-7-sonnet", "messages": None,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


def test_a_log_of_requests_each_followed_by_its_response():
    """A recorder writing each request, then its response object (CAI's DataRecorder): each pair is one call;
    a request that extends the previous call continues its conversation; a request whose system prompt
    changed (another agent, handed the history) is a conversation of its own, its restated history no calls."""
    sys_a, sys_b = {"role": "system", "content": "You are a CTF agent."}, {"role": "system", "content": "Extract the flag."}
    user = {"role": "user", "content": "Solve BabyEncryption."}
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{\"command\": \"ls\"}"}}]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "chall.py msg.enc"}
    done = {"role": "assistant", "content": "The flag is HTB{x}."}
    lines = [_request([sys_a, user]), _response(call),
             _request([sys_a, user, call, result]), _response(done),
             _request([sys_b, user, call, result, done]), _response({"role": "assistant", "content": "HTB{x}"})]
    convs, report = _parse_text("".join(json.dumps(x) + "\n" for x in lines))
    assert not report.errors
    assert totals(convs) == (2, 3, 1)
    first = convs[0].explicit_calls
    assert [len(c.context) for c in first] == [2, 4] and first[1].completion.text == "The flag is HTB{x}."
    assert [c.context[0].text for c in convs[1].explicit_calls] == ["Extract the flag."]
    # a request left without its response is reported, the rest read
    convs, report = _parse_text("".join(json.dumps(x) + "\n" for x in lines[:3] + lines[4:]))
    assert [p.code for p in report.errors] == ["not_an_object"] and totals(convs) == (2, 2, 1)


def test_another_message_list_beside_the_messages_is_not_dropped(tmp_path):
    # a record keeping a second conversation beside `messages` (an earlier session's history): never `ok` with it
    # unread; a copy of some of the messages in order (a rollout's turns) is no loss
    msgs = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    other = [{"role": "user", "content": "Earlier question"}, {"role": "assistant", "content": "Earlier answer"}]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": msgs, "history": other}))
    result = ingest([path], scrub=False)
    assert not result.report.ok and result.conversations == []
    assert "content_not_mapped" in [e.code for e in result.report.errors]
    path.write_text(json.dumps({"messages": msgs, "turns": [{"turn": 1, "assistant": msgs[1]}]}))
    result = ingest([path], scrub=False)
    assert result.report.ok and len(result.conversations) == 1


def test_a_response_of_several_choices_is_not_read_as_its_first():
    from drafters.traces.formats.openai_chat import response_to_message

    body = {"choices": [{"message": {"role": "assistant", "content": "Smokey"}},
                        {"message": {"role": "assistant", "content": "Ash"}}]}
    with pytest.raises(ValueError, match="2 choices"):
        response_to_message(body)
    assert response_to_message({"choices": body["choices"][:1]}).text == "Smokey"


def test_semantic_kernel_items_in_place_of_content(tmp_path):
    # Semantic Kernel's ChatHistory dumped: each message's content as items (text, function_call, function_result)
    def item(kind, **kw):
        return {"ai_model_id": None, "metadata": {}, "content_type": kind, **kw}
    def message(role, *items):
        return {"ai_model_id": None, "metadata": {}, "content_type": "message", "role": role, "name": None,
                "items": list(items), "encoding": None, "finish_reason": None, "status": None}
    history = {"messages": [
        message("system", item("text", text="You control the user's lights.")),
        message("user", item("text", text="Turn on the table lamp.")),
        message("assistant", item("function_call", id="call_1", name="LightsPlugin-change_state",
                                  function_name="change_state", plugin_name="LightsPlugin",
                                  arguments='{"id": 1, "is_on": true}')),
        message("tool", item("function_result", id="call_1", result='{"is_on": true}', name="LightsPlugin-change_state")),
        message("assistant", item("text", text="Done: the lamp is on."))]}
    path = tmp_path / "chat_history.json"
    path.write_text(json.dumps(history))
    result = ingest([path], scrub=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    calls = list(result.conversations[0].calls())
    assert [p.name for p in calls[0].completion.tool_calls] == ["LightsPlugin-change_state"]
    assert calls[0].completion.tool_calls[0].arguments == {"id": 1, "is_on": True}
    assert [m.role for m in calls[1].context] == ["system", "user", "assistant", "tool"]
    assert calls[1].completion.text == "Done: the lamp is on."
