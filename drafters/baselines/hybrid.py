"""A what-if hybrid proposer: each verification round, the drafter's proposal or a model-free one (suffix
decoding, or any other model-free proposer), whichever is expected to get more drafts accepted.

ArcticInference serves a hybrid of this kind (suffix decoding beside its MLP/LSTM speculator, chosen per
round by comparing the suffix path's score with the speculator's draft length). No engine serves a DSpark
drafter with suffix decoding, so this one is a what-if, and a report must say so:
- its tau is real for the rule: the target verifies exactly the chosen proposal, so greedy output stays
  identical to plain decoding and sampling stays exact (the choice never looks at the target);
- its wall-clock time is not a serving time: here both proposers run every round, one after the other,
  where a serving engine would run the cheap suffix lookup on the CPU beside the drafter. Report its tau
  and acceptance, not its speedup.

Expected acceptance (``expected_accepted``) puts both sides in the same unit, expected accepted drafts:
the suffix path's score (sum of its tokens' estimated probabilities) against the drafter's confidence-head
prefix survivals sum_j prod_{i<=j} c_i (docs/dspark.md section 6). Raw confidences are used, not the
temperature-scaled ones the evaluation fits afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from drafters.errors import TracedraftError
from drafters.speculate import Proposal, Proposer
from drafters.whatif import survival

#: The name a round's choice carries when the drafter's proposal was kept.
DRAFTER = "drafter"


def expected_accepted(proposal: Proposal) -> float:
    """Expected number of accepted drafts of a proposal, by the proposer's own estimate.

    A proposal with a ``score`` (suffix decoding): that score. One with confidences c_1..c_n (the
    confidence head's per-slot conditional acceptance probabilities): sum_j prod_{i<=j} c_i. Otherwise its
    length, i.e. every draft assumed accepted (how ArcticInference weighs a speculator without scores).
    """
    score = getattr(proposal, "score", None)
    if score is not None:
        return float(score)
    if proposal.confidences is not None:
        return float(sum(survival(proposal.confidences.float().tolist())))
    return float(proposal.tokens.numel())


@dataclass
class HybridRound:
    """One round's choice: ``choice`` is DRAFTER or the alternative's name; the two expectations (expected
    accepted drafts) it compared."""

    choice: str
    drafter_expected: float
    alternative_expected: float


class HybridProposer:
    """What-if hybrid (see the module docstring): both proposers draft every round, and the alternative's
    proposal replaces the drafter's when its expected acceptance is strictly larger (ties keep the drafter).

    drafter: a Proposer (a DSparkProposer: its layer_ids and features pass through); alternative: a
    model-free Proposer (layer_ids None), e.g. a SuffixProposer, with the same block size; name: the
    alternative's name in ``rounds`` and ``picks``. Both are started and committed with every token, so each
    keeps its own context exact whichever proposal was verified.
    ``rounds``: the current request's HybridRound list, one per propose() (so per verification round);
    ``picks``: {DRAFTER: n, name: m} over every request since construction.
    Raises TracedraftError(code="bad_config") for an alternative that needs target features or a block size
    that differs from the drafter's.
    """

    what_if = True  # not served by any engine: report tau, not wall-clock speed

    def __init__(self, drafter: Proposer, alternative: Proposer, name: str = "suffix"):
        if alternative.layer_ids:
            raise TracedraftError("bad_config", f"the alternative proposer {name!r} reads target layers "
                                  f"{alternative.layer_ids}; only a model-free one can ride along",
                                  "alternative")
        if int(alternative.block_size) != int(drafter.block_size):
            raise TracedraftError("bad_config", f"block sizes differ: drafter {drafter.block_size}, {name} "
                                  f"{alternative.block_size}", "alternative.block_size")
        if name == DRAFTER:
            raise TracedraftError("bad_config", f"the alternative cannot be named {DRAFTER!r}", "name")
        self.drafter, self.alternative, self.name = drafter, alternative, name
        self.block_size = int(drafter.block_size)
        self.layer_ids = drafter.layer_ids
        self.rounds: list[HybridRound] = []
        self.picks = {DRAFTER: 0, name: 0}

    def start(self, prompt_ids: torch.Tensor, features: torch.Tensor | None = None) -> None:
        """Begin a request on both proposers (features go to the drafter only)."""
        self.rounds = []
        self.drafter.start(prompt_ids, features)
        self.alternative.start(prompt_ids, None)

    def propose(self, anchor: int, temperature: float = 0.0,
                generator: torch.Generator | None = None) -> Proposal:
        """Both proposers draft after ``anchor``; returns the proposal with the larger expected acceptance
        (the drafter's on a tie), unchanged (tokens, probs and confidences as its proposer made them)."""
        mine = self.drafter.propose(anchor, temperature, generator)
        other = self.alternative.propose(anchor, temperature, generator)
        e_mine, e_other = expected_accepted(mine), expected_accepted(other)
        choice = self.name if e_other > e_mine else DRAFTER
        self.rounds.append(HybridRound(choice, e_mine, e_other))
        self.picks[choice] += 1
        return other if choice == self.name else mine

    def commit(self, tokens: torch.Tensor, features: torch.Tensor | None = None) -> None:
        """Append the anchor and the accepted drafts (LongTensor [a+1]) to both proposers."""
        self.drafter.commit(tokens, features)
        self.alternative.commit(tokens, None)
