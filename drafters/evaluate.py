"""Evaluation: replay held-out calls, collect verification rounds, compute accepted length and the rest.

THE one place tau is computed (ARCHITECTURE.md 1 and 5). Convention, stated in every report:
tau = mean over verification rounds of (accepted drafts + 1), bonus token included; maximum block_size + 1
(DSPARK.md 5.2). End effects: a round ended by an accepted stop token counts a (no bonus); a round cut by a
stop string or by max_new_tokens counts the tokens it committed; the token sampled at prefill belongs to no
round. Remote engines that only return counters use ``tau_from_counts`` (SERVING.md 3).

Contents: ``evaluate`` (replay + losslessness check + EvalReport), metric functions (tau, conditional
acceptance, ECE/AUROC/Brier, sequential temperature scaling, paired bootstrap), ``gate`` (the promotion
decision, a pure function) and ``write_report`` (JSON, PNG plots, one-page HTML).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import platform
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from drafters.errors import TracedraftError

SCHEMA = "tracedraft.eval/1"
CONVENTION = ("tau = mean over verification rounds of (accepted drafts + 1), bonus token included; "
              "maximum block_size + 1")
END_EFFECTS = ("a round ended by an accepted stop token counts a (no bonus, DSPARK.md 5.2); a round cut by a "
               "stop string or max_new_tokens counts the tokens it committed; the prefill token is in no round")
SEGMENT_RULE = ("each round is attributed to the segment of its first committed token; per-segment tau = mean "
                "of (committed tokens) over the rounds attributed to that segment")
CONDITIONAL_RULE = ("position k: rounds that verified slot k with slots 1..k-1 all accepted (slots after an "
                    "accepted stop token skipped); rate = share of them that accepted slot k (DSPARK.md 5.2)")
CALIBRATION_RULE = ("per slot k of rounds at threshold 0: prediction = prod_{i<=k} confidence_i, label = slots "
                    "1..k all accepted; ECE with 20 equal-width bins, AUROC (Mann-Whitney, ties 1/2), Brier; "
                    "sequential temperature scaling (DSPARK.md 5.4) fitted on the 'fit' split of calls (stable "
                    "hash of call_id), all metrics on the other split")
PAIRED_RULE = ("per call present in both: tau_call = mean over that call's rounds; difference candidate minus "
               "incumbent; mean with a percentile bootstrap 95% interval over calls (fixed seed)")
DEFAULT_BUCKETS = (0, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
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
    """Engine counters (SERVING.md 3): tau = 1 + sum(accepted drafts) / sum(verification rounds), both
    summed over all requests (never a mean of per-request ratios). Raises TracedraftError(code=
    "speculation_off") when verify_rounds <= 0: speculation did not engage and tau 1 would be a lie."""
    if verify_rounds <= 0:
        raise TracedraftError("speculation_off", "no verification rounds: speculation did not engage",
                              "spec_verify_ct")
    return 1.0 + accepted_drafts / verify_rounds


def tau_from_completion(completion_tokens: int, verify_rounds: int) -> float:
    """Fallback when no accepted-drafts counter exists: completion_tokens / verify rounds. Runs high by about
    1/rounds because the prefill token is counted (SERVING.md 3); the report flags it."""
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
    """Position-wise conditional acceptance (DSPARK.md 5.2, paper 4.3.1 Fig. 2).

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
# calibration (DSPARK.md 5.3, 5.4)
# ---------------------------------------------------------------------------------------------------------

def ece(pred: Sequence[float], label: Sequence[float], bins: int = 20) -> float:
    """Expected calibration error, equal-width bins on [0, 1]: sum_bins count * |mean pred - mean label| /
    total (DSPARK.md 5.3). NaN for no samples."""
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
    """Per slot k: (predicted prefix survival, label) over rounds carrying confidences (DSPARK.md 5.3).

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
    """Sequential temperature scaling (DSPARK.md 5.4, paper 3.2.1): for k = 1..gamma, with T_1..T_{k-1}
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
    """Offline what-if of static confidence truncation (DSPARK.md 5.3, paper Fig. 5) over rounds recorded
    at threshold 0: per threshold, estimated tau (committed tokens per round), verified tokens per round and
    the acceptance rate of verified drafts. Per-round counterfactual (speculate.what_if_truncation): later
    anchors are assumed unchanged, so rerun with ``confidence_threshold`` for exact figures."""
    from drafters.speculate import what_if_truncation

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


def _per_call_tau(entry: Mapping) -> dict[str, tuple[int, int]]:
    return {c["call_id"]: (int(c["sum_len"]), int(c["rounds"])) for c in entry["per_call"] if c["rounds"] > 0}


def compare_entries(cand: Mapping, inc: Mapping, seed: int = 0) -> dict:
    """Paired per-call comparison of two proposer entries (PAIRED_RULE), plus pooled tau on the common
    calls, relative gain and per-segment tau on both sides."""
    a, b = _per_call_tau(cand), _per_call_tau(inc)
    common = sorted(set(a) & set(b))
    diffs = [a[c][0] / a[c][1] - b[c][0] / b[c][1] for c in common]
    mean, lo, hi = bootstrap_mean_ci(diffs, seed=seed)
    ta = tau_from_sums(sum(a[c][0] for c in common), sum(a[c][1] for c in common))
    tb = tau_from_sums(sum(b[c][0] for c in common), sum(b[c][1] for c in common))
    segs = {}
    for s in sorted(set(cand.get("by_segment", {})) | set(inc.get("by_segment", {}))):
        sa, sb = cand.get("by_segment", {}).get(s), inc.get("by_segment", {}).get(s)
        segs[s] = {"candidate_tau": sa["tau"] if sa else None, "incumbent_tau": sb["tau"] if sb else None,
                   "candidate_rounds": sa["rounds"] if sa else 0, "incumbent_rounds": sb["rounds"] if sb else 0,
                   "relative": (sa["tau"] / sb["tau"] - 1.0) if sa and sb and sb["tau"] else None}
    return {"calls": len(common), "mean_diff": mean, "ci95": [lo, hi], "candidate_tau": ta,
            "incumbent_tau": tb, "relative_gain": (ta / tb - 1.0) if common and tb else None,
            "by_segment": segs, "rule": PAIRED_RULE, "bootstrap_samples": BOOTSTRAP_SAMPLES, "seed": seed}


# ---------------------------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------------------------

class EvalReport(dict):
    """A JSON-able evaluation report (a dict; ``json.dumps(report)`` works). Schema "tracedraft.eval/1":

    {"schema", "convention", "end_effects", "rules": {...}, "settings": {engine, target, temperature, seed,
     max_new_tokens, ...}, "heldout": {"calls", "generated_tokens"}, "lossless": {...},
     "plain": {tokens, seconds, tokens_per_s, ...},
     "proposers": {name: {"tau", "rounds", "tokens", "block_size", "mean_proposed", "verify_rate",
        "by_segment": {seg: {"tau", "rounds", "tokens"}}, "by_turn": {...}, "by_context": {...},
        "conditional_acceptance": [...], "calibration": {...} | None, "timing": {...},
        "speedup_vs_plain", "per_call": [{call_id, turn, context_len, rounds, sum_len, tau, tokens, seconds}]}},
     "comparisons": {"cand__vs__inc": compare_entries(...)}}
    """

    @property
    def proposers(self) -> dict:
        return self["proposers"]

    def tau(self, name: str) -> float:
        return self["proposers"][name]["tau"]

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self, indent=kw.pop("indent", 2), allow_nan=False, default=_json_default, **kw)

    @classmethod
    def from_dict(cls, d: Mapping) -> EvalReport:
        if d.get("schema") != SCHEMA:
            raise TracedraftError("bad_report", f"unsupported report schema {d.get('schema')!r}, "
                                  f"expected {SCHEMA!r}", "schema")
        return cls(d)


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    raise TypeError(f"not JSON-able: {type(o)}")


def _clean(o: Any) -> Any:
    """NaN/inf -> None so the report is strict JSON."""
    if isinstance(o, float):
        return None if math.isnan(o) or math.isinf(o) else o
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def segment_name(value: int) -> str:
    """Segment label for reports: drafters.render.Segment names in lower case when available."""
    try:
        from drafters.render import Segment

        return Segment(int(value)).name.lower()
    except (ImportError, ValueError):  # render.py not present or an unknown value: keep the number
        return str(int(value))


def turn_index(prompt: Any) -> int | None:
    """Turn index of a held-out call: ``prompt.turn_index`` if present, else the integer after the last
    '/' of call_id (LLMCall.id = "<conversation>/<index>"), else None."""
    t = getattr(prompt, "turn_index", None)
    if t is not None:
        return int(t)
    tail = str(getattr(prompt, "call_id", "")).rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else None


def context_bucket(n: int, edges: Sequence[int] = DEFAULT_BUCKETS) -> str:
    """Label of the context-length bucket [lo, hi) holding n tokens."""
    for lo, hi in zip(edges, list(edges[1:]) + [None]):
        if hi is None or n < hi:
            return f"{lo}+" if hi is None else f"{lo}-{hi - 1}"
    return str(n)


def _group(records: list[dict], key: str) -> dict:
    groups: dict[str, list[int]] = {}
    for rec in records:
        k = rec[key]
        groups.setdefault(str(k), []).extend(rec["lengths"])
    return {k: {"tau": tau_from_sums(sum(v), len(v)), "rounds": len(v), "tokens": sum(v)}
            for k, v in sorted(groups.items())}


def _segment_rounds(gen, segs: list[int]) -> dict[str, list[int]]:
    """Round lengths grouped by the segment of each round's first committed token (SEGMENT_RULE)."""
    out: dict[str, list[int]] = {}
    first = {}
    for i, ri in enumerate(gen.round_index):
        if ri >= 0 and ri not in first:
            first[ri] = i
    for ri, r in enumerate(gen.rounds):
        i = first.get(ri)
        if i is None or i >= len(segs):
            continue  # a round whose tokens were all cut by a stop string
        out.setdefault(segment_name(segs[i]), []).append(r.committed)
    return out


def _stop_ids(target: Any) -> list[int]:
    ids: list[int] = []
    for src in (getattr(getattr(target, "model", None), "generation_config", None), getattr(target, "tokenizer", None)):
        e = getattr(src, "eos_token_id", None)
        if e is None:
            continue
        ids.extend(e if isinstance(e, (list, tuple)) else [e])
    return sorted({int(i) for i in ids})


def evaluate(target: Any, proposers: Mapping[str, Any], prompts: Sequence[Any], max_new_tokens: int = 256,
             temperature: float = 0.0, seed: int = 0,
             segmenter: Callable[[list[int]], list[int]] | None = None, *,
             stop_token_ids: Sequence[int] | None = None, stop_strings: Sequence[str] = (),
             compare: Sequence[tuple[str, str]] | None = None, bucket_edges: Sequence[int] = DEFAULT_BUCKETS,
             tie_tolerance: float = 1e-3, engine: str = "hf",
             progress: Callable[[int, int], None] | None = None) -> EvalReport:
    """Replay every held-out call for every proposer (and once with plain decoding) and report.

    target: drafters.target.Target. proposers: {name: Proposer} (a None value means plain decoding).
    prompts: RenderedPrompt-like objects (call_id, prompt_ids, optional conversation_id). Every proposer
    sees the same prompts with the same seed per call (seed + call index). segmenter maps generated token
    ids to Segment values (e.g. Renderer.segment_completion); without one every round is "all".
    stop_token_ids default to the target's EOS ids. compare: (candidate, incumbent) name pairs for paired
    comparisons (default: every ordered pair). At temperature 0 every proposer's tokens must equal plain
    decoding's: a divergence raises TracedraftError(code="lossless_violation", where=call/proposer/token)
    unless the target's top-1/top-2 logit margin there is below ``tie_tolerance`` (an fp32 near-tie that
    reduction order can flip; counted in report["lossless"]["near_ties"]).
    Raises TracedraftError(code="bad_input") for no prompts or no proposers.
    """
    from drafters.speculate import GREEDY_TEMPERATURE, prefill, speculative_generate

    if not prompts:
        raise TracedraftError("bad_input", "no held-out prompts to evaluate", "prompts")
    if not proposers:
        raise TracedraftError("bad_input", "no proposers to evaluate", "proposers")
    stops = list(stop_token_ids) if stop_token_ids is not None else _stop_ids(target)
    greedy = temperature < GREEDY_TEMPERATURE
    total_steps = len(prompts) * (1 + len(proposers))
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total_steps)

    # Call by call: one prefill, shared by plain decoding and every proposer (its time is charged to
    # each), then dropped, so memory holds one prompt's cache at a time.
    feature_layers = sorted({i for prop in proposers.values() if prop is not None for i in (prop.layer_ids or ())})
    plain = []
    gens: dict[str, list] = {name: [] for name in proposers}
    for i, p in enumerate(prompts):
        pre = prefill(target, p.prompt_ids, feature_layers or None)
        plain.append(speculative_generate(target, None, p.prompt_ids, max_new_tokens, temperature=temperature,
                                          seed=seed + i, stop_token_ids=stops, stop_strings=stop_strings,
                                          shared_prefill=pre))
        tick()
        for name, prop in proposers.items():
            gens[name].append(speculative_generate(target, prop, p.prompt_ids, max_new_tokens,
                                                   temperature=temperature, seed=seed + i, stop_token_ids=stops,
                                                   stop_strings=stop_strings, shared_prefill=pre))
            tick()
        del pre
    near_ties: list[dict] = []
    checked = 0
    entries: dict[str, dict] = {}
    for name, prop in proposers.items():
        records, all_rounds, per_call = [], [], []
        seg_groups: dict[str, list[int]] = {}
        fit_rounds, eval_rounds = [], []
        t_total = t_target = t_drafter = t_over = 0.0
        n_tokens = 0
        for i, p in enumerate(prompts):
            g = gens[name][i]
            if greedy:
                checked += 1
                ref = plain[i]
                if g.tokens != ref.tokens:
                    j = next((k for k, (x, y) in enumerate(zip(g.tokens, ref.tokens)) if x != y),
                             min(len(g.tokens), len(ref.tokens)))
                    m = min(g.margins[j] if j < len(g.margins) else 0.0,
                            ref.margins[j] if j < len(ref.margins) else 0.0)
                    if m >= tie_tolerance:
                        raise TracedraftError(
                            "lossless_violation",
                            f"greedy speculative output of {name!r} differs from plain greedy decoding at "
                            f"generated token {j} (target logit margin {m:.3g} >= {tie_tolerance})",
                            f"call {p.call_id}, proposer {name}, token {j}")
                    near_ties.append({"call_id": p.call_id, "proposer": name, "token": j, "margin": m})
            lengths = [r.committed for r in g.rounds]
            all_rounds.extend(g.rounds)
            (fit_rounds if calibration_split(p.call_id) == "fit" else eval_rounds).extend(g.rounds)
            segs = segmenter(list(g.tokens)) if segmenter else None
            if segs is not None:
                for s, v in _segment_rounds(g, list(segs)).items():
                    seg_groups.setdefault(s, []).extend(v)
            else:
                seg_groups.setdefault("all", []).extend(lengths)
            ctx = len(p.prompt_ids)
            records.append({"lengths": lengths, "turn": turn_index(p), "ctx": context_bucket(ctx, bucket_edges)})
            per_call.append({"call_id": p.call_id, "conversation_id": getattr(p, "conversation_id", None),
                             "turn": turn_index(p), "context_len": ctx, "rounds": len(lengths),
                             "sum_len": sum(lengths), "tau": tau_from_sums(sum(lengths), len(lengths)),
                             "tokens": len(g.tokens), "seconds": g.total_s, "finish_reason": g.finish_reason})
            t_total += g.total_s
            t_target += g.target_s
            t_drafter += g.drafter_s
            t_over += g.overhead_s
            n_tokens += len(g.tokens)
        block = int(getattr(prop, "block_size", 0) or 0) if prop is not None else 0
        sum_len = sum(r.committed for r in all_rounds)
        n_rounds = len(all_rounds)
        has_conf = any(r.confidences for r in all_rounds)
        calib = None
        if has_conf:
            temps = fit_sequential_temperatures(fit_rounds)
            calib = {"rule": CALIBRATION_RULE, "fit_calls": sum(1 for p in prompts if calibration_split(p.call_id) == "fit"),
                     "temperatures": temps,
                     "before": calibration_metrics(calibration_samples(eval_rounds)),
                     "after": calibration_metrics(calibration_samples(eval_rounds, temps))}
        tps = n_tokens / t_total if t_total > 0 else None
        if has_conf:
            calib["threshold_sweep"] = threshold_sweep(all_rounds)
        entries[name] = {
            "tau": tau_from_sums(sum_len, n_rounds), "rounds": n_rounds, "tokens": n_tokens,
            "block_size": block, "max_tau": block + 1,
            "mean_proposed": (sum(r.proposed for r in all_rounds) / n_rounds) if n_rounds else None,
            "verify_rate": (sum_len / sum(r.proposed + 1 for r in all_rounds)) if n_rounds else None,
            "by_segment": {s: {"tau": tau_from_sums(sum(v), len(v)), "rounds": len(v), "tokens": sum(v)}
                           for s, v in sorted(seg_groups.items())},
            "by_turn": _group(records, "turn"), "by_context": _group(records, "ctx"),
            "conditional_acceptance": conditional_acceptance(all_rounds, block or None),
            "calibration": calib,
            "timing": {"seconds": t_total, "target_s": t_target, "drafter_s": t_drafter, "overhead_s": t_over,
                       "overhead_share": t_over / t_total if t_total else None, "tokens_per_s": tps},
            "per_call": per_call,
        }
    p_tokens = sum(len(g.tokens) for g in plain)
    p_secs = sum(g.total_s for g in plain)
    p_tps = p_tokens / p_secs if p_secs > 0 else None
    for e in entries.values():
        tps = e["timing"]["tokens_per_s"]
        e["speedup_vs_plain"] = tps / p_tps if tps and p_tps else None
    names = list(entries)
    pairs = list(compare) if compare is not None else [(a, b) for a in names for b in names if a != b]
    comparisons = {f"{a}__vs__{b}": {"candidate": a, "incumbent": b, **compare_entries(entries[a], entries[b], seed)}
                   for a, b in pairs}
    info = target.info() if hasattr(target, "info") else {}
    report = EvalReport({
        "schema": SCHEMA, "convention": CONVENTION, "end_effects": END_EFFECTS,
        "rules": {"segment": SEGMENT_RULE, "conditional_acceptance": CONDITIONAL_RULE,
                  "calibration": CALIBRATION_RULE, "paired": PAIRED_RULE},
        "settings": {"engine": engine, "target": getattr(target, "name", None), "target_info": info,
                     "temperature": temperature, "seed": seed, "max_new_tokens": max_new_tokens,
                     "stop_token_ids": stops, "stop_strings": list(stop_strings), "bucket_edges": list(bucket_edges),
                     "segmented": segmenter is not None, "created_unix": time.time(),
                     "versions": _versions()},
        "heldout": {"calls": len(prompts), "generated_tokens": {n: e["tokens"] for n, e in entries.items()},
                    "plain_generated_tokens": p_tokens},
        "lossless": {"checked": greedy, "calls_checked": checked, "near_ties": near_ties,
                     "tie_tolerance": tie_tolerance},
        "plain": {"tokens": p_tokens, "seconds": p_secs, "tokens_per_s": p_tps,
                  "target_s": sum(g.target_s for g in plain), "overhead_s": sum(g.overhead_s for g in plain)},
        "proposers": entries,
        "comparisons": comparisons,
    })
    return EvalReport(_clean(report))


def _versions() -> dict:
    v = {"python": platform.python_version()}
    for mod in ("torch", "transformers"):
        try:
            v[mod] = __import__(mod).__version__
        except ImportError:
            v[mod] = None
    return v


# ---------------------------------------------------------------------------------------------------------
# the gate
# ---------------------------------------------------------------------------------------------------------

@dataclass
class GatePolicy:
    """Promotion policy (ARCHITECTURE.md 5): the candidate wins when the lower end of the paired bootstrap
    95% interval of (candidate - incumbent) per-call tau is above 0, its pooled relative gain is at least
    min_gain, and no segment with at least min_support rounds on both sides loses more than
    max_segment_loss (relative). min_calls: fewest paired calls for any verdict."""

    min_gain: float = 0.02
    max_segment_loss: float = 0.03
    min_support: int = 50
    min_calls: int = 2


@dataclass
class GateDecision:
    """passed: promote or not; reasons: one line per check (failures first); details: the numbers."""

    passed: bool
    reasons: list[str]
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"passed": self.passed, "reasons": self.reasons, "details": self.details}


_BASELINE_NAMES = {"ngram", "none", "plain"}


def _pick(report: Mapping, name: str | None, role: str) -> str:
    names = list(report["proposers"])
    if name is not None:
        if name not in names:
            raise TracedraftError("bad_input", f"{role} {name!r} not in report (has {names})", role)
        return name
    cands = [n for n in names if n not in _BASELINE_NAMES]
    if len(cands) != 1:
        raise TracedraftError("bad_input", f"cannot tell the {role} among {names}: name it", role)
    return cands[0]


def gate(candidate: Mapping, incumbent: Mapping | None = None, policy: GatePolicy | Mapping | None = None, *,
         candidate_name: str | None = None, incumbent_name: str | None = None) -> GateDecision:
    """The promotion decision, a pure function of reports and the policy (ARCHITECTURE.md 5).

    Two forms: gate(candidate_report, incumbent_report, policy) compares the candidate's proposer (named,
    or the one non-baseline proposer) with the incumbent report's; gate(report, None, policy,
    candidate_name=..., incumbent_name=...) compares two proposers inside one report. Conditions must
    match (schema, target, temperature, max_new_tokens) or the candidate fails with that reason.
    Raises TracedraftError(code="bad_report"/"bad_input") for an unreadable report or unknown names.
    """
    pol = policy if isinstance(policy, GatePolicy) else GatePolicy(**(policy or {}))
    cand_r = EvalReport.from_dict(candidate)
    inc_r = cand_r if incumbent is None else EvalReport.from_dict(incumbent)
    if incumbent is None and incumbent_name is None:
        raise TracedraftError("bad_input", "name the incumbent proposer inside the report", "incumbent_name")
    cn = _pick(cand_r, candidate_name, "candidate")
    inn = _pick(inc_r, incumbent_name or (cn if incumbent is not None and cn in inc_r["proposers"] else None),
                "incumbent")
    fails: list[str] = []
    oks: list[str] = []
    if incumbent is not None:
        for key in ("target", "temperature", "max_new_tokens", "engine"):
            a, b = cand_r["settings"].get(key), inc_r["settings"].get(key)
            if a != b:
                fails.append(f"conditions differ: {key} {a!r} (candidate) vs {b!r} (incumbent)")
    cmp = compare_entries(cand_r["proposers"][cn], inc_r["proposers"][inn],
                          seed=int(cand_r["settings"].get("seed", 0)))
    lo, hi = cmp["ci95"]
    details = {"candidate": cn, "incumbent": inn, "policy": pol.__dict__, "comparison": cmp}
    if cmp["calls"] < pol.min_calls:
        fails.append(f"only {cmp['calls']} paired calls (< min_calls {pol.min_calls})")
        return GateDecision(False, fails + oks, details)
    line = (f"paired tau difference {cmp['mean_diff']:+.3f} per call, 95% CI [{lo:+.3f}, {hi:+.3f}] "
            f"over {cmp['calls']} calls")
    (oks if lo is not None and lo > 0 else fails).append(line + (" (lower end > 0)" if lo > 0 else " (lower end <= 0)"))
    g = cmp["relative_gain"]
    gl = (f"relative gain {g:+.1%} (tau {cmp['candidate_tau']:.3f} vs {cmp['incumbent_tau']:.3f}), "
          f"min_gain {pol.min_gain:.1%}")
    (oks if g is not None and g >= pol.min_gain else fails).append(gl)
    for s, v in cmp["by_segment"].items():
        if v["relative"] is None:
            continue
        support = min(v["candidate_rounds"], v["incumbent_rounds"])
        if support < pol.min_support:
            oks.append(f"segment {s}: {support} rounds < min_support {pol.min_support}, not judged")
            continue
        msg = (f"segment {s}: tau {v['candidate_tau']:.3f} vs {v['incumbent_tau']:.3f} ({v['relative']:+.1%}, "
               f"max loss {pol.max_segment_loss:.1%}, {support} rounds)")
        (fails if v["relative"] < -pol.max_segment_loss else oks).append(msg)
    return GateDecision(not fails, fails + oks, details)


# ---------------------------------------------------------------------------------------------------------
# report files
# ---------------------------------------------------------------------------------------------------------

def write_report(report: Mapping, out_dir: str | Path) -> dict[str, str]:
    """Write report.json, PNG plots (acceptance by position, tau by segment, reliability diagram, speedup;
    matplotlib Agg) and report.html (one page, images embedded as base64) under out_dir.
    Returns {kind: path}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": str(out / "report.json")}
    (out / "report.json").write_text(json.dumps(_clean(dict(report)), indent=2, allow_nan=False,
                                                default=_json_default))
    props = report["proposers"]
    pngs: dict[str, Path] = {}

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, e in props.items():
        ca = [(c["position"], c["rate"]) for c in e["conditional_acceptance"] if c["rate"] is not None]
        if ca:
            ax.plot(*zip(*ca), marker="o", label=name)
    ax.set(xlabel="position in block k", ylabel="P(accept k | 1..k-1 accepted)", ylim=(0, 1.02),
           title="Position-wise conditional acceptance")
    _legend(ax)
    pngs["acceptance_by_position"] = out / "acceptance_by_position.png"

    def save(f, key):
        f.tight_layout()
        f.savefig(pngs[key], dpi=100)
        plt.close(f)

    save(fig, "acceptance_by_position")

    fig, ax = plt.subplots(figsize=(7, 4))
    segs = sorted({s for e in props.values() for s in e["by_segment"]})
    w = 0.8 / max(len(props), 1)
    for i, (name, e) in enumerate(props.items()):
        ys = [(e["by_segment"].get(s) or {}).get("tau") or 0 for s in segs]
        ax.bar([j + i * w for j in range(len(segs))], ys, width=w, label=name)
    ax.set_xticks([j + w * (len(props) - 1) / 2 for j in range(len(segs))], segs, rotation=20, fontsize=8)
    ax.set(ylabel="tau (accepted + 1 per round)", title="tau by segment")
    _legend(ax)
    pngs["tau_by_segment"] = out / "tau_by_segment.png"
    save(fig, "tau_by_segment")

    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], "k:", lw=1)
    for name, e in props.items():
        cal = e.get("calibration")
        if not cal:
            continue
        for phase, style in (("before", "-"), ("after", "--")):
            pts = [(b["mean_pred"], b["mean_label"]) for v in cal[phase]["per_position"].values()
                   for b in v["reliability"]]
            if pts:
                pts.sort()
                ax.plot(*zip(*pts), style, marker=".", label=f"{name} {phase} scaling")
    ax.set(xlabel="predicted prefix survival", ylabel="observed acceptance", title="Reliability diagram",
           xlim=(0, 1), ylim=(0, 1))
    _legend(ax)
    pngs["reliability"] = out / "reliability.png"
    save(fig, "reliability")

    fig, ax = plt.subplots(figsize=(6, 4))
    names = ["plain"] + list(props)
    tps = [report["plain"].get("tokens_per_s") or 0] + [e["timing"].get("tokens_per_s") or 0 for e in props.values()]
    bars = ax.bar(names, tps, color=["grey"] + ["C0"] * len(props))
    for b, n in zip(bars[1:], props):
        e = props[n]
        ax.annotate(f"tau {e['tau'] or 0:.2f}\nx{e.get('speedup_vs_plain') or 0:.2f}",
                    (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=8)
    ax.set(ylabel="tokens / s (wall clock)", title=f"Speculative vs plain ({report['settings'].get('engine')})")
    pngs["speedup"] = out / "speedup.png"
    save(fig, "speedup")
    paths.update({k: str(v) for k, v in pngs.items()})

    esc = html.escape
    rows = "".join(
        f"<tr><td>{esc(n)}</td><td>{_f(e['tau'])}</td><td>{e['rounds']}</td><td>{e['tokens']}</td>"
        f"<td>{_f(e['timing'].get('tokens_per_s'), 1)}</td><td>{_f(e.get('speedup_vs_plain'))}</td>"
        f"<td>{_f(100 * (e['timing'].get('overhead_share') or 0), 1)}%</td></tr>" for n, e in props.items())
    cmp_rows = "".join(
        f"<tr><td>{esc(c['candidate'])} vs {esc(c['incumbent'])}</td><td>{c['calls']}</td>"
        f"<td>{_f(c['mean_diff'])}</td><td>[{_f(c['ci95'][0])}, {_f(c['ci95'][1])}]</td>"
        f"<td>{_f(100 * c['relative_gain'], 1) if c['relative_gain'] is not None else '-'}%</td></tr>"
        for c in report.get("comparisons", {}).values())
    imgs = "".join(f"<figure><img src='data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}'>"
                   f"<figcaption>{esc(k.replace('_', ' '))}</figcaption></figure>" for k, p in pngs.items())
    s = report["settings"]
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>tracedraft evaluation</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:auto}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}figure{{display:inline-block;margin:4px}}
img{{max-width:520px}}</style></head><body>
<h1>tracedraft evaluation</h1>
<p><b>Convention:</b> {esc(report['convention'])}. {esc(report.get('end_effects', ''))}.</p>
<p>Target {esc(str(s.get('target')))}, engine {esc(str(s.get('engine')))}, temperature {s.get('temperature')},
max_new_tokens {s.get('max_new_tokens')}, seed {s.get('seed')}. Held-out calls: {report['heldout']['calls']};
plain tokens: {report['heldout'].get('plain_generated_tokens')}. Lossless check at T=0:
{esc(str(report['lossless'].get('checked')))} ({len(report['lossless'].get('near_ties', []))} near-ties).</p>
<table><tr><th>proposer</th><th>tau</th><th>rounds</th><th>tokens</th><th>tokens/s</th><th>speedup</th>
<th>loop overhead</th></tr><tr><td>plain</td><td>1</td><td></td><td>{report['plain']['tokens']}</td>
<td>{_f(report['plain'].get('tokens_per_s'), 1)}</td><td>1</td><td></td></tr>{rows}</table>
<h2>Paired comparisons (per-call tau, bootstrap 95%)</h2>
<table><tr><th>pair</th><th>calls</th><th>mean diff</th><th>95% CI</th><th>relative gain</th></tr>{cmp_rows}</table>
<h2>Plots</h2>{imgs}
<p style="font-size:small">schema {esc(report['schema'])}</p></body></html>"""
    (out / "report.html").write_text(page)
    paths["html"] = str(out / "report.html")
    return paths


def _legend(ax: Any) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def _f(x: Any, nd: int = 3) -> str:
    return "-" if x is None or _isnan(x) else f"{x:.{nd}f}"


# ---------------------------------------------------------------------------------------------------------
# engine runs (counters only, e.g. SGLang): the same tau, from sums over requests (SERVING.md 3)
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


def engine_report(runs: Mapping[str, Any], *, target: str | None, temperature: float, max_new_tokens: int,
                  seed: int = 0, compare: Sequence[tuple[str, str]] | None = None) -> EvalReport:
    """An EvalReport (same schema, so ``gate`` and ``write_report`` work) from counter-only engine runs,
    e.g. one SGLang pass per drafter: {name: EngineRun}. Per-segment, conditional-acceptance and calibration
    sections are empty (the engine does not expose per-round data); "tau_source" and "flags" say how tau
    was obtained, "settings.engine_info" records the engine version and arguments per drafter.

    When every run compared its output with the same engine's target alone (``info["lossless"]``, the
    llama.cpp engine), "lossless" reports that check (calls compared, identical, near ties, the differing
    calls per drafter) and "plain" the target-alone speed (``info["plain_tokens"]``/``["plain_seconds"]``),
    from which each proposer's "speedup_vs_plain" follows; otherwise lossless is marked not checked."""
    entries, infos = {}, {}
    for name, run in runs.items():
        s = engine_summary(run)
        infos[name] = s.pop("info")
        entries[name] = {**s, "by_segment": {}, "by_turn": {}, "by_context": {}, "conditional_acceptance": [],
                         "calibration": None, "block_size": None, "max_tau": None, "tokens": s["completion_tokens"],
                         "timing": {"seconds": s["seconds"], "tokens_per_s": s["tokens_per_s"]},
                         "speedup_vs_plain": None}
    names = list(entries)
    pairs = list(compare) if compare is not None else [(a, b) for a in names for b in names if a != b]
    engines = sorted({getattr(r, "engine", "?") for r in runs.values()})
    first = next(iter(runs.values()), None)
    lossless: dict[str, Any] = {"checked": False, "reason": "remote engine: outputs are not compared token by token"}
    plain: dict[str, Any] = {"tokens": None, "seconds": None, "tokens_per_s": None}
    checks = {n: (r.info or {}).get("lossless") for n, r in runs.items()}
    if runs and all(checks.values()):
        lossless = {"checked": True, "against": "the same engine's target alone, token ids, same prompts",
                    "calls_checked": sum(c["calls"] for c in checks.values()),
                    "identical": all(c["identical"] for c in checks.values()),
                    "near_ties": [{**m, "proposer": n} for n, c in checks.items() for m in c["mismatched_calls"]
                                  if m.get("near_tie")],
                    "mismatched_calls": {n: c["mismatched_calls"] for n, c in checks.items() if c["mismatched_calls"]}}
        info0 = first.info or {}
        if info0.get("plain_tokens") and info0.get("plain_seconds"):
            p_tps = info0["plain_tokens"] / info0["plain_seconds"]
            plain = {"tokens": info0["plain_tokens"], "seconds": info0["plain_seconds"], "tokens_per_s": p_tps}
            for e in entries.values():
                tps = e["timing"]["tokens_per_s"]
                e["speedup_vs_plain"] = tps / p_tps if tps else None
    return EvalReport(_clean({
        "schema": SCHEMA, "convention": CONVENTION, "end_effects": "engine counters: " + END_EFFECTS,
        "rules": {"paired": PAIRED_RULE},
        "settings": {"engine": ",".join(engines), "target": target, "temperature": temperature, "seed": seed,
                     "max_new_tokens": max_new_tokens, "engine_info": infos, "versions": _versions()},
        "heldout": {"calls": len(first.calls) if first else 0,
                    "generated_tokens": {n: e["tokens"] for n, e in entries.items()},
                    "plain_generated_tokens": plain["tokens"]},
        "lossless": lossless,
        "plain": plain,
        "proposers": entries,
        "comparisons": {f"{a}__vs__{b}": {"candidate": a, "incumbent": b,
                                          **compare_entries(entries[a], entries[b], seed)} for a, b in pairs},
    }))
