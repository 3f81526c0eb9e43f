"""The cascade proposer: the near-free proposer first, the trained drafter only in rounds where it is unsure.

Suffix decoding drafts in well under a millisecond; a DSpark drafting round costs a fraction of a target
step (docs/dspark.md 5.5). Each verification round the cascade asks the cheap proposer; when its own
estimate of accepted drafts (``expected_accepted``: suffix decoding's path score) reaches ``threshold``,
its proposal is verified and the drafter's forward is skipped; otherwise the drafter drafts. The choice
looks only at the proposers' own estimates, never at the target, and is made before verification, so
greedy output stays identical to plain decoding and sampling stays exact. Unlike the what-if hybrid
(drafters/baselines/hybrid.py) nothing is computed that a serving engine would not run, so its measured
speed is a serving speed on the engine that runs it (the in-process loop here).

The drafter keeps its context exact while skipped: ``commit`` hands it every committed token's target
features, and its next ``propose`` projects them all at once (DSparkProposer caches context lazily).
threshold 0 always takes the cheap proposal when it has one; threshold inf always runs the drafter.
The threshold is fitted on the development split (drafters.evaluate.select), never on the test split.
"""

from __future__ import annotations

import math

import torch

from drafters.baselines.hybrid import expected_accepted
from drafters.errors import TracedraftError
from drafters.speculate import Proposal, Proposer

#: The names a round's choice is counted under in ``picks``.
CHEAP, DRAFTER = "cheap", "drafter"


class CascadeProposer:
    """Cheap proposer first, drafter when the cheap one is unsure (module docstring).

    cheap: a model-free Proposer (layer_ids None), e.g. SuffixProposer at its natural cap of 24;
    drafter: a Proposer reading target features (a DSparkProposer); threshold: expected accepted drafts at
    or above which the cheap proposal is verified without running the drafter (>= 0, inf allowed).
    block_size is the larger of the two (the loop caps each proposal to the budget). ``picks`` counts the
    rounds each side drafted, over every request since construction.
    Raises TracedraftError(code="bad_config") for a cheap proposer that reads target features or a negative
    or NaN threshold.
    """

    def __init__(self, cheap: Proposer, drafter: Proposer, threshold: float):
        if cheap.layer_ids:
            raise TracedraftError("bad_config", "the cascade's cheap proposer must not read target features",
                                  "cheap")
        if math.isnan(threshold) or threshold < 0:
            raise TracedraftError("bad_config", f"the cascade threshold must be >= 0, got {threshold}",
                                  "cascade.threshold")
        self.cheap, self.drafter, self.threshold = cheap, drafter, float(threshold)
        self.block_size = max(int(cheap.block_size), int(drafter.block_size))
        self.layer_ids = drafter.layer_ids
        self.picks = {CHEAP: 0, DRAFTER: 0}

    def start(self, prompt_ids: torch.Tensor, features: torch.Tensor | None = None) -> None:
        """Begin a request on both (features go to the drafter only)."""
        self.cheap.start(prompt_ids, None)
        self.drafter.start(prompt_ids, features)

    def propose(self, anchor: int, temperature: float = 0.0,
                generator: torch.Generator | None = None) -> Proposal:
        """The cheap proposal when its expected acceptance reaches the threshold, else the drafter's."""
        mine = self.cheap.propose(anchor, temperature, generator)
        if mine.tokens.numel() and expected_accepted(mine) >= self.threshold:
            self.picks[CHEAP] += 1
            return mine
        self.picks[DRAFTER] += 1
        return self.drafter.propose(anchor, temperature, generator)

    def commit(self, tokens: torch.Tensor, features: torch.Tensor | None = None) -> None:
        """Append the anchor and the accepted drafts (LongTensor [a+1]) to both."""
        self.cheap.commit(tokens, None)
        self.drafter.commit(tokens, features)
