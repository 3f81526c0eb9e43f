"""Template probing: the small conversations rendered once per template to learn what it supports and how
it writes things (`Dialect`): the end-of-turn marker (its own, or the next message's role token), the
reasoning wrapper and what it injects, argument type and form (JSON or key/value pairs), empty content,
the tool-call id form that pairs calls with their results, whether tool definitions, calls and results
survive, and the tool-call markup around names and arguments (`drafters.render.markup`)."""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter

import drafters.render.markup as markup
from drafters.render.calls import CallRenderer
from drafters.render.codec import TokenCodec
from drafters.render.labels import arg_candidates, json_type, reasoning_tail
from drafters.render.messages import IdMap, reasoning_chunks, to_dicts, tools_to_openai
from drafters.render.records import CallRender, Dialect, RenderError
from drafters.render.template import ChatTemplate
from drafters.traces.model import (
    LLMCall,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
)

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
_PROBE_ARGS_2 = {"query": "probe second qz", "limit": 7}
_PROBE_RESULT = "probe result qz"
_PROBE_SYSTEM = "Probe system qz."
_PROBE_USER = "Probe user qz?"
_PROBE_ANSWER = "Probe answer qz."
_PROBE_FOLLOWUP = "Probe follow-up qz?"
_PROBE_REASONING = "Probe reasoning qz."
_DEFAULT_REASONING = ("", "<think>", "</think>")


def probe_dialect(template: ChatTemplate, codec: TokenCodec) -> Dialect:
    """This template's conventions, found by rendering small probe conversations (see `Dialect`).

    While probing, every fast render is checked against ``apply_chat_template`` (``template.verify_fast``).
    A template that drops tool content gets ``tool_error`` set (raising is the caller's decision).
    """
    template.verify_fast = template.fast is not None
    d = Dialect()
    d.eot_tokens, d.turn_end_text, d.message_end = _probe_eot(template, codec)
    _probe_reasoning(template, d)
    if _probe_tools(template, d):
        _probe_value_forms(template, d)
        _probe_tool_turn_end(template, codec, d)
        _probe_call_markup(template, codec, d)
    template.verify_fast = False
    return d


def _probe_eot(template: ChatTemplate, codec: TokenCodec) -> tuple[tuple[str, ...], str | None, str | None]:
    """(end-of-turn markers, borrowed end of an answer, end of a message within a turn). The markers: the
    first added token after an assistant turn's content, then EOS. When the answer rendered last ends with
    another token than in history (gpt-oss: ``<|return|>`` ends the turn, ``<|end|>`` a message of it, such
    as the analysis before the final answer), the last one is the turn end and the history one a message
    end. The first token is borrowed when the template writes nothing after the answer and the next
    message's render starts with it (GLM's ``<|user|>``): the turn has no end token of its own, the model
    ends it with the next role's token."""
    eot: list[str] = []
    borrowed = message_end = None
    user = [{"role": "user", "content": _PROBE_USER}]
    answer = {"role": "assistant", "content": _PROBE_ANSWER}
    text = template.try_apply(user + [answer, {"role": "user", "content": _PROBE_FOLLOWUP}], None, False)
    own = template.try_apply(user + [answer], None, False)
    if text and _PROBE_ANSWER in text and _PROBE_FOLLOWUP in text and codec.added_re is not None:
        a = text.index(_PROBE_ANSWER) + len(_PROBE_ANSWER)
        m = codec.added_re.search(text, a, text.index(_PROBE_FOLLOWUP, a))
        last = codec.added_re.match(own, own.rindex(_PROBE_ANSWER) + len(_PROBE_ANSWER)) if own and _PROBE_ANSWER in own else None
        if m and last and last.group(0) != m.group(0):
            eot.append(last.group(0))
            message_end = m.group(0)
        elif m:
            eot.append(m.group(0))
            if (own is not None and own.endswith(_PROBE_ANSWER) and text.startswith(own)
                    and text.startswith(m.group(0), len(own))):
                borrowed = m.group(0)
    eos = getattr(codec.tokenizer, "eos_token", None)
    if eos and eos not in eot:
        eot.append(eos)
    return tuple(eot), borrowed, message_end


def _probe_tool_turn_end(template: ChatTemplate, codec: TokenCodec, d: Dialect) -> None:
    """Add the end-of-turn token of a tool-call turn to ``d.eot_tokens`` when it is not one of them: the
    added token that ends the call's render when the tool result's render starts with the token every
    message starts with (gpt-oss: ``<|call|>``, then ``<|start|>``); or, when the call's render ends with
    no token of its own and the result's render starts with a role token (GLM's ``<|observation|>``), that
    token, which the model generates to hand over to the tools (``d.turn_end_tool``)."""
    if codec.added_re is None:
        return
    dicts = to_dicts(_probe_conversation(), IdMap(d.ids, "probe"), d, template.prepare)
    tools = tools_to_openai([_PROBE_TOOL])
    own = template.try_apply(dicts[:3], tools, False)
    full = template.try_apply(dicts, tools, False)
    if own is None or full is None or not full.startswith(own) or _PROBE_USER not in own:
        return
    u = own.index(_PROBE_USER)
    if any(t in own[u:] for t in d.eot_tokens):
        return  # the template ends the turn itself (ChatML's <|im_end|>)
    m = codec.added_re.match(full, len(own))
    if m is None:
        return
    ends = [e for e in codec.added_re.finditer(own, u) if e.end() == len(own.rstrip())]
    if ends and m.group(0) in own[max(0, u - 32):u]:  # the result starts like any message: the call ended
        d.eot_tokens += (ends[-1].group(0),)
        return
    d.turn_end_tool = m.group(0)
    if m.group(0) not in d.eot_tokens:
        d.eot_tokens += (m.group(0),)


def _probe_reasoning(template: ChatTemplate, d: Dialect) -> None:
    """Set ``d``'s reasoning wrapper (open and close), the empty wrapper the template writes into an answer
    without reasoning (Qwen3, never supervised), and what the generation prompt does with reasoning
    (``prompt_reasoning``: opens it, writes an empty block, or nothing; see `Dialect`)."""
    user = [{"role": "user", "content": _PROBE_USER}]
    prompt = template.try_apply(user, None, True)
    base = template.try_apply(user, None, False)
    with_r = template.try_apply(user + [{"role": "assistant", "content": _PROBE_ANSWER,
                                         "reasoning_content": _PROBE_REASONING}], None, False)
    if with_r is not None and _PROBE_REASONING not in with_r:  # maybe read from content chunks only
        chunked = template.try_apply(user + [{"role": "assistant", "content": reasoning_chunks(
            _PROBE_REASONING, _PROBE_ANSWER)}], None, False)
        # A template that writes the chunks themselves (Kimi-K2 stringifies list content) does not read them.
        if chunked is not None and _PROBE_REASONING in chunked and not any(
                q + "thinking" + q in chunked for q in "'\""):
            with_r, d.reasoning_chunks = chunked, True
    without = template.try_apply(user + [{"role": "assistant", "content": _PROBE_ANSWER}], None, False)
    d.injected_reasoning, d.reasoning_open, d.reasoning_close = _DEFAULT_REASONING
    if not prompt or not with_r or not without or base is None:
        return
    header = prompt[len(os.path.commonprefix([prompt, base])):]
    if with_r.startswith(prompt):
        cr = with_r[len(prompt):]
        i, j = cr.find(_PROBE_REASONING), cr.find(_PROBE_ANSWER)
        if i >= 0 and j > i:
            open_, close = cr[:i], cr[i + len(_PROBE_REASONING):j]
            d.reasoning_close = close.strip() or "</think>"
            d.reasoning_open = open_.strip() or _opening_of(header, d.reasoning_close)
            if not open_.strip() and header.rstrip().endswith(d.reasoning_open):
                d.prompt_reasoning, d.reasoning_close_text = "open", close
            elif without.startswith(prompt):
                d.injected_reasoning = _injected(without[len(prompt):], open_, close)
    if not d.prompt_reasoning and reasoning_tail(header, d)[1] == "closed":
        d.prompt_reasoning = "closed"


def _opening_of(header: str, close: str) -> str:
    """The tag that opens reasoning, written by the generation prompt (``header``): the mirror of ``close``
    (``</think>`` -> ``<think>``) when the prompt ends with it, else ``<think>``."""
    mirror = "<" + close[2:] if close.startswith("</") else ""
    return mirror if mirror and header.rstrip().endswith(mirror) else "<think>"


def _injected(c0: str, open_: str, close: str) -> str:
    """The empty reasoning wrapper at the start of an answer rendered without reasoning (``c0``), or ""
    (newlines compared loosely: Qwen3 strips the reasoning's newlines)."""
    a0 = c0.find(_PROBE_ANSWER)
    pre = c0[:a0] if a0 > 0 else ""
    if pre.strip() and pre.replace("\n", "") == (open_ + close).replace("\n", ""):
        return pre
    return ""


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
    """Set ``d``'s argument type and form, empty content, id form and tool support from the best-rendering
    trial (``tool_error`` when some tool content is dropped). False when every trial raises."""
    best = _best_tool_trial(template, _probe_conversation(), tools_to_openai([_PROBE_TOOL]))
    if best is None:
        d.tool_support = {"definitions": False, "calls": False, "results": False}
        d.tool_error = "the chat template raises on every probe conversation with a tool call and result"
        return False
    d.args, d.arg_form, d.empty_content, d.ids = best.args, best.arg_form, best.empty_content, best.ids
    d.tool_support, d.ids_paired = best.tool_support, best.ids_paired
    missing = [k for k, v in d.tool_support.items() if not v]
    if missing:
        d.tool_error = (
            "the chat template silently drops tool " + ", ".join(missing)
            + " (probe render); pass a tool-aware template (e.g. examples/chat_templates/chatml_tools.jinja)"
        )
    return True


def _best_tool_trial(template: ChatTemplate, conv: list[Message], tools: list[dict] | None) -> Dialect | None:
    """The first trial conventions that keep the most tool content (definitions, calls, results) and,
    among those, pair each call's id with its result's: every id form for each argument type and content
    convention until one keeps all three with ids paired."""
    best: tuple[tuple[int, bool], Dialect] | None = None
    for args, empty in itertools.product(("object", "string"), ("empty", "omit")):
        for idm in ("passthrough", "alnum9", "functions_index"):
            trial = Dialect(args=args, empty_content=empty, ids=idm)
            ids = IdMap(idm, "probe")
            text = template.try_apply(to_dicts(conv, ids, trial, template.prepare), tools, True)
            if text is None:
                continue
            user_at = text.find(_PROBE_USER)
            found = _probe_args_in(text, args, user_at) if user_at >= 0 else None
            support = {
                "definitions": _PROBE_TOOL.description in text,
                "calls": found is not None and _PROBE_TOOL.name in text[user_at:],
                "results": _PROBE_RESULT in text,
            }
            paired = found is None or all(text.count(i) != 1 or text.index(i) < found[1]
                                          for i in ids.known.values())
            score = (sum(support.values()), paired)
            if best is None or score > best[0]:
                trial.tool_support, trial.ids_paired = support, paired
                trial.arg_form = found[0] if found is not None else "json"
                best = (score, trial)
        if best is not None and best[0] == (3, True):
            break
    return best[1] if best is not None else None


_PROBE_VALUES = {"query": "probe argument qz", "flag": True, "tags": ["qa", "qb"], "opt": None,
                 "obj": {"qk": 1}, "ratio": 0.5, "limit": 3}


def _probe_value_forms(template: ChatTemplate, d: Dialect) -> None:
    """Set ``d.value_forms``: for key/value arguments, how the template writes a value of each JSON type,
    as JSON or as Python's ``str`` (Qwen3-Coder applies ``|string`` to booleans, lists and null), found
    by rendering a probe call with one value of every type."""
    if d.arg_form != "pairs":
        return
    conv = _probe_conversation()
    conv[2] = Message("assistant", [ToolCallPart.from_raw("call_probe_0001", _PROBE_TOOL.name, dict(_PROBE_VALUES))])
    text = template.try_apply(to_dicts(conv[:3], IdMap(d.ids, "probe"), d, template.prepare),
                              tools_to_openai([_PROBE_TOOL]), False)
    if text is None or _PROBE_USER not in text:
        return
    for key, value in _PROBE_VALUES.items():
        at = text.find(key, text.index(_PROBE_USER))
        if isinstance(value, str) or at < 0:
            continue
        near = text[at + len(key):at + len(key) + 64]
        python, js = str(value), next(arg_candidates(value))
        if python != js and python in near and not any(c in near for c in arg_candidates(value)):
            d.value_forms[json_type(value)] = "python"


def _probe_args_in(text: str, mode: str, start: int) -> tuple[str, int] | None:
    """(form, end) of the probe arguments written once in ``text[start:]``: "json" (one JSON value, not a
    JSON string inside JSON) or "pairs" (each key and value in order, values as the template writes them:
    strings verbatim, others as JSON); None when they are not there."""
    if mode == "string":
        raw = json.dumps(_PROBE_ARGS, ensure_ascii=False, separators=(",", ":"))
        i = text.find(raw, start)
        if i < 0 or json.dumps(raw)[1:-1] in text.replace(raw, ""):
            return None
        return "json", i + len(raw)
    for c in arg_candidates(_PROBE_ARGS):
        i = text.find(c, start)
        if i >= 0:
            return "json", i + len(c)
    cursor = start
    for piece in (p for k, v in _PROBE_ARGS.items() for p in (k, v)):
        c = next(arg_candidates(piece))
        i = text.find(c, cursor)
        if i < 0:
            return None
        cursor = i + len(c)
    return "pairs", cursor


def _probe_call_markup(template: ChatTemplate, codec: TokenCodec, d: Dialect) -> None:
    """Set ``d``'s tool-call markup from the probe call rendered as a completion, alone and next to a second
    call (`drafters.render.markup.learn`); `segment_completion` finds calls in generated text by it. A
    template that refuses parallel calls (Llama 3.1) is probed with the single call only."""
    conv = _probe_conversation()
    single = _render_probe_call(template, codec, d, conv, conv[2], d.probe_warnings)
    if single is None:
        return
    second = ToolCallPart.from_raw("call_probe_0002", _PROBE_TOOL.name, dict(_PROBE_ARGS_2))
    both = Message("assistant", [conv[2].parts[0], second])
    parallel = _render_probe_call(template, codec, d, conv, both, Counter())
    if parallel is not None and _PROBE_ARGS_2["query"] not in parallel[0].completion_text:
        d.one_call_per_turn, parallel = True, None  # gpt-oss renders tool_calls[0] only
    ids = single[1] + (parallel[1] if parallel is not None else [])
    markup.learn(d, single[0], parallel[0] if parallel is not None else None, ids, codec.added_re)
    reasoned = Message("assistant", [ReasoningPart(_PROBE_REASONING), conv[2].parts[0]])
    after = _render_probe_call(template, codec, d, conv, reasoned, Counter())
    if after is not None and d.call_prefix is not None:
        markup.learn_prefix_after_reasoning(d, after[0], after[1])
    if after is not None:
        d.refuses_reasoning_and_content = _refuses_reasoning_and_content(template, d, conv)


def _refuses_reasoning_and_content(template: ChatTemplate, d: Dialect, conv: list[Message]) -> bool:
    """Whether the template raises on a tool-call message with reasoning and text though it renders one with
    text alone (gpt-oss: both would go on its one analysis channel); the caller knows reasoning alone renders."""
    def renders(parts: list) -> bool:
        msgs = conv[:2] + [Message("assistant", parts + [conv[2].parts[0]])]
        dicts = to_dicts(msgs, IdMap(d.ids, "probe"), d, template.prepare)
        return template.try_apply(dicts, tools_to_openai([_PROBE_TOOL]), False) is not None

    text = TextPart(_PROBE_ANSWER)
    return renders([text]) and not renders([ReasoningPart(_PROBE_REASONING), text])


def _render_probe_call(template: ChatTemplate, codec: TokenCodec, d: Dialect, conv: list[Message],
                       completion: Message, warnings: Counter) -> tuple[CallRender, list[str]] | None:
    """The probe conversation's first two messages followed by ``completion``, rendered as a call, and the
    tool-call ids the template got; None when it raises."""
    ids = IdMap(d.ids, "probe")
    call = LLMCall("probe", 0, [_PROBE_TOOL], conv[:2], completion)
    try:
        r = CallRenderer(template, d, codec, warnings).render(call, ids)
    except RenderError:
        return None
    return r, list(ids.known.values())
