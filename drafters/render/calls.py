"""One call rendered: the prompt exactly as the serving engine builds it (context + generation prompt) and
the logged answer as the text that follows it, located and labelled (see the package docstring for how the
supervised span is found)."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from drafters.render.codec import TokenCodec
from drafters.render.labels import label_completion, reasoning_tail
from drafters.render.messages import IdMap, dict_reasoning, dict_text, to_dicts
from drafters.render.records import CallRender, Dialect, RenderError
from drafters.render.template import ChatTemplate
from drafters.traces.model import LLMCall, Message

_MARKER = "\u2063Qz7marker"  # an answer text no real answer starts with


class CallRenderer:
    """Render calls through ``template`` with the conventions in ``dialect``; located-string problems are
    counted in ``warnings`` (the render report's)."""

    def __init__(self, template: ChatTemplate, dialect: Dialect, codec: TokenCodec, warnings: Counter):
        self.template = template
        self.dialect = dialect
        self.codec = codec
        self.warnings = warnings

    def dicts(self, messages: list[Message], ids: IdMap, ends: list[int] | None = None) -> list[dict]:
        """`to_dicts` with this template's dialect and preparation."""
        return to_dicts(messages, ids, self.dialect, self.template.prepare, ends)

    def call_dicts(self, call: LLMCall, ids: IdMap) -> list[dict]:
        """The dicts of the call's context followed by its completion."""
        return self.dicts(list(call.context) + [call.completion], ids)

    def render(self, call: LLMCall, ids: IdMap, dicts: list[dict] | None = None) -> CallRender:
        """Render one call: prompt (context + generation prompt) and context + answer, each a full
        template render, and the answer as their prefix difference. ``dicts`` are the call's context and
        completion dicts when already converted (a prefix of the conversation's, see `to_dicts`).

        Raises RenderError: ``not_assistant``, ``empty_context``,
        ``template_error``, ``context_not_prefix``, ``invalid_tool_arguments``,
        ``reasoning_closed_by_prompt``, ``template_renders_one_call_per_turn``,
        ``template_refuses_reasoning_and_content``.
        """
        if dicts is None:
            dicts = self.call_dicts(call, ids)
        comp = dicts[-1]
        if comp.get("role") != "assistant":
            raise RenderError("not_assistant", "the call's completion is not an assistant message", where=call.id)
        ctx = dicts[:-1]
        if not ctx:
            raise RenderError("empty_context", "the call has no context", where=call.id)
        if self.dialect.prompt_reasoning == "closed" and dict_reasoning(comp).strip():
            raise _closed_by_prompt(call.id)
        if self.dialect.one_call_per_turn and any(len(m.get("tool_calls") or ()) > 1 for m in dicts):
            raise RenderError("template_renders_one_call_per_turn",
                              "a message makes parallel tool calls and the chat template renders only the first "
                              "of them (gpt-oss harmony ends a turn at each call): the later calls would vanish "
                              "from the answer or the context", where=call.id)
        if self.dialect.refuses_reasoning_and_content and any(_reasons_and_says(m) for m in dicts):
            raise RenderError("template_refuses_reasoning_and_content",
                              "a message makes a tool call with both reasoning and text, and the chat template "
                              "refuses that (gpt-oss writes either on its one analysis channel, not both)",
                              where=call.id)
        tools = self.template.tools_for(call.tools)
        try:
            prompt = self.template.apply(ctx, tools, True, prepared=True)
            full = self.template.apply(dicts, tools, False, prepared=True)
        except RenderError as e:
            e.where = call.id
            raise
        if full.startswith(prompt):
            ctext = full[len(prompt):]
        else:
            ctext = self._answer_region(call, ctx, tools, prompt, full)
        ctext += self._borrowed_turn_end(comp, ctext)
        spans, sup_start, end = label_completion(comp, ctext, self.dialect, self.codec.added_re,
                                                 self.warnings)
        return CallRender(call, ctx, comp, prompt, ctext[:end], spans, sup_start)

    def _borrowed_turn_end(self, comp: dict, ctext: str) -> str:
        """The token that ends this answer when the template writes none of its own: the role token of the
        message the model hands over to (GLM: ``<|observation|>`` after tool calls, ``<|user|>`` after an
        answer), which the model generates and the engine stops at; the next message's render starts with
        it, so a packed conversation still reads as one text. Empty for other templates."""
        tok = self.dialect.turn_end_tool if comp.get("tool_calls") else self.dialect.turn_end_text
        return tok if tok and not ctext.endswith(tok) else ""

    def _answer_region(self, call: LLMCall, ctx: list[dict], tools: Any, prompt: str, full: str) -> str:
        """The text the model generates after the served ``prompt``, when ``full`` (context + answer) does not
        start with it: the template rewrites the context once the answer follows (Mistral moves the system
        prompt to the last user turn, Hermes drops a newline after a final tool turn, gpt-oss drops the
        analysis of earlier tool-call turns), or the generation prompt writes reasoning markup that history
        does not (MiniMax-M2 opens ``<think>``, DeepSeek-V3.2 writes ``<think></think>`` with thinking off).
        The answer is the region of ``full`` where it differs from the same context followed by a marker
        answer, from the end of the generation header; its reasoning markup is then continued from where
        the prompt left it (`continue_reasoning`). The served prompt is kept as is."""
        apply = self.template.apply
        base = apply(ctx, tools, False, prepared=True)
        header = prompt[len(os.path.commonprefix([prompt, base])):]
        core, state = reasoning_tail(header, self.dialect)
        marked = apply(ctx + [{"role": "assistant", "content": _MARKER}], tools, False, prepared=True)
        k = len(os.path.commonprefix([full, marked]))
        j = _header_end(full, k, core, len(os.path.commonprefix([full, base])), self.dialect)
        if _MARKER not in marked[k:k + len(_MARKER) + 64] or j is None:
            raise RenderError(
                "context_not_prefix",
                "the template renders the context differently once the answer is appended, and the answer "
                "cannot be separated from it, so the logged answer cannot follow the served prompt",
                where=call.id,
            )
        if full[:j] != prompt[:len(prompt) - len(header)] + core:
            self.warnings["context_rewritten_after_answer"] += 1
        return continue_reasoning(full[j:], k - j, header, state, self.dialect, call.id)


def _header_end(full: str, k: int, core: str, shared: int, d: Dialect) -> int | None:
    """Where the answer starts in ``full``: just after the generation header's ``core`` (the header without
    its reasoning markup) last written before ``k`` (where ``full`` leaves the marker render) and at most 64
    characters before it; with no core, ``k`` moved back over reasoning markup, not into the ``shared``
    prefix of the context's render. None when the core is not there."""
    if core:
        i = full.rfind(core, max(0, k - len(core) - 64), k)
        return i + len(core) if i >= 0 else None
    j = k
    while j > shared:
        t = full[:j].rstrip()
        if t.endswith(d.reasoning_close):
            j = len(t) - len(d.reasoning_close)
        elif t.endswith(d.reasoning_open):
            j = len(t) - len(d.reasoning_open)
        else:
            break
    return max(j, shared)


def continue_reasoning(h: str, markup: int, header: str, state: str, d: Dialect, where: str) -> str:
    """The answer text ``h`` as history writes it (its first ``markup`` characters are header markup any
    answer gets) continued from the reasoning ``state`` the generation prompt ``header`` left
    (`reasoning_tail`): after an opened block, the reasoning, its close and the answer (an answer without
    reasoning closes it with the template's ``reasoning_close_text``); after an empty block, the answer
    alone. Whitespace the prompt wrote after its last tag is not written again.

    Raises RenderError(code="reasoning_closed_by_prompt") when the prompt closes reasoning (thinking off)
    but the answer reasons: the served model could not have written it (set the template's thinking
    option as the target was served)."""
    if not state:
        return h
    ws = header[len(header.rstrip()):]
    pos = len(h[:markup]) - len(h[:markup].lstrip())
    opened = h.startswith(d.reasoning_open, pos)
    if opened:
        pos += len(d.reasoning_open)
    close = h.find(d.reasoning_close, pos) if opened or h.startswith(d.reasoning_close, pos) else -1
    reasoning = h[pos:close] if close >= 0 else ""
    answer = h[close + len(d.reasoning_close):] if close >= 0 else h[pos:]
    if state == "open":
        if reasoning.strip():
            return h[pos + len(ws):] if h.startswith(ws, pos) else h[pos:]
        return (d.reasoning_close_text or d.reasoning_close) + answer.lstrip()
    if reasoning.strip():
        raise _closed_by_prompt(where)
    return answer[len(ws):] if ws and answer.startswith(ws) else answer


def _reasons_and_says(m: dict) -> bool:
    """Whether the template dict ``m`` makes a tool call with both reasoning and text."""
    return bool(m.get("tool_calls")) and bool(dict_reasoning(m).strip()) and bool(dict_text(m).strip())


def _closed_by_prompt(where: str) -> RenderError:
    return RenderError("reasoning_closed_by_prompt",
                       "the generation prompt closes reasoning (thinking off) but the answer has reasoning, which "
                       "the served model could not have written; pass the template option the target was served "
                       "with (e.g. thinking: true)", where=where)
