"""drafters.render over real chat templates (fixtures in tests/fixtures/chat_templates, read bytes-exact),
each with a tokenizer whose markers are single tokens (SmolLM2's tokenizer plus the template's markers)."""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path

import jinja2
import pytest

from drafters.render import SUPERVISED, Renderer, RenderError, Segment
from drafters.traces.model import TextPart
from tests.test_render import (
    read_template,
    supervised_runs,
    tokenizer_with,
    weather_conversation,
)

TEMPLATES = Path(__file__).resolve().parent / "fixtures" / "chat_templates"

QWEN_EXTRA = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
MARKERS = {
    "Qwen-Qwen3-0.6B": dict(eos="<|im_end|>", extra=QWEN_EXTRA),
    "Qwen-Qwen2.5-7B-Instruct": dict(eos="<|im_end|>", extra=QWEN_EXTRA[2:]),
    "meta-llama-Llama-3.1-8B-Instruct": dict(
        bos="<|begin_of_text|>", eos="<|eot_id|>",
        special=["<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|python_tag|>"]),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": dict(bos="<|begin_of_text|>", eos="<|im_end|>", extra=QWEN_EXTRA[2:]),
    "mistralai-Mistral-Nemo-Instruct-2407": dict(
        bos="<s>", eos="</s>",
        special=["[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
                 "[/TOOL_RESULTS]"]),
    "deepseek-ai-DeepSeek-V3.1": dict(
        bos="<｜begin▁of▁sentence｜>", eos="<｜end▁of▁sentence｜>",
        special=["<｜User｜>", "<｜Assistant｜>", "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
                 "<｜tool▁call▁end｜>", "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>", "<｜tool▁sep｜>"],
        extra=["<think>", "</think>"]),
    "microsoft-Phi-3.5-mini-instruct": dict(eos="<|endoftext|>", special=["<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]),
}
EOT = {
    "Qwen-Qwen3-0.6B": "<|im_end|>",
    "Qwen-Qwen2.5-7B-Instruct": "<|im_end|>",
    "meta-llama-Llama-3.1-8B-Instruct": "<|eot_id|>",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": "<|im_end|>",
    "mistralai-Mistral-Nemo-Instruct-2407": "</s>",
}


@functools.cache
def setup(name: str, **kw):
    tok = tokenizer_with(**MARKERS[name])
    return tok, read_template(TEMPLATES / f"{name}.jinja")


def make(name: str, **kw) -> tuple:
    tok, tpl = setup(name)
    r = Renderer(tok, chat_template=tpl, **kw)
    r.user_template = False  # judge the template as if it were the tokenizer's own
    return tok, r


@pytest.mark.parametrize("name", list(EOT))
def test_supervised_tokens_are_the_assistant_turns(name):
    """Supervised tokens decode to the assistant messages in the template's own format, each ending with its
    end-of-turn token; tool results, users and headers are never supervised; packed and per-call rendering
    agree on every supervised token."""
    tok, r = make(name)
    conv = weather_conversation()
    seqs = r.render_conversation(conv)
    eot = EOT[name]
    runs = [run for s in seqs for run in supervised_runs(tok, s)]
    assert len(runs) == 4, (runs, r.report.to_dict())
    assert all(run.endswith(eot) for run in runs)
    assert "Paris" in runs[0] and "get_weather" in runs[0]
    assert runs[1].startswith("It is 18 C and raining in Paris.")
    assert "Rome" in runs[2] and "get_weather" in runs[2]
    assert runs[3].startswith("22 C and sunny in Rome.")
    for s in seqs:
        for m, g in zip(s.loss_mask, s.segments):
            assert not (m and g in (Segment.TOOL_RESULT, Segment.USER, Segment.SYSTEM, Segment.MARKUP))
            if m:
                assert g in SUPERVISED
        for run in supervised_runs(tok, s):
            assert "temp_c" not in run and "Weather in Paris?" not in run
    # Per call: the prompt is what the template renders for the served request, and the completions
    # equal the packed supervised tokens.
    sup_rows = [(i, g) for s in seqs for i, m, g in zip(s.input_ids, s.loss_mask, s.segments) if m]
    sup_calls = []
    for call in conv.calls():
        p = r.render_prompt(call)
        assert tok.decode(p.completion_ids).endswith(eot)
        sup_calls += [(i, g) for i, g in zip(p.completion_ids, p.completion_segments) if g != Segment.MARKUP]
    assert sup_rows == sup_calls


def test_qwen3_injected_empty_think_is_not_supervised():
    """Qwen3 writes an empty <think></think> into the last assistant turn when the message has no
    reasoning; the model did not generate it (NVIDIA-NeMo/Automodel#3739)."""
    tok, r = make("Qwen-Qwen3-0.6B")
    assert r.dialect.injected_reasoning == "<think>\n\n</think>\n\n"
    call = list(weather_conversation().calls())[1]
    p = r.render_prompt(call)
    text = tok.decode(p.completion_ids)
    assert text == "<think>\n\n</think>\n\nIt is 18 C and raining in Paris.<|im_end|>"
    labels = p.completion_segments
    n_inj = next(k for k, g in enumerate(labels) if g != Segment.MARKUP)
    assert tok.decode(p.completion_ids[:n_inj]) == "<think>\n\n</think>\n\n"
    assert all(g == Segment.TEXT for g in labels[n_inj:])
    row = r.render_conversation(weather_conversation())[1]
    assert supervised_runs(tok, row) == ["It is 18 C and raining in Paris.<|im_end|>"]


def test_qwen3_think_wrapper_before_a_tool_call_is_reasoning():
    """A turn that reasons and then calls a tool: ``<think>`` and ``</think>`` are reasoning, the markup
    from ``<tool_call>`` on is tool structure (the closing tag is not tool structure just because a call
    follows it), alike in training labels and in the labels of the same tokens as generated text."""
    import dataclasses

    tok, r = make("Qwen-Qwen3-0.6B")
    call = list(weather_conversation().calls())[2]
    # The Rome turn reasons, says "Checking." and calls: without the text the call follows </think>.
    parts = [q for q in call.completion.parts if not isinstance(q, TextPart)]
    call = dataclasses.replace(call, completion=dataclasses.replace(call.completion, parts=parts))
    p = r.render_prompt(call)
    rows = [(tok.decode([i]), Segment(g).name) for i, g in zip(p.completion_ids, p.completion_segments)]
    k = [t for t, _ in rows].index("</think>")
    assert "".join(t for t, _ in rows[:k + 1]) == "<think>\nNeed the Rome weather.\n</think>"
    assert all(g == "REASONING" for _, g in rows[:k + 1]), rows[:k + 1]
    assert [t for t, g in rows[k + 1:] if g != "TOOL_STRUCTURE"][:1] == ["get"]  # then the call's markup
    generated = [(tok.decode([i]), Segment(g).name) for i, g in zip(p.completion_ids, r.segment_completion(p.completion_ids))]
    assert generated == rows


def test_qwen3_enable_thinking_false_puts_empty_think_in_the_prompt():
    tok, r = make("Qwen-Qwen3-0.6B", template_kwargs={"enable_thinking": False})
    call = list(weather_conversation().calls())[1]
    p = r.render_prompt(call)
    assert tok.decode(p.prompt_ids).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert tok.decode(p.completion_ids) == "It is 18 C and raining in Paris.<|im_end|>"


def test_qwen3_stripped_reasoning_is_not_packed():
    """Qwen3 strips reasoning of turns before the last user query, so turn N+1 is not a token extension of
    turn N (verl-project/verl#6854): each call is its own row, and the report says why."""
    tok, r = make("Qwen-Qwen3-0.6B")
    seqs = r.render_conversation(weather_conversation())
    assert len(seqs) == 4
    assert r.report.sequences_packed == 0 and r.report.sequences_per_call == 4
    assert sum(r.report.per_call_reasons.values()) == 4
    # The row of the call with reasoning supervises the reasoning.
    assert "Need the Rome weather." in supervised_runs(tok, seqs[2])[0]


def test_string_arguments_not_double_encoded_qwen25_llama():
    """Qwen2.5 and Llama 3.1 apply tojson to whatever they get: a string would be encoded twice
    (vortico/flama#258, oumi-ai/oumi#2599); the renderer passes a mapping."""
    for name in ("Qwen-Qwen2.5-7B-Instruct", "meta-llama-Llama-3.1-8B-Instruct"):
        tok, r = make(name)
        assert r.dialect.args == "object"
        seqs = r.render_conversation(weather_conversation(string_args=True))
        text = "".join(tok.decode(s.input_ids) for s in seqs)
        assert '{"city": "Paris"}' in text and '\\"city\\"' not in text


def test_deepseek_needs_string_arguments_and_ignores_tools():
    """DeepSeek-V3.1 raises on mapping arguments (mudler/LocalAI#10256 is the reverse failure); the renderer
    detects it needs a string. It also ignores tools=, which is rejected (THUDM/slime#1073)."""
    tok, r = make("deepseek-ai-DeepSeek-V3.1")
    assert r.dialect.args == "string"
    assert r.dialect.tool_support == {"definitions": False, "calls": True, "results": True}
    with pytest.raises(RenderError) as e:
        r.render_conversation(weather_conversation())
    assert e.value.code == "template_drops_tool_content"


def test_phi35_without_tool_support_is_rejected():
    """Phi-3.5's template drops tool calls and results: rejected unless the user supplies the template."""
    tok, r = make("microsoft-Phi-3.5-mini-instruct")
    with pytest.raises(RenderError) as e:
        r.render_conversation(weather_conversation())
    assert e.value.code == "template_drops_tool_content"
    assert "calls" in e.value.message and "results" in e.value.message


def test_mistral_tool_call_ids_are_nine_alphanumerics():
    """Mistral's template raises unless ids are exactly nine alphanumerics (ml-explore/mlx-lm#1375,
    langchain-ai/langchain#24668): ids are regenerated, consistently between call and result."""
    tok, r = make("mistralai-Mistral-Nemo-Instruct-2407")
    assert r.dialect.ids == "alnum9"
    seqs = r.render_conversation(weather_conversation())
    text = tok.decode(seqs[-1].input_ids)
    import re

    ids = re.findall(r'"id": "([^"]*)"', text)
    res = re.findall(r'"call_id": "([^"]*)"', text)
    assert ids and all(len(i) == 9 and i.isalnum() for i in ids)
    assert ids == res
    assert "call_abc123" not in text


def test_hermes_needs_tools_and_gets_them():
    """Hermes crashes on tools=None; the renderer always passes the conversation's tools (THUDM/slime#1073)."""
    tok, r = make("NousResearch-Hermes-3-Llama-3.1-8B-tool_use")
    seqs = r.render_conversation(weather_conversation())
    assert "get_weather" in tok.decode(seqs[0].input_ids[: seqs[0].loss_mask.index(1)])


def test_all_ones_mask_regression_on_every_template():
    """None of the fixtures has {% generation %} markers; masks are derived by rendering, so they are
    never all ones (NVIDIA-NeMo/Megatron-Bridge#3359)."""
    for name in EOT:
        tok, r = make(name)
        for s in r.render_conversation(weather_conversation()):
            assert 0 < sum(s.loss_mask) < len(s.loss_mask)


@pytest.mark.parametrize("name", list(MARKERS))
@pytest.mark.parametrize("kwargs", [{}, {"enable_thinking": False}])
def test_fast_render_is_byte_identical_to_apply_chat_template(name, kwargs):
    """The renderer calls transformers' compiled template directly on messages converted once per
    conversation; every render (each call's prompt and context + answer, both argument forms, with and
    without reasoning) equals apply_chat_template's text byte for byte."""
    from drafters.render import tools_to_openai
    from drafters.render.messages import IdMap

    tok, tpl = setup(name)
    r = Renderer(tok, chat_template=tpl, template_kwargs=kwargs)
    assert r.template.fast is not None and not r.report.warnings.get("fast_render_differs")
    for conv in (weather_conversation(), weather_conversation(string_args=False, reasoning=False)):
        calls = list(conv.calls())
        shared = r._shared_dicts(conv, calls, IdMap(r.dialect.ids, conv.id))
        assert shared is not None and len(shared) == len(calls) == 4
        tools = tools_to_openai(conv.tools)
        for call, dicts in zip(calls, shared):
            # The conversation-level conversion is the per-call conversion (no lookahead in to_dicts).
            assert dicts == r.call_renderer.call_dicts(call, IdMap(r.dialect.ids, conv.id))
            for msgs, gen in ((dicts[:-1], True), (dicts, False)):
                plain = [{k: v for k, v in m.items() if k != "thinking"} for m in msgs]
                try:
                    want = tok.apply_chat_template(plain, tools=tools, chat_template=tpl, tokenize=False,
                                                   add_generation_prompt=gen, **kwargs)
                except jinja2.TemplateError:  # raise_exception() in the template: the fast path raises too
                    with pytest.raises(RenderError):
                        r.template.apply(msgs, r.template.tools_for(conv.tools), gen, prepared=True)
                    continue
                assert r.template.apply(msgs, r.template.tools_for(conv.tools), gen, prepared=True) == want


def test_fast_render_falls_back_when_it_differs(monkeypatch):
    """If transformers' internals ever render differently from apply_chat_template, the probe renders
    notice it and the renderer uses apply_chat_template (same rows as with the fast path)."""
    from drafters.render import template as template_mod

    tok, tpl = setup("Qwen-Qwen2.5-7B-Instruct")
    fast_rows = Renderer(tok, chat_template=tpl).render_conversation(weather_conversation())
    orig = template_mod.FastTemplate.render
    monkeypatch.setattr(template_mod.FastTemplate, "render", lambda self, *a: orig(self, *a) + " ")
    r = Renderer(tok, chat_template=tpl)
    assert r.template.fast is None and r.report.warnings["fast_render_differs"] == 1
    rows = r.render_conversation(weather_conversation())
    assert [(s.input_ids, s.loss_mask, s.segments) for s in rows] == [
        (s.input_ids, s.loss_mask, s.segments) for s in fast_rows]


def test_fast_path_keeps_the_sandbox():
    """The fast path reads a message's keys directly but is still transformers' sandbox: dict methods
    work as in Jinja (``items()``), a key named like a dict method is the method, and a template that
    reaches for Python internals (``__class__``, also as a message key) is refused, not rendered."""
    from drafters.render.template import ChatTemplate

    tok, _ = setup("Qwen-Qwen2.5-7B-Instruct")
    ok = ("{% for m in messages %}{{ m.role }}:{{ m.content }}|{% for k, v in m.items() %}{{ k }},{% endfor %}"
          "{{ m.keys is callable }}{% endfor %}")
    t = ChatTemplate(tok, ok, None, Counter())
    msgs = [{"role": "user", "content": "hi", "keys": "shadowed"}]
    assert t.fast is not None
    assert t.apply(msgs, None, False) == t.apply_slow(msgs, None, False) == "user:hi|role,content,keys,True"
    for evil in ("{{ messages[0].__class__.__mro__ }}", "{{ messages[0].role.__class__.__base__ }}"):
        t = ChatTemplate(tok, evil, None, Counter())
        with pytest.raises(RenderError, match="template_error|unsafe|SecurityError"):
            t.apply([{"role": "user", "content": "x", "__class__": "y"}], None, False)
