"""Suffix decoding (Oliaro et al., "SuffixDecoding", arXiv 2411.04975; ArcticInference, vLLM ``suffix``) as a
model-free proposer: the baseline a user would pick instead of a trained drafter on agent traffic.

Two indexes, as in the paper: a global one over the organization's training outputs (the rendered assistant
tokens of its training calls, the same text the drafter is trained on) and a per-request one over the
prompt plus everything generated so far. Each verification round:

1. for every match length m = 1 .. max_match_len whose m-token suffix of the context occurs in an index,
   grow a path greedily from that match: the most frequent continuation, then its most frequent
   continuation, ... Each token's estimated probability is the product of count(next) / count(current)
   along the path (empirical continuation frequencies); the path stops at min(block size,
   floor(max_spec_factor * m + max_spec_offset)) tokens (the paper's adaptive speculation length) or
   before the first token whose probability falls below min_token_prob;
2. a path's score is the sum of its tokens' probabilities (its expected number of accepted tokens under
   those estimates); each index keeps its best-scoring path (ties: the longer match), and the global
   index's path replaces the request's only if it scores strictly higher (ArcticInference's
   SuffixDecodingCache.speculate order).

Differences from ArcticInference, both on the side of a stronger baseline:
- the verifier here checks one path (a block), not a token tree, so the proposal is the best path of at
  most block size tokens (ArcticInference's default ``use_tree_spec=False`` does the same);
- ArcticInference's trees stop at depth 24, which caps match length + speculated tokens at 24; the suffix
  automaton here caps only the match (``max_match_len``, default 23 = that depth minus one) and counts every
  string up to max_match_len + block size tokens, so a long match can still fill the block.
Global index: the last ``max_global_sequences`` outputs (vLLM's suffix_decoding_max_cached_requests,
10000). Defaults follow vLLM's suffix decoding settings (max_spec_factor 1.0, min_token_prob 0.1).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from drafters.baselines.suffix_automaton import Match, SuffixAutomaton
from drafters.errors import TracedraftError
from drafters.speculate import Proposal

#: Where a suffix draft came from: the request's own context or the global index of training outputs.
REQUEST, GLOBAL = "request", "global"


@dataclass
class SuffixDraft:
    """A speculated path. tokens: the drafts; probs: each token's estimated probability of being reached
    (non-increasing, in (0, 1]); score = sum(probs); match_len: tokens of context matched; source: REQUEST
    or GLOBAL (None for the empty draft)."""

    tokens: list[int] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)
    score: float = 0.0
    match_len: int = 0
    source: str | None = None


@dataclass
class SuffixProposal(Proposal):
    """A Proposal (deterministic: probs None, no confidences) plus how suffix decoding chose it: score
    (expected accepted drafts under the frequency estimates), match_len, source, path_probs [n]."""

    score: float = 0.0
    match_len: int = 0
    source: str | None = None
    path_probs: list[float] = field(default_factory=list)


def spec_length(match_len: int, block_size: int, max_spec_factor: float, max_spec_offset: float) -> int:
    """The paper's adaptive speculation length: min(block size, floor(factor * match_len + offset)), >= 0."""
    return max(0, min(block_size, int(match_len * max_spec_factor + max_spec_offset + 1e-6)))


def draft_path(index: SuffixAutomaton, state: int, max_tokens: int,
               min_token_prob: float) -> tuple[list[int], list[float]]:
    """Greedy path from ``state``: follow the most frequent continuation while fewer than max_tokens are
    drafted and the running probability prod count(child) / count(parent) stays >= min_token_prob.
    Returns (tokens, probs), probs[i] the running probability after token i."""
    tokens: list[int] = []
    probs: list[float] = []
    prob = 1.0
    count = index.count
    while len(tokens) < max_tokens:
        step = index.best_child(state)
        if step is None:
            break
        tok, child = step
        prob *= count(child) / count(state)
        if prob < min_token_prob:
            break
        tokens.append(tok)
        probs.append(prob)
        state = child
    return tokens, probs


def best_draft(index: SuffixAutomaton, match: Match, block_size: int, max_spec_factor: float,
               max_spec_offset: float, min_token_prob: float, source: str, floor: SuffixDraft) -> SuffixDraft:
    """The best-scoring path over every suffix of ``match`` (longest first), or ``floor`` unless a path
    scores strictly more than floor.score. One candidate per automaton state (its strings share their
    continuations, so its longest allowed match gives the longest path); a candidate whose length cap
    cannot beat the best score so far is skipped (a score is at most the number of tokens)."""
    best = floor
    for state, m in index.suffix_states(match.state, match.length):
        k = spec_length(m, block_size, max_spec_factor, max_spec_offset)
        if k <= best.score:
            continue
        tokens, probs = draft_path(index, state, k, min_token_prob)
        score = sum(probs)
        if score > best.score:
            best = SuffixDraft(tokens, probs, score, m, source)
    return best


def training_outputs(sequences: Iterable[Any]) -> list[list[int]]:
    """The assistant outputs of rendered training rows: each maximal run of tokens with loss_mask 1 (one
    assistant turn, end-of-turn token included) of each ``RenderedSequence``-like row (input_ids,
    loss_mask), in order. Raises TracedraftError(code="bad_input") when a row's lengths disagree."""
    out: list[list[int]] = []
    for i, seq in enumerate(sequences):
        ids, mask = list(seq.input_ids), list(seq.loss_mask)
        if len(ids) != len(mask):
            raise TracedraftError("bad_input", f"input_ids has {len(ids)} tokens but loss_mask {len(mask)}",
                                  f"sequence {i} ({getattr(seq, 'conversation_id', '?')})")
        run: list[int] = []
        for t, m in zip(ids, mask):
            if m:
                run.append(int(t))
            elif run:
                out.append(run)
                run = []
        if run:
            out.append(run)
    return out


#: Most tokens the global index holds by default. The automaton takes about 400 bytes a token (measured on
#: 200k random tokens, count depth 47, CPython 3.11), so 5M tokens are about 2 GB.
MAX_INDEX_TOKENS = 5_000_000


def build_global_index(outputs: Iterable[Sequence[int]], count_depth: int,
                       max_sequences: int | None = 10000, max_tokens: int = MAX_INDEX_TOKENS) -> SuffixAutomaton:
    """A suffix automaton over the last ``max_sequences`` of ``outputs`` (all when None), one sequence
    each; counts exact up to ``count_depth`` tokens. Raises TracedraftError(code="suffix_corpus_too_large")
    naming the size and the limit when those sequences hold more than ``max_tokens`` tokens (checked before
    anything is built, so a corpus too large for memory is refused, never an out-of-memory kill)."""
    seqs = list(outputs)
    if max_sequences is not None:
        seqs = seqs[-max_sequences:] if max_sequences > 0 else []
    n = sum(len(x) for x in seqs)
    if n > max_tokens:
        raise TracedraftError("suffix_corpus_too_large", f"the suffix decoding corpus holds {n} tokens in "
                              f"{len(seqs)} answers, more than the {max_tokens} the index may hold (about 400 "
                              "bytes a token); lower evaluation.suffix_max_sequences or raise "
                              "evaluation.suffix_max_tokens", "evaluation.suffix_max_tokens")
    index = SuffixAutomaton(count_depth)
    for s in seqs:
        index.start_sequence()
        index.extend(s)
    return index


class SuffixProposer:
    """Suffix decoding behind the ``drafters.speculate.Proposer`` protocol (algorithm in the module
    docstring).

    training: the organization's training outputs (token id sequences, e.g. ``training_outputs(rows)``)
        or a prebuilt ``build_global_index`` automaton to share between proposers (its count_depth must be
        >= max_match_len + block_size). Empty: only the request's own context is used.
    block_size: most drafts per round; max_match_len: longest context suffix matched (>= 1);
    max_spec_factor, max_spec_offset: speculate at most floor(factor * match + offset) tokens;
    min_token_prob: stop a path before a token whose estimated probability is below this.
    Deterministic (probs None: the verifier treats drafts as one-hot, exact at any temperature), no
    target features. ``propose`` returns a SuffixProposal; its anchor is final (the loop commits every
    anchor first), so propose indexes it and ``commit`` then indexes only the accepted drafts.
    Raises TracedraftError(code="bad_config") for out-of-range settings.
    """

    layer_ids = None

    def __init__(self, training: SuffixAutomaton | Iterable[Sequence[int]] = (), block_size: int = 7,
                 max_match_len: int = 23, max_spec_factor: float = 1.0, max_spec_offset: float = 0.0,
                 min_token_prob: float = 0.1, max_global_sequences: int | None = 10000):
        if block_size < 1 or max_match_len < 1 or max_spec_factor < 0 or not 0.0 <= min_token_prob <= 1.0:
            raise TracedraftError("bad_config", "need block_size >= 1, max_match_len >= 1, max_spec_factor "
                                  f">= 0 and 0 <= min_token_prob <= 1, got {block_size}, {max_match_len}, "
                                  f"{max_spec_factor}, {min_token_prob}", "SuffixProposer")
        self.block_size = block_size
        self.max_match_len = max_match_len
        self.max_spec_factor = max_spec_factor
        self.max_spec_offset = max_spec_offset
        self.min_token_prob = min_token_prob
        self.count_depth = max_match_len + block_size
        if isinstance(training, SuffixAutomaton):
            if training.count_depth < self.count_depth:
                raise TracedraftError("bad_config", f"the global index counts strings up to "
                                      f"{training.count_depth} tokens, this proposer needs "
                                      f"{self.count_depth}", "training")
            self.global_index = training
        else:
            self.global_index = build_global_index(training, self.count_depth, max_global_sequences)
        self.request_index = SuffixAutomaton(self.count_depth)
        self._global_match = Match()
        self._pending: int | None = None  # the anchor indexed by propose() and not yet committed

    def start(self, prompt_ids: torch.Tensor, features: torch.Tensor | None = None) -> None:
        """Begin a request with prompt_ids: LongTensor [T] (features ignored)."""
        ids = [int(t) for t in torch.as_tensor(prompt_ids).reshape(-1).tolist()]
        self.request_index = SuffixAutomaton(self.count_depth)
        self.request_index.start_sequence()
        self.request_index.extend(ids)
        self._global_match = Match()
        for t in ids[-self.max_match_len:]:  # the capped match depends only on the last max_match_len tokens
            self._global_match = self.global_index.advance(self._global_match, t, self.max_match_len)
        self._pending = None

    def _index(self, token: int) -> None:
        self.request_index.append(token)
        self._global_match = self.global_index.advance(self._global_match, token, self.max_match_len)

    def speculate(self) -> SuffixDraft:
        """The draft for the current context (prompt + committed tokens + the proposed anchor)."""
        args = (self.block_size, self.max_spec_factor, self.max_spec_offset, self.min_token_prob)
        best = best_draft(self.request_index, self.request_index.tail_match(self.max_match_len), *args,
                          REQUEST, SuffixDraft())
        if self.global_index.tokens:
            best = best_draft(self.global_index, self._global_match, *args, GLOBAL, best)
        return best

    def propose(self, anchor: int, temperature: float = 0.0,
                generator: torch.Generator | None = None) -> SuffixProposal:
        """Draft up to block_size tokens after ``anchor``; an empty proposal when nothing matches.
        Raises TracedraftError(code="bad_state") when called again with another anchor before commit()."""
        anchor = int(anchor)
        if self._pending is None:
            self._index(anchor)
            self._pending = anchor
        elif self._pending != anchor:
            raise TracedraftError("bad_state", f"propose({anchor}) before the proposed anchor "
                                  f"{self._pending} was committed", "SuffixProposer.propose")
        d = self.speculate()
        return SuffixProposal(tokens=torch.tensor(d.tokens, dtype=torch.long), score=d.score,
                              match_len=d.match_len, source=d.source, path_probs=list(d.probs))

    def commit(self, tokens: torch.Tensor, features: torch.Tensor | None = None) -> None:
        """Append the anchor and the accepted drafts (LongTensor [a+1]). Raises TracedraftError(
        code="bad_state") when the first token is not the anchor given to the last propose()."""
        toks = [int(t) for t in torch.as_tensor(tokens).reshape(-1).tolist()]
        if self._pending is not None:
            if not toks or toks[0] != self._pending:
                raise TracedraftError("bad_state", f"commit {toks[:1]} does not start with the proposed "
                                      f"anchor {self._pending}", "SuffixProposer.commit")
            toks = toks[1:]
            self._pending = None
        for t in toks:
            self._index(t)
