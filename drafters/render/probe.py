"""Template probing: the small conversations rendered once per template to learn what it supports and how
it writes things (`Dialect`): the end-of-turn marker, the reasoning wrapper and what it injects, argument
type, empty content, tool-call id form, whether tool definitions, calls and results survive, and the
tool-call markup around a name and its arguments."""

from __future__ import annotations

import itertools
import json
from collections import Counter

from drafters.render.calls import CallRenderer
from drafters.render.codec import TokenCodec
from drafters.render.labels import arg_candidates
from drafters.render.messages import IdMap, to_dicts, tools_to_openai
from drafters.render.records import Dialect, RenderError
from drafters.render.template import ChatTemplate
from drafters.segments import Segment
from drafters.traces.model import LLMCall, Message, TextPart, ToolCallPart, ToolDef, ToolResultPart

_PROBE_TOOL = ToolDef(
    name="probe_lookup_qz",
    description="Probe tool description qz.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what to look up"}},
        "required": ["query"],
    },
)
_PROBE_ARGS = {"query": "probe argument qz", "limit": 3}
_PROBE_RESULT = "probe result qz"
_PROBE_SYSTEM = "Probe system qz."
_PROBE_USER = "Probe user qz?"
_PROBE_ANSWER = "Probe answer qz."
_PROBE_FOLLOWUP = "Probe follow-up qz?"
_PROBE_REASONING = "Probe reasoning qz."
_DEFAULT_REASONING = ("", "<think>", "</think>")


def probe_dialect(template: ChatTemplate, codec: TokenCodec, warnings: Counter) -> Dialect:
    """This template's conventions, found by rendering small probe conversations (see `Dialect`).

    While probing, every fast render is checked against ``apply_chat_template`` (``template.verify_fast``).
    A template that drops tool content gets ``tool_error`` set (raising is the caller's decision).
    """
    template.verify_fast = template.fast is not None
    d = Dialect()
    d.eot_tokens = _probe_eot(template, codec)
    d.injected_reasoning, d.reasoning_open, d.reasoning_close = _probe_reasoning(template)
    if _probe_tools(template, d):
        _probe_call_markup(template, codec, d, warnings)
    template.verify_fast = False
    return d


def _probe_eot(template: ChatTemplate, codec: TokenCodec) -> tuple[str, ...]:
    """The end-of-turn markers: the first added token after an assistant turn's content, then EOS."""
    eot: list[str] = []
    msgs = [
        {"role": "user", "content": _PROBE_USER},
        {"role": "assistant", "content": _PROBE_ANSWER},
        {"role": "user", "content": _PROBE_FOLLOWUP},
    ]
    text = template.try_apply(msgs, None, False)
    if text and _PROBE_ANSWER in text and _PROBE_FOLLOWUP in text and codec.added_re is not None:
        a = text.index(_PROBE_ANSWER) + len(_PROBE_ANSWER)
        m = codec.added_re.search(text, a, text.index(_PROBE_FOLLOWUP, a))
        if m:
            eot.append(m.group(0))
    eos = getattr(codec.tokenizer, "eos_token", None)
    if eos and eos not in eot:
        eot.append(eos)
    return tuple(eot)


def _probe_reasoning(template: ChatTemplate) -> tuple[str, str, str]:
    """(injected text, reasoning open, reasoning close): the wrapper around a probe reasoning, and the empty
    wrapper the template writes into an answer without reasoning (Qwen3), which is never supervised."""
    user = [{"role": "user", "content": _PROBE_USER}]
    prompt = template.try_apply(user, None, True)
    with_r = template.try_apply(user + [{"role": "assistant", "content": _PROBE_ANSWER,
                                         "reasoning_content": _PROBE_REASONING}], None, False)
    without = template.try_apply(user + [{"role": "assistant", "content": _PROBE_ANSWER}], None, False)
    if not prompt or not with_r or not without:
        return _DEFAULT_REASONING
    if not (with_r.startswith(prompt) and without.startswith(prompt)):
        return _DEFAULT_REASONING
    cr, c0 = with_r[len(prompt):], without[len(prompt):]
    i, j = cr.find(_PROBE_REASONING), cr.find(_PROBE_ANSWER)
    if i < 0 or j < i:
        return _DEFAULT_REASONING
    open_, close = cr[:i], cr[i + len(_PROBE_REASONING):j]
    injected = ""
    a0 = c0.find(_PROBE_ANSWER)
    if a0 > 0:
        pre = c0[:a0]
        # The no-reasoning render starts with the reasoning wrapper, emptied: template-injected text
        # (newlines compared loosely: Qwen3 strips the reasoning's newlines).
        if pre.replace("\n", "") == (open_ + close).replace("\n", "") and pre.strip():
            injected = pre
    return injected, (open_.strip() or "<think>"), (close.strip() or "</think>")


def _probe_conversation() -> list[Message]:
    """System, user, an assistant tool call and its result."""
    probe_call = ToolCallPart.from_raw("call_probe_0001", _PROBE_TOOL.name, dict(_PROBE_ARGS))
    return [
        Message("system", [TextPart(_PROBE_SYSTEM)]),
        Message("user", [TextPart(_PROBE_USER)]),
        Message("assistant", [probe_call]),
        Message("tool", [ToolResultPart("call_probe_0001", _PROBE_RESULT, name=_PROBE_TOOL.name)]),
    ]


def _probe_tools(template: ChatTemplate, d: Dialect) -> bool:
    """Set ``d``'s argument type, empty content, id form and tool support from the best-rendering trial
    (``tool_error`` when some tool content is dropped). False when every trial raises."""
    best = _best_tool_trial(template, _probe_conversation(), tools_to_openai([_PROBE_TOOL]))
    if best is None:
        d.tool_support = {"definitions": False, "calls": False, "results": False}
        d.tool_error = "the chat template raises on every probe conversation with a tool call and result"
        return False
    d.args, d.empty_content, d.ids = best.args, best.empty_content, best.ids
    d.tool_support = best.tool_support
    missing = [k for k, v in d.tool_support.items() if not v]
    if missing:
        d.tool_error = (
            "the chat template silently drops tool " + ", ".join(missing)
            + " (probe render); pass a tool-aware template (e.g. examples/chat_templates/chatml_tools.jinja)"
        )
    return True


def _best_tool_trial(template: ChatTemplate, conv: list[Message], tools: list[dict] | None) -> Dialect | None:
    """The first trial conventions that keep the most tool content (definitions, calls, results), trying
    both id forms for each argument type and content convention until one keeps all three."""
    best: tuple[int, Dialect] | None = None
    for args, empty in itertools.product(("object", "string"), ("empty", "omit")):
        for idm in ("passthrough", "alnum9"):
            trial = Dialect(args=args, empty_content=empty, ids=idm)
            dicts = to_dicts(conv, IdMap(idm, "probe"), trial, template.prepare)
            text = template.try_apply(dicts, tools, True)
            if text is None:
                continue
            user_at = text.find(_PROBE_USER)
            support = {
                "definitions": _PROBE_TOOL.description in text,
                "calls": (_args_single_encoded(text, args) and user_at >= 0
                          and _PROBE_TOOL.name in text[user_at:]),
                "results": _PROBE_RESULT in text,
            }
            score = sum(support.values())
            if best is None or score > best[0]:
                trial.tool_support = support
                best = (score, trial)
        if best is not None and best[0] == 3:
            break
    return best[1] if best is not None else None


def _probe_call_markup(template: ChatTemplate, codec: TokenCodec, d: Dialect, warnings: Counter) -> None:
    """Set ``d``'s tool-call markup (text before the name, between name and arguments, after the arguments)
    from the probe call rendered as a completion; `segment_completion` finds calls in generated text by it."""
    conv = _probe_conversation()
    call = LLMCall("probe", 0, [_PROBE_TOOL], conv[:2], conv[2])
    try:
        pr = CallRenderer(template, d, codec, warnings).render(call, IdMap(d.ids, "probe"))
    except RenderError:
        return
    c = pr.completion_text
    name = next((sp for sp in pr.spans if sp.segment == Segment.TOOL_NAME), None)
    args = next((sp for sp in pr.spans if sp.segment == Segment.TOOL_ARGS), None)
    if name is None or args is None:
        return
    eot_at = len(c)
    for t in d.eot_tokens:
        if c.endswith(t):
            eot_at = len(c) - len(t)
    d.call_prefix = c[pr.sup_start:name.start]
    d.call_mid = c[name.end:args.start]
    d.call_suffix = c[args.end:eot_at]


def _args_single_encoded(text: str, mode: str) -> bool:
    """Whether the probe arguments appear in ``text`` encoded once (not a JSON string inside JSON)."""
    if mode == "object":
        return any(c in text for c in arg_candidates(_PROBE_ARGS))
    raw = json.dumps(_PROBE_ARGS, ensure_ascii=False, separators=(",", ":"))
    return raw in text and json.dumps(raw)[1:-1] not in text.replace(raw, "")
