"""Training labels: per-character segment labels and loss masks of a rendered text turned into per-token
labels through the tokenizer's offsets."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import numpy as np


def _arg_candidates(value: Any) -> Iterator[str]:
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


def _offsets_array(offsets) -> np.ndarray:
    """Token char offsets as an int64 array [T, 2] (start, end), from a list of pairs or such an array."""
    if isinstance(offsets, np.ndarray):
        return offsets.astype(np.int64, copy=False).reshape(-1, 2)
    # fromiter over the flattened pairs: about 4x faster than np.asarray on a list of tuples.
    flat = np.fromiter(itertools.chain.from_iterable(offsets), dtype=np.int64, count=2 * len(offsets))
    return flat.reshape(-1, 2)


class _TokenStarts:
    """Char positions where the tokenized text may be split: the start of a token that no earlier token
    extends past. ``pos in starts`` and ``starts.get(pos, default)`` (the first token starting there) are
    binary searches over the offsets [T, 2], so no per-token Python object is built."""

    def __init__(self, offsets):
        a = _offsets_array(offsets)
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


def _token_starts(offsets) -> _TokenStarts:
    """Char position -> token index for every token start (a position where the text may be split): the
    first token starting there, provided no earlier token ends after it. ``offsets`` [T, 2]."""
    return _TokenStarts(offsets)


def _token_labels(offsets, seg: bytearray, msk: bytearray) -> tuple[list[int], list[int]]:
    """Per-token (segment, mask) from per-char arrays: segment of the token's middle char; mask 1 when any
    char of the token is supervised (supervised spans are contiguous, so the two ends suffice). Tokens
    without chars of their own get (0, 0). ``offsets`` [T, 2]; returns two lists [T]."""
    a = _offsets_array(offsets)
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
