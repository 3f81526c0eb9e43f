"""drafters.tool_call_eval: tool-call blocks parsed from generated text, schema validation, the figures, and
batched greedy replay agreeing with one-at-a-time replay."""

from __future__ import annotations

import pytest

from drafters.tool_call_eval import (
    check_tool_call,
    figures_of,
    greedy_answers,
    outcome_of,
    parse_tool_calls,
    schema_problems,
)
from drafters.traces.model import LLMCall, Message, TextPart, ToolCallPart, ToolDef

WEATHER = ToolDef(
    "get_weather",
    "Weather of a city",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "unit": {"type": "string", "enum": ["C", "F"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
)


def block(body: str) -> str:
    return f"<tool_call>\n{body}\n</tool_call>"


def test_parse_blocks_in_order_with_their_errors():
    text = (
        "Let me look.\n"
        + block('{"name": "get_weather", "arguments": {"city": "Oslo"}}')
        + "\n"
        + block('{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}')
        + block("{not json}")
        + block('["get_weather"]')
        + block('{"arguments": {}}')
        + '<tool_call>\n{"name": "get_weather", "argu'
    )
    calls = parse_tool_calls(text)
    assert [c.parsed for c in calls] == [True, False, False, False, False, False]
    assert (calls[0].name, calls[0].arguments) == ("get_weather", {"city": "Oslo"})
    assert calls[1].error == "'arguments' is not a JSON object" and calls[1].name == "get_weather"
    assert calls[2].error.startswith("not JSON")
    assert calls[3].error == "not a JSON object but list"
    assert calls[4].error == "no string 'name'"
    assert calls[5].error == "unterminated" and calls[5].raw.startswith('\n{"name"')
    assert parse_tool_calls("plain text, no call <tool_response>x</tool_response>") == []


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"city": "Oslo", "days": 3, "unit": "C", "tags": ["a"]}, None),
        ({"city": "Oslo", "days": 3.0}, None),  # JSON has one number type: 3.0 is an integer
        ({}, "arguments: missing required 'city'"),
        ({"city": 5}, "arguments.city: expected string, got int"),
        ({"city": "Oslo", "days": True}, "arguments.days: expected integer, got bool"),
        ({"city": "Oslo", "days": 2.5}, "arguments.days: expected integer, got float"),
        ({"city": "Oslo", "unit": "K"}, "arguments.unit: 'K' is not one of ['C', 'F']"),
        ({"city": "Oslo", "tags": ["a", 1]}, "arguments.tags[1]: expected string, got int"),
        ({"city": "Oslo", "country": "NO"}, "arguments: unexpected property 'country'"),
    ],
)
def test_schema_problems(args, problem):
    problems = schema_problems(args, WEATHER.parameters)
    assert problems == ([] if problem is None else [problem])


def test_schema_keywords_not_checked_never_refuse():
    schema = {"type": ["string", "null"], "format": "date", "pattern": "^x$", "minLength": 5}
    assert schema_problems(None, schema) == [] and schema_problems("y", schema) == []
    assert schema_problems(3, schema) == ["arguments: expected string/null, got int"]
    assert schema_problems({"a": 1}, "not a schema") == []


def test_check_tool_call_names_the_tool_and_validates_its_arguments():
    ok, unknown, bad = parse_tool_calls(
        block('{"name": "get_weather", "arguments": {"city": "Oslo"}}')
        + block('{"name": "get_news", "arguments": {}}')
        + block('{"name": "get_weather", "arguments": {"days": 1}}')
    )
    assert check_tool_call(ok, [WEATHER]) == []
    assert check_tool_call(unknown, [WEATHER]) == ["unknown tool 'get_news' (offered: ['get_weather'])"]
    assert check_tool_call(bad, [WEATHER]) == ["arguments: missing required 'city'"]
    (cut,) = parse_tool_calls("<tool_call>\n{")
    assert check_tool_call(cut, [WEATHER]) == ["does not parse: unterminated"]


def _call(index: int, answer_tool: bool) -> LLMCall:
    parts = (
        [ToolCallPart.from_raw("c1", "get_weather", {"city": "Oslo"})]
        if answer_tool
        else [TextPart("Hello!")]
    )
    return LLMCall("conv", index, [WEATHER], [Message("user", [TextPart("hi")])], Message("assistant", parts))


def test_figures_count_rates_over_the_right_calls():
    good = block('{"name": "get_weather", "arguments": {"city": "Oslo"}}') + "<|im_end|>"
    wrong_name = block('{"name": "get_time", "arguments": {}}') + "<|im_end|>"
    outcomes = [
        outcome_of(_call(0, True), good),  # recorded tool call, answered with a valid one
        outcome_of(_call(1, True), wrong_name),  # recorded tool call, answered with an invalid one
        outcome_of(_call(2, True), "It is sunny.<|im_end|>"),  # recorded tool call, answered in text
        outcome_of(_call(3, False), "Hi!<|im_end|>"),  # recorded text, kept text
        outcome_of(_call(4, False), good + good),  # recorded text, answered with two valid tool calls
    ]
    f = figures_of(outcomes, max_new_tokens=64, seconds=1.0)
    assert (f.calls, f.recorded_tool_calls, f.calls_with_tool_call) == (5, 3, 3)
    assert f.rate_recorded == pytest.approx(2 / 3) and f.rate_all == pytest.approx(3 / 5)
    assert f.text_kept == pytest.approx(1 / 2)
    assert (f.tool_calls, f.parsed, f.valid) == (4, 4, 3)
    assert f.parse_share == 1.0 and f.valid_share == pytest.approx(3 / 4)
    assert f.name_match == pytest.approx(1 / 3)
    assert outcomes[1].problems == ["unknown tool 'get_time' (offered: ['get_weather'])"]
    d = f.to_dict()
    assert d["rate_recorded"] == f.rate_recorded and "outcomes" not in d
    assert "66.7% (2/3)" in f.summary()
    empty = figures_of([], 64, 0.0)
    assert empty.rate_all is None and "n/a" in empty.summary()


def test_batched_greedy_matches_one_at_a_time(tiny_target_dir):
    """Left-padded batches give the answers each prompt gets alone (tiny random Llama, fp32), cut after eos."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(tiny_target_dir), dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(str(tiny_target_dir))
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, len(tok), (n,), generator=g).tolist() for n in (5, 17, 9, 30, 12)]
    batched = greedy_answers(model, tok, prompts, max_new_tokens=12, batch_size=4)
    alone = [greedy_answers(model, tok, [p], max_new_tokens=12, batch_size=1)[0] for p in prompts]
    assert batched == alone
    assert len(set(alone)) > 1  # different prompts, different answers: the order is not mixed up by chance
    for text in alone:
        assert tok.eos_token not in text[: -len(tok.eos_token)]  # nothing kept after the end of turn
