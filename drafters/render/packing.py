"""Rows from rendered calls: one packed sequence for an append-only conversation whose calls render as one
growing text (every assistant turn supervised), or one row per call (context labelled, loss only on the
call's own answer). See the package docstring for when a conversation packs."""

from __future__ import annotations

from typing import NamedTuple

from drafters.render.codec import TokenCodec
from drafters.render.labels import (
    TokenStarts,
    completion_labels,
    context_labels,
    encode_labeled,
    offsets_array,
    prompt_labels,
    token_labels,
    token_starts,
)
from drafters.render.records import CallRender, RenderedSequence
from drafters.traces.model import Conversation, LLMCall


class Packed(NamedTuple):
    """What packing gave: the packed row (None when the conversation does not pack), how many leading calls
    it supervises, and why the rest (all calls when ``sequence`` is None) need rows of their own."""

    sequence: RenderedSequence | None
    n_calls: int
    reason: str | None


def pack_blocker(conv: Conversation, calls: list[LLMCall], renders: list[CallRender | None]) -> str | None:
    """Why the conversation cannot be one packed row before looking at the text, or None."""
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


def pack_calls(conv: Conversation, renders: list[CallRender], codec: TokenCodec,
               max_seq_len: int | None) -> Packed:
    """Pack calls into one sequence: the last call's prompt + completion, provided every call's prompt is a
    byte-exact prefix of it, its completion follows unchanged and all boundaries fall between tokens.
    Longer than ``max_seq_len``: the longest prefix that ends right after a completion (at least two calls).
    """
    last = renders[-1]
    full = last.prompt_text + last.completion_text
    starts = []
    for r in renders:
        p = len(r.prompt_text)
        if not full.startswith(r.prompt_text):
            return Packed(None, 0, "template_rewrites_history")
        if full[p:p + len(r.completion_text)] != r.completion_text:
            return Packed(None, 0, "template_rewrites_answer")
        starts.append(p)
    ids, offs = codec.encode(full)
    offs = offsets_array(offs)  # converted once for boundaries and labels
    bounds = token_starts(offs)
    for r, p in zip(renders, starts):
        for b in (p, p + r.sup_start, p + len(r.completion_text)):
            if b != len(full) and b not in bounds:
                return Packed(None, 0, "token_boundary")
    segs, mask = token_labels(offs, *_packed_char_labels(full, renders, starts))
    n_calls = len(renders)
    if max_seq_len is not None and len(ids) > max_seq_len:
        cut = _longest_fitting_prefix(renders, starts, bounds, len(ids), max_seq_len)
        if cut is None or cut[0] < 2:
            return Packed(None, 0, "max_seq_len")
        n_calls, t = cut
        ids, mask, segs = ids[:t], mask[:t], segs[:t]
    seq = RenderedSequence(conv.id, [r.call.id for r in renders[:n_calls]], ids, mask, segs)
    return Packed(seq, n_calls, None if n_calls == len(renders) else "max_seq_len")


def _packed_char_labels(full: str, renders: list[CallRender],
                        starts: list[int]) -> tuple[bytearray, bytearray]:
    """Per-character (segment, loss mask) of the packed text: each call's new context messages, then its
    completion."""
    seg = bytearray(len(full))
    msk = bytearray(len(full))
    prev_end = 0
    prev_n = 0
    for r, p in zip(renders, starts):
        # Context messages new since the previous call (the previous completion is labelled below).
        new_msgs = r.ctx_dicts[prev_n:]
        context_labels([m for m in new_msgs if m is not None], full, seg, prev_end, p)
        cseg, cmsk = completion_labels(r)
        e = p + len(r.completion_text)
        seg[p:e] = cseg
        msk[p:e] = cmsk
        prev_end = e
        prev_n = len(r.ctx_dicts) + 1
    return seg, msk


def _longest_fitting_prefix(renders: list[CallRender], starts: list[int], bounds: TokenStarts, n_tokens: int,
                            max_seq_len: int) -> tuple[int, int] | None:
    """(calls, tokens) of the longest prefix ending right after a completion within ``max_seq_len``."""
    cut = None
    for k, (r, p) in enumerate(zip(renders, starts)):
        t = bounds.get(p + len(r.completion_text), n_tokens)
        if t <= max_seq_len:
            cut = (k + 1, t)
    return cut


def call_row(r: CallRender, codec: TokenCodec) -> RenderedSequence:
    """One call as its own row: the prompt with context labels and mask 0, then the labelled completion."""
    p_ids, p_segs = prompt_labels(r, codec)
    c_ids, c_segs, c_mask = encode_labeled(codec, r.completion_text, *completion_labels(r))
    return RenderedSequence(
        r.call.conversation_id, [r.call.id], p_ids + c_ids, [0] * len(p_ids) + c_mask, p_segs + c_segs
    )
