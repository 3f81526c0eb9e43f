"""A brute-force suffix decoding reference and a deterministic bigram target, for the suffix and hybrid tests.

``naive_speculate`` restates SuffixDecoding straight from its definition (ArcticInference's loop order:
match lengths ascending, a candidate replaces the best on >=, the global draft wins only when strictly
better) by scanning the sequences for every count, so the automaton-based proposer can be checked against
it on random inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# ------------------------------------------------------------------------------------ naive reference


def _occurrences(seqs: list[list[int]], pat: list[int]) -> list[int]:
    """Global end positions (running index over the concatenated sequences) of every occurrence of pat."""
    ends, offset, n = [], 0, len(pat)
    for s in seqs:
        for i in range(len(s) - n + 1):
            if s[i: i + n] == pat:
                ends.append(offset + i + n - 1)
        offset += len(s)
    return ends


def _path(seqs: list[list[int]], pat: list[int], k: int, min_prob: float) -> tuple[list[int], list[float]]:
    toks, probs, prob, cur = [], [], 1.0, list(pat)
    while len(toks) < k:
        total = len(_occurrences(seqs, cur))
        kids: dict[int, tuple[int, int]] = {}
        vocab = {t for s in seqs for t in s}
        for t in vocab:
            ends = _occurrences(seqs, cur + [t])
            if ends:
                kids[t] = (len(ends), max(ends))
        if not kids:
            break
        t = max(kids, key=lambda x: kids[x])  # most frequent, then most recent
        prob *= kids[t][0] / total
        if prob < min_prob:
            break
        toks.append(t)
        probs.append(prob)
        cur.append(t)
    return toks, probs


@dataclass
class NaiveDraft:
    tokens: list[int]
    probs: list[float]
    score: float
    match_len: int


def _best(seqs, context, block, max_match, factor, offset, min_prob) -> NaiveDraft:
    best = NaiveDraft([], [], 0.0, 0)
    for m in range(1, min(max_match, len(context)) + 1):
        pat = context[-m:]
        if not _occurrences(seqs, pat):
            break
        k = max(0, min(block, int(m * factor + offset + 1e-6)))
        toks, probs = _path(seqs, pat, k, min_prob)
        if sum(probs) >= best.score:
            best = NaiveDraft(toks, probs, sum(probs), m)
    return best


def naive_speculate(train: list[list[int]], context: list[int], block: int = 7, max_match: int = 23,
                    factor: float = 1.0, offset: float = 0.0,
                    min_prob: float = 0.1) -> tuple[NaiveDraft, str]:
    """(draft, source) for ``context`` (prompt + generated + anchor) given training outputs ``train``."""
    local = _best([context], context, block, max_match, factor, offset, min_prob)
    if train:
        glob = _best(train, context, block, max_match, factor, offset, min_prob)
        if glob.score > local.score:
            return glob, "global"
    return local, "request"


# ------------------------------------------------------------------------------------ bigram target


class _ListCache:
    """The two cache methods the loop uses (get_seq_length, crop), over a list of token ids."""

    def __init__(self):
        self.ids: list[int] = []

    def get_seq_length(self) -> int:
        return len(self.ids)

    def crop(self, n: int) -> None:
        del self.ids[n:]  # n < 0 removes -n tokens (transformers >= 5 semantics)


@dataclass
class _Step:
    logits: torch.Tensor
    aux: torch.Tensor | None
    past_key_values: _ListCache


class BigramTarget:
    """A target whose greedy next token is ``successor[current token]`` (logit margin 10), so greedy output
    is known by hand: with successor = i + 1 mod 5 the text cycles 0 1 2 3 4 0 1 ..."""

    device = "cpu"
    name = "bigram"

    def __init__(self, successor: dict[int, int], vocab: int = 8):
        self.successor, self.vocab = successor, vocab

    def step(self, input_ids, past_key_values=None, layer_ids=None, logits_to_keep: int = 0) -> _Step:
        cache = past_key_values if past_key_values is not None else _ListCache()
        ids = input_ids.reshape(-1).tolist()
        cache.ids.extend(ids)
        logits = torch.zeros(1, len(ids), self.vocab)
        for i, t in enumerate(ids):
            logits[0, i, self.successor[t]] = 10.0
        if logits_to_keep:
            logits = logits[:, -logits_to_keep:]
        return _Step(logits, None, cache)
