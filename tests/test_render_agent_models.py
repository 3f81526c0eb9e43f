"""drafters.render over the chat templates of today's agent models (fixtures in tests/fixtures/chat_templates,
sources in SOURCES-agent-models.tsv): templates that open reasoning in the generation prompt (MiniMax-M2,
DeepSeek-V3.2), harmony channels and turn ends (gpt-oss), arguments written as XML pairs with Python or
typed values (Qwen3-Coder, DSML), reasoning in content chunks (Ministral-3 Reasoning), templates that drop
tool calls (Granite-3.3, Phi-4-mini) and named templates (Hermes-3). Each with a tokenizer whose markers
are single tokens (SmolLM2's tokenizer plus the template's markers), on conversations with one call,
parallel calls, reasoning and a final answer after a call; training labels and the labels of the same
tokens as generated text must agree (one labelling rule)."""

from __future__ import annotations

import functools

import pytest

from drafters.render import Renderer, Segment
from drafters.traces.model import (
    Conversation,
    Message,
    ReasoningPart,
    Source,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
)
from tests.test_render import TEMPLATES, read_template, supervised_runs, tokenizer_with

DSML = "｜DSML｜"
MINISTRAL = ["[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
             "[TOOL_CALLS]", "[ARGS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[THINK]", "[/THINK]", "[IMG]"]
TOOL_TAGS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
MARKERS = {
    "MiniMaxAI-MiniMax-M2": {"bos": "]~!b[", "eos": "[e~[", "special": ["]~b]"],
                             "extra": ["<think>", "</think>", "<minimax:tool_call>", "</minimax:tool_call>"]},
    "deepseek-ai-DeepSeek-V3.2": {"bos": "<｜begin▁of▁sentence｜>", "eos": "<｜end▁of▁sentence｜>",
                                  "special": ["<｜User｜>", "<｜Assistant｜>"], "extra": ["<think>", "</think>"]},
    "openai-gpt-oss-120b": {"eos": "<|return|>", "special": ["<|start|>", "<|channel|>", "<|message|>", "<|call|>",
                                                             "<|end|>", "<|constrain|>"]},
    "Qwen-Qwen3-Coder-30B-A3B-Instruct": {"eos": "<|im_end|>", "extra": TOOL_TAGS},
    "mistralai-Ministral-3-14B-Reasoning-2512": {"bos": "<s>", "eos": "</s>", "special": MINISTRAL},
    "ibm-granite-granite-3.3-2b-instruct": {"eos": "<|end_of_text|>",
                                            "special": ["<|start_of_role|>", "<|end_of_role|>", "<|tool_call|>"]},
    "microsoft-Phi-4-mini-instruct": {"eos": "<|endoftext|>", "special": ["<|system|>", "<|user|>", "<|assistant|>",
                                                                          "<|end|>", "<|tool|>", "<|/tool|>"]},
    "ibm-granite-granite-4.0": {"eos": "<|end_of_text|>", "special": ["<|start_of_role|>", "<|end_of_role|>"],
                                "extra": TOOL_TAGS},
    "mistralai-Mistral-Small-3.2-24B-Instruct-2506": {"bos": "<s>", "eos": "</s>",
                                                      "special": [*MINISTRAL, "[CALL_ID]", "[TOOL_CONTENT]"]},
    "unsloth-Devstral-Small-2507": {"bos": "<s>", "eos": "</s>", "special": MINISTRAL},
}
WEATHER = ToolDef("get_weather", "Weather for a city.",
                  {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                   "required": ["city"]})


@functools.cache
def _tokenizer(name: str):
    return tokenizer_with(**MARKERS[name])


def make(name: str, kwargs: dict | None = None, user: bool = False) -> tuple:
    """(tokenizer, renderer) for template ``name``, judged as the tokenizer's own (``user``: as given by the
    user, ``chat_template=``)."""
    tok = _tokenizer(name)
    r = Renderer(tok, chat_template=read_template(TEMPLATES / f"{name}.jinja"), template_kwargs=kwargs)
    r.user_template = user
    return tok, r


def conv(*msgs: Message, tools=(WEATHER,)) -> Conversation:
    return Conversation("c1", Source("openai_chat", "f", 1), list(tools), list(msgs))


def call(cid: str, city: str, **more) -> ToolCallPart:
    return ToolCallPart.from_raw(cid, "get_weather", {"city": city, **more})


def agent_conversation(reasoning: bool = True, parallel: bool = True, followup: bool = True) -> Conversation:
    """user, (reasoning +) call, result, user (``followup``), (reasoning +) two parallel calls, results,
    (reasoning +) answer."""
    think = (lambda s: [ReasoningPart(s)]) if reasoning else (lambda s: [])
    second = [call("c2", "Rome", days=2), call("c3", "Oslo")] if parallel else [call("c2", "Rome", days=2)]
    msgs = [
        Message("user", [TextPart("Weather in Paris?")]),
        Message("assistant", think("Look it up.") + [call("c1", "Paris")]),
        Message("tool", [ToolResultPart("c1", "rain")]),
        *([Message("user", [TextPart("And Rome and Oslo?")])] if followup else []),
        Message("assistant", think("Both at once.") + second),
        *[Message("tool", [ToolResultPart(f"c{k}", "sun")]) for k in range(2, 2 + len(second))],
        Message("assistant", think("Summarise.") + [TextPart("Rain in Paris, sun elsewhere.")]),
    ]
    return conv(*msgs)


def labelled(tok, ids, segs) -> list[tuple[str, str]]:
    """Runs of (segment name, decoded text)."""
    out: list[list[str]] = []
    for i, g in zip(ids, segs):
        t, n = tok.decode([i], skip_special_tokens=False), Segment(g).name
        if out and out[-1][0] == n:
            out[-1][1] += t
        else:
            out.append([n, t])
    return [(n, t) for n, t in out]


def assert_one_labelling_rule(tok, r, c: Conversation) -> list:
    """Every call of ``c`` renders; the training labels of its completion equal the labels of the same
    tokens as generated text (template-injected MARKUP left out); returns the rendered prompts."""
    prompts = []
    for cl in c.calls():
        p = r.render_prompt(cl)
        k = next(i for i, g in enumerate(p.completion_segments) if g != Segment.MARKUP)
        ids = p.completion_ids[k:]
        train = labelled(tok, ids, p.completion_segments[k:])
        gen = labelled(tok, ids, r.segment_completion(ids))
        assert train == gen, (cl.id, train, gen)
        prompts.append(p)
    return prompts


def completion_text(tok, p) -> str:
    return tok.decode(p.completion_ids, skip_special_tokens=False)


# ------------------------------------------------------------------ reasoning opened in the generation prompt


def test_minimax_answers_without_reasoning_close_the_block_their_prompt_opened():
    """MiniMax-M2's generation prompt ends ``<think>\\n``: an answer without reasoning is the close of that
    block and the answer (before: dropped as context_not_prefix, the probe's own call too, so no call markup
    was learned and generated calls were labelled text)."""
    tok, r = make("MiniMaxAI-MiniMax-M2")
    assert r.dialect.prompt_reasoning == "open" and "<minimax:tool_call>" in r.dialect.call_prefix
    rows = r.render_conversation(conv(Message("user", [TextPart("Hi")]), Message("assistant", [TextPart("Hello")]),
                                      tools=()))
    assert r.report.dropped == [] and len(rows) == 1
    assert supervised_runs(tok, rows[0]) == ["\n</think>\n\nHello[e~["]
    c = agent_conversation()
    rows = r.render_conversation(c)
    assert r.report.dropped == [] and sum(len(s.call_ids) for s in rows) == 3
    for p in assert_one_labelling_rule(tok, r, c):
        text = labelled(tok, p.completion_ids, p.completion_segments)
        assert text[0][0] == "REASONING" and text[0][1].rstrip().endswith("</think>"), text
    gen = ('Plan.\n</think>\n\n\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris'
           '</parameter>\n</invoke>\n</minimax:tool_call>[e~[')
    calls = r.generated_calls(gen)
    assert [gen[c.name.start:c.name.end] for c in calls] == ["get_weather"]
    ids = tok.encode(gen, add_special_tokens=False)
    assert labelled(tok, ids, r.segment_completion(ids))[:2] == [
        ("REASONING", "Plan.\n</think>"), ("TOOL_STRUCTURE", '\n\n\n<minimax:tool_call>\n<invoke name="')]


@pytest.mark.parametrize("thinking", [False, True])
def test_deepseek_v32_renders_every_call_thinking_on_and_off(thinking):
    """DeepSeek-V3.2 with thinking off (its default) writes ``<think></think>`` in the generation prompt and
    ``</think>`` in history: every call was dropped. With thinking on the prompt opens ``<think>``: the
    answer's reasoning and close tag are reasoning in training and in generated text alike."""
    tok, r = make("deepseek-ai-DeepSeek-V3.2", {"thinking": True} if thinking else None)
    assert r.dialect.prompt_reasoning == ("open" if thinking else "closed")
    c = agent_conversation(reasoning=thinking)
    rows = r.render_conversation(c)
    assert r.report.dropped == [] and sum(len(s.call_ids) for s in rows) == 3
    prompts = assert_one_labelling_rule(tok, r, c)
    first = completion_text(tok, prompts[0])
    if thinking:
        assert first.startswith("Look it up.</think>") and tok.decode(prompts[0].prompt_ids).endswith("<think>")
    else:
        assert first.startswith(f"\n\n<{DSML}function_calls>")
        assert tok.decode(prompts[0].prompt_ids).endswith("<｜Assistant｜><think></think>")
    assert first.endswith("<｜end▁of▁sentence｜>")


def test_deepseek_v32_thinking_off_refuses_an_answer_that_reasons():
    """Thinking off closes the reasoning in the prompt: a logged answer with reasoning could not have been
    written by the served model; it is dropped with a code that says so, never trained without it."""
    _, r = make("deepseek-ai-DeepSeek-V3.2")
    r.render_conversation(conv(Message("user", [TextPart("Hi")]),
                               Message("assistant", [ReasoningPart("Greet."), TextPart("Hello")]), tools=()))
    assert [d["code"] for d in r.report.dropped] == ["reasoning_closed_by_prompt"]


# ------------------------------------------------------------------------------------------ gpt-oss harmony


def test_gpt_oss_turn_ends_are_return_and_call():
    """A harmony turn ends at ``<|return|>`` (final answer) or ``<|call|>`` (tool call): regeneration stops
    there; ``<|end|>`` ends a message inside the turn (the analysis before the answer) and must not stop it."""
    tok, r = make("openai-gpt-oss-120b")
    assert tok.convert_ids_to_tokens(r.end_of_turn_ids()) == ["<|return|>", "<|call|>"]
    assert r.dialect.message_end == "<|end|>"


def test_gpt_oss_final_answer_after_a_reasoned_call_is_kept():
    """gpt-oss drops the analysis of earlier tool-call turns once a final answer follows, so the history no
    longer starts with the served prompt: the answer is still the text after the served prompt (before:
    every final answer after a reasoned call dropped as context_not_prefix). The bridge between analysis and
    answer or call is labelled alike in training and in generated text."""
    tok, r = make("openai-gpt-oss-120b")
    c = agent_conversation(parallel=False)
    rows = r.render_conversation(c)
    assert r.report.dropped == [] and sum(len(s.call_ids) for s in rows) == 3
    prompts = assert_one_labelling_rule(tok, r, c)
    assert completion_text(tok, prompts[0]) == (
        '<|channel|>analysis<|message|>Look it up.<|end|><|start|>assistant to=functions.get_weather'
        '<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>')
    assert completion_text(tok, prompts[2]) == (
        "<|channel|>analysis<|message|>Summarise.<|end|><|start|>assistant<|channel|>final<|message|>"
        "Rain in Paris, sun elsewhere.<|return|>")
    # The served prompt of the final answer holds the analysis of the call before it.
    assert "Both at once." in tok.decode(prompts[2].prompt_ids)
    assert not any(k.startswith(("end_of_turn_guessed", "not_located")) for k in r.report.warnings)


def test_gpt_oss_parallel_calls_are_refused_not_half_rendered():
    """gpt-oss renders only ``tool_calls[0]`` of a message: a turn with parallel calls, and every call whose
    context holds one, is dropped with a code naming that behaviour (before: the second call vanished and
    both results were shown under the first call's name)."""
    _, r = make("openai-gpt-oss-120b")
    assert r.dialect.one_call_per_turn
    rows = r.render_conversation(agent_conversation())
    assert [s.call_ids for s in rows] == [["c1/0"]]
    assert [(d["call_id"], d["code"]) for d in r.report.dropped] == [
        ("c1/1", "template_renders_one_call_per_turn"), ("c1/2", "template_renders_one_call_per_turn")]


def test_gpt_oss_text_of_a_tool_call_turn_is_reasoning_as_written_on_the_analysis_channel():
    """gpt-oss writes the text of a message that makes a tool call (OpenAI-format traces: "Let me check."
    plus a call) on the analysis channel, where the model writes its reasoning: training labels it
    REASONING, as generated text is labelled by channel (before: TEXT in training, REASONING in
    evaluation). A final answer's text stays TEXT."""
    tok, r = make("openai-gpt-oss-120b")
    c = conv(Message("user", [TextPart("Weather in Paris?")]),
             Message("assistant", [TextPart("Let me check."), call("c1", "Paris")]),
             Message("tool", [ToolResultPart("c1", "rain")]),
             Message("assistant", [TextPart("It will rain.")]))
    rows = r.render_conversation(c)
    assert r.report.dropped == [] and sum(len(s.call_ids) for s in rows) == 2
    prompts = assert_one_labelling_rule(tok, r, c)
    first = labelled(tok, prompts[0].completion_ids, prompts[0].completion_segments)
    assert first[0] == ("REASONING", "<|channel|>analysis<|message|>Let me check.")
    assert [n for n, _ in first[1:]] == ["TOOL_STRUCTURE", "TOOL_NAME", "TOOL_STRUCTURE", "TOOL_ARGS",
                                         "TOOL_STRUCTURE"]
    assert labelled(tok, prompts[1].completion_ids, prompts[1].completion_segments) == [
        ("TEXT", "<|channel|>final<|message|>It will rain.<|return|>")]
    assert not any(k.startswith("not_located") for k in r.report.warnings)


def test_gpt_oss_reasoning_and_text_with_a_call_is_refused_with_its_own_code():
    """gpt-oss raises on a tool-call message with both reasoning and text (both go on the one analysis
    channel): the probe learns that, and such calls are dropped with a code naming the behaviour, not the
    generic template_error; a call with reasoning alone still renders."""
    _, r = make("openai-gpt-oss-120b")
    assert r.dialect.refuses_reasoning_and_content
    r.render_conversation(conv(Message("user", [TextPart("Weather in Paris?")]),
                               Message("assistant", [ReasoningPart("Look it up."), TextPart("Let me check."),
                                                     call("c1", "Paris")]),
                               Message("tool", [ToolResultPart("c1", "rain")]),
                               Message("assistant", [ReasoningPart("Done."), TextPart("It will rain.")])))
    assert [(d["call_id"], d["code"]) for d in r.report.dropped] == [
        ("c1/0", "template_refuses_reasoning_and_content"), ("c1/1", "template_refuses_reasoning_and_content")]
    _, qwen = make("Qwen-Qwen3-Coder-30B-A3B-Instruct")
    assert not qwen.dialect.refuses_reasoning_and_content


# ---------------------------------------------------------------------------- argument values of every type


def typed_conversation() -> Conversation:
    """user, a call with a string, an integer, a boolean, a list and a null value, result, answer."""
    return conv(Message("user", [TextPart("Paris?")]),
                Message("assistant", [call("c1", "Paris", days=3, verbose=True, tags=["a", "b"], unit=None)]),
                Message("tool", [ToolResultPart("c1", "rain")]), Message("assistant", [TextPart("Rain.")]))


@pytest.mark.parametrize("name,kwargs,forms", [
    ("Qwen-Qwen3-Coder-30B-A3B-Instruct", None, {"boolean": "python", "array": "python", "null": "python"}),
    ("deepseek-ai-DeepSeek-V3.2", {"thinking": True}, {}),
    ("MiniMaxAI-MiniMax-M2", None, {}),
])
def test_argument_values_of_every_type_are_located_and_parsed(name, kwargs, forms):
    """Qwen3-Coder writes booleans, lists and null with Python's ``str`` (``True``, ``['a', 'b']``), DSML
    writes non-string values after ``string="false"``: the probe learns how each type is written, every
    value is TOOL_ARGS and the closing markup and end token are tool structure, in training and in
    generated text; the generated call parses back to the logged arguments (before: the rest of the call,
    end token included, was labelled tool_args, and DSML's value ran to the end of the call)."""
    from drafters.render import tools_to_openai
    from drafters.toolcalls import check_tool_calls, find_tool_calls

    tok, r = make(name, kwargs)
    assert r.dialect.arg_form == "pairs" and r.dialect.value_forms == forms
    c = typed_conversation()
    p = assert_one_labelling_rule(tok, r, c)[0]
    assert not any(k.startswith("not_located") or k == "args_located_approx" for k in r.report.warnings)
    runs = labelled(tok, p.completion_ids, p.completion_segments)
    assert runs[-1][0] == "TOOL_STRUCTURE" and runs[-2][0] == "TOOL_ARGS", runs
    args = [t for g, t in runs if g == "TOOL_ARGS"]
    want = ["True", "['a', 'b']", "None"] if forms else ["true", '["a", "b"]', "null"]
    assert all(w in args for w in want), args
    calls = check_tool_calls(find_tool_calls(r, completion_text(tok, p)), tools_to_openai(c.tools))
    assert [(x.name, x.arguments, x.error) for x in calls] == [
        ("get_weather", {"city": "Paris", "days": 3, "verbose": True, "tags": ["a", "b"], "unit": None}, None)]


# ----------------------------------------------------------------------------------- reasoning in chunks


def test_ministral_reasoning_is_rendered_from_thinking_chunks():
    """Ministral-3 Reasoning reads reasoning only from ``{"type": "thinking"}`` content chunks: the probe
    finds that and the renderer passes reasoning so, so rows hold it as REASONING (before: silently not
    rendered, only a not_located warning) and a generated ``[THINK]...[/THINK]`` is reasoning too."""
    tok, r = make("mistralai-Ministral-3-14B-Reasoning-2512")
    assert r.dialect.reasoning_chunks and (r.dialect.reasoning_open, r.dialect.reasoning_close) == ("[THINK]", "[/THINK]")
    c = agent_conversation(followup=False)  # the template insists on user/assistant alternation
    rows = r.render_conversation(c)
    assert r.report.dropped == [] and sum(len(s.call_ids) for s in rows) == 3
    assert not any(k.startswith("not_located") for k in r.report.warnings), r.report.warnings
    runs = [run for s in rows for run in supervised_runs(tok, s)]
    assert [x[:x.index("[/THINK]") + 8] for x in runs] == [
        "[THINK]Look it up.[/THINK]", "[THINK]Both at once.[/THINK]", "[THINK]Summarise.[/THINK]"]
    prompts = assert_one_labelling_rule(tok, r, c)
    assert labelled(tok, prompts[2].completion_ids, prompts[2].completion_segments) == [
        ("REASONING", "[THINK]Summarise.[/THINK]"), ("TEXT", "Rain in Paris, sun elsewhere.</s>")]


# ------------------------------------------------------------------ templates that drop or choose tool content


@pytest.mark.parametrize("name", ["ibm-granite-granite-3.3-2b-instruct", "microsoft-Phi-4-mini-instruct"])
def test_user_template_that_drops_tool_calls_refuses_those_calls(name):
    """Granite-3.3 and Phi-4-mini write no tool calls. Given as the job's template, a call whose answer
    makes a tool call is dropped with ``template_drops_tool_content`` (before: kept, its completion the end
    token alone labelled tool_args); the answers after the tool results are kept (their served prompt is
    that render), with the warning that the template drops tool content. The probe's own renders leave no
    warning in the report (before: not_located counts from the probe reached the user's dataset report)."""
    tok, r = make(name, user=True)
    assert r.dialect.tool_support["calls"] is False
    assert dict(r.report.warnings) == {}
    c = conv(Message("user", [TextPart("Paris?")]), Message("assistant", [call("c1", "Paris")]),
             Message("tool", [ToolResultPart("c1", "rain")]), Message("assistant", [TextPart("Rain.")]))
    rows = r.render_conversation(c)
    assert [(d["call_id"], d["code"]) for d in r.report.dropped] == [("c1/0", "template_drops_tool_content")]
    assert [s.call_ids for s in rows] == [["c1/1"]]
    assert supervised_runs(tok, rows[0])[0].startswith("Rain.")
    assert r.report.warnings["user_template_drops_tool_content"] == 1
    assert not any(k.startswith("not_located") for k in r.report.warnings)


def test_hermes_named_templates_plain_chats_use_default():
    """A tokenizer with named templates ``default`` and ``tool_use`` (Hermes-3): as apply_chat_template,
    a conversation without tools renders through ``default`` (before: always tool_use, which raises without
    tools, so every plain chat was dropped), one with tools through ``tool_use``; one report counts both."""
    tok = tokenizer_with(bos="<|begin_of_text|>", eos="<|im_end|>", extra=TOOL_TAGS)
    default = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
               "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    tok.chat_template = {"default": default,
                         "tool_use": read_template(TEMPLATES / "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja")}
    r = Renderer(tok)
    plain = conv(Message("user", [TextPart("Hi")]), Message("assistant", [TextPart("Hello")]), tools=())
    rows = r.render_conversation(plain)
    assert r.report.dropped == [] and supervised_runs(tok, rows[0]) == ["Hello<|im_end|>"]
    p = r.render_prompt(next(iter(plain.calls())))
    assert tok.decode(p.prompt_ids) == tok.apply_chat_template(
        [{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True)
    rows = r.render_conversation(agent_conversation(reasoning=False))
    assert r.report.dropped == [] and r.report.conversations == 2 and "<tool_call>" in supervised_runs(tok, rows[0])[0]


# ---------------------------------------------------------------------------- every template, one agent run


@pytest.mark.parametrize("name,kwargs,followup", [
    ("MiniMaxAI-MiniMax-M2", None, True),
    ("deepseek-ai-DeepSeek-V3.2", None, True),
    ("deepseek-ai-DeepSeek-V3.2", {"thinking": True}, True),
    ("Qwen-Qwen3-Coder-30B-A3B-Instruct", None, True),
    ("mistralai-Ministral-3-14B-Reasoning-2512", None, False),
    ("ibm-granite-granite-4.0", None, True),
    ("mistralai-Mistral-Small-3.2-24B-Instruct-2506", None, False),
    ("unsloth-Devstral-Small-2507", None, False),
])
def test_agent_run_renders_every_call_with_one_labelling_rule(name, kwargs, followup):
    """One call, parallel calls and a final answer after them, with reasoning where the template keeps it:
    no call dropped, every supervised run ends with the template's end-of-turn token, no logged string
    left unlocated, and training labels equal the labels of the same tokens as generated text."""
    tok, r = make(name, kwargs)
    keeps_reasoning = r.dialect.prompt_reasoning != "closed" and name not in (
        "Qwen-Qwen3-Coder-30B-A3B-Instruct", "ibm-granite-granite-4.0",
        "mistralai-Mistral-Small-3.2-24B-Instruct-2506", "unsloth-Devstral-Small-2507")
    c = agent_conversation(reasoning=keeps_reasoning, followup=followup)
    rows = r.render_conversation(c)
    assert r.report.dropped == [] and sum(len(s.call_ids) for s in rows) == 3
    assert not any(k.startswith(("not_located", "end_of_turn_guessed", "args_located")) for k in r.report.warnings)
    eot = tuple(r.dialect.eot_tokens)
    assert all(run.endswith(eot) for s in rows for run in supervised_runs(tok, s)), r.dialect.eot_tokens
    assert_one_labelling_rule(tok, r, c)


@pytest.mark.parametrize("name", list(MARKERS))
def test_renders_are_byte_identical_to_apply_chat_template(name):
    """Every prompt and context + answer rendered for the agent run (thinking chunks, Python-literal values
    and parallel calls included) is apply_chat_template's text byte for byte."""
    import jinja2

    from drafters.render.messages import IdMap

    tok, r = make(name)
    c = agent_conversation(followup="Mistral" not in name and "Devstral" not in name)
    tools = r.template.tools_for(c.tools)
    n = 0
    for cl in c.calls():
        dicts = r.call_renderer.call_dicts(cl, IdMap(r.dialect.ids, c.id))
        for msgs, gen in ((dicts[:-1], True), (dicts, False)):
            plain = [{k: v for k, v in m.items() if k != "thinking"} for m in msgs]
            try:
                want = tok.apply_chat_template(plain, tools=tools, chat_template=r.chat_template, tokenize=False,
                                               add_generation_prompt=gen)
            except jinja2.TemplateError:
                continue
            assert r.template.apply(msgs, tools, gen, prepared=True) == want
            n += 1
    assert n >= 2
