"""Speculative decoding for any proposer (greedy and exact rejection sampling).

The proposer interface below is what the loop drives; the loop itself is built in issue 7.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch


@dataclass
class Proposal:
    """A drafted block.

    tokens: LongTensor [n], the drafted tokens (n <= block size; n = 0 means "no draft this round").
    probs: FloatTensor [n, V] fp32, the draft distribution each token was sampled from; None for a
        deterministic proposer (treated as one-hot on ``tokens``).
    confidences: FloatTensor [n] in [0, 1], the confidence head's per-position scores, or None.
    """

    tokens: torch.Tensor
    probs: torch.Tensor | None = None
    confidences: torch.Tensor | None = None


class Proposer(Protocol):
    """What the speculative loop needs from a drafter or a model-free baseline."""

    block_size: int
    layer_ids: list[int] | None  # target layers whose outputs the proposer reads as features, or None

    def start(self, prompt_ids: torch.Tensor, features: torch.Tensor | None) -> None:
        """Begin a request. prompt_ids: LongTensor [T]; features: FloatTensor [T, m*d] or None."""

    def propose(self, anchor: int, temperature: float, generator: torch.Generator | None) -> Proposal:
        """Draft up to block_size tokens following ``anchor`` (the last committed token)."""

    def commit(self, tokens: torch.Tensor, features: torch.Tensor | None) -> None:
        """Append committed context. tokens: LongTensor [a+1] = anchor then the accepted drafts;
        features: FloatTensor [a+1, m*d] (the target's features at those positions) or None."""
