"""ShareGPT from/value (function_call/observation) and its typed-parts variant."""

from __future__ import annotations

import json

from drafters.traces.model import TextPart, ToolCallPart, UnsupportedPart

from ._helpers_b import codes, parse_text, read
from .conftest import parse_file, sample, totals

GLAIVE = "sharegpt_function_call/llamafactory__glaive_toolcall_en_demo.json"


def test_glaive_sample_counts():
    # Expected numbers from an independent count (python json.load, collections.Counter):
    # 300 records; turns human=746, gpt=746, function_call=211, observation=211; adjacent pairs are only
    # human>gpt, gpt>human, human>function_call, function_call>observation, observation>gpt, so no two
    # assistant turns touch and every gpt/function_call turn is one LLM call: 746+211 = 957 calls;
    # each function_call value holds one {name, arguments} object: 211 tool calls.
    convs, report = parse_file("sharegpt", sample(GLAIVE))
    assert not report.errors
    assert totals(convs) == (300, 957, 211)
    # the demo set itself holds 35 exact duplicate records (json.dumps(sort_keys=True) Counter): the
    # parser keeps them (dedup is ingest's job) and they hash equal
    assert len({c.content_hash() for c in convs}) == 265


def test_object_inside_string_and_positional_pairing():
    """README: a function_call value is a JSON string holding an object whose arguments are an object;
    ShareGPT has no call ids, so results pair by position."""
    convs, _ = parse_file("sharegpt", sample(GLAIVE))
    conv = convs[3]  # "calculate the area of a rectangle" (record $[3])
    call = conv.messages[1].tool_calls[0]
    assert call.id is None and call.name == "calculate_area"
    assert call.arguments == {"shape": "rectangle", "dimensions": [5, 3]}
    assert call.raw_arguments == '{"shape":"rectangle","dimensions":[5,3]}'
    result = conv.messages[2].tool_results[0]
    assert conv.messages[2].role == "tool" and result.call_id is None
    assert result.name == "calculate_area" and result.content == '{"area": 15}'
    assert [t.name for t in conv.tools] == ["calculate_area", "calculate_discount"]
    assert conv.tools[0].parameters["required"] == ["shape", "dimensions"]
    assert conv.source.record == "$[3]"


def test_text_then_call_turns_merge_into_one_model_turn():
    """hiyouga/LlamaFactory#9107: strict alternation forces 'text + call' into two turns; they are one
    model turn (one LLM call)."""
    rec = {"conversations": [
        {"from": "human", "value": "weather?"},
        {"from": "gpt", "value": "Let me check."},
        {"from": "function_call", "value": json.dumps({"name": "w", "arguments": {"city": "Oslo"}})},
        {"from": "observation", "value": "cold"},
        {"from": "gpt", "value": "Cold."},
    ]}
    (conv,), report = parse_text("sharegpt", json.dumps([rec]))
    assert not report.errors
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    first = conv.messages[1]
    assert isinstance(first.parts[0], TextPart) and isinstance(first.parts[1], ToolCallPart)
    assert len(list(conv.calls())) == 2


def test_unknown_role_tag_is_reported_with_location_and_others_kept():
    """hiyouga/LlamaFactory#2529: a role-tag mismatch must not break loading the whole set."""
    good = {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}
    bad = {"conversations": [{"from": "human", "value": "hi"}, {"from": "bot", "value": "hello"}]}
    convs, report = parse_text("sharegpt", json.dumps([good, bad, good], indent=1), "set.json")
    assert len(convs) == 2
    (err,) = report.errors
    assert err.code == "unknown_role" and err.record == "$[1]" and err.field == "conversations[1].from"
    assert err.file == "set.json" and err.line is not None


def test_typed_parts_variant_with_role_content_keys_and_image():
    rec = {"conversations": [
        {"role": "user", "content": [{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": "data:..."}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "a cat"}]},
    ], "system": "be nice"}
    (conv,), report = parse_text("sharegpt", json.dumps(rec) + "\n", "x.jsonl")
    assert not report.errors
    assert [m.role for m in conv.messages] == ["system", "user", "assistant"]
    assert isinstance(conv.messages[1].parts[1], UnsupportedPart) and conv.messages[1].parts[1].kind == "image"
    assert conv.messages[2].text == "a cat"


def test_bad_function_call_value_is_an_error_not_a_crash():
    rec = {"conversations": [{"from": "human", "value": "x"}, {"from": "function_call", "value": "{nope"}]}
    convs, report = parse_text("sharegpt", json.dumps([rec]))
    assert convs == [] and codes(report) == ["arguments_not_json"]


def test_corrupted_copy_reports_file_and_line():
    text = read(sample(GLAIVE))
    lines = text.split("\n")
    lines[16] = lines[16][:20]  # line 17 is the first "from": "function_call" of record $[0]: tear it
    convs, report = parse_text("sharegpt", "\n".join(lines), "torn.json")
    assert report.errors and report.errors[0].code == "invalid_json"
    assert report.errors[0].file == "torn.json" and report.errors[0].line is not None
    assert len(convs) == 299  # only the torn record $[0] is lost: the reader resynchronises on $[1]


def test_axolotl_train_false_turn_is_context():
    rec = [{"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a", "train": False},
                              {"from": "human", "value": "q2"}, {"from": "gpt", "value": "b"}]}]
    (conv,), report = parse_text("sharegpt", json.dumps(rec))
    assert not report.errors
    assert [c.completion.text for c in conv.calls()] == ["b"]


def test_role_content_turns_keep_their_tool_calls():
    """The role/content variant with OpenAI-style ``tool_calls`` on assistant turns (Spider 2.0's agent results
    under ``conversation``): the calls are read, and the tool turns after them pair by position."""
    rec = {"instance_id": "sf_1", "conversation": [
        {"role": "system", "content": "You are a database expert."},
        {"role": "user", "content": "Top 10 groups?"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"name": "execute_bash", "arguments": {"command": "ls db"}}]},
        {"role": "tool", "content": "EXECUTION RESULT of [execute_bash]:\nPLOT.json"},
        {"role": "assistant", "content": "Now the query.", "tool_calls": [
            {"name": "execute_sql", "arguments": {"sql": "SELECT 1"}}]},
        {"role": "tool", "content": "1"},
        {"role": "assistant", "content": "Done."}]}
    (conv,), report = parse_text("sharegpt", json.dumps([rec]))
    assert not report.errors and not report.warnings
    assert totals([conv]) == (1, 3, 2)
    call = conv.messages[2].tool_calls[0]
    assert (call.name, call.arguments) == ("execute_bash", {"command": "ls db"})
    assert conv.messages[3].tool_results[0].name == "execute_bash"
