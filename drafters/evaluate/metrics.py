"""Metrics over verification rounds: THE one place accepted length (tau) is computed (docs/architecture.md
sections 1 and 5), in process (rounds) or from an engine's counters, plus conditional acceptance, calibration
(ECE/AUROC/Brier, sequential temperature scaling, the threshold what-if) and the paired bootstrap
comparison. The convention and rule texts stated in every report live here too."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from drafters.errors import TracedraftError
from drafters.evaluate.report import _clean
from drafters.whatif import what_if_truncation

CONVENTION = ("tau = mean over verification rounds of (accepted drafts + 1), bonus token included; "
              "maximum block_size + 1")
END_EFFECTS = ("a round ended by an accepted stop token counts a (no bonus, docs/dspark.md 5.2); a round cut by a "
               "stop string or max_new_tokens counts the tokens it committed; the prefill token is in no round")
SEGMENT_RULE = ("each committed token belongs to its own segment and carries 1/L of its round (L = the round's "
                "committed tokens); per-segment tau = the segment's committed tokens / its rounds so counted")
CONDITIONAL_RULE = ("position k: rounds that verified slot k with slots 1..k-1 all accepted (slots after an "
                    "accepted stop token skipped); rate = share of them that accepted slot k (docs/dspark.md 5.2)")
CALIBRATION_RULE = ("per slot k of rounds at threshold 0: prediction = prod_{i<=k} confidence_i, label = slots "
                    "1..k all accepted; ECE with 20 equal-width bins, AUROC (Mann-Whitney, ties 1/2), Brier; "
                    "sequential temperature scaling (docs/dspark.md 5.4) fitted on the 'fit' split of calls (stable "
                    "hash of call_id), all metrics on the other split")
PAIRED_RULE = ("per call present in both: tau_call = mean over that call's rounds; difference candidate minus "
               "incumbent; mean with a percentile bootstrap 95% interval over calls (fixed seed); per segment the "
               "same over the calls with rounds of that segment on both sides")
BOOTSTRAP_SAMPLES = 2000
TS_GRID = tuple(float(x) for x in np.exp(np.linspace(math.log(0.25), math.log(4.0), 49)))


# ---------------------------------------------------------------------------------------------------------
# tau and acceptance
# ---------------------------------------------------------------------------------------------------------

def round_length(r: Any) -> int:
    """Acceptance length of one round: tokens it committed (a + 1, or a on an accepted stop token).
    Accepts a speculate.Round or a dict {"len": ...} from a stored report."""
    if isinstance(r, Mapping):
        return int(r["len"])
    return int(r.committed)


def tau_of(rounds: Iterable[Any]) -> float:
    """tau = mean over rounds of (a + 1) (CONVENTION). NaN for no rounds (never a silent 1)."""
    lengths = [round_length(r) for r in rounds]
    return float(sum(lengths) / len(lengths)) if lengths else float("nan")


def tau_from_sums(sum_lengths: int, n_rounds: int) -> float:
    """tau from totals: sum of round lengths / number of rounds (NaN if no rounds)."""
    return sum_lengths / n_rounds if n_rounds else float("nan")


def tau_from_counts(accepted_drafts: int, verify_rounds: int) -> float:
    """Engine counters (docs/serving.md 3): tau = 1 + sum(accepted drafts) / sum(verification rounds), both
    summed over all requests (never a mean of per-request ratios). Raises TracedraftError(code=
    "speculation_off") when verify_rounds <= 0: speculation did not engage and tau 1 would be a lie."""
    if verify_rounds <= 0:
        raise TracedraftError("speculation_off", "no verification rounds: speculation did not engage",
                              "spec_verify_ct")
    return 1.0 + accepted_drafts / verify_rounds


def tau_from_completion(completion_tokens: int, verify_rounds: int) -> float:
    """Fallback when no accepted-drafts counter exists: completion_tokens / verify rounds. Runs high by about
    1/rounds because the prefill token is counted (docs/serving.md 3); the report flags it."""
    if verify_rounds <= 0:
        raise TracedraftError("speculation_off", "no verification rounds: speculation did not engage",
                              "spec_verify_ct")
    return completion_tokens / verify_rounds


def _eos_cut(r: Any) -> bool:
    """True when an accepted draft was a stop token (round committed a tokens, slots after it are void)."""
    if isinstance(r, Mapping):
        return bool(r.get("eos")) and int(r["len"]) == int(r["a"])
    return bool(r.eos) and r.committed == r.accepted


def _na(r: Any) -> tuple[int, int]:
    if isinstance(r, Mapping):
        return int(r["n"]), int(r["a"])
    return int(r.proposed), int(r.accepted)


def conditional_acceptance(rounds: Sequence[Any], max_k: int | None = None) -> list[dict]:
    """Position-wise conditional acceptance (docs/dspark.md 5.2, paper 4.3.1 Fig. 2).

    For slot k = 1..max_k: denominator = rounds with n >= k and a >= k-1 (slots after an accepted stop
    token skipped), numerator = those with a >= k. Also the prefix survival (rounds with a >= k over rounds
    with n >= k, DeepSpec's accept_rate@k). Returns [{"position", "eligible", "accepted", "rate",
    "survival"}]; rate is None where nothing was eligible.
    """
    na = [(*_na(r), _eos_cut(r)) for r in rounds]
    if max_k is None:
        max_k = max((n for n, _, _ in na), default=0)
    out = []
    for k in range(1, max_k + 1):
        elig = acc = prop = 0
        for n, a, cut in na:
            if n < k or (cut and k > a):
                continue
            prop += 1
            if a >= k - 1:
                elig += 1
                acc += a >= k
        surv = sum(1 for n, a, cut in na if n >= k and a >= k and not (cut and k > a))
        out.append({"position": k, "eligible": elig, "accepted": acc,
                    "rate": acc / elig if elig else None, "survival": surv / prop if prop else None})
    return out


# ---------------------------------------------------------------------------------------------------------
# calibration (docs/dspark.md 5.3, 5.4)
# ---------------------------------------------------------------------------------------------------------

def ece(pred: Sequence[float], label: Sequence[float], bins: int = 20) -> float:
    """Expected calibration error, equal-width bins on [0, 1]: sum_bins count * |mean pred - mean label| /
    total (docs/dspark.md 5.3). NaN for no samples."""
    p = np.asarray(pred, dtype=np.float64)
    y = np.asarray(label, dtype=np.float64)
    if p.size == 0:
        return float("nan")
    idx = np.clip((p * bins).astype(np.int64), 0, bins - 1)
    total = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            total += m.sum() * abs(p[m].mean() - y[m].mean())
    return float(total / p.size)


def auroc(pred: Sequence[float], label: Sequence[float]) -> float | None:
    """Area under the ROC curve = P(score of a random positive > a random negative), ties count 1/2
    (Mann-Whitney U via average ranks). None when one class is absent."""
    p = np.asarray(pred, dtype=np.float64)
    y = np.asarray(label, dtype=bool)
    npos, nneg = int(y.sum()), int((~y).sum())
    if npos == 0 or nneg == 0:
        return None
    order = np.argsort(p, kind="mergesort")
    ranks = np.empty(p.size, dtype=np.float64)
    sp = p[order]
    i = 0
    while i < sp.size:  # average ranks over ties
        j = i
        while j + 1 < sp.size and sp[j + 1] == sp[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    u = ranks[y].sum() - npos * (npos + 1) / 2.0
    return float(u / (npos * nneg))


def brier(pred: Sequence[float], label: Sequence[float]) -> float:
    """Mean squared error of the probability (NaN for no samples)."""
    p = np.asarray(pred, dtype=np.float64)
    y = np.asarray(label, dtype=np.float64)
    return float(np.mean((p - y) ** 2)) if p.size else float("nan")


def reliability_bins(pred: Sequence[float], label: Sequence[float], bins: int = 20) -> list[dict]:
    """Reliability diagram data: per non-empty bin {"lo", "hi", "count", "mean_pred", "mean_label"}."""
    p = np.asarray(pred, dtype=np.float64)
    y = np.asarray(label, dtype=np.float64)
    idx = np.clip((p * bins).astype(np.int64), 0, bins - 1)
    out = []
    for b in range(bins):
        m = idx == b
        if m.any():
            out.append({"lo": b / bins, "hi": (b + 1) / bins, "count": int(m.sum()),
                        "mean_pred": float(p[m].mean()), "mean_label": float(y[m].mean())})
    return out


def _logit(c: float) -> float:
    c = min(max(float(c), 1e-6), 1 - 1e-6)
    return math.log(c / (1 - c))


def calibration_samples(rounds: Sequence[Any], temperatures: Sequence[float] | None = None
                        ) -> dict[int, tuple[list[float], list[int]]]:
    """Per slot k: (predicted prefix survival, label) over rounds carrying confidences (docs/dspark.md 5.3).

    Prediction = prod_{i<=k} sigmoid(logit(c_i) / T_i) (T_i = 1 without temperatures); label = 1 if a >= k.
    Slots after an accepted stop token are skipped.
    """
    out: dict[int, tuple[list[float], list[int]]] = {}
    for r in rounds:
        conf = r.get("conf") if isinstance(r, Mapping) else r.confidences
        if not conf:
            continue
        n, a = _na(r)
        cut = _eos_cut(r)
        s = 1.0
        for k in range(1, min(n, len(conf)) + 1):
            if cut and k > a:
                break
            c = conf[k - 1]
            if temperatures is not None and k <= len(temperatures):
                c = 1.0 / (1.0 + math.exp(-_logit(c) / temperatures[k - 1]))
            s *= c
            preds, labels = out.setdefault(k, ([], []))
            preds.append(s)
            labels.append(int(a >= k))
    return out


def fit_sequential_temperatures(rounds: Sequence[Any], grid: Sequence[float] = TS_GRID, bins: int = 20
                                ) -> list[float]:
    """Sequential temperature scaling (docs/dspark.md 5.4, paper 3.2.1): for k = 1..gamma, with T_1..T_{k-1}
    fixed, grid-search T_k minimising the ECE of prod_{i<=k} sigmoid(z_i / T_i) against the prefix label at
    k. Returns [T_1..T_gamma] (1.0 where slot k has no samples). Grid: log-spaced 0.25..4 by default."""
    gamma = 0
    for r in rounds:
        conf = r.get("conf") if isinstance(r, Mapping) else r.confidences
        if conf:
            gamma = max(gamma, min(_na(r)[0], len(conf)))
    temps: list[float] = []
    for k in range(1, gamma + 1):
        best_t, best_e = 1.0, float("inf")
        for t in grid:
            p, y = calibration_samples(rounds, temps + [t]).get(k, ([], []))
            if not p:
                break
            e = ece(p, y, bins)
            if e < best_e - 1e-12:
                best_t, best_e = float(t), e
        temps.append(best_t)
    return temps


def calibration_metrics(samples: dict[int, tuple[list[float], list[int]]], bins: int = 20) -> dict:
    """Per slot {ece, auroc, brier, count, reliability} plus count-weighted averages over slots."""
    per = {}
    for k in sorted(samples):
        p, y = samples[k]
        per[str(k)] = {"count": len(p), "ece": ece(p, y, bins), "auroc": auroc(p, y), "brier": brier(p, y),
                       "positive_rate": float(np.mean(y)) if y else None,
                       "reliability": reliability_bins(p, y, bins)}
    total = sum(v["count"] for v in per.values())
    avg = {}
    for key in ("ece", "brier", "auroc"):
        vals = [(v[key], v["count"]) for v in per.values() if v[key] is not None and not _isnan(v[key])]
        w = sum(c for _, c in vals)
        avg[key] = sum(x * c for x, c in vals) / w if w else None
    return {"per_position": per, "weighted": avg, "count": total}


def _isnan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def calibration_split(call_id: str) -> str:
    """'fit' or 'eval', a stable hash of the call id (half and half)."""
    return "fit" if hashlib.sha256(call_id.encode()).digest()[0] % 2 == 0 else "eval"


SWEEP_THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def threshold_sweep(rounds: Sequence[Any], thresholds: Sequence[float] = SWEEP_THRESHOLDS) -> list[dict]:
    """Offline what-if of static confidence truncation (docs/dspark.md 5.3, paper Fig. 5) over rounds recorded
    at threshold 0: per threshold, estimated tau (committed tokens per round), verified tokens per round and
    the acceptance rate of verified drafts. Per-round counterfactual (whatif.what_if_truncation): later
    anchors are assumed unchanged, so rerun with ``confidence_threshold`` for exact figures."""
    out = []
    for t in thresholds:
        w = what_if_truncation(rounds, threshold=t)
        out.append({"threshold": t, "est_tau": tau_from_sums(w["tokens"], w["rounds"]),
                    "verified_per_round": tau_from_sums(w["verified_tokens"], w["rounds"]),
                    "accepted_draft_rate": w["accepted_draft_rate"], "rejected_drafts": w["rejected_drafts"]})
    return out


# ---------------------------------------------------------------------------------------------------------
# paired comparison
# ---------------------------------------------------------------------------------------------------------

def bootstrap_mean_ci(values: Sequence[float], n_boot: int = BOOTSTRAP_SAMPLES, seed: int = 0,
                      level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lo, hi): percentile bootstrap interval of the mean over ``values`` (resampled with
    replacement, numpy default_rng(seed)). For one value the interval is degenerate; NaNs for none."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(v.mean())
    if v.size == 1:
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(n_boot, v.size))].mean(axis=1)
    alpha = (1 - level) / 2
    return mean, float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def _per_call_tau(entry: Mapping, segment: str | None = None) -> dict[str, tuple[float, float]]:
    """call_id -> (committed tokens, rounds) over the call's rounds, or the share of them in ``segment``
    (SEGMENT_RULE: rounds may be fractional); calls with nothing in the segment are left out."""
    out = {}
    for c in entry["per_call"]:
        sums = (c["sum_len"], c["rounds"]) if segment is None else (c.get("segments") or {}).get(segment)
        if sums and sums[1] > 0:
            out[c["call_id"]] = (float(sums[0]), float(sums[1]))
    return out


def pooled_tau_ci(entry: Mapping, segment: str | None = None, n_boot: int = BOOTSTRAP_SAMPLES, seed: int = 0,
                  level: float = 0.95) -> tuple[float, float, float]:
    """(tau, lo, hi): a proposer entry's pooled tau (all rounds, or the rounds of ``segment``) with a
    percentile bootstrap interval that resamples whole calls (rounds of one call are not independent).
    NaNs when no call has such a round."""
    sums = np.asarray(list(_per_call_tau(entry, segment).values()), dtype=np.float64).reshape(-1, 2)
    if sums.shape[0] == 0:
        return float("nan"), float("nan"), float("nan")
    tau = float(sums[:, 0].sum() / sums[:, 1].sum())
    if sums.shape[0] == 1:
        return tau, tau, tau
    rng = np.random.default_rng(seed)
    pick = sums[rng.integers(0, sums.shape[0], size=(n_boot, sums.shape[0]))]
    taus = pick[..., 0].sum(axis=1) / pick[..., 1].sum(axis=1)
    alpha = (1 - level) / 2
    return tau, float(np.quantile(taus, alpha)), float(np.quantile(taus, 1 - alpha))


def pooled_ratio_ci(sums: Sequence[tuple[float, float, float, float]], n_boot: int = BOOTSTRAP_SAMPLES,
                    seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """(ratio, lo, hi) of two pooled rates on the same calls: (sum na / sum da) / (sum nb / sum db), from
    per-call (na, da, nb, db), with a percentile bootstrap that resamples whole calls for both sides at once:
    the interval is computed the way the estimate is (pooled, paired). E.g. a speed-up over plain decoding
    (tokens, seconds of the proposer; tokens, seconds of plain decoding) or a tau ratio (committed tokens,
    rounds of A; of B). NaNs for no calls."""
    v = np.asarray(sums, dtype=np.float64).reshape(-1, 4)
    if v.shape[0] == 0:
        return float("nan"), float("nan"), float("nan")

    def ratio(x: np.ndarray) -> np.ndarray:
        t = x.sum(axis=-2)
        return (t[..., 0] / t[..., 1]) / (t[..., 2] / t[..., 3])

    est = float(ratio(v))
    if v.shape[0] == 1:
        return est, est, est
    rng = np.random.default_rng(seed)
    boot = ratio(v[rng.integers(0, v.shape[0], size=(n_boot, v.shape[0]))])
    alpha = (1 - level) / 2
    return est, float(np.quantile(boot, alpha)), float(np.quantile(boot, 1 - alpha))


def _paired_diffs(cand: Mapping, inc: Mapping, segment: str | None = None) -> list[float]:
    """Per call present in both (with rounds of ``segment`` on both sides): candidate tau minus incumbent tau."""
    a, b = _per_call_tau(cand, segment), _per_call_tau(inc, segment)
    return [a[c][0] / a[c][1] - b[c][0] / b[c][1] for c in sorted(set(a) & set(b))]


def compare_entries(cand: Mapping, inc: Mapping, seed: int = 0) -> dict:
    """Paired per-call comparison of two proposer entries (PAIRED_RULE), plus pooled tau on the common
    calls, relative gain, and per segment the tau on both sides with the paired difference and its interval."""
    a, b = _per_call_tau(cand), _per_call_tau(inc)
    common = sorted(set(a) & set(b))
    diffs = [a[c][0] / a[c][1] - b[c][0] / b[c][1] for c in common]
    mean, lo, hi = bootstrap_mean_ci(diffs, seed=seed)
    ta = tau_from_sums(sum(a[c][0] for c in common), sum(a[c][1] for c in common))
    tb = tau_from_sums(sum(b[c][0] for c in common), sum(b[c][1] for c in common))
    segs = {}
    for s in sorted(set(cand.get("by_segment", {})) | set(inc.get("by_segment", {}))):
        sa, sb = cand.get("by_segment", {}).get(s), inc.get("by_segment", {}).get(s)
        diffs = _paired_diffs(cand, inc, s)
        d_mean, d_lo, d_hi = bootstrap_mean_ci(diffs, seed=seed)
        segs[s] = {"candidate_tau": sa["tau"] if sa else None, "incumbent_tau": sb["tau"] if sb else None,
                   "candidate_rounds": sa["rounds"] if sa else 0, "incumbent_rounds": sb["rounds"] if sb else 0,
                   "relative": (sa["tau"] / sb["tau"] - 1.0) if sa and sb and sb["tau"] else None,
                   "calls": len(diffs), "mean_diff": d_mean if diffs else None,
                   "ci95": [d_lo, d_hi] if diffs else None}
    return {"calls": len(common), "mean_diff": mean, "ci95": [lo, hi], "candidate_tau": ta,
            "incumbent_tau": tb, "relative_gain": (ta / tb - 1.0) if common and tb else None,
            "by_segment": segs, "rule": PAIRED_RULE, "bootstrap_samples": BOOTSTRAP_SAMPLES, "seed": seed}


def tau_by_group(groups: Mapping[str, list[int]]) -> dict[str, dict]:
    """Per group, in name order: {"tau", "rounds", "tokens"} from the group's round lengths (segments,
    turns, context buckets)."""
    return {k: {"tau": tau_from_sums(sum(v), len(v)), "rounds": len(v), "tokens": sum(v)}
            for k, v in sorted(groups.items())}


def paired_comparisons(entries: Mapping[str, Mapping], compare: Sequence[tuple[str, str]] | None,
                       seed: int) -> dict[str, dict]:
    """``compare_entries`` for each (candidate, incumbent) pair of proposer entries, keyed
    "candidate__vs__incumbent"; every ordered pair when ``compare`` is None."""
    names = list(entries)
    pairs = list(compare) if compare is not None else [(a, b) for a in names for b in names if a != b]
    return {f"{a}__vs__{b}": {"candidate": a, "incumbent": b, **compare_entries(entries[a], entries[b], seed)}
            for a, b in pairs}


# ---------------------------------------------------------------------------------------------------------
# engine runs (counters only, e.g. SGLang): the same tau, from sums over requests (docs/serving.md 3)
# ---------------------------------------------------------------------------------------------------------

def engine_summary(run: Any) -> dict:
    """Summarise an engines.base.EngineRun: tau = 1 + sum(accepted drafts) / sum(verify rounds) summed over
    all requests (never a mean of per-request ratios). When any call lacks an accepted-drafts counter, tau
    falls back to sum(completion_tokens) / sum(verify rounds) for the whole run and
    "tau_source" says so (it runs high by about 1/rounds). Raises TracedraftError(code="speculation_off")
    when the run has no verification rounds. Returns a dict with "tau", "tau_source", "rounds",
    "accepted_drafts", "proposed_drafts", "completion_tokens", "calls", "seconds", "tokens_per_s", "flags",
    "info" and "per_call" (the shape compare_entries reads: call_id, rounds, sum_len, tau)."""
    calls = list(run.calls)
    rounds = sum(c.verify_rounds for c in calls)
    tokens = sum(c.completion_tokens for c in calls)
    exact = all(c.accepted_drafts is not None for c in calls)
    if exact:
        acc = sum(c.accepted_drafts for c in calls)
        tau = tau_from_counts(acc, rounds)
        source = "1 + sum(accepted drafts) / sum(verify rounds)"
    else:
        acc = None
        tau = tau_from_completion(tokens, rounds)
        source = "FALLBACK sum(completion_tokens) / sum(verify rounds): no accepted-drafts field; runs high by ~1/rounds"
    per_call = []
    for c in calls:
        # Per call the round convention: sum of round lengths = rounds + accepted drafts.
        sl = c.verify_rounds + c.accepted_drafts if c.accepted_drafts is not None else c.completion_tokens
        per_call.append({"call_id": c.call_id, "rounds": c.verify_rounds, "sum_len": sl,
                         "tau": tau_from_sums(sl, c.verify_rounds), "tokens": c.completion_tokens,
                         "seconds": c.seconds, "context_len": c.context_len})
    secs = [c.seconds for c in calls if c.seconds is not None]
    proposed = [c.proposed_drafts for c in calls]
    return _clean({"engine": run.engine, "drafter": run.drafter, "tau": tau, "tau_source": source,
                   "convention": CONVENTION, "rounds": rounds, "accepted_drafts": acc,
                   "proposed_drafts": sum(proposed) if all(p is not None for p in proposed) else None,
                   "completion_tokens": tokens, "calls": len(calls), "seconds": sum(secs) if secs else None,
                   "tokens_per_s": tokens / sum(secs) if secs and sum(secs) > 0 else None,
                   "flags": list(run.flags), "info": dict(run.info), "per_call": per_call})
