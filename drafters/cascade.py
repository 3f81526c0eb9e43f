"""The cascade proposer: the near-free proposers first, the trained drafter only in rounds where they are unsure.

Suffix decoding and the tool-schema proposer draft in well under a millisecond; a DSpark drafting round
costs a fraction of a target step (docs/dspark.md 5.5). Each verification round the cascade asks every
cheap proposer; the proposal with the highest expected number of accepted drafts (``expected_accepted``:
suffix decoding's path score, the schema proposer's length x certainty) is verified when that estimate
reaches ``threshold``, and the drafter's forward is skipped; otherwise the drafter drafts. Without a
drafter the best cheap proposal is always taken (the model-free combination, e.g. "suffix+schema"). The
choice looks only at the proposers' own estimates, never at the target, and is made before verification,
so greedy output stays identical to plain decoding and sampling stays exact. Unlike the what-if hybrid
(drafters/baselines/hybrid.py) nothing is computed that a serving engine would not run, so its measured
speed is a serving speed on the engine that runs it (the in-process loop here).

The drafter keeps its context exact while skipped: ``commit`` hands it every committed token's target
features, and its next ``propose`` projects them all at once (DSparkProposer caches context lazily).
threshold 0 always takes a cheap proposal when there is one; threshold inf always runs the drafter.
The threshold is fitted on the development split (drafters.evaluate.select), never on the test split.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from drafters.baselines.hybrid import expected_accepted
from drafters.errors import TracedraftError
from drafters.speculate import Proposal, Proposer, prepare_request

#: The names a round's choice is counted under in ``picks``.
CHEAP, DRAFTER = "cheap", "drafter"


class CascadeProposer:
    """Cheap proposers first, the drafter when they are unsure (module docstring).

    cheap: a model-free Proposer (layer_ids None), or several, e.g. the tool-schema proposer and suffix
    decoding at its natural cap of 24; drafter: a Proposer reading target features (a DSparkProposer), or
    None; threshold: expected accepted drafts at or above which the best cheap proposal is verified without
    running the drafter (>= 0, inf allowed). block_size is the largest of theirs (the loop caps each
    proposal to the budget). ``picks`` counts the rounds each side drafted, over every request since
    construction. ``prepare(request)`` is handed to every part that reads the request.
    Raises TracedraftError(code="bad_config") for a cheap proposer that reads target features, no cheap
    proposer, or a negative or NaN threshold.
    """

    def __init__(self, cheap: Proposer | Sequence[Proposer], drafter: Proposer | None, threshold: float):
        self.cheap = list(cheap) if isinstance(cheap, (list, tuple)) else [cheap]
        if not self.cheap or any(c.layer_ids for c in self.cheap):
            raise TracedraftError("bad_config", "the cascade needs cheap proposers that read no target features",
                                  "cheap")
        if math.isnan(threshold) or threshold < 0:
            raise TracedraftError("bad_config", f"the cascade threshold must be >= 0, got {threshold}",
                                  "cascade.threshold")
        self.drafter, self.threshold = drafter, float(threshold)
        parts = [*self.cheap, *([drafter] if drafter is not None else [])]
        self.block_size = max(int(p.block_size) for p in parts)
        self.layer_ids = drafter.layer_ids if drafter is not None else None
        self.picks = {CHEAP: 0, DRAFTER: 0}

    def prepare(self, request: Any) -> None:
        """Hand the next request to every part that reads it (``drafters.speculate.prepare_request``)."""
        for p in [*self.cheap, self.drafter]:
            prepare_request(p, request)

    def start(self, prompt_ids: torch.Tensor, features: torch.Tensor | None = None) -> None:
        """Begin a request on every part (features go to the drafter only)."""
        for c in self.cheap:
            c.start(prompt_ids, None)
        if self.drafter is not None:
            self.drafter.start(prompt_ids, features)

    def propose(self, anchor: int, temperature: float = 0.0,
                generator: torch.Generator | None = None) -> Proposal:
        """The best cheap proposal when its expected acceptance reaches the threshold (or there is no
        drafter), else the drafter's."""
        best, score = None, -math.inf
        for c in self.cheap:  # every cheap proposer sees every anchor (suffix decoding indexes it here)
            p = c.propose(anchor, temperature, generator)
            s = expected_accepted(p) if p.tokens.numel() else -1.0
            if s > score:
                best, score = p, s
        if self.drafter is None or (best.tokens.numel() and score >= self.threshold):
            self.picks[CHEAP] += 1
            return best
        self.picks[DRAFTER] += 1
        return self.drafter.propose(anchor, temperature, generator)

    def commit(self, tokens: torch.Tensor, features: torch.Tensor | None = None) -> None:
        """Append the anchor and the accepted drafts (LongTensor [a+1]) to every part."""
        for c in self.cheap:
            c.commit(tokens, None)
        if self.drafter is not None:
            self.drafter.commit(tokens, features)
