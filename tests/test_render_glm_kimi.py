"""drafters.render over the GLM-4.5/4.6 and Kimi-K2 chat templates (written for these tests from the models'
own templates, tests/fixtures/chat_templates; byte-identical to them on string contents), each with a
tokenizer whose markers are single tokens (SmolLM2's tokenizer plus the template's markers).

GLM writes tool-call arguments as <arg_key>/<arg_value> pairs and ends an assistant turn with the next
message's role token; Kimi-K2 indexes parallel calls (functions.NAME:IDX) and writes that form as the call
id while a tool result shows the id it is given."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from drafters.render import SUPERVISED, Renderer, Segment
from drafters.render.messages import IdMap
from drafters.toolcalls import find_tool_calls
from drafters.traces.model import Conversation, Message, Source, TextPart, ToolCallPart, ToolResultPart
from tests.test_render import (
    WEATHER,
    read_template,
    segment_text,
    supervised_runs,
    tokenizer_with,
    weather_conversation,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "chat_templates"
TEMPLATES = {"glm": "zai-org-GLM-4.6.jinja", "kimi": "moonshotai-Kimi-K2-Instruct.jinja"}
MARKERS = {
    "glm": {"eos": "<|endoftext|>",
            "special": ["[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>"],
            "extra": ["<think>", "</think>", "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>",
                      "<arg_value>", "</arg_value>", "<tool_response>", "</tool_response>"]},
    "kimi": {"eos": "<|im_end|>",
             "special": ["<|im_user|>", "<|im_assistant|>", "<|im_system|>", "<|im_middle|>",
                         "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
                         "<|tool_call_argument_begin|>", "<|tool_call_end|>"],
             "extra": ["<think>", "</think>"]},
}


@functools.cache
def setup(name: str):
    return tokenizer_with(**MARKERS[name]), read_template(FIXTURES / TEMPLATES[name])


def make(name: str, template: str | None = None) -> tuple:
    tok, tpl = setup(name)
    r = Renderer(tok, chat_template=template or tpl)
    r.user_template = False  # judge the template as if it were the tokenizer's own
    return tok, r


def parallel_conversation() -> Conversation:
    """Two parallel calls after text with inline reasoning (``<think>`` in content), their results, an answer."""
    msgs = [
        Message("system", [TextPart("You are a weather agent.")]),
        Message("user", [TextPart("Paris and Rome?")]),
        Message("assistant", [TextPart("<think>\nTwo cities, two calls.\n</think>\n\nChecking both."),
                              ToolCallPart.from_raw("call_par_1", "get_weather", {"city": "Paris", "days": 2}),
                              ToolCallPart.from_raw("call_par_2", "get_weather", {"city": "Rome", "days": 3})]),
        Message("tool", [ToolResultPart("call_par_1", "18 C")]),
        Message("tool", [ToolResultPart("call_par_2", "22 C")]),
        Message("assistant", [TextPart("Paris 18 C, Rome 22 C.")]),
    ]
    return Conversation("par", Source("openai_chat", "t.jsonl", 1), [WEATHER], msgs)


def chat_conversation() -> Conversation:
    msgs = [Message("user", [TextPart("Hi")]), Message("assistant", [TextPart("Hello there!")]),
            Message("user", [TextPart("Bye")]), Message("assistant", [TextPart("Goodbye!")])]
    return Conversation("chat", Source("openai_chat", "t.jsonl", 2), [], msgs)


def tokens(tok, ids, segs, mask=None):
    """(token text, segment name[, mask]) of each token, for exact comparisons."""
    rows = [(tok.decode([i], skip_special_tokens=False), Segment(g).name) for i, g in zip(ids, segs)]
    return rows if mask is None else [(t, g, m) for (t, g), m in zip(rows, mask)]


# ---------------------------------------------------------------------------------------- the templates


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_renders_are_byte_identical_to_apply_chat_template(name):
    """Every render the renderer makes (each call's prompt and context + answer) is transformers' Jinja
    render of the same messages, byte for byte."""
    tok, r = make(name)
    tpl = setup(name)[1]
    for conv in (weather_conversation(), parallel_conversation()):
        for call in conv.calls():
            dicts = r.call_renderer.call_dicts(call, IdMap(r.dialect.ids, conv.id))
            tools = r.template.tools_for(call.tools)
            for msgs, gen in ((dicts[:-1], True), (dicts, False)):
                want = tok.apply_chat_template(msgs, tools=tools, chat_template=tpl, tokenize=False,
                                               add_generation_prompt=gen)
                assert r.template.apply(msgs, tools, gen, prepared=True) == want


# ------------------------------------------------------------------------------- GLM: key/value arguments


def test_glm_key_value_arguments_are_tool_args():
    """GLM writes arguments as <arg_key>k</arg_key><arg_value>v</arg_value>, not JSON: the probe finds the
    calls (no template_drops_tool_content), keys and values are tool_args, the tags tool_structure."""
    tok, r = make("glm")
    r.require_tool_support()
    assert r.dialect.tool_error is None and r.dialect.arg_form == "pairs"
    seqs = r.render_conversation(weather_conversation())
    assert len(seqs) == 1 and not r.report.warnings, r.report.to_dict()
    ids, segs = seqs[0].input_ids, seqs[0].segments
    assert segment_text(tok, ids, segs, Segment.TOOL_NAME) == "get_weatherget_weather"
    assert segment_text(tok, ids, segs, Segment.TOOL_ARGS) == "cityPariscityRome"
    structure = segment_text(tok, ids, segs, Segment.TOOL_STRUCTURE)
    assert structure.count("<arg_key>") == 2 and structure.count("</arg_value>") == 2
    assert structure.count("</tool_call>") == 2 and "Paris" not in structure and "city" not in structure
    # Non-string values are written as JSON, and are tool_args too.
    call = next(iter(parallel_conversation().calls()))
    p = r.render_prompt(call)
    assert segment_text(tok, p.completion_ids, p.completion_segments, Segment.TOOL_ARGS) == "cityParisdays2cityRomedays3"


# ------------------------------------------------------------------ GLM: the next role token ends the turn


def test_glm_turn_end_is_the_next_role_token_and_supervised():
    """GLM's assistant turn has no end token of its own: the model ends it with <|observation|> (before
    tool results) or <|user|> (after an answer), and the engine stops there. That token is supervised and
    belongs to the assistant turn (tool structure after calls, text after an answer)
    (PrimeIntellect-ai/prime-rl#2644)."""
    tok, r = make("glm")
    assert (r.dialect.turn_end_text, r.dialect.turn_end_tool) == ("<|user|>", "<|observation|>")
    seq = r.render_conversation(weather_conversation())[0]
    assert supervised_runs(tok, seq) == [
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call><|observation|>",
        "It is 18 C and raining in Paris.<|user|>",
        ("\n<think>Need the Rome weather.</think>\nChecking.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
         "<arg_value>Rome</arg_value>\n</tool_call><|observation|>"),
        "22 C and sunny in Rome.<|user|>",
    ]
    rows = tokens(tok, seq.input_ids, seq.segments, seq.loss_mask)
    role = [row for row in rows if row[0] in ("<|user|>", "<|observation|>")]
    assert role == [
        ("<|user|>", "MARKUP", 0),  # opens the first user message: not the assistant's
        ("<|observation|>", "TOOL_STRUCTURE", 1),
        ("<|user|>", "TEXT", 1),  # ends the answer; the user message follows it
        ("<|observation|>", "TOOL_STRUCTURE", 1),
        ("<|user|>", "TEXT", 1),
    ]
    # Served prompts: the completion ends with the token the engine stops at; packed == per call.
    sup_calls = []
    for call in weather_conversation().calls():
        p = r.render_prompt(call)
        assert tok.decode(p.completion_ids[-1:]) in ("<|user|>", "<|observation|>")
        sup_calls += [(i, g) for i, g in zip(p.completion_ids, p.completion_segments) if g != Segment.MARKUP]
    assert sup_calls == [(i, g) for i, g, m in zip(seq.input_ids, seq.segments, seq.loss_mask) if m]


def test_glm_plain_chat_answers_end_with_user_token():
    tok, r = make("glm")
    seq = r.render_conversation(chat_conversation())[0]
    assert supervised_runs(tok, seq) == ["Hello there!<|user|>", "Goodbye!<|user|>"]
    assert not r.report.warnings


# -------------------------------------------------- one labelling: training labels == generated-text labels


@pytest.mark.parametrize("name", list(TEMPLATES))
@pytest.mark.parametrize("conv", [weather_conversation, parallel_conversation], ids=["weather", "parallel"])
def test_training_and_generated_labels_agree(name, conv):
    """The labels of a logged answer (located in its render) equal the labels `segment_completion` gives
    the same tokens as generated text (parsed by the template's markup), token for token: parallel calls
    with indexed markers, key/value arguments, inline <think> in content, the end-of-turn token."""
    tok, r = make(name)
    for call in conv().calls():
        p = r.render_prompt(call)
        n_inj = next(k for k, g in enumerate(p.completion_segments) if g != Segment.MARKUP)
        want = tokens(tok, p.completion_ids, p.completion_segments)[n_inj:]
        assert tokens(tok, p.completion_ids, r.segment_completion(p.completion_ids))[n_inj:] == want
        assert all(Segment[g] in SUPERVISED for _, g in want)


def _runs(text: str, labels) -> list[tuple[str, str]]:
    out, s = [], 0
    for i in range(1, len(text) + 1):
        if i == len(text) or labels[i] != labels[s]:
            out.append((Segment(labels[s]).name, text[s:i]))
            s = i
    return out


def test_kimi_parallel_calls_labelled_alike_from_the_second_on():
    """Kimi-K2 numbers parallel calls (functions.NAME:0, functions.NAME:1): the second call's name,
    arguments and markers are labelled as the first's, in generated text and in training labels."""
    _, r = make("kimi")
    text = ("Both.<|tool_calls_section_begin|>"
            '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>'
            '<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{"tz": "CET"}<|tool_call_end|>'
            "<|tool_calls_section_end|><|im_end|>")
    assert _runs(text, r.label_generated_text(text)) == [
        ("TEXT", "Both."),
        ("TOOL_STRUCTURE", "<|tool_calls_section_begin|><|tool_call_begin|>functions."),
        ("TOOL_NAME", "get_weather"),
        ("TOOL_STRUCTURE", ":0<|tool_call_argument_begin|>"),
        ("TOOL_ARGS", '{"city": "Paris"}'),
        ("TOOL_STRUCTURE", "<|tool_call_end|><|tool_call_begin|>functions."),
        ("TOOL_NAME", "get_time"),
        ("TOOL_STRUCTURE", ":1<|tool_call_argument_begin|>"),
        ("TOOL_ARGS", '{"tz": "CET"}'),
        ("TOOL_STRUCTURE", "<|tool_call_end|><|tool_calls_section_end|><|im_end|>"),
    ]
    # Both calls are found for the tool-call checks of regeneration and evaluation.
    found = find_tool_calls(r, text)
    assert [(c.name, c.arguments, c.error) for c in found] == [
        ("get_weather", {"city": "Paris"}, None), ("get_time", {"tz": "CET"}, None)]


def test_glm_generated_calls_keep_name_and_close_tag_out_of_tool_args():
    _, r = make("glm")
    text = ("\n<think>Plan.</think>\nLooking.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
            "<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>\n"
            "<tool_call>get_time\n</tool_call><|observation|>")
    assert _runs(text, r.label_generated_text(text)) == [
        ("REASONING", "\n<think>Plan.</think>\n"),
        ("TEXT", "Looking."),
        ("TOOL_STRUCTURE", "\n<tool_call>"),
        ("TOOL_NAME", "get_weather"),
        ("TOOL_STRUCTURE", "\n<arg_key>"),
        ("TOOL_ARGS", "city"),
        ("TOOL_STRUCTURE", "</arg_key>\n<arg_value>"),
        ("TOOL_ARGS", "Paris"),
        ("TOOL_STRUCTURE", "</arg_value>\n<arg_key>"),
        ("TOOL_ARGS", "days"),
        ("TOOL_STRUCTURE", "</arg_key>\n<arg_value>"),
        ("TOOL_ARGS", "2"),
        ("TOOL_STRUCTURE", "</arg_value>\n</tool_call>\n<tool_call>"),
        ("TOOL_NAME", "get_time"),  # a call without arguments
        ("TOOL_STRUCTURE", "\n</tool_call><|observation|>"),
    ]


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_inline_think_in_content_is_reasoning_in_training(name):
    """<think>...</think> written inside content next to tool calls is reasoning in training labels (GLM
    moves it out of the content, Kimi-K2 writes it as given), never text."""
    tok, r = make(name)
    call = next(iter(parallel_conversation().calls()))
    p = r.render_prompt(call)
    ids, segs = p.completion_ids, p.completion_segments
    assert segment_text(tok, ids, segs, Segment.TEXT) == "Checking both."
    reasoning = segment_text(tok, ids, segs, Segment.REASONING)
    assert "<think>" in reasoning and "Two cities, two calls." in reasoning and "</think>" in reasoning
    seq = r.render_conversation(parallel_conversation())[0]
    assert "Two cities, two calls." in segment_text(tok, seq.input_ids, seq.segments, Segment.REASONING)


# ------------------------------------------------------------------------- Kimi: rewritten tool-call ids


def test_kimi_tool_results_carry_the_ids_the_calls_show():
    """Kimi-K2 writes each call's id as functions.NAME:IDX whatever id it is given, but a tool result shows
    the id it is given: ids are given in that form, so each result names the call it answers."""
    tok, r = make("kimi")
    assert r.dialect.ids == "functions_index" and r.dialect.ids_paired
    for conv in (weather_conversation(), parallel_conversation()):
        seqs = r.render_conversation(conv)
        text = tok.decode(seqs[-1].input_ids, skip_special_tokens=False)
        shown = re.findall(r"<\|tool_call_begin\|>(\S+?)<\|tool_call_argument_begin\|>", text)
        returned = re.findall(r"## Return of (\S+)\n", text)
        recorded = [c.id for m in conv.messages for c in m.tool_calls]
        assert returned == shown and not any(i in text for i in recorded)
    assert returned == ["functions.get_weather:0", "functions.get_weather:1"]
    assert "tool_call_ids_unpaired" not in r.report.warnings


def test_unpairable_id_rewrite_is_a_warning_with_a_code():
    """A template that writes its own call ids in a form no id mode matches, while results show the given
    id: every conversation with tools is counted under a stable warning code."""
    tpl = setup("kimi")[1]
    own_ids = tpl.replace("'<|tool_call_begin|>functions.' ~ tc.function.name ~ ':' ~ loop.index0",
                          "'<|tool_call_begin|>tc-' ~ loop.index")
    assert own_ids != tpl
    _, r = make("kimi", own_ids)
    r.render_conversation(weather_conversation())
    r.render_conversation(parallel_conversation())
    assert r.report.warnings["tool_call_ids_unpaired"] == 2
    assert not r.dialect.ids_paired
