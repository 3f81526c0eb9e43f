"""One call rendered: the prompt exactly as the serving engine builds it (context + generation prompt) and
the logged answer as the text that follows it, located and labelled (see the package docstring for how the
supervised span is found)."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from drafters.render.codec import TokenCodec
from drafters.render.labels import label_completion
from drafters.render.messages import IdMap, to_dicts
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
        ``template_error``, ``context_not_prefix``, ``invalid_tool_arguments``.
        """
        if dicts is None:
            dicts = self.call_dicts(call, ids)
        comp = dicts[-1]
        if comp.get("role") != "assistant":
            raise RenderError("not_assistant", "the call's completion is not an assistant message", where=call.id)
        ctx = dicts[:-1]
        if not ctx:
            raise RenderError("empty_context", "the call has no context", where=call.id)
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
        """The assistant's rendered text when the template rewrites the context once the answer follows it
        (Mistral moves the system prompt to the last user turn, Hermes drops a newline after a final tool
        turn): the region of ``full`` where it differs from the same context followed by a marker answer.
        The served prompt is kept as is; this only works when that prompt ends with the same generation
        header that precedes the answer in ``full``."""
        apply = self.template.apply
        base = apply(ctx, tools, False, prepared=True)
        header = prompt[len(os.path.commonprefix([prompt, base])):]
        marked = apply(ctx + [{"role": "assistant", "content": _MARKER}], tools, False, prepared=True)
        k = len(os.path.commonprefix([full, marked]))
        if _MARKER not in marked[k:k + len(_MARKER) + 64] or not full[:k].endswith(header):
            raise RenderError(
                "context_not_prefix",
                "the template renders the context differently once the answer is appended, and the answer "
                "cannot be separated from it, so the logged answer cannot follow the served prompt",
                where=call.id,
            )
        self.warnings["context_rewritten_after_answer"] += 1
        return full[k:]
