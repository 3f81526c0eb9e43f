"""drafters.tool_call_eval: the tool calls of an answer counted through the one parser (drafters.toolcalls,
with the real SmolLM2 tokenizer and the shipped tool-aware template), the figures, and batched greedy replay
agreeing with one-at-a-time replay."""

from __future__ import annotations

import pytest

from drafters.render import Renderer
from drafters.tool_call_eval import figures_of, greedy_answers, outcome_of
from drafters.traces.model import LLMCall, Message, TextPart, ToolCallPart, ToolDef
from tests.test_render import CHATML_TOOLS, smollm2_tokenizer

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


@pytest.fixture(scope="module")
def renderer():
    return Renderer(smollm2_tokenizer(), chat_template=str(CHATML_TOOLS))


def block(body: str) -> str:
    return f"<tool_call>\n{body}\n</tool_call>"


def weather_call(args: str) -> str:
    return block(f'{{"name": "get_weather", "arguments": {args}}}')


def test_counts_parsed_and_broken_calls(renderer):
    text = (
        "Let me look.\n"
        + weather_call('{"city": "Oslo"}')
        + "\n"
        + weather_call('"{\\"city\\": \\"Rome\\"}"')  # arguments as a JSON string (OpenAI's wire form)
        + block("{not json}")
        + block('["get_weather"]')
        + block('{"arguments": {}}')
        + '<tool_call>\n{"name": "get_weather", "argu\n'  # cut before its arguments
        + '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Os'  # cut inside its arguments, at the end
    )
    o = outcome_of(_call(0, True), text, renderer)
    assert (o.tool_calls, o.parsed, o.valid) == (7, 2, 2)
    assert o.first_name == "get_weather"
    assert [p.split(":")[0] for p in o.problems] == ["invalid_json"] + ["unparseable"] * 4
    plain = outcome_of(_call(0, True), "plain text, no call <tool_response>x</tool_response>", renderer)
    assert (plain.tool_calls, plain.parsed, plain.valid, plain.first_name) == (0, 0, 0, None)


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ('{"city": "Oslo", "days": 3, "unit": "C", "tags": ["a"]}', None),
        ('{"city": "Oslo", "days": 3.0}', None),  # JSON has one number type: 3.0 is an integer
        ("{}", "schema_mismatch: (arguments): 'city' is a required property"),
        ('{"city": 5}', "schema_mismatch: city: 5 is not of type 'string'"),
        ('{"city": "Oslo", "days": true}', "schema_mismatch: days: True is not of type 'integer'"),
        ('{"city": "Oslo", "days": 2.5}', "schema_mismatch: days: 2.5 is not of type 'integer'"),
        ('{"city": "Oslo", "unit": "K"}', "schema_mismatch: unit: 'K' is not one of ['C', 'F']"),
        ('{"city": "Oslo", "tags": ["a", 1]}', "schema_mismatch: tags/1: 1 is not of type 'string'"),
        ('{"city": "Oslo", "country": "NO"}',
         "schema_mismatch: (arguments): Additional properties are not allowed ('country' was unexpected)"),
    ],
)
def test_arguments_are_validated_against_the_tool_schema(renderer, args, problem):
    o = outcome_of(_call(0, True), weather_call(args), renderer)
    assert (o.tool_calls, o.parsed, o.valid) == (1, 1, 1 if problem is None else 0)
    assert o.problems == ([] if problem is None else [problem])


def test_the_name_must_be_an_offered_tool(renderer):
    text = block('{"name": "get_news", "arguments": {}}') + weather_call('{"days": 1}')
    o = outcome_of(_call(0, True), text, renderer)
    assert (o.tool_calls, o.parsed, o.valid, o.first_name) == (2, 2, 0, "get_news")
    assert o.problems == ["unknown_tool: no tool named 'get_news' in the call's tools",
                          "schema_mismatch: (arguments): 'city' is a required property"]


def _call(index: int, answer_tool: bool) -> LLMCall:
    parts = (
        [ToolCallPart.from_raw("c1", "get_weather", {"city": "Oslo"})]
        if answer_tool
        else [TextPart("Hello!")]
    )
    return LLMCall("conv", index, [WEATHER], [Message("user", [TextPart("hi")])], Message("assistant", parts))


def test_figures_count_rates_over_the_right_calls(renderer):
    good = weather_call('{"city": "Oslo"}') + "<|im_end|>"
    wrong_name = block('{"name": "get_time", "arguments": {}}') + "<|im_end|>"
    outcomes = [
        outcome_of(_call(0, True), good, renderer),  # recorded tool call, answered with a valid one
        outcome_of(_call(1, True), wrong_name, renderer),  # recorded tool call, answered with an invalid one
        outcome_of(_call(2, True), "It is sunny.<|im_end|>", renderer),  # recorded tool call, answered in text
        outcome_of(_call(3, False), "Hi!<|im_end|>", renderer),  # recorded text, kept text
        outcome_of(_call(4, False), good + good, renderer),  # recorded text, two valid tool calls
    ]
    f = figures_of(outcomes, max_new_tokens=64, seconds=1.0)
    assert (f.calls, f.recorded_tool_calls, f.calls_with_tool_call) == (5, 3, 3)
    assert f.rate_recorded == pytest.approx(2 / 3) and f.rate_all == pytest.approx(3 / 5)
    assert f.text_kept == pytest.approx(1 / 2)
    assert (f.tool_calls, f.parsed, f.valid) == (4, 4, 3)
    assert f.parse_share == 1.0 and f.valid_share == pytest.approx(3 / 4)
    assert f.name_match == pytest.approx(1 / 3)
    assert outcomes[1].problems == ["unknown_tool: no tool named 'get_time' in the call's tools"]
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
