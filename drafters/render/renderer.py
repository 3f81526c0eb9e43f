"""`Renderer`: canonical conversations and calls rendered through one chat template and tokenizer into
training rows (packed or per call) and replay prompts."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from typing import Any

from drafters.errors import TracedraftError
from drafters.render.labels import _arg_candidates, _offsets_array, _token_labels, _token_starts
from drafters.render.messages import _args_value, _has_tool_content, _IdMap, tools_to_openai
from drafters.render.probe import (
    _MARKER,
    _PROBE_ANSWER,
    _PROBE_ARGS,
    _PROBE_FOLLOWUP,
    _PROBE_REASONING,
    _PROBE_RESULT,
    _PROBE_SYSTEM,
    _PROBE_TOOL,
    _PROBE_USER,
    _args_single_encoded,
)
from drafters.render.records import (
    RenderedPrompt,
    RenderedSequence,
    RenderError,
    RenderReport,
    _CallRender,
    _Dialect,
)
from drafters.render.template import _FastTemplate, _resolve_template
from drafters.segments import Segment
from drafters.traces.model import (
    Conversation,
    LLMCall,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
)


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

    Raises:
        RenderError(code="no_chat_template"): neither the tokenizer nor the caller provides a template.
        RenderError(code="template_drops_tool_content"): raised by `render_conversation` / `render_prompt`
            for a conversation with tools when the template silently drops tool definitions, calls or
            results (not for a user-supplied template); `require_tool_support()` raises it eagerly.
    """

    def __init__(
        self,
        tokenizer,
        chat_template: str | None = None,
        template_kwargs: dict | None = None,
        max_seq_len: int | None = None,
    ):
        self.tokenizer = tokenizer
        self.user_template = chat_template is not None
        template = _resolve_template(tokenizer, chat_template)
        self.chat_template: str = template
        self.template_sha256: str = hashlib.sha256(template.encode("utf-8")).hexdigest()
        self.template_kwargs: dict[str, Any] = dict(template_kwargs or {})
        self.max_seq_len = max_seq_len
        self.report = RenderReport()
        self._backend = getattr(tokenizer, "_tokenizer", None)  # tokenizers.Tokenizer of a fast tokenizer
        added = sorted(getattr(tokenizer, "added_tokens_encoder", {}) or {}, key=len, reverse=True)
        self._added_tokens = tuple(t for t in added if t and not t.isspace())
        self._added_re = re.compile("|".join(map(re.escape, self._added_tokens))) if self._added_tokens else None
        self._fast = _FastTemplate.create(tokenizer, template, self.template_kwargs)
        self._tools_cache: dict[int, tuple[Any, list[dict] | None]] = {}
        # While probing, every fast render is compared with `apply_chat_template`; any difference turns
        # the fast path off for this renderer (a transformers version that renders differently).
        self._verify_fast = self._fast is not None
        self.dialect = self._probe()
        self._verify_fast = False

    # ---------------------------------------------------------------------------------------- public API

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
        rep = self.report
        rep.conversations += 1
        self._tools_cache.clear()  # per conversation: a tools list edited in place between calls is seen
        calls = list(conv.calls())
        rep.calls += len(calls)
        if not calls:
            return []
        if any(_has_tool_content(c) for c in calls):
            self._check_tools()
        ids = _IdMap(self.dialect.ids, conv.id)
        shared = self._shared_dicts(conv, calls, ids)
        renders: list[_CallRender | None] = []
        for k, call in enumerate(calls):
            try:
                renders.append(self._render_call(call, ids, shared[k] if shared else None))
            except RenderError as e:
                rep.drop(call.id, e.code, e.message)
                renders.append(None)
        ok = [r for r in renders if r is not None]
        if not ok:
            return []
        reason = self._pack_blocker(conv, calls, renders)
        out: list[RenderedSequence] = []
        rest = ok
        if reason is None:
            packed, n_packed, reason = self._render_packed(conv, ok)
            if packed is not None:
                out.append(packed)
                rep.sequences_packed += 1
                rep.calls_packed += n_packed
                self._count(packed)
                rest = ok[n_packed:]
        for r in rest:
            rep.per_call_reasons[reason or "unknown"] += 1
            seq = self._per_call_row(r)
            if seq is not None:
                out.append(seq)
                rep.sequences_per_call += 1
                rep.calls_per_call += 1
                self._count(seq)
        return out

    def _shared_dicts(self, conv: Conversation, calls: list[LLMCall], ids: _IdMap) -> list[list[dict]] | None:
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
            dicts = self._to_dicts(msgs[: max(spans)], ids, ends=ends)
        except RenderError:
            return None
        return [dicts[: ends[n - 1]] for n in spans]

    def render_prompt(self, call: LLMCall) -> RenderedPrompt:
        """Render one call for evaluation replay (same prompt the engine would build; no truncation).

        Raises:
            RenderError: ``template_drops_tool_content`` (see class), ``template_error`` when the template
                raises, ``context_not_prefix`` when the template rewrites the context once the answer is
                appended (the logged answer cannot follow the served prompt).
        """
        if _has_tool_content(call):
            self._check_tools()
        self._tools_cache.clear()
        r = self._render_call(call, _IdMap(self.dialect.ids, call.conversation_id))
        prompt_ids = self._encode(r.prompt_text)[0]
        comp_ids, comp_segs, _ = self._encode_labeled(r.completion_text, *self._completion_labels(r))
        return RenderedPrompt(call.id, call.conversation_id, prompt_ids, comp_ids, comp_segs)

    def segment_completion(self, token_ids: list[int]) -> list[int]:
        """Segment labels [n] for generated tokens, with the rules used for training labels.

        Decodes the tokens, finds the template's tool-call markup (learned from a probe render, e.g.
        ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``) and labels names TOOL_NAME,
        argument JSON TOOL_ARGS and the markup around them TOOL_STRUCTURE; text inside the reasoning
        wrapper (``<think>...</think>``) is REASONING; the rest TEXT. End-of-turn tokens follow the
        training rule (TOOL_STRUCTURE after a tool call, else TEXT).
        """
        ids = list(token_ids)
        if not ids:
            return []
        text = self.tokenizer.decode(ids, skip_special_tokens=False)
        ends = self._decode_ends(ids, text)
        seg = bytearray([Segment.TEXT]) * max(len(text), 1)
        self._label_generated(text, seg)
        out = []
        start = 0
        for end in ends:
            end = min(end, len(text))
            if end > start:
                out.append(int(seg[(start + end - 1) // 2]))
            else:
                out.append(int(seg[min(start, len(seg) - 1)]))
            start = end
        # End-of-turn tokens follow the training rule.
        saw_tool = False
        eot = set(self.dialect.eot_tokens)
        for i, tok in enumerate(self.tokenizer.convert_ids_to_tokens(ids)):
            if out[i] in (Segment.TOOL_NAME, Segment.TOOL_ARGS):
                saw_tool = True
            if tok in eot:
                out[i] = int(Segment.TOOL_STRUCTURE if saw_tool else Segment.TEXT)
        return out

    # --------------------------------------------------------------------------------- template render

    def _apply(self, messages: list[dict[str, Any]], tools: list[dict] | None, generation: bool,
               prepared: bool = False) -> str:
        """Render ``messages`` to text, byte-identical to ``tokenizer.apply_chat_template(..., tokenize=False)``.

        ``prepared`` says the messages come from `_to_dicts` and ``tools`` from `_tools_for` (already the
        plain, None-free data transformers would build), so the fast path renders them without copying.
        """
        fast = self._fast
        if fast is not None:
            try:
                text = fast.render(messages, tools, generation, prepared)
            except TracedraftError:
                raise
            except Exception as e:  # jinja2 TemplateError, TypeError, ... from template code
                raise RenderError("template_error", f"chat template raised {type(e).__name__}: {e}") from e
            if not self._verify_fast:
                return text
            if text == self._apply_slow(messages, tools, generation):
                return text
            self._fast = None
            self.report.warnings["fast_render_differs"] += 1
        return self._apply_slow(messages, tools, generation)

    def _apply_slow(self, messages: list[dict[str, Any]], tools: list[dict] | None, generation: bool) -> str:
        try:
            return self.tokenizer.apply_chat_template(
                messages,
                tools=tools,
                chat_template=self.chat_template,
                tokenize=False,
                add_generation_prompt=generation,
                **self.template_kwargs,
            )
        except TracedraftError:
            raise
        except Exception as e:  # jinja2 TemplateError, TypeError, ... from template code
            raise RenderError("template_error", f"chat template raised {type(e).__name__}: {e}") from e

    # ----------------------------------------------------------------------- canonical -> template dicts

    def _to_dicts(self, messages: list[Message], ids: _IdMap, dialect: _Dialect | None = None,
                  ends: list[int] | None = None) -> list[dict]:
        """Canonical messages as chat-template message dicts, with this template's argument type, empty
        content convention and id form (README of the chat template fixtures: "Argument type",
        "content: None vs \"\"", "Keys that are present but None"), already in the plain form the template
        sees (`_FastTemplate.prepare`). The conversion reads messages left to right with no lookahead, so
        the dicts of a prefix of ``messages`` are a prefix of the dicts; ``ends`` (when given) receives the
        number of dicts after each message."""
        d = dialect or self.dialect
        fast = self._fast
        prep = fast.prepare if fast is not None else (lambda m: m)
        out: list[dict[str, Any]] = []
        ordinal = 0
        names: dict[str, str] = {}
        pending: list[str] = []  # ids of calls without a result yet, for results that lack a call id
        for m in messages:
            if m.role == "assistant":
                text = "".join(p.text for p in m.parts if isinstance(p, TextPart))
                reasoning = "".join(p.text for p in m.parts if isinstance(p, ReasoningPart) and not p.redacted)
                calls = [p for p in m.parts if isinstance(p, ToolCallPart)]
                msg: dict[str, Any] = {"role": "assistant"}
                if text or not calls or d.empty_content == "empty":
                    msg["content"] = text
                if reasoning:
                    msg["reasoning_content"] = reasoning
                if calls:
                    tcs = []
                    for c in calls:
                        cid = ids.get(c.id, ordinal)
                        ordinal += 1
                        names[cid] = c.name
                        pending.append(cid)
                        tcs.append({"id": cid, "type": "function",
                                    "function": {"name": c.name, "arguments": _args_value(c, d.args)}})
                    msg["tool_calls"] = tcs
                out.append(prep(msg))
                if ends is not None:
                    ends.append(len(out))
                continue
            results = [p for p in m.parts if isinstance(p, ToolResultPart)]
            for r in results:
                if r.call_id is not None:
                    cid = ids.get(r.call_id, ordinal)
                else:
                    cid = pending[0] if pending else ids.get(None, ordinal)
                if cid in pending:
                    pending.remove(cid)
                tmsg: dict[str, Any] = {"role": "tool", "tool_call_id": cid, "content": r.content}
                name = r.name or names.get(cid)
                if name:
                    tmsg["name"] = name
                out.append(prep(tmsg))
            text = "".join(p.text for p in m.parts if isinstance(p, TextPart))
            if m.role == "tool":
                if text and not results:
                    cid = pending.pop(0) if pending else ids.get(None, ordinal)
                    out.append(prep({"role": "tool", "tool_call_id": cid, "content": text,
                                     "name": names.get(cid, "")}))
                if ends is not None:
                    ends.append(len(out))
                continue
            if text or not results:
                out.append(prep({"role": m.role, "content": text}))
            if ends is not None:
                ends.append(len(out))
        return out

    # ------------------------------------------------------------------------------------- one call

    def _tools_for(self, tools: list[ToolDef]) -> list[dict] | None:
        """``tools_to_openai(tools)`` in the plain form the template sees, converted once per tools list
        within one conversation (the cache is cleared per conversation / prompt)."""
        key = id(tools)
        hit = self._tools_cache.get(key)
        if hit is not None and hit[0] is tools:
            return hit[1]
        out = tools_to_openai(tools)
        if self._fast is not None:
            out = self._fast.plain(out)
        self._tools_cache[key] = (tools, out)  # holds ``tools`` so its id is not reused
        return out

    def _call_dicts(self, call: LLMCall, ids: _IdMap) -> list[dict]:
        return self._to_dicts(list(call.context) + [call.completion], ids)

    def _render_call(self, call: LLMCall, ids: _IdMap, dicts: list[dict] | None = None) -> _CallRender:
        """Render one call: prompt (context + generation prompt) and context + answer, each a full
        template render, and the answer as their prefix difference. ``dicts`` are the call's context and
        completion dicts when already converted (a prefix of the conversation's, see `_to_dicts`)."""
        if dicts is None:
            dicts = self._call_dicts(call, ids)
        comp = dicts[-1]
        if comp.get("role") != "assistant":
            raise RenderError("not_assistant", "the call's completion is not an assistant message", where=call.id)
        ctx = dicts[:-1]
        if not ctx:
            raise RenderError("empty_context", "the call has no context", where=call.id)
        tools = self._tools_for(call.tools)
        try:
            prompt = self._apply(ctx, tools, True, prepared=True)
            full = self._apply(dicts, tools, False, prepared=True)
        except RenderError as e:
            e.where = call.id
            raise
        if full.startswith(prompt):
            ctext = full[len(prompt):]
        else:
            ctext = self._answer_region(call, ctx, tools, prompt, full)
        spans, sup_start, end = self._label_completion(call.completion, comp, ctext)
        return _CallRender(call, ctx, comp, prompt, ctext[:end], spans, sup_start)

    def _answer_region(self, call: LLMCall, ctx: list[dict], tools, prompt: str, full: str) -> str:
        """The assistant's rendered text when the template rewrites the context once the answer follows it
        (Mistral moves the system prompt to the last user turn, Hermes drops a newline after a final tool
        turn): the region of ``full`` where it differs from the same context followed by a marker answer.
        The served prompt is kept as is; this only works when that prompt ends with the same generation
        header that precedes the answer in ``full``."""
        base = self._apply(ctx, tools, False, prepared=True)
        header = prompt[len(os.path.commonprefix([prompt, base])):]
        marked = self._apply(ctx + [{"role": "assistant", "content": _MARKER}], tools, False, prepared=True)
        k = len(os.path.commonprefix([full, marked]))
        if _MARKER not in marked[k:k + len(_MARKER) + 64] or not full[:k].endswith(header):
            raise RenderError(
                "context_not_prefix",
                "the template renders the context differently once the answer is appended, and the answer "
                "cannot be separated from it, so the logged answer cannot follow the served prompt",
                where=call.id,
            )
        self.report.warnings["context_rewritten_after_answer"] += 1
        return full[k:]

    def _label_completion(self, message: Message, comp: dict, text: str) -> tuple[list, int, int]:
        """Locate the assistant's strings in its rendered completion ``text``.

        Returns (spans, sup_start, end): labelled (start, end, segment) spans covering
        ``text[sup_start:end]`` where ``end`` is just after the end-of-turn token.
        """
        d = self.dialect
        sup_start = 0
        reasoning = comp.get("reasoning_content") or ""
        if not reasoning and d.injected_reasoning and text.startswith(d.injected_reasoning):
            sup_start = len(d.injected_reasoning)
        pieces: list[tuple[list[str], int, bool]] = []  # (candidates, segment, is_tool)
        if reasoning:
            pieces.append(([reasoning.strip()], Segment.REASONING, False))
        content = comp.get("content") or ""
        if content.strip():
            pieces.append(([content.strip()], Segment.TEXT, False))
        for tc in comp.get("tool_calls") or []:
            fn = tc["function"]
            pieces.append(([fn["name"]], Segment.TOOL_NAME, True))
            pieces.append((_arg_candidates(fn["arguments"]), Segment.TOOL_ARGS, True))
        found: list[tuple[int, int, int, bool]] = []
        cursor = sup_start
        for cands, seg, is_tool in pieces:
            hit = None
            for s in cands:
                if not s:
                    continue
                i = text.find(s, cursor)
                if i >= 0:
                    hit = (i, i + len(s))
                    break
            if hit is None:
                self.report.warnings[f"not_located:{Segment(seg).name}"] += 1
                if seg == Segment.TOOL_ARGS:
                    found.append((cursor, -1, seg, is_tool))  # approximate: the gap after the name
                continue
            found.append((hit[0], hit[1], seg, is_tool))
            cursor = hit[1]
        end = self._eot_end(text, cursor)
        # Resolve an approximate TOOL_ARGS span: up to the next located piece or the end-of-turn token.
        fixed = []
        for k, (s, e, seg, is_tool) in enumerate(found):
            if e < 0:
                nxt = next((f[0] for f in found[k + 1:] if f[1] >= 0), None)
                e = nxt if nxt is not None else end
                self.report.warnings["args_located_approx"] += 1
            fixed.append((s, e, seg, is_tool))
        found = [f for f in fixed if f[1] > f[0]]
        ended_tool = bool(comp.get("tool_calls"))
        spans: list[tuple[int, int, int]] = []
        pos = sup_start
        first_tool = next((f[0] for f in found if f[3]), None)
        prev_seg: int | None = None
        for s, e, seg, is_tool in found:
            if s > pos:
                in_tool = first_tool is not None and s >= first_tool
                gap = Segment.TOOL_STRUCTURE if (is_tool or in_tool) else (prev_seg if prev_seg is not None else seg)
                spans.append((pos, s, int(gap)))
            spans.append((s, e, int(seg)))
            pos = e
            prev_seg = seg
        if end > pos:
            # Tail up to and including the end-of-turn token.
            tail = Segment.TOOL_STRUCTURE if ended_tool else Segment.TEXT
            spans.append((pos, end, int(tail)))
        return spans, sup_start, end

    def _eot_end(self, text: str, cursor: int) -> int:
        """Index just past the end-of-turn token at or after ``cursor`` (the engine stops there)."""
        d = self.dialect
        best = -1
        for t in d.eot_tokens:
            i = text.find(t, cursor)
            if i >= 0 and (best < 0 or i < best):
                best = i
                best_end = i + len(t)
        if best >= 0:
            return best_end
        # No known end-of-turn marker: the last added token of the tail (gpt-oss <|call|>), else everything.
        if self._added_re is not None:
            last = None
            for m in self._added_re.finditer(text, cursor):
                last = m
            if last is not None:
                self.report.warnings["end_of_turn_guessed"] += 1
                return last.end()
        self.report.warnings["no_end_of_turn_token"] += 1
        return len(text)

    # ---------------------------------------------------------------------------------- labels

    def _context_labels(self, msgs: list[dict], text: str, seg: bytearray, start: int, end: int) -> None:
        """Label context messages' contents located in order in ``text[start:end]``."""
        cursor = start
        for m in msgs:
            role = m.get("role")
            if role == "assistant":
                pieces = []
                if m.get("reasoning_content"):
                    pieces.append(([m["reasoning_content"].strip()], Segment.REASONING))
                if (m.get("content") or "").strip():
                    pieces.append(([m["content"].strip()], Segment.TEXT))
                for tc in m.get("tool_calls") or []:
                    pieces.append(([tc["function"]["name"]], Segment.TOOL_NAME))
                    pieces.append((_arg_candidates(tc["function"]["arguments"]), Segment.TOOL_ARGS))
            else:
                content = m.get("content") or ""
                s = content.strip()
                if not s:
                    continue
                lab = {"system": Segment.SYSTEM, "user": Segment.USER, "tool": Segment.TOOL_RESULT}.get(role, Segment.USER)
                pieces = [([s, json.dumps(s, ensure_ascii=False)[1:-1], json.dumps(s)[1:-1]], lab)]
            for cands, lab in pieces:
                for c in cands:
                    if not c:
                        continue
                    i = text.find(c, cursor, end)
                    if i >= 0:
                        seg[i:i + len(c)] = bytes([lab]) * len(c)
                        cursor = i + len(c)
                        break

    def _completion_labels(self, r: _CallRender) -> tuple[bytearray, bytearray]:
        n = len(r.completion_text)
        seg = bytearray(n)
        msk = bytearray(n)
        for s, e, lab in r.spans:
            seg[s:e] = bytes([lab]) * (e - s)
        msk[r.sup_start:n] = b"\x01" * (n - r.sup_start)
        return seg, msk

    # ---------------------------------------------------------------------------------- tokenizing

    def _encode(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        if self._backend is not None:
            enc = self._backend.encode(text, add_special_tokens=False)
            return enc.ids, enc.offsets  # each access builds a fresh list
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]

    def _encode_labeled(self, text: str, seg: bytearray, msk: bytearray):
        ids, offs = self._encode(text)
        segs, mask = _token_labels(offs, seg, msk)
        return ids, segs, mask

    # ---------------------------------------------------------------------------------- rows

    def _pack_blocker(self, conv: Conversation, calls: list[LLMCall], renders: list) -> str | None:
        if len(calls) == 1:
            return "single_call"
        if any(r is None for r in renders):
            return "call_dropped"
        if not conv.append_only:
            return "not_append_only"
        t0 = calls[0].tools
        if any(c.tools != t0 for c in calls[1:]):
            return "tools_differ"
        return None

    def _render_packed(self, conv: Conversation, renders: list[_CallRender]):
        """Pack calls into one sequence. Returns (sequence | None, calls packed, reason when not all)."""
        last = renders[-1]
        full = last.prompt_text + last.completion_text
        starts = []
        for r in renders:
            p = len(r.prompt_text)
            if not full.startswith(r.prompt_text):
                return None, 0, "template_rewrites_history"
            if full[p:p + len(r.completion_text)] != r.completion_text:
                return None, 0, "template_rewrites_answer"
            starts.append(p)
        ids, offs = self._encode(full)
        offs = _offsets_array(offs)  # converted once for boundaries and labels
        bounds = _token_starts(offs)
        for r, p in zip(renders, starts):
            for b in (p, p + r.sup_start, p + len(r.completion_text)):
                if b != len(full) and b not in bounds:
                    return None, 0, "token_boundary"
        seg = bytearray(len(full))
        msk = bytearray(len(full))
        prev_end = 0
        prev_n = 0
        for r, p in zip(renders, starts):
            # Context messages new since the previous call (the previous completion is labelled below).
            new_msgs = r.ctx_dicts[prev_n:]
            self._context_labels([m for m in new_msgs if m is not None], full, seg, prev_end, p)
            cseg, cmsk = self._completion_labels(r)
            e = p + len(r.completion_text)
            seg[p:e] = cseg
            msk[p:e] = cmsk
            prev_end = e
            prev_n = len(r.ctx_dicts) + 1
        segs, mask = _token_labels(offs, seg, msk)
        n_calls = len(renders)
        if self.max_seq_len is not None and len(ids) > self.max_seq_len:
            # Keep the longest prefix that ends right after a completion; the rest become per-call rows.
            cut = None
            for k, (r, p) in enumerate(zip(renders, starts)):
                e = p + len(r.completion_text)
                t = bounds.get(e, len(ids))
                if t <= self.max_seq_len:
                    cut = (k + 1, t)
            if cut is None or cut[0] < 2:
                return None, 0, "max_seq_len"
            n_calls, t = cut
            ids, mask, segs = ids[:t], mask[:t], segs[:t]
        seq = RenderedSequence(conv.id, [r.call.id for r in renders[:n_calls]], ids, mask, segs)
        return seq, n_calls, (None if n_calls == len(renders) else "max_seq_len")

    def _per_call_row(self, r: _CallRender) -> RenderedSequence | None:
        row = self._row(r)
        if self.max_seq_len is None or len(row.input_ids) <= self.max_seq_len:
            return row
        # Truncate context from the left at message boundaries: keep the system message(s) and tools,
        # drop whole exchanges up to a later user message.
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
                tr = self._render_call(trial, _IdMap(self.dialect.ids, call.conversation_id))
            except RenderError:
                continue
            row2 = self._row(tr)
            if len(row2.input_ids) <= self.max_seq_len:
                row2.call_ids = [call.id]
                self.report.truncated += 1
                return row2
        self.report.drop(
            call.id, "exceeds_max_seq_len",
            f"{len(row.input_ids)} tokens; no left truncation at a message boundary fits {self.max_seq_len}",
        )
        return None

    def _row(self, r: _CallRender) -> RenderedSequence:
        p_ids, p_offs = self._encode(r.prompt_text)
        pseg = bytearray(len(r.prompt_text))
        self._context_labels(r.ctx_dicts, r.prompt_text, pseg, 0, len(r.prompt_text))
        p_segs = _token_labels(p_offs, pseg, pseg)[0]
        c_ids, c_segs, c_mask = self._encode_labeled(r.completion_text, *self._completion_labels(r))
        return RenderedSequence(
            r.call.conversation_id, [r.call.id], p_ids + c_ids, [0] * len(p_ids) + c_mask, p_segs + c_segs
        )

    def _count(self, seq: RenderedSequence) -> None:
        rep = self.report
        rep.tokens += len(seq.input_ids)
        rep.supervised_tokens += sum(seq.loss_mask)
        rep.segment_tokens.update(itertools.compress(seq.segments, seq.loss_mask))

    # ---------------------------------------------------------------------------------- tool support

    def _check_tools(self) -> None:
        if self.dialect.tool_error:
            if self.user_template:
                self.report.warnings["user_template_drops_tool_content"] += 1
                return
            raise RenderError("template_drops_tool_content", self.dialect.tool_error, where="chat_template")

    # ---------------------------------------------------------------------------------- probes

    def _probe(self) -> _Dialect:
        """Find this template's conventions by rendering small probe conversations (see `_Dialect`)."""
        d = _Dialect()
        d.eot_tokens = self._probe_eot()
        self.dialect = d
        d.injected_reasoning, d.reasoning_open, d.reasoning_close = self._probe_reasoning(d)
        self._probe_tools(d)
        return d

    def _try(self, msgs: list[dict], tools: list[dict] | None, generation: bool) -> str | None:
        try:
            return self._apply(msgs, tools, generation)
        except RenderError:
            return None

    def _probe_eot(self) -> tuple[str, ...]:
        eot: list[str] = []
        msgs = [
            {"role": "user", "content": _PROBE_USER},
            {"role": "assistant", "content": _PROBE_ANSWER},
            {"role": "user", "content": _PROBE_FOLLOWUP},
        ]
        text = self._try(msgs, None, False)
        if text and _PROBE_ANSWER in text and _PROBE_FOLLOWUP in text and self._added_re is not None:
            a = text.index(_PROBE_ANSWER) + len(_PROBE_ANSWER)
            m = self._added_re.search(text, a, text.index(_PROBE_FOLLOWUP, a))
            if m:
                eot.append(m.group(0))
        eos = getattr(self.tokenizer, "eos_token", None)
        if eos and eos not in eot:
            eot.append(eos)
        return tuple(eot)

    def _probe_reasoning(self, d: _Dialect) -> tuple[str, str, str]:
        user = [{"role": "user", "content": _PROBE_USER}]
        prompt = self._try(user, None, True)
        with_r = self._try(user + [{"role": "assistant", "content": _PROBE_ANSWER,
                                    "reasoning_content": _PROBE_REASONING}], None, False)
        without = self._try(user + [{"role": "assistant", "content": _PROBE_ANSWER}], None, False)
        if not prompt or not with_r or not without:
            return "", "<think>", "</think>"
        if not (with_r.startswith(prompt) and without.startswith(prompt)):
            return "", "<think>", "</think>"
        cr, c0 = with_r[len(prompt):], without[len(prompt):]
        i, j = cr.find(_PROBE_REASONING), cr.find(_PROBE_ANSWER)
        if i < 0 or j < i:
            return "", "<think>", "</think>"
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

    def _probe_tools(self, d: _Dialect) -> None:
        tools = tools_to_openai([_PROBE_TOOL])
        probe_call = ToolCallPart.from_raw("call_probe_0001", _PROBE_TOOL.name, dict(_PROBE_ARGS))
        conv = [
            Message("system", [TextPart(_PROBE_SYSTEM)]),
            Message("user", [TextPart(_PROBE_USER)]),
            Message("assistant", [probe_call]),
            Message("tool", [ToolResultPart("call_probe_0001", _PROBE_RESULT, name=_PROBE_TOOL.name)]),
        ]
        best: tuple[int, str, _Dialect] | None = None
        for args in ("object", "string"):
            for empty in ("empty", "omit"):
                for idm in ("passthrough", "alnum9"):
                    trial = _Dialect(args=args, empty_content=empty, ids=idm)
                    dicts = self._to_dicts(conv, _IdMap(idm, "probe"), trial)
                    text = self._try(dicts, tools, True)
                    if text is None:
                        continue
                    ok_args = _args_single_encoded(text, args)
                    user_at = text.find(_PROBE_USER)
                    support = {
                        "definitions": _PROBE_TOOL.description in text,
                        "calls": ok_args and user_at >= 0 and _PROBE_TOOL.name in text[user_at:],
                        "results": _PROBE_RESULT in text,
                    }
                    score = sum(support.values())
                    if best is None or score > best[0]:
                        trial.tool_support = support
                        best = (score, text, trial)
                if best is not None and best[0] == 3:
                    break
            if best is not None and best[0] == 3:
                break
        if best is None:
            d.tool_support = {"definitions": False, "calls": False, "results": False}
            d.tool_error = "the chat template raises on every probe conversation with a tool call and result"
            return
        _, _, t = best
        d.args, d.empty_content, d.ids, d.tool_support = t.args, t.empty_content, t.ids, t.tool_support
        missing = [k for k, v in d.tool_support.items() if not v]
        if missing:
            d.tool_error = (
                "the chat template silently drops tool " + ", ".join(missing)
                + " (probe render); pass a tool-aware template (e.g. examples/chat_templates/chatml_tools.jinja)"
            )
        # Tool-call markup, for segment_completion: render the probe call as the completion of a call.
        try:
            pr = self._render_call(LLMCall("probe", 0, [_PROBE_TOOL], conv[:2], conv[2]), _IdMap(d.ids, "probe"))
        except RenderError:
            return
        c = pr.completion_text
        name = next((sp for sp in pr.spans if sp[2] == Segment.TOOL_NAME), None)
        args = next((sp for sp in pr.spans if sp[2] == Segment.TOOL_ARGS), None)
        if name is None or args is None:
            return
        eot_at = len(c)
        for t in d.eot_tokens:
            if c.endswith(t):
                eot_at = len(c) - len(t)
        d.call_prefix = c[pr.sup_start:name[0]]
        d.call_mid = c[name[1]:args[0]]
        d.call_suffix = c[args[1]:eot_at]

    # ---------------------------------------------------------------------------------- generated text

    def _decode_ends(self, ids: list[int], text: str) -> list[int]:
        """Character end offset [n] of each token in ``text == decode(ids)``.

        Linear: the ids go once through the tokenizer's own decoder as a stream
        (``tokenizers.decoders.DecodeStream``); a token that ends inside a character (part of a multi-byte
        UTF-8 sequence) adds nothing, the token completing it gets the character. When the stream does not
        reproduce ``text`` (no fast backend, Python-side space clean-up), each prefix is decoded instead,
        which is exact for byte BPE but quadratic in ``n``.
        """
        ends = self._stream_ends(ids) if self._backend is not None else None
        if ends is not None and ends[1] == text:
            return ends[0]
        return [len(self.tokenizer.decode(ids[: i + 1], skip_special_tokens=False)) for i in range(len(ids))]

    def _stream_ends(self, ids: list[int]) -> tuple[list[int], str] | None:
        """(cumulative text length after each token, streamed text), or None when streaming fails."""
        try:
            from tokenizers.decoders import DecodeStream

            stream = DecodeStream(skip_special_tokens=False)
            ends, chunks, n = [], [], 0
            for t in ids:
                chunk = stream.step(self._backend, t)
                if chunk:
                    chunks.append(chunk)
                    n += len(chunk)
                ends.append(n)
        except Exception:  # noqa: BLE001 - an old tokenizers or an odd decoder: the caller decodes prefixes
            return None
        return ends, "".join(chunks)

    def _label_generated(self, text: str, seg: bytearray) -> None:
        d = self.dialect
        # Reasoning spans.
        o, c = d.reasoning_open, d.reasoning_close
        pos = 0
        while True:
            i = text.find(o, pos)
            if i < 0:
                break
            j = text.find(c, i + len(o))
            j = len(text) if j < 0 else j + len(c)
            while j < len(text) and text[j] in " \t\n":  # the gap after the wrapper, as in training labels
                j += 1
            seg[i:j] = bytes([Segment.REASONING]) * (j - i)
            pos = j
        if not d.call_prefix or d.call_mid is None:
            return
        prefix = d.call_prefix.lstrip()
        mid = d.call_mid
        suffix = (d.call_suffix or "").rstrip()
        decoder = json.JSONDecoder()
        pos = 0
        while True:
            i = text.find(prefix, pos)
            if i < 0:
                break
            ns = i + len(prefix)
            ne = text.find(mid, ns)
            if ne < 0 or "\n" in text[ns:ne]:
                pos = ns
                continue
            while i > 0 and text[i - 1] in " \t\n" and seg[i - 1] == Segment.TEXT:
                i -= 1  # the separator before a call is tool structure, as in training labels
            seg[i:ns] = bytes([Segment.TOOL_STRUCTURE]) * (ns - i)
            seg[ns:ne] = bytes([Segment.TOOL_NAME]) * (ne - ns)
            a = ne + len(mid)
            seg[ne:a] = bytes([Segment.TOOL_STRUCTURE]) * (a - ne)
            try:
                _, ae = decoder.raw_decode(text, a)
            except ValueError:
                ae = len(text)  # truncated or invalid arguments: the rest is arguments
            seg[a:ae] = bytes([Segment.TOOL_ARGS]) * (ae - a)
            se = ae
            if suffix and text.startswith(suffix, ae):
                se = ae + len(suffix)
            else:
                k = text.find(suffix.strip()[-12:], ae) if suffix.strip() else -1
                if k >= 0:
                    se = k + len(suffix.strip()[-12:])
            seg[ae:se] = bytes([Segment.TOOL_STRUCTURE]) * (se - ae)
            pos = max(se, i + 1)
