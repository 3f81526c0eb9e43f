"""Offline what-if analysis: confidence truncation (docs/dspark.md 5.3) and the hardware-aware prefix scheduler
(docs/dspark.md 6). Pure functions over recorded confidences; nothing here touches a model (no torch).
Accepted length (tau) is not computed here either: drafters.evaluate.metrics turns these counts into tau.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from drafters.errors import TracedraftError

if TYPE_CHECKING:
    from drafters.speculate import Round


def threshold_length(confidences: Sequence[float], threshold: float) -> int:
    """Static confidence truncation (docs/dspark.md 5.3): the number of leading slots whose per-slot (conditional)
    confidence is >= threshold; the proposal is cut at the first slot below it. threshold 0 keeps all."""
    for k, c in enumerate(confidences):
        if c < threshold:
            return k
    return len(confidences)


def survival(confidences: Sequence[float]) -> list[float]:
    """Prefix survival a_j = prod_{i<=j} c_i (docs/dspark.md 6): the predicted probability that drafts 1..j are
    all accepted, from per-slot conditional confidences c_1..c_n."""
    out, acc = [], 1.0
    for c in confidences:
        acc *= float(c)
        out.append(acc)
    return out


def sps_lookup(table: Mapping[int, float] | Sequence[tuple[int, float]]) -> Callable[[int], float]:
    """A steps-per-second curve SPS(B) from a profiled table {tokens in the forward batch: target
    verification steps per second}. Piecewise-linear between measured B, clamped outside the range.
    Raises TracedraftError(code="bad_sps_table") for an empty table or a non-positive rate."""
    items = sorted((int(b), float(s)) for b, s in (table.items() if isinstance(table, Mapping) else table))
    if not items or any(s <= 0 for _, s in items):
        raise TracedraftError("bad_sps_table", "the steps-per-second table must be non-empty and positive",
                              "sps_table")
    xs = [b for b, _ in items]
    ys = [s for _, s in items]

    def sps(b: int) -> float:
        if b <= xs[0]:
            return ys[0]
        if b >= xs[-1]:
            return ys[-1]
        i = bisect.bisect_left(xs, b)
        if xs[i] == b:
            return ys[i]
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        return y0 + (y1 - y0) * (b - x0) / (x1 - x0)

    return sps


def schedule_prefix_lengths(confidences: Sequence[Sequence[float]],
                            sps: Mapping[int, float] | Sequence[tuple[int, float]] | Callable[[int], float],
                            draft_s: float = 0.0) -> list[int]:
    """Hardware-aware prefix scheduler, docs/dspark.md 6 (paper Algorithm 1 with early stop), with the
    drafting round's own cost (docs/dspark.md 5.5).

    confidences: per active request r, calibrated conditional confidences c_{r,1..gamma_r}.
    sps: SPS(B), target verification steps/s for B tokens in the forward batch (table or callable).
    draft_s: seconds of the drafting round that precedes each verification (0: the paper's Theta).
    Returns lengths l_r in {0..gamma_r} maximising Theta = tau / (1 / SPS(B) + draft_s), B = sum_r (1 + l_r),
    tau = sum_r (1 + sum_{j<=l_r} a_{r,j}), a_{r,j} = prod_{i<=j} c_{r,i}: survivals are admitted in
    descending order (ties: smaller j first) and the walk stops at the first admission that does not
    improve Theta, which keeps admission non-anticipating and therefore lossless (Appendix A).
    """
    f = sps if callable(sps) else sps_lookup(sps)
    if draft_s < 0:
        raise TracedraftError("bad_input", f"draft_s must be >= 0, got {draft_s}", "draft_s")
    R = len(confidences)
    lengths = [0] * R
    if R == 0:
        return lengths
    pairs = [(a, j, r) for r, cs in enumerate(confidences) for j, a in enumerate(survival(cs), start=1) if a > 0]
    pairs.sort(key=lambda p: (-p[0], p[1], p[2]))
    def theta_of(tau: float, B: int) -> float:  # committed tokens per second of (verify + draft)
        return tau / (1.0 / f(B) + draft_s)

    B, tau = R, float(R)
    best = theta_of(tau, B)
    for a, j, r in pairs:
        B += 1
        tau += a
        theta = theta_of(tau, B)
        if theta <= best:
            break
        best = theta
        lengths[r] = j
    return lengths


def what_if_truncation(rounds: Sequence[Round], threshold: float | None = None,
                       sps: Mapping[int, float] | Sequence[tuple[int, float]] | None = None,
                       draft_s: float = 0.0) -> dict:
    """Per-round counterfactual of verifying only a prefix of each recorded round (threshold 0 runs).

    For each round with confidences, the verified length l is threshold_length(c, threshold) or the
    scheduler's choice for a single request (schedule_prefix_lengths([c], sps, draft_s)); the round would then
    commit min(a, l) + 1 tokens while verifying l + 1. Rounds without confidences keep l = n. This ignores
    that a different cut changes later rounds' anchors, so it is an estimate; rerun the loop with
    ``confidence_threshold`` for the exact figure. Returns {"rounds", "tokens", "verified_tokens",
    "accepted_draft_rate", "rejected_drafts"} (tau from these counts is drafters.evaluate.metrics' job).
    """
    if (threshold is None) == (sps is None):
        raise TracedraftError("bad_input", "give exactly one of threshold or sps", "what_if_truncation")
    f = None if sps is None else sps_lookup(sps) if not callable(sps) else sps
    tokens = verified = acc_drafts = ver_drafts = 0
    for r in rounds:
        n = r.proposed
        if r.confidences is not None and n > 0:
            c = r.confidences[:n]
            ell = threshold_length(c, threshold) if f is None else schedule_prefix_lengths([c], f, draft_s)[0]
        else:
            ell = n
        a = min(r.accepted, ell)
        tokens += a + (0 if (r.eos and a == r.accepted and r.committed == r.accepted) else 1)
        verified += ell + 1
        acc_drafts += a
        ver_drafts += ell
    nr = len(rounds)
    return {"rounds": nr, "tokens": tokens, "verified_tokens": verified,
            "accepted_draft_rate": acc_drafts / ver_drafts if ver_drafts else 0.0,
            "rejected_drafts": ver_drafts - acc_drafts}
