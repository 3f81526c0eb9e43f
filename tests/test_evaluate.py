"""Evaluation: tau conventions and known answers, losslessness assertion, metrics on constructed
inputs (conditional acceptance, ECE/AUROC/Brier, temperature scaling, bootstrap), the gate, report files."""

from __future__ import annotations

import itertools
import json
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

import drafters.speculate as spec
from drafters.baselines import NGramProposer
from drafters.errors import TracedraftError
from drafters.evaluate import (
    CONVENTION,
    SCHEMA,
    EvalReport,
    GatePolicy,
    auroc,
    bootstrap_mean_ci,
    brier,
    calibration_samples,
    conditional_acceptance,
    context_bucket,
    ece,
    evaluate,
    fit_sequential_temperatures,
    gate,
    tau_from_completion,
    tau_from_counts,
    tau_of,
    turn_index,
    write_report,
)
from drafters.speculate import Round
from tests._speculate_helpers import AdversarialProposer, RandomProposer, SelfProposer, tiny_target

warnings.filterwarnings("ignore", category=FutureWarning)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny ops on a shared machine: threads only contend
    yield
    torch.set_num_threads(n)


@dataclass
class Prompt:  # the RenderedPrompt fields evaluate reads
    call_id: str
    prompt_ids: list[int]
    conversation_id: str = "conv"
    completion_ids: list[int] = field(default_factory=list)
    completion_segments: list[int] = field(default_factory=list)


def _prompts(n=4, seed=0, vocab=64):
    g = torch.Generator().manual_seed(seed)
    return [Prompt(f"conv{i % 2}/{i}", torch.randint(0, vocab, (6 + 2 * i,), generator=g).tolist()) for i in range(n)]


def _parity_segments(tokens):
    return [4 if t % 2 else 7 for t in tokens]  # TEXT for odd ids, TOOL_ARGS for even ids


@pytest.fixture(scope="module")
def target():
    return tiny_target(0, scale=4.0)


@pytest.fixture(scope="module")
def report(target):
    block = 4
    return evaluate(target, {"self": SelfProposer(target, block), "ngram": NGramProposer(block),
                             "adversarial": AdversarialProposer(target, block), "random": RandomProposer(block_size=block)},
                    _prompts(), max_new_tokens=1 + 4 * (block + 1), segmenter=_parity_segments)


def test_report_known_answers(report):
    assert report["schema"] == SCHEMA and report["convention"] == CONVENTION
    assert report["heldout"]["calls"] == 4 and report["heldout"]["plain_generated_tokens"] == 4 * 21
    self_, adv = report["proposers"]["self"], report["proposers"]["adversarial"]
    # The target as its own drafter: every round commits block + 1 (the budget is a multiple of it).
    assert self_["tau"] == 5.0 and self_["max_tau"] == 5 and self_["rounds"] == 16
    assert all(c["rate"] == 1.0 for c in self_["conditional_acceptance"])
    assert self_["verify_rate"] == 1.0
    # The adversary is never accepted: tau 1, conditional acceptance 0 at slot 1, nothing eligible after.
    assert adv["tau"] == 1.0
    ca = adv["conditional_acceptance"]
    # Each call's last round has no budget for a draft (an end effect): 4 calls, 4 rounds not eligible.
    assert ca[0]["rate"] == 0.0 and ca[0]["eligible"] == adv["rounds"] - 4
    assert all(c["rate"] is None for c in ca[1:])
    assert report["lossless"]["checked"] and report["lossless"]["calls_checked"] == 16
    json.dumps(report, allow_nan=False)  # strict JSON


def test_segments_turns_buckets_are_consistent(report, target):
    for e in report["proposers"].values():
        assert sum(v["rounds"] for v in e["by_segment"].values()) == pytest.approx(e["rounds"])
        assert sum(v["tokens"] for v in e["by_segment"].values()) == e["tokens"] - 4  # prefill tokens: no round
        assert set(e["by_turn"]) == {"0", "1", "2", "3"}
        assert set(e["by_context"]) == {"0-255"}
    # Per-segment tau by hand: each committed token counts in its own segment with 1/L of its round.
    g = spec.speculative_generate(target, NGramProposer(4), _prompts()[0].prompt_ids, 21)
    segs = _parity_segments(g.tokens)
    sums = {"text": [0, 0.0], "tool_args": [0, 0.0]}
    for i, ri in enumerate(g.round_index):
        if ri >= 0:
            acc = sums["text" if segs[i] % 2 == 0 else "tool_args"]
            acc[0] += 1
            acc[1] += 1 / g.rounds[ri].committed
    one = evaluate(target, {"ngram": NGramProposer(4)}, _prompts()[:1], 21, segmenter=_parity_segments)
    for s, (t, r) in sums.items():
        if t:
            assert one["proposers"]["ngram"]["by_segment"][s]["tau"] == pytest.approx(t / r)
            assert one["proposers"]["ngram"]["by_segment"][s]["tokens"] == t
    # Every proposer's segment covers the same tokens: greedy output is identical across proposers.
    tokens = {n: {s: v["tokens"] for s, v in e["by_segment"].items()} for n, e in report["proposers"].items()}
    assert len({tuple(sorted(t.items())) for t in tokens.values()}) == 1


def test_lossless_violation_is_raised(target, monkeypatch):
    real = spec.speculative_generate

    def corrupt(*a, **kw):
        g = real(*a, **kw)
        if a[1] is not None:
            j = 5
            g.tokens[j] = (g.tokens[j] + 1) % 64
            g.margins[j] = 10.0  # a clear decision, not a near-tie
        return g

    monkeypatch.setattr(spec, "speculative_generate", corrupt)
    with pytest.raises(TracedraftError) as e:
        evaluate(target, {"ngram": NGramProposer(4)}, _prompts()[:1], 12)
    assert e.value.code == "lossless_violation" and "token 5" in e.value.where


def test_near_tie_divergence_is_recorded_not_raised(target, monkeypatch):
    real = spec.speculative_generate

    def tie(*a, **kw):
        g = real(*a, **kw)
        if a[1] is not None:
            g.tokens[3] = (g.tokens[3] + 1) % 64
            g.margins[3] = 1e-6
        return g

    monkeypatch.setattr(spec, "speculative_generate", tie)
    rep = evaluate(target, {"ngram": NGramProposer(4)}, _prompts()[:1], 12)
    assert rep["lossless"]["near_ties"][0]["token"] == 3


def test_bad_input(target):
    with pytest.raises(TracedraftError) as e:
        evaluate(target, {"ngram": NGramProposer(4)}, [], 5)
    assert e.value.code == "bad_input"


# ----------------------------------------------------------------------------- metric functions

def test_tau_conventions():
    rounds = [Round(3, 3, None, [1, 2, 3, 4]), Round(3, 0, None, [1]), Round(3, 2, None, [1, 2], eos=True)]
    assert tau_of(rounds) == pytest.approx(7 / 3)
    assert np.isnan(tau_of([]))
    assert tau_from_counts(accepted_drafts=30, verify_rounds=10) == 4.0
    assert tau_from_completion(41, 10) == 4.1
    for f in (tau_from_counts, tau_from_completion):
        with pytest.raises(TracedraftError) as e:
            f(5, 0)
        assert e.value.code == "speculation_off"


def test_conditional_acceptance_constructed():
    rounds = [Round(3, 3, None, [1, 2, 3, 4]), Round(3, 1, None, [1, 2]), Round(3, 0, None, [1]),
              Round(2, 2, None, [1, 2, 3]),
              Round(3, 1, None, [1], eos=True)]  # accepted stop token at slot 1: slots 2.. skipped
    ca = conditional_acceptance(rounds, 3)
    assert [c["eligible"] for c in ca] == [5, 3, 1]
    assert [c["accepted"] for c in ca] == [4, 2, 1]
    assert ca[0]["rate"] == pytest.approx(0.8) and ca[1]["rate"] == pytest.approx(2 / 3) and ca[2]["rate"] == 1.0
    assert ca[2]["survival"] == pytest.approx(1 / 3)  # rounds with n >= 3 that passed slot 3 (eos one skipped)


def test_ece_auroc_brier_constructed():
    # Perfect calibration: prediction 0.25 with a quarter positive, 0.75 with three quarters.
    p = [0.25] * 4 + [0.75] * 4
    y = [1, 0, 0, 0, 1, 1, 1, 0]
    assert ece(p, y) == pytest.approx(0.0)
    assert ece([1.0, 1.0], [0, 0]) == pytest.approx(1.0)
    assert ece([0.9] * 10, [1] * 6 + [0] * 4) == pytest.approx(0.3)
    assert auroc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == pytest.approx(0.75)
    assert auroc([0.1, 0.2], [0, 1]) == 1.0 and auroc([0.1, 0.2], [1, 0]) == 0.0
    assert auroc([0.5, 0.5, 0.5], [0, 1, 1]) == 0.5
    assert auroc([0.5, 0.6], [1, 1]) is None
    assert brier([1.0, 0.0, 0.5], [1, 1, 0]) == pytest.approx((0 + 1 + 0.25) / 3)


def _overconfident_rounds(n_rounds, seed):
    """Rounds whose drafts are accepted with true probability 0.6 per slot, but the confidence says 0.9."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_rounds):
        acc = rng.random(3) < 0.6
        a = int(np.cumprod(acc).sum())
        out.append(Round(3, a, [0.9, 0.9, 0.9], list(range(1, a + 2))))
    return out


def test_sequential_temperature_scaling_fixes_overconfidence():
    fit, held = _overconfident_rounds(2000, 0), _overconfident_rounds(2000, 1)
    temps = fit_sequential_temperatures(fit)
    assert len(temps) == 3 and all(t > 1 for t in temps)  # overconfident logits get flattened
    before, after = calibration_samples(held), calibration_samples(held, temps)
    for k in (1, 2, 3):
        assert ece(*after[k]) < ece(*before[k]) / 3
    assert ece(*before[1]) == pytest.approx(0.3, abs=0.03)
    # Slot 1 scaled confidence lands near the true 0.6 acceptance.
    assert np.mean(after[1][0]) == pytest.approx(0.6, abs=0.05)


def test_bootstrap_interval_covers_known_mean():
    rng = np.random.default_rng(0)
    _, lo, hi = bootstrap_mean_ci(rng.normal(0.3, 1.0, 400), seed=0)
    assert lo < 0.3 < hi and 0.15 < hi - lo < 0.25  # ~2 * 1.96 / sqrt(400) = 0.196
    assert bootstrap_mean_ci([1.0, 2.0, 3.0], seed=5) == bootstrap_mean_ci([1.0, 2.0, 3.0], seed=5)
    covered = 0
    for i in range(100):
        _, lo, hi = bootstrap_mean_ci(rng.normal(1.0, 2.0, 60), n_boot=1000, seed=i)
        covered += lo < 1.0 < hi
    assert 85 <= covered <= 100
    assert bootstrap_mean_ci([2.0]) == (2.0, 2.0, 2.0)


def test_helpers():
    assert turn_index(Prompt("abc/7", [1])) == 7 and turn_index(Prompt("x", [1])) is None
    assert context_bucket(100) == "0-255" and context_bucket(256) == "256-511" and context_bucket(10**6) == "32768+"


# ----------------------------------------------------------------------------- the gate

def _entry(per_call_taus, segs, rounds_per_call=20):
    per_call = [{"call_id": f"c/{i}", "rounds": rounds_per_call, "sum_len": round(t * rounds_per_call)}
                for i, t in enumerate(per_call_taus)]
    return {"tau": float(np.mean(per_call_taus)), "per_call": per_call,
            "by_segment": {s: {"tau": t, "rounds": r, "tokens": int(t * r)} for s, (t, r) in segs.items()}}


def _report(entries, temperature=0.0, target="t"):
    return {"schema": SCHEMA, "settings": {"target": target, "temperature": temperature, "max_new_tokens": 64,
                                           "engine": "hf", "seed": 0},
            "proposers": entries}


def test_gate_verdicts_on_constructed_reports():
    rng = np.random.default_rng(0)
    base = rng.uniform(2.0, 3.0, 40)
    inc = _entry(base, {"tool_args": (3.0, 400), "text": (2.0, 300)})
    win = _entry(base + 0.3, {"tool_args": (3.4, 400), "text": (2.3, 300)})
    # 1. Clear win: CI above 0, +12%, no segment loss.
    d = gate(_report({"dspark": win}), _report({"dspark": inc}))
    assert d.passed, d.reasons
    # 2. Within noise: per-call differences straddle 0.
    noisy = _entry(base + rng.normal(0, 0.5, 40), {"tool_args": (3.0, 400), "text": (2.0, 300)})
    d = gate(_report({"dspark": noisy}), _report({"dspark": inc}))
    assert not d.passed and any("lower end <= 0" in r for r in d.reasons)
    # 3. Significant but tiny gain (+1% < min_gain 2%).
    tiny = _entry(base * 1.01, {"tool_args": (3.03, 400), "text": (2.02, 300)})
    d = gate(_report({"dspark": tiny}), _report({"dspark": inc}))
    assert not d.passed and d.reasons[0].startswith("relative gain")
    # 4. Overall win but a well-supported segment loses 10%.
    seg_loss = _entry(base + 0.3, {"tool_args": (3.6, 400), "text": (1.8, 300)})
    d = gate(_report({"dspark": seg_loss}), _report({"dspark": inc}))
    assert not d.passed and d.reasons[0].startswith("segment text")
    # 5. The same loss on a segment below min_support is not judged.
    d = gate(_report({"dspark": seg_loss}), _report({"dspark": inc}), GatePolicy(min_support=301))
    assert d.passed and any("not judged" in r for r in d.reasons)
    # 6. Different conditions cannot be compared.
    d = gate(_report({"dspark": win}, temperature=1.0), _report({"dspark": inc}))
    assert not d.passed and any("temperature" in r for r in d.reasons)
    # 7. Names inside one report; too few calls.
    one = _report({"cand": win, "inc": inc})
    assert gate(one, None, candidate_name="cand", incumbent_name="inc").passed
    d = gate(_report({"a": _entry([3.0], {}), "b": _entry([2.0], {})}), None, {"min_calls": 2},
             candidate_name="a", incumbent_name="b")
    assert not d.passed and "paired calls" in d.reasons[0]
    with pytest.raises(TracedraftError):
        gate({"schema": "other/0"}, _report({"dspark": inc}))
    with pytest.raises(TracedraftError):
        gate(one, None, candidate_name="nope", incumbent_name="inc")


def test_write_report_files(report, tmp_path):
    paths = write_report(report, tmp_path)
    for k in ("json", "html", "acceptance_by_position", "tau_by_segment", "reliability", "speedup"):
        assert (tmp_path / paths[k].split("/")[-1]).stat().st_size > 0
    assert EvalReport.from_dict(json.loads((tmp_path / "report.json").read_text()))["schema"] == SCHEMA
    page = (tmp_path / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 4 and CONVENTION in page


def test_hf_engine_counters_agree_with_round_tau(target):
    from drafters.engines.hf import HFEngine
    from drafters.evaluate import engine_summary

    prompts = _prompts()
    run = HFEngine(target).measure(prompts, NGramProposer(4), max_new_tokens=21)
    s = engine_summary(run)
    rep = evaluate(target, {"ngram": NGramProposer(4)}, prompts, 21)
    assert s["tau"] == pytest.approx(rep["proposers"]["ngram"]["tau"]) and s["rounds"] == rep["proposers"]["ngram"]["rounds"]
    assert s["completion_tokens"] == 4 * 21 and run.calls[0].rounds is not None
    with pytest.raises(TracedraftError) as e:
        HFEngine(target).measure(prompts, "/nonexistent/drafter", max_new_tokens=5)
    assert e.value.code == "bad_drafter"


def test_threshold_sweep_in_report(report):
    sweep = report["proposers"]["random"]["calibration"]["threshold_sweep"]
    assert sweep[0]["threshold"] == 0.0
    # At threshold 0 the estimate reproduces the measured tau exactly.
    assert sweep[0]["est_tau"] == pytest.approx(report["proposers"]["random"]["tau"])
    # Higher thresholds verify fewer drafts per round.
    v = [s["verified_per_round"] for s in sweep]
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(v)) and v[-1] < v[0]


def test_pooled_tau_ci_resamples_calls_and_segments_pair_per_call():
    """Pooled tau is the ratio of sums (not the mean of per-call taus); its interval resamples whole calls;
    per segment, the paired difference uses only calls with rounds of that segment on both sides."""
    from drafters.evaluate import compare_entries, pooled_tau_ci

    def entry(calls):  # calls: [(sum_len, rounds, {segment: (sum_len, rounds)})]
        return {"per_call": [{"call_id": f"c/{i}", "sum_len": s, "rounds": r,
                              "segments": {k: list(v) for k, v in segs.items()}}
                             for i, (s, r, segs) in enumerate(calls)],
                "by_segment": {k: {"tau": 0.0, "rounds": 1} for _, _, segs in calls for k in segs}}

    a = entry([(30, 10, {"tool_args": (20, 5), "text": (10, 5)}), (10, 10, {"text": (10, 10)}),
               (40, 10, {"tool_args": (40, 10)})])
    tau, lo, hi = pooled_tau_ci(a)
    assert tau == pytest.approx(80 / 30) and lo < tau < hi and lo >= 1.0 and hi <= 4.0
    assert pooled_tau_ci(a, "tool_args")[0] == pytest.approx(60 / 15)  # mean of per-call taus would be 4.0 too
    assert pooled_tau_ci(a, "text")[0] == pytest.approx(20 / 15)
    assert all(np.isnan(pooled_tau_ci(a, "reasoning")))
    same = pooled_tau_ci(entry([(30, 10, {}), (30, 10, {})]))
    assert same == (3.0, 3.0, 3.0)  # identical calls: no spread
    b = entry([(20, 10, {"tool_args": (10, 5), "text": (10, 5)}), (10, 10, {"text": (10, 10)}),
               (20, 10, {"text": (20, 10)})])
    seg = compare_entries(a, b)["by_segment"]
    # tool_args: only call 0 has tool_args rounds on both sides: 20/5 - 10/5 = 2.0
    assert seg["tool_args"]["calls"] == 1 and seg["tool_args"]["mean_diff"] == pytest.approx(2.0)
    assert seg["text"]["calls"] == 2 and seg["text"]["mean_diff"] == pytest.approx(0.0)


def test_spread_calls_takes_calls_round_robin_over_conversations():
    from drafters.evaluate import spread_calls

    prompts = [Prompt(f"{c}/{i}", [1], conversation_id=c) for c, n in (("a", 4), ("b", 1), ("c", 2))
               for i in range(n)]
    assert [p.call_id for p in spread_calls(prompts, 5)] == ["a/0", "b/0", "c/0", "a/1", "c/1"]
    assert [p.call_id for p in spread_calls(prompts, 2)] == ["a/0", "b/0"]
    assert len(spread_calls(prompts, 100)) == 7 and spread_calls(prompts, 0) == []


def test_report_speed_section_explains_the_measured_speedup(report):
    """Every served proposer's decoding speed-up equals tau / (r + c) from its own measured costs, and the
    deploy choice is the fastest proposer by measured end-to-end speed-up (or plain decoding)."""
    speed = report["speed"]
    assert "tau / (r + c)" in speed["rule"] and speed["engine"] == "hf" and speed["hardware"]
    for name, row in speed["proposers"].items():
        cm = row["cost"]
        assert cm["rounds"] == report["proposers"][name]["rounds"]
        assert cm["formula_speedup"] == pytest.approx(cm["decode_speedup"], rel=1e-6)
        assert cm["r"] > 0 and cm["c"] >= 0 and cm["tau"] == pytest.approx(report["proposers"][name]["tau"])
    best = max(report["proposers"], key=lambda n: report["proposers"][n]["speedup_vs_plain"])
    want = best if report["proposers"][best]["speedup_vs_plain"] > 1.0 else None
    assert speed["deploy"]["proposer"] == want
