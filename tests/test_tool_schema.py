"""The tool-schema proposer (drafters/baselines/tool_schema.py): what the schema fixes after each point of
an answer, drafts that line up with the target's own tokens on a real template and tokenizer, standing
aside on bad or missing schemas, and its model-free combination with suffix decoding in the cascade."""

from __future__ import annotations

import pytest
import torch

from drafters.baselines import NGramProposer
from drafters.baselines.suffix_decoding import SuffixProposer
from drafters.baselines.tool_schema import (
    GUESS,
    CallSyntax,
    ToolSchemaProposer,
    fixed_continuation,
    scan_arguments,
    tool_shapes,
)
from drafters.cascade import CHEAP, CascadeProposer
from drafters.render import Renderer
from drafters.render.records import Dialect
from drafters.segments import Segment
from drafters.speculate import plain_generate, prepare_request, speculative_generate
from drafters.traces.model import LLMCall, Message, TextPart, ToolCallPart, ToolDef
from tests._speculate_helpers import tiny_target
from tests.test_render import CHATML_TOOLS, smollm2_tokenizer

CHATML = Dialect(call_prefix='<tool_call>\n{"name": "', call_mid='", "arguments": ', call_suffix="}\n</tool_call>",
                 call_next='\n<tool_call>\n{"name": "', eot_tokens=("<|im_end|>",))
WEATHER = ToolDef("get_weather", "Weather", {
    "type": "object", "required": ["location", "days"],
    "properties": {"location": {"type": "string"}, "unit": {"type": "string"}, "days": {"type": "integer"}}})
TIME = ToolDef("get_time", "Time now", {"type": "object", "properties": {}})
TOOLS = [{"type": "function", "function": {"name": t.name, "parameters": t.parameters}} for t in (WEATHER, TIME)]
OPEN = '<tool_call>\n{"name": "'
TAIL = "}\n</tool_call><|im_end|>"


def cont(text: str) -> tuple[str | tuple[str, ...], float]:
    """fixed_continuation's texts: the one text itself, several as a tuple, none as ''."""
    shapes, reason = tool_shapes(TOOLS)
    assert reason is None
    texts, certainty = fixed_continuation(text, CallSyntax.from_dialect(CHATML), shapes)
    return (texts[0] if len(texts) == 1 else texts or ""), certainty


@pytest.mark.parametrize("text, expected", [
    ("Let me check. <tool", (('_call>\n{"name": "get_weather", "arguments": {"location": "',
                              '_call>\n{"name": "get_time", "arguments": {}' + TAIL), 1.0)),  # an opening begun
    ("Let me check. <", ("", 0.0)),  # one character is not enough
    (OPEN, (('get_weather", "arguments": {"location": "', 'get_time", "arguments": {}' + TAIL), 1.0)),  # two open
    (OPEN + "get_w", ('eather", "arguments": {"location": "', 1.0)),  # one left: name, mid, first key
    (OPEN + 'get_weather", "arguments":', (' {"location": "', 1.0)),  # mid unfinished
    (OPEN + 'get_weather", "arguments": {"', ('location": "', 1.0)),  # in a key: the next in schema order
    (OPEN + 'get_weather", "arguments": {"location": "Par', ("", 0.0)),  # in a value: nothing is fixed
    (OPEN + 'get_weather", "arguments": {"location": "Pa\\"ris', ("", 0.0)),  # an escaped quote
    (OPEN + 'get_weather", "arguments": {"location": "Paris"', (', "days": ', 1.0)),  # next required, not unit
    (OPEN + 'get_weather", "arguments": {"location": "Paris",', (' "days": ', 1.0)),
    (OPEN + 'get_weather", "arguments": {"location": "Paris", "u', ('nit": "', 1.0)),  # an optional one begun
    (OPEN + 'get_weather", "arguments": {"location": "Paris", "days": 3', ("", 0.0)),  # a number may go on
    (OPEN + 'get_weather", "arguments": {"location": "Paris", "days": 3}', (TAIL, GUESS)),  # a parallel call?
    (OPEN + 'get_weather", "arguments": {"location": "Paris", "days": [1, {"a": "}"}]', ("", 0.0)),  # nested
    (OPEN + 'get_weather", "arguments": {"days": 2, "location": "Paris"}}\n</tool_call>\n<tool',
     cont("<tool")),  # a parallel call's opening after a finished call
    (OPEN + 'get_time", "arguments":', (" {}" + TAIL, GUESS)),
    (OPEN + 'search", "arguments": {"', ("", 0.0)),  # a tool the request does not offer
])
def test_fixed_continuation(text, expected):
    assert cont(text) == expected


def test_nested_values_are_one_value():
    a = scan_arguments('{"q": [1, {"a": "}"}], "b": {"c": 1}')
    assert a.keys == ["q", "b"] and a.state == "other"
    a = scan_arguments('{"q": [1, {"a": "}"}], "b": {"c": 1}}')
    assert a.state == "done" and a.written == ""


@pytest.mark.parametrize("tools, reason", [
    (None, "no_tools"), ([], "no_tools"),
    ([{"type": "function", "function": {"parameters": {"type": "object"}}}], "invalid_schema"),  # no name
    ([{"type": "function", "function": {"name": "f", "parameters": {"properties": [1, 2]}}}], "invalid_schema"),
    ([{"type": "function", "function": {"name": "f", "parameters": {"properties": {"a": "string"}}}}],
     "invalid_schema"),
    ([{"type": "function", "function": {"name": "f", "parameters": {"properties": {}, "required": "a"}}}],
     "invalid_schema"),
    (["not a tool"], "invalid_schema"),
])
def test_bad_or_missing_schemas_stand_aside(tools, reason):
    assert tool_shapes(tools) == ({}, reason)
    p = ToolSchemaProposer(smollm2_tokenizer(), CHATML)
    prepare_request(p, type("Request", (), {"tools": tools})())
    p.start(torch.tensor([1, 2, 3]))
    assert p.propose(5).tokens.numel() == 0 and p.stood_aside == {reason: 1} and p.requests == 1


def test_pair_templates_stand_aside():
    pairs = Dialect(arg_form="pairs", call_prefix="<tool_call>", call_mid="\n", call_suffix="</tool_call>")
    p = ToolSchemaProposer(smollm2_tokenizer(), pairs)
    p.prepare(type("Request", (), {"tools": TOOLS})())
    assert p.syntax is None and p.stood_aside == {"template_form": 1}


def _replay_offline(proposer, answer: list[int]) -> tuple[int, list[bool]]:
    """Speculative decoding of a known answer: each round the proposal is checked against the answer, the
    matching prefix accepted and the next token committed. Returns (rounds, drafted[i] for each token)."""
    proposer.start(torch.tensor([1, 2, 3]))
    pos, rounds, drafted = 0, 0, [False] * len(answer)
    while pos < len(answer):
        drafts = proposer.propose(answer[pos]).tokens.tolist()
        a = 0
        while a < len(drafts) and pos + 1 + a < len(answer) and drafts[a] == answer[pos + 1 + a]:
            drafted[pos + 1 + a] = True
            a += 1
        proposer.commit(torch.tensor(answer[pos: pos + a + 1]))
        pos, rounds = pos + a + 1, rounds + 1
    return rounds, drafted


def test_drafts_line_up_with_the_targets_tokens_on_a_real_template():
    """On SmolLM2's tokenizer and the ChatML tools template, a rendered call's markup, tool name and argument
    keys are drafted (accepted) by the schema proposer alone, all but the name's token that is the target's
    choice between the request's two tools; the values are left."""
    renderer = Renderer(smollm2_tokenizer(), chat_template=str(CHATML_TOOLS))
    call = LLMCall("c", 0, [WEATHER, TIME], [Message("user", [TextPart("Weather in Paris for 3 days?")])],
                   Message("assistant", [ToolCallPart.from_raw("call_1", "get_weather",
                                                               {"location": "Paris", "days": 3})]))
    prompt = renderer.render_prompt(call)
    assert prompt.tools and prompt.tools[0]["function"]["name"] == "get_weather"
    p = ToolSchemaProposer(renderer.tokenizer, renderer.dialect, block_size=24)
    prepare_request(p, prompt)
    answer, segs = prompt.completion_ids, prompt.completion_segments
    rounds, drafted = _replay_offline(p, answer)
    structure = {int(Segment.TOOL_STRUCTURE), int(Segment.TOOL_NAME)}
    missed = [renderer.tokenizer.decode([t]) for t, s, d in zip(answer[2:], segs[2:], drafted[2:])
              if s in structure and not d]
    assert missed == ["weather"], missed  # all structure but the token that tells the two tools apart
    assert len(answer) / rounds >= 3.0  # tau of the schema proposer alone on this call
    assert p.stood_aside == {}


def test_suffix_plus_schema_takes_the_better_proposal_and_stays_lossless():
    target = tiny_target(0)
    prompt = torch.randint(0, 64, (12,), generator=torch.Generator().manual_seed(1))
    ref = plain_generate(target, prompt, 24)
    cheap = [NGramProposer(block_size=4), SuffixProposer([ref.tokens[:10]], block_size=8)]
    c = CascadeProposer(cheap, None, 0.0)
    assert c.block_size == 8 and c.layer_ids is None
    gen = speculative_generate(target, c, prompt, 24)
    assert gen.tokens == ref.tokens
    assert c.picks[CHEAP] == len(gen.rounds)
    assert max(r.committed for r in gen.rounds) > 4  # suffix's longer, better-scored path was taken
