"""`Renderer`: canonical conversations and calls rendered through one chat template and tokenizer into
training rows (packed or per call) and replay prompts, and generated tokens labelled by segment."""

from __future__ import annotations

from typing import Any

from drafters.render.calls import CallRenderer
from drafters.render.codec import TokenCodec
from drafters.render.generated import generated_calls, label_generated_text, segment_completion
from drafters.render.labels import completion_labels, encode_labeled, prompt_labels
from drafters.render.markup import ParsedCall
from drafters.render.messages import IdMap, has_tool_content, tools_to_openai
from drafters.render.packing import call_row, pack_blocker, pack_calls
from drafters.render.probe import probe_dialect
from drafters.render.records import CallRender, RenderedPrompt, RenderedSequence, RenderError, RenderReport
from drafters.render.template import ChatTemplate
from drafters.traces.model import Conversation, LLMCall, ToolCallPart


class Renderer:
    """Render conversations and calls through one chat template and tokenizer.

    Args:
        tokenizer: a transformers tokenizer (fast tokenizers are used through their Rust backend for offsets).
        chat_template: a Jinja template string, or a path to a template file (read bytes-exact). ``None``
            uses the tokenizer's own template. A user-supplied template is trusted: a failed tool render
            check is then a report warning instead of an error.
        template_kwargs: template options passed as a serving engine would (``chat_template_kwargs``), e.g.
            ``{"enable_thinking": False}``.
        max_seq_len: the longest row in tokens. Longer calls lose context messages from the left at message
            boundaries (system message and tools kept); a call that cannot fit is dropped and reported.
        report: the `RenderReport` to count into (default: a new one).

    A tokenizer with named templates ``tool_use`` and ``default`` (Hermes-3) renders as
    ``apply_chat_template`` does: conversations and calls with tools through ``tool_use``, those without
    through ``default`` (a second renderer, ``plain``, counting into the same report).

    The work is done by collaborators: ``template`` (`ChatTemplate`, applies the template), ``dialect``
    (`Dialect`, what probing learned about it), ``codec`` (`TokenCodec`, tokenization with offsets) and
    ``call_renderer`` (`CallRenderer`, one call's prompt and labelled completion); rows come from
    drafters.render.packing and ``report`` counts everything.

    Raises:
        RenderError(code="no_chat_template"): neither the tokenizer nor the caller provides a template.
        RenderError(code="template_drops_tool_content"): raised by `render_conversation` / `render_prompt`
            for a conversation with tools when the template silently drops tool definitions, calls or
            results (not for a user-supplied template); `require_tool_support()` raises it eagerly.

    Warnings (``report.warnings``, stable codes): ``tool_call_ids_unpaired``, once per conversation or
    prompt with tools, when the template shows tool results under ids their calls do not show.
    """

    def __init__(
        self,
        tokenizer,
        chat_template: str | None = None,
        template_kwargs: dict | None = None,
        max_seq_len: int | None = None,
        report: RenderReport | None = None,
    ):
        self.tokenizer = tokenizer
        self.user_template = chat_template is not None
        self.max_seq_len = max_seq_len
        self.report = report if report is not None else RenderReport()
        named = getattr(tokenizer, "chat_template", None)
        self.plain: Renderer | None = None
        if chat_template is None and isinstance(named, dict) and named.get("tool_use") and named.get("default"):
            self.plain = Renderer(tokenizer, named["default"], template_kwargs, max_seq_len, self.report)
            self.plain.user_template = False
        self.template = ChatTemplate(tokenizer, chat_template, template_kwargs, self.report.warnings)
        self.chat_template: str = self.template.text
        self.template_sha256: str = self.template.sha256
        self.template_kwargs: dict[str, Any] = self.template.kwargs
        self.codec = TokenCodec(tokenizer)
        self.dialect = probe_dialect(self.template, self.codec)
        self.call_renderer = CallRenderer(self.template, self.dialect, self.codec, self.report.warnings)

    def require_tool_support(self) -> None:
        """Raise ``template_drops_tool_content`` now if the template drops tool content (and is not user-given)."""
        if self.dialect.tool_error and not self.user_template:
            raise RenderError("template_drops_tool_content", self.dialect.tool_error, where="chat_template")

    def render_conversation(self, conv: Conversation) -> list[RenderedSequence]:
        """Render every call of ``conv`` into training rows.

        Returns one packed `RenderedSequence` (every assistant turn supervised) when the conversation is
        append-only and the template renders it as one growing text; otherwise one row per call (reason in
        ``report.per_call_reasons``). Calls the template cannot render are dropped and listed in
        ``report.dropped``; nothing is dropped silently.

        Raises:
            RenderError(code="template_drops_tool_content") as described on the class.
        """
        if self.plain is not None and not conv.tools:
            return self.plain.render_conversation(conv)
        rep = self.report
        rep.conversations += 1
        self.template.new_conversation()  # a tools list edited in place between conversations is seen
        calls = list(conv.calls())
        rep.calls += len(calls)
        if not calls:
            return []
        if any(has_tool_content(c) for c in calls):
            self._check_tools()
        renders = self._render_calls(conv, calls)
        if not any(r is not None for r in renders):
            return []
        return self._rows(conv, calls, renders)

    def render_prompt(self, call: LLMCall) -> RenderedPrompt:
        """Render one call for evaluation replay (same prompt the engine would build; no truncation).

        Raises:
            RenderError: ``template_drops_tool_content`` (see class), ``template_error`` when the template
                raises, ``context_not_prefix`` when the template rewrites the context once the answer is
                appended (the logged answer cannot follow the served prompt).
        """
        if self.plain is not None and not call.tools:
            return self.plain.render_prompt(call)
        if has_tool_content(call):
            self._check_tools()
            self._refuse_lost_tool_content(call)
        self.template.new_conversation()
        r = self.call_renderer.render(call, IdMap(self.dialect.ids, call.conversation_id))
        prompt_ids, prompt_segs = prompt_labels(r, self.codec)
        comp_ids, comp_segs, _ = encode_labeled(self.codec, r.completion_text, *completion_labels(r))
        return RenderedPrompt(call.id, call.conversation_id, prompt_ids, comp_ids, comp_segs, prompt_segs,
                              tools_to_openai(call.tools))

    def segment_completion(self, token_ids: list[int]) -> list[int]:
        """Segment labels [n] for generated tokens [n], with the rules used for training labels (see
        `drafters.render.generated.segment_completion`)."""
        return segment_completion(token_ids, self.codec, self.dialect)

    def end_of_turn_ids(self) -> list[int]:
        """Token ids that end an assistant turn: the template's end-of-turn tokens (turn ends, never the end of
        a message inside a turn: gpt-oss gives ``<|return|>`` and ``<|call|>``, not ``<|end|>``), then the
        tokenizer's eos (what regeneration stops at)."""
        tok = self.tokenizer
        ids = [tok.convert_tokens_to_ids(t) for t in self.dialect.eot_tokens]
        if tok.eos_token_id is not None:
            ids.append(tok.eos_token_id)
        return list(dict.fromkeys(i for i in ids if i is not None and i >= 0))

    def label_generated_text(self, text: str) -> bytearray:
        """Character-level `Segment` labels [len(text)] of generated text (the rules of `segment_completion`,
        before they are mapped to tokens): tool-call names, arguments and markup, reasoning, text."""
        return label_generated_text(text, self.dialect)

    def generated_calls(self, text: str) -> list[ParsedCall]:
        """The tool calls of generated text as labelling finds them: names and argument pieces (character
        offsets in ``text``), see `drafters.render.generated.generated_calls`."""
        return generated_calls(text, self.dialect)

    # ------------------------------------------------------------------------------------------- calls

    def _render_calls(self, conv: Conversation, calls: list[LLMCall]) -> list[CallRender | None]:
        """Each call rendered, or None where it raised (dropped and reported)."""
        ids = IdMap(self.dialect.ids, conv.id)
        shared = self._shared_dicts(conv, calls, ids)
        renders: list[CallRender | None] = []
        for k, call in enumerate(calls):
            try:
                self._refuse_lost_tool_content(call)
                renders.append(self.call_renderer.render(call, ids, shared[k] if shared else None))
            except RenderError as e:
                self.report.drop(call.id, e.code, e.message)
                renders.append(None)
        return renders

    def _shared_dicts(self, conv: Conversation, calls: list[LLMCall], ids: IdMap) -> list[list[dict]] | None:
        """Each call's message dicts as a slice of one conversion of the whole conversation, when every
        call's context + completion is a prefix of ``conv.messages`` (the same objects); else ``None`` and
        each call converts its own (a conversion error then drops only the calls that contain it)."""
        msgs = conv.messages
        spans = []
        for call in calls:
            n = len(call.context)
            if n >= len(msgs) or msgs[n] is not call.completion:
                return None
            if any(a is not b for a, b in zip(call.context, msgs)):
                return None
            spans.append(n + 1)
        ends: list[int] = []
        try:
            dicts = self.call_renderer.dicts(msgs[: max(spans)], ids, ends=ends)
        except RenderError:
            return None
        return [dicts[: ends[n - 1]] for n in spans]

    def _check_tools(self) -> None:
        """Raise or count what the probe found wrong with tool content, once per conversation or prompt
        with tools: dropped content (see the class), and tool results whose ids their calls do not show
        (``tool_call_ids_unpaired``: the template rewrites call ids in a form no `IdMap` mode matches)."""
        if not self.dialect.ids_paired:
            self.report.warnings["tool_call_ids_unpaired"] += 1
        if self.dialect.tool_error:
            if self.user_template:
                self.report.warnings["user_template_drops_tool_content"] += 1
                return
            raise RenderError("template_drops_tool_content", self.dialect.tool_error, where="chat_template")

    def _refuse_lost_tool_content(self, call: LLMCall) -> None:
        """Raise ``template_drops_tool_content`` for a call whose answer makes tool calls that the
        (user-given) template drops (Granite-3.3 and Phi-4-mini write no tool calls): its row would train
        a tool-call turn as a bare end token. What it drops from the context (calls, results, definitions)
        stays a warning: the served prompt is that render."""
        if self.dialect.tool_support.get("calls") is False and any(
                isinstance(p, ToolCallPart) for p in call.completion.parts):
            raise RenderError("template_drops_tool_content",
                              "the chat template drops tool calls, and this call's answer makes one", where=call.id)

    # -------------------------------------------------------------------------------------------- rows

    def _rows(self, conv: Conversation, calls: list[LLMCall], renders: list[CallRender | None]
              ) -> list[RenderedSequence]:
        """One packed row when the conversation packs (maybe only its leading calls), per-call rows for the
        rest; every row is counted in the report."""
        rep = self.report
        ok = [r for r in renders if r is not None]
        reason = pack_blocker(conv, calls, renders)
        out: list[RenderedSequence] = []
        rest = ok
        if reason is None:
            packed = pack_calls(conv, ok, self.codec, self.max_seq_len)
            reason = packed.reason
            if packed.sequence is not None:
                out.append(packed.sequence)
                rep.sequences_packed += 1
                rep.calls_packed += packed.n_calls
                rep.count(packed.sequence)
                rest = ok[packed.n_calls:]
        for r in rest:
            rep.per_call_reasons[reason or "unknown"] += 1
            seq = self._per_call_row(r)
            if seq is not None:
                out.append(seq)
                rep.sequences_per_call += 1
                rep.calls_per_call += 1
                rep.count(seq)
        return out

    def _per_call_row(self, r: CallRender) -> RenderedSequence | None:
        """The call's own row; over ``max_seq_len``, its context truncated from the left at message
        boundaries (the system message and tools kept, whole exchanges dropped up to a later user
        message); None (dropped, reported) when nothing fits."""
        row = call_row(r, self.codec)
        if self.max_seq_len is None or len(row.input_ids) <= self.max_seq_len:
            return row
        call = r.call
        ctx = list(call.context)
        head = [m for m in ctx[:1] if m.role == "system"]
        body = ctx[len(head):]
        for i in range(1, len(body)):
            m = body[i]
            if m.role != "user" or not m.text:
                continue
            trial = LLMCall(call.conversation_id, call.index, call.tools, head + body[i:], call.completion)
            try:
                tr = self.call_renderer.render(trial, IdMap(self.dialect.ids, call.conversation_id))
            except RenderError:
                continue
            row2 = call_row(tr, self.codec)
            if len(row2.input_ids) <= self.max_seq_len:
                row2.call_ids = [call.id]
                self.report.truncated += 1
                return row2
        self.report.drop(
            call.id, "exceeds_max_seq_len",
            f"{len(row.input_ids)} tokens; no left truncation at a message boundary fits {self.max_seq_len}",
        )
        return None
