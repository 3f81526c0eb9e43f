"""Model-free proposers: n-gram prompt lookup and the "none" (no drafter) baseline.

The n-gram proposer is the baseline every trained drafter must beat: agent traffic repeats tool names,
file paths and JSON keys from its own context, which prompt lookup (Saxena 2023; HF
``prompt_lookup_num_tokens``; vLLM ``ngram``) copies for free.
"""

from __future__ import annotations

import torch

from drafters.errors import TracedraftError
from drafters.speculate import Proposal, Proposer


class NGramProposer:
    """Prompt lookup: match the last k tokens (k = max_ngram down to min_ngram) of prompt + generated text
    against earlier context and propose the tokens that followed the most recent match, up to block_size.

    Deterministic (Proposal.probs None: the verifier treats each draft as one-hot), no target features
    (layer_ids None), no confidences. Indexing is incremental: each k-gram's latest end position lives in
    a dict, so a proposal costs O(max_ngram - min_ngram) lookups whatever the context length.
    Raises TracedraftError(code="bad_config") unless 1 <= min_ngram <= max_ngram and block_size >= 1.
    """

    layer_ids = None

    def __init__(self, block_size: int = 7, max_ngram: int = 4, min_ngram: int = 1):
        if block_size < 1 or min_ngram < 1 or max_ngram < min_ngram:
            raise TracedraftError("bad_config", f"need block_size >= 1 and 1 <= min_ngram <= max_ngram, got "
                                  f"{block_size}, {min_ngram}, {max_ngram}", "NGramProposer")
        self.block_size = block_size
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram
        self.tokens: list[int] = []
        self._index: dict[tuple[int, ...], int] = {}  # k-gram -> latest end position (inclusive)
        self._indexed = 0  # k-grams ending at positions < _indexed are in _index

    def start(self, prompt_ids: torch.Tensor, features: torch.Tensor | None = None) -> None:
        """Begin a request with prompt_ids: LongTensor [T] (features ignored)."""
        self.tokens = [int(t) for t in prompt_ids.reshape(-1).tolist()]
        self._index = {}
        self._indexed = 0

    def _index_upto(self, ctx: list[int], end: int) -> None:
        # Add every k-gram ending at positions [_indexed, end); later positions overwrite earlier ones.
        for e in range(self._indexed, end):
            for k in range(self.min_ngram, min(self.max_ngram, e + 1) + 1):
                self._index[tuple(ctx[e - k + 1: e + 1])] = e
        self._indexed = max(self._indexed, end)

    def lookup(self, ctx: list[int]) -> list[int]:
        """The continuation after the most recent earlier occurrence of ctx's longest matching suffix."""
        # Only k-grams ending before the last position: the suffix itself must not match itself.
        self._index_upto(ctx, len(ctx) - 1)
        for k in range(min(self.max_ngram, len(ctx) - 1), self.min_ngram - 1, -1):
            e = self._index.get(tuple(ctx[-k:]))
            if e is not None:
                return ctx[e + 1: e + 1 + self.block_size]
        return []

    def propose(self, anchor: int, temperature: float = 0.0, generator: torch.Generator | None = None) -> Proposal:
        """Draft up to block_size tokens after ``anchor``; an empty proposal when nothing matches."""
        # Provisional anchor: commit() re-adds it with the accepted drafts. Only k-grams ending before the
        # anchor get indexed, and those are all committed tokens, so the index stays valid after the pop.
        self.tokens.append(int(anchor))
        try:
            cont = self.lookup(self.tokens)
        finally:
            self.tokens.pop()
        return Proposal(tokens=torch.tensor(cont, dtype=torch.long))

    def commit(self, tokens: torch.Tensor, features: torch.Tensor | None = None) -> None:
        """Append the anchor and the accepted drafts (LongTensor [a+1])."""
        self.tokens.extend(int(t) for t in tokens.reshape(-1).tolist())


class NoDraftProposer:
    """The "none" baseline as an object: proposes nothing, so every round verifies only the anchor.
    ``speculative_generate(target, None, ...)`` is the same thing; this exists for proposer dicts."""

    layer_ids = None
    block_size = 0

    def start(self, prompt_ids: torch.Tensor, features: torch.Tensor | None = None) -> None:
        pass

    def propose(self, anchor: int, temperature: float = 0.0, generator: torch.Generator | None = None) -> Proposal:
        return Proposal(tokens=torch.zeros(0, dtype=torch.long))

    def commit(self, tokens: torch.Tensor, features: torch.Tensor | None = None) -> None:
        pass


def make_baseline(name: str, block_size: int = 7, **kwargs) -> Proposer | None:
    """A baseline proposer by name: "none" -> None (plain decoding), "ngram" -> NGramProposer.
    Raises TracedraftError(code="unknown_baseline") naming the known baselines."""
    if name == "none":
        return None
    if name == "ngram":
        return NGramProposer(block_size=block_size, **kwargs)
    raise TracedraftError("unknown_baseline", f"unknown baseline {name!r}; known: none, ngram", "baseline")
