"""Training labels: the assistant's strings located in its rendered completion (segment spans, the
template-injected prefix, the end-of-turn token), context messages labelled in a rendered prompt, and the
per-character labels and loss masks turned into per-token labels through the tokenizer's offsets."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from drafters.render.codec import TokenCodec
from drafters.render.messages import dict_reasoning, dict_text
from drafters.render.records import CallRender, Dialect, Span
from drafters.segments import Segment
from drafters.traces.model import inline_reasoning_spans

_CONTEXT_SEGMENT = {"system": Segment.SYSTEM, "user": Segment.USER, "tool": Segment.TOOL_RESULT}


class Located(NamedTuple):
    """An assistant string found in a completion text (a logged message's piece located in its render, or
    a piece parsed from generated text); ``end`` -1 marks arguments not found verbatim."""

    start: int
    end: int
    segment: int
    is_tool: bool


def label_completion(comp: dict, text: str, dialect: Dialect, added_re: re.Pattern | None,
                     warnings: Counter) -> tuple[list[Span], int, int]:
    """Locate the assistant's strings (reasoning, text, tool names and arguments, in order) in its rendered
    completion ``text``; the gaps between them are structure.

    ``comp`` is the completion's template dict; ``added_re`` the tokenizer's added tokens (`TokenCodec`).
    Returns (spans, sup_start, end): labelled spans covering ``text[sup_start:end]``, where
    ``text[:sup_start]`` is template-injected (an empty reasoning wrapper) and ``end`` is just after the
    end-of-turn token. Strings that cannot be found are counted in ``warnings`` (``not_located:SEGMENT``).
    """
    sup_start = 0
    reasoning = dict_reasoning(comp)
    if not reasoning and dialect.injected_reasoning and text.startswith(dialect.injected_reasoning):
        sup_start = len(dialect.injected_reasoning)
    opened = opened_reasoning(text, sup_start, len(text), dialect)
    pieces = _completion_pieces(comp, dialect)
    if opened:  # the logged reasoning is inside the block the prompt opened
        pieces = [p for p in pieces if p[1] != Segment.REASONING or p[0] != [reasoning.strip()]]
    lo = opened[-1].end if opened else sup_start
    found, cursor = _locate(pieces, text, lo, warnings)
    end = eot_end(text, cursor, dialect.eot_tokens, added_re, warnings)
    found = opened + text_in_reasoning(_close_approximate_args(found, end, warnings), text, lo, end, dialect)
    found = wrap_reasoning(found, text, sup_start, end, dialect)
    return completion_spans(found, sup_start, end, bool(comp.get("tool_calls"))), sup_start, end


def _completion_pieces(comp: dict, dialect: Dialect) -> list[tuple[Any, int, bool]]:
    """(candidate strings, segment, is_tool) for each assistant string, in the order the template writes:
    reasoning, the content's text and inline reasoning (`prose_pieces`), then each call's name and its
    arguments (one JSON value, or each key and value when the template writes pairs)."""
    pieces: list[tuple[Any, int, bool]] = []
    reasoning = dict_reasoning(comp)
    if reasoning.strip():
        pieces.append(([reasoning.strip()], Segment.REASONING, False))
    content = dict_text(comp)
    for s, e, seg in prose_pieces(content, 0, len(content), dialect):
        pieces.append(([content[s:e]], seg, False))
    for tc in comp.get("tool_calls") or []:
        fn = tc["function"]
        pieces.append(([fn["name"]], Segment.TOOL_NAME, True))
        args = fn["arguments"]
        if dialect.arg_form == "pairs" and isinstance(args, dict):
            for k, v in args.items():
                for piece in (str(k), v):
                    if piece != "":  # an empty value has nothing to locate
                        pieces.append((value_candidates(piece, dialect.value_forms), Segment.TOOL_ARGS, True))
        else:
            pieces.append((arg_candidates(args), Segment.TOOL_ARGS, True))
    return pieces


def opened_reasoning(text: str, start: int, stop: int, dialect: Dialect) -> list[Located]:
    """The reasoning block the generation prompt opened (``dialect.prompt_reasoning == "open"``): from
    ``start`` to just after the first reasoning close in ``text[start:stop]`` (to ``stop`` when cut short
    inside it), as one REASONING piece; [] for other templates. The answer starts inside it, so its
    close tag is reasoning whether or not there is reasoning before it (one rule for training labels and
    generated text)."""
    if dialect.prompt_reasoning != "open" or stop <= start:
        return []
    k = text.find(dialect.reasoning_close, start, stop)
    return [Located(start, stop if k < 0 else k + len(dialect.reasoning_close), Segment.REASONING, False)]


def prose_pieces(text: str, start: int, end: int, dialect: Dialect) -> list[tuple[int, int, int]]:
    """(start, end, segment) of the reasoning and text in ``text[start:end]``, stripped of surrounding
    whitespace: the inside of each inline reasoning block (the template's wrapper, e.g.
    ``<think>...</think>``; an empty block as a whole) is REASONING, the text around them TEXT. One rule
    for a logged message's content and for generated text, so both are labelled alike."""
    out: list[tuple[int, int, int]] = []
    opn, cls = dialect.reasoning_open, dialect.reasoning_close
    pos = start
    for s, e in inline_reasoning_spans(text[start:end], opn, cls):
        s, e = s + start, e + start
        out += _stripped(text, pos, s, Segment.TEXT)
        inner_end = e - len(cls) if text.endswith(cls, s, e) else e
        # An empty block (Qwen3's <think>\n\n</think>) is reasoning as a whole: there is no inside.
        out += _stripped(text, s + len(opn), inner_end, Segment.REASONING) or [(s, e, Segment.REASONING)]
        pos = e
    out += _stripped(text, pos, end, Segment.TEXT)
    return out


def text_in_reasoning(found: list[Located], text: str, start: int, end: int, dialect: Dialect) -> list[Located]:
    """``found`` (sorted, inside ``text[start:end]``) with each TEXT piece that the template wrote inside a
    reasoning block relabelled REASONING. gpt-oss writes the text of a tool-call message on the analysis
    channel (``<|channel|>analysis<|message|>Let me check.``), where the model writes its reasoning; a
    model generating it is reasoning, and generated text is labelled by the block it is in
    (`prose_pieces`), so training labels it so too (one rule). Blocks are searched as in generated text:
    between the tool pieces, from ``dialect.reasoning_open`` to ``reasoning_close`` or the next tool piece."""
    out, lo = [], start
    for k, f in enumerate(found):
        if f.segment == Segment.TEXT:
            hi = next((g.start for g in found[k + 1:] if g.is_tool), end)
            blocks = inline_reasoning_spans(text[lo:hi], dialect.reasoning_open, dialect.reasoning_close)
            if any(lo + s <= f.start and f.end <= lo + e for s, e in blocks):
                f = f._replace(segment=Segment.REASONING)
        elif f.is_tool:
            lo = f.end
        out.append(f)
    return out


def _stripped(text: str, s: int, e: int, seg: int) -> list[tuple[int, int, int]]:
    """``[(s', e', seg)]`` for ``text[s:e]`` without surrounding whitespace, or [] when blank."""
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return [(s, e, seg)] if e > s else []


def _locate(pieces: list[tuple[Any, int, bool]], text: str, cursor: int,
            warnings: Counter) -> tuple[list[Located], int]:
    """Find each piece's first candidate after the previous piece. Returns (found, cursor after the last)."""
    found: list[Located] = []
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
            warnings[f"not_located:{Segment(seg).name}"] += 1
            if seg == Segment.TOOL_ARGS:
                found.append(Located(cursor, -1, seg, is_tool))  # approximate: the gap after the name
            continue
        found.append(Located(hit[0], hit[1], seg, is_tool))
        cursor = hit[1]
    return found, cursor


def _close_approximate_args(found: list[Located], end: int, warnings: Counter) -> list[Located]:
    """Arguments not found verbatim run up to the next located piece or the end-of-turn token; empty
    pieces are dropped."""
    fixed = []
    for k, f in enumerate(found):
        if f.end < 0:
            nxt = next((g.start for g in found[k + 1:] if g.end >= 0), None)
            f = f._replace(end=nxt if nxt is not None else end)
            warnings["args_located_approx"] += 1
        fixed.append(f)
    return [f for f in fixed if f.end > f.start]


def reasoning_tail(header: str, d: Dialect) -> tuple[str, str]:
    """(header without its trailing reasoning markup, state): state "open" when the generation prompt
    ``header`` ends inside an opened reasoning block, "closed" when it ends with an empty block, "" when
    it ends with neither (whitespace between the tags is part of the markup)."""
    k, state = len(header), ""
    while True:
        t = header[:k].rstrip()
        if d.reasoning_close and t.endswith(d.reasoning_close):
            k, state = len(t) - len(d.reasoning_close), state or "closed"
        elif d.reasoning_open and t.endswith(d.reasoning_open):
            k, state = len(t) - len(d.reasoning_open), state or "open"
        else:
            break
    return (header[:k] if state else header), state


def wrap_reasoning(found: list[Located], text: str, start: int, end: int, dialect: Dialect) -> list[Located]:
    """``found`` (sorted, inside ``text[start:end]``) with each reasoning piece stretched over its wrapper
    tags (``dialect.reasoning_open`` before it, ``reasoning_close`` after it, across whitespace): the tags
    are reasoning whatever comes next, so a tool call right after ``</think>`` does not make the closing tag
    tool structure. Part of the one labelling rule (training labels and generated text alike)."""
    out = []
    for k, f in enumerate(found):
        if f.segment == Segment.REASONING:
            lo = out[-1].end if out else start
            hi = found[k + 1].start if k + 1 < len(found) else end
            s, e = f.start, f.end
            while s > lo and text[s - 1].isspace():
                s -= 1
            while e < hi and text[e].isspace():
                e += 1
            opn, cls = dialect.reasoning_open, dialect.reasoning_close
            new_s = s - len(opn) if opn and s - len(opn) >= lo and text.endswith(opn, lo, s) else f.start
            new_e = e + len(cls) if cls and text.startswith(cls, e, hi) else f.end
            f = f._replace(start=new_s, end=new_e)
        out.append(f)
    return out


def completion_spans(found: list[Located], sup_start: int, end: int, ended_tool: bool) -> list[Span]:
    """Spans covering ``[sup_start, end)``: the pieces (in order) and the gaps between them (tool structure
    from the first tool piece on, else the segment before, or the first piece's before it), then the tail
    up to and including the end-of-turn token (tool structure when the message makes tool calls, else
    text). The labelling rule of training labels and of generated text (drafters.render.generated)."""
    spans: list[Span] = []
    pos = sup_start
    first_tool = next((f.start for f in found if f.is_tool), None)
    prev_seg: int | None = None
    for s, e, seg, is_tool in found:
        if s > pos:
            in_tool = first_tool is not None and s >= first_tool
            gap = Segment.TOOL_STRUCTURE if (is_tool or in_tool) else (prev_seg if prev_seg is not None else seg)
            spans.append(Span(pos, s, int(gap)))
        spans.append(Span(s, e, int(seg)))
        pos = e
        prev_seg = seg
    if end > pos:
        tail = Segment.TOOL_STRUCTURE if ended_tool else Segment.TEXT
        spans.append(Span(pos, end, int(tail)))
    return spans


def eot_end(text: str, cursor: int, eot_tokens: tuple[str, ...], added_re: re.Pattern | None,
            warnings: Counter) -> int:
    """Index just past the end-of-turn token at or after ``cursor`` (the engine stops there): the first of
    ``eot_tokens``; failing that the last added token of the tail (gpt-oss ``<|call|>``, counted as
    ``end_of_turn_guessed``), else the whole text (``no_end_of_turn_token``)."""
    best = -1
    for t in eot_tokens:
        i = text.find(t, cursor)
        if i >= 0 and (best < 0 or i < best):
            best = i
            best_end = i + len(t)
    if best >= 0:
        return best_end
    if added_re is not None:
        last = None
        for m in added_re.finditer(text, cursor):
            last = m
        if last is not None:
            warnings["end_of_turn_guessed"] += 1
            return last.end()
    warnings["no_end_of_turn_token"] += 1
    return len(text)


def context_labels(msgs: list[dict], text: str, seg: bytearray, start: int, end: int) -> None:
    """Label context messages' contents located in order in ``text[start:end]``, writing ``seg`` [len(text)]
    in place: system, user and tool result text by role, earlier assistant turns by their parts."""
    cursor = start
    for m in msgs:
        for cands, lab in _context_pieces(m):
            for c in cands:
                if not c:
                    continue
                i = text.find(c, cursor, end)
                if i >= 0:
                    seg[i:i + len(c)] = bytes([lab]) * len(c)
                    cursor = i + len(c)
                    break


def _context_pieces(m: dict) -> list[tuple[Any, int]]:
    """(candidate strings, segment) of one context message, in the order the template writes them."""
    role = m.get("role")
    if role == "assistant":
        pieces: list[tuple[Any, int]] = []
        if dict_reasoning(m).strip():
            pieces.append(([dict_reasoning(m).strip()], Segment.REASONING))
        if dict_text(m).strip():
            pieces.append(([dict_text(m).strip()], Segment.TEXT))
        for tc in m.get("tool_calls") or []:
            pieces.append(([tc["function"]["name"]], Segment.TOOL_NAME))
            pieces.append((arg_candidates(tc["function"]["arguments"]), Segment.TOOL_ARGS))
        return pieces
    s = dict_text(m).strip()
    if not s:
        return []
    # The content as written, or JSON-escaped (a template that writes it with tojson).
    cands = [s, json.dumps(s, ensure_ascii=False)[1:-1], json.dumps(s)[1:-1]]
    return [(cands, _CONTEXT_SEGMENT.get(role, Segment.USER))]


def completion_labels(r: CallRender) -> tuple[bytearray, bytearray]:
    """Per-character (segment, loss mask) of ``r.completion_text``: its spans, mask 1 from ``sup_start``."""
    n = len(r.completion_text)
    seg = bytearray(n)
    msk = bytearray(n)
    for s, e, lab in r.spans:
        seg[s:e] = bytes([lab]) * (e - s)
    msk[r.sup_start:n] = b"\x01" * (n - r.sup_start)
    return seg, msk


def prompt_labels(r: CallRender, codec: TokenCodec) -> tuple[list[int], list[int]]:
    """(token ids [T], segments [T]) of the call's served prompt, its context messages labelled."""
    ids, offs = codec.encode(r.prompt_text)
    pseg = bytearray(len(r.prompt_text))
    context_labels(r.ctx_dicts, r.prompt_text, pseg, 0, len(r.prompt_text))
    return ids, token_labels(offs, pseg, pseg)[0]


def encode_labeled(codec: TokenCodec, text: str, seg: bytearray, msk: bytearray):
    """(token ids [T], segments [T], loss mask [T]) of ``text`` with per-character labels ``seg``/``msk``."""
    ids, offs = codec.encode(text)
    segs, mask = token_labels(offs, seg, msk)
    return ids, segs, mask


def arg_candidates(value: Any) -> Iterator[str]:
    """Ways a template writes arguments, most common first: verbatim string, or transformers' ``tojson``
    variants. Lazy: callers stop at the first one found, so the rarer dumps are usually never made."""
    if isinstance(value, str):
        yield value
        return
    seen: set[str] = set()
    for kw in ({}, {"separators": (",", ":")}, {"ensure_ascii": True}, {"indent": 2}, {"indent": 4}):
        c = json.dumps(value, **{"ensure_ascii": False, **kw})
        if c not in seen:
            seen.add(c)
            yield c


_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (list, "array"), (dict, "object"))


def json_type(value: Any) -> str:
    """The JSON type name of a decoded JSON value ("string", "boolean", "integer", "number", "null",
    "array", "object")."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return "string"
    return next((name for t, name in _JSON_TYPES if isinstance(value, t)), "object")


def value_candidates(value: Any, forms: dict[str, str]) -> Iterator[str]:
    """Ways a template writes one argument value of key/value arguments: Python's ``str`` first when the
    template writes values of that JSON type so (``forms``, `Dialect.value_forms`: Qwen3-Coder's
    ``True``, ``['a', 'b']``), then `arg_candidates`."""
    if forms.get(json_type(value)) == "python":
        yield str(value)
    yield from arg_candidates(value)


def offsets_array(offsets) -> np.ndarray:
    """Token char offsets as an int64 array [T, 2] (start, end), from a list of pairs or such an array."""
    if isinstance(offsets, np.ndarray):
        return offsets.astype(np.int64, copy=False).reshape(-1, 2)
    # fromiter over the flattened pairs: about 4x faster than np.asarray on a list of tuples.
    flat = np.fromiter(itertools.chain.from_iterable(offsets), dtype=np.int64, count=2 * len(offsets))
    return flat.reshape(-1, 2)


class TokenStarts:
    """Char positions where the tokenized text may be split: the start of a token that no earlier token
    extends past. ``pos in starts`` and ``starts.get(pos, default)`` (the first token starting there) are
    binary searches over the offsets [T, 2], so no per-token Python object is built."""

    def __init__(self, offsets):
        a = offsets_array(offsets)
        s, e = a[:, 0], a[:, 1]
        prev_end = np.zeros_like(e)  # max end of the tokens before each token (0 before the first)
        if len(e) > 1:
            np.maximum.accumulate(e[:-1], out=prev_end[1:])
            np.maximum(prev_end, 0, out=prev_end)
        self._idx = np.flatnonzero(s >= prev_end)  # token indices, increasing
        self._pos = s[self._idx]  # their starts, non-decreasing (so the first of equal starts is found first)

    def get(self, pos: int, default: int | None = None) -> int | None:
        k = int(np.searchsorted(self._pos, pos, side="left"))
        if k < len(self._pos) and self._pos[k] == pos:
            return int(self._idx[k])
        return default

    def __contains__(self, pos: int) -> bool:
        return self.get(pos) is not None


def token_starts(offsets) -> TokenStarts:
    """Char position -> token index for every token start (a position where the text may be split): the
    first token starting there, provided no earlier token ends after it. ``offsets`` [T, 2]."""
    return TokenStarts(offsets)


def token_labels(offsets, seg: bytearray, msk: bytearray) -> tuple[list[int], list[int]]:
    """Per-token (segment, mask) from per-char arrays: segment of the token's middle char; mask 1 when any
    char of the token is supervised (supervised spans are contiguous, so the two ends suffice). Tokens
    without chars of their own get (0, 0). ``offsets`` [T, 2]; returns two lists [T]."""
    a = offsets_array(offsets)
    n = len(seg)
    if not len(a) or n == 0:
        return [0] * len(a), [0] * len(a)
    s, e = a[:, 0], a[:, 1]
    ok = (e > s) & (s < n)
    sg = np.frombuffer(bytes(seg), dtype=np.uint8)
    mk = np.frombuffer(bytes(msk), dtype=np.uint8)
    first = np.where(ok, s, 0)
    last = np.minimum(np.where(ok, e - 1, 0), n - 1)
    mid = np.minimum(np.where(ok, (s + e - 1) // 2, 0), n - 1)
    segs = np.where(ok, sg[mid], 0)
    mask = np.where(ok, (mk[first] | mk[last]) != 0, False)
    return segs.tolist(), mask.astype(np.int64).tolist()
