"""The speed section: the cost model speed-up = tau / (r + c) from measured timings, and the deploy choice."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from drafters.evaluate.speed import cost_model, deploy_choice, plain_step_s, speed_section, speedup
from drafters.speculate import Round


@dataclass
class Gen:  # the Generation fields the cost model reads
    rounds: list[Round]
    total_s: float
    prefill_s: float
    drafter_s: float = 0.0
    tokens: list[int] = field(default_factory=list)


def _rounds(n, committed):
    return [Round(proposed=committed - 1, accepted=committed - 1, positions=list(range(1, committed + 1)))
            for _ in range(n)]


def test_cost_model_known_answer():
    # plain: 10 tokens decoded in 1.0 s after a 0.5 s prefill -> 0.1 s per plain step
    plain = [Gen(_rounds(10, 1), total_s=1.5, prefill_s=0.5)]
    step = plain_step_s(plain)
    assert step == pytest.approx(0.1)
    # speculative: 4 rounds of 3 tokens; each round 0.15 s of target + loop and 0.05 s of drafting
    spec = [Gen(_rounds(4, 3), total_s=0.5 + 4 * 0.2, prefill_s=0.5, drafter_s=4 * 0.05)]
    cm = cost_model(spec, step)
    assert cm.tau == 3 and cm.rounds == 4
    assert cm.r == pytest.approx(1.5) and cm.c == pytest.approx(0.5)
    assert cm.formula_speedup == pytest.approx(1.5) == pytest.approx(cm.decode_speedup)
    assert cm.plain_step_ms == pytest.approx(100.0)
    assert cost_model([], step) is None and cost_model(spec, None) is None
    with pytest.raises(ValueError):
        speedup(2.0, 0.0, 0.0)


def _entries():
    return {"candidate": {"speedup_vs_plain": 0.8, "tau": 2.0, "timing": {"tokens_per_s": 8.0}},
            "suffix": {"speedup_vs_plain": 1.6, "tau": 2.5, "timing": {"tokens_per_s": 16.0}},
            "hybrid": {"speedup_vs_plain": None, "tau": 3.0, "what_if": True, "timing": {}},
            "ngram": {"speedup_vs_plain": 1.2, "tau": 1.5, "timing": {"tokens_per_s": 12.0}}}


def test_deploy_choice_takes_the_fastest_served_proposer_and_never_a_what_if():
    e = _entries()
    d = deploy_choice(e, "hf")
    assert d["proposer"] == "suffix" and d["speedup_vs_plain"] == 1.6 and d["tokens_per_s"] == 16.0
    # SGLang cannot serve suffix decoding: the fastest it can serve here is the n-gram proposer
    assert deploy_choice(e, "sglang")["proposer"] == "ngram"
    assert deploy_choice(e, "vllm")["flag"].startswith("--speculative-config")
    slow = {k: {**v, "speedup_vs_plain": 0.9 if v["speedup_vs_plain"] else None} for k, v in e.items()}
    d = deploy_choice(slow, "hf")
    assert d["proposer"] is None and "plain decoding" in d["reason"]


def _timed(speedup: float, tau: float, seconds: list[float]) -> dict:
    """A report entry whose calls each commit 10 tokens in ``seconds``."""
    return {"speedup_vs_plain": speedup, "tau": tau, "timing": {"tokens_per_s": 1.0},
            "per_call": [{"call_id": f"c{i}", "tokens": 10, "seconds": s} for i, s in enumerate(seconds)]}


def test_deploy_choice_breaks_a_tie_in_speed_by_tau_and_never_a_real_lead():
    # "suffix" is 1% faster in total, but call by call the two trade places: level, and "suffix+schema"
    # accepts more per round, so it ships; the choice then no longer flips with timing noise
    noisy = [1.00, 1.30, 0.90, 1.20, 1.10, 0.95, 1.25, 1.05]
    other = [1.28, 0.92, 1.22, 0.98, 1.08, 1.24, 0.97, 1.12]
    assert sum(other) > sum(noisy)
    e = {"suffix": _timed(1.12, 2.9, noisy), "suffix+schema": _timed(1.11, 3.0, other)}
    d = deploy_choice(e, "hf")
    assert d["proposer"] == "suffix+schema" and d["tied"] == ["suffix", "suffix+schema"]
    assert "level with the fastest measured (suffix" in d["reason"] and "(suffix, suffix+schema) the highest tau" \
        in d["reason"]
    # a lead that holds on every call is real: the faster proposer ships whatever the other's tau
    e["suffix+schema"] = _timed(1.05, 3.5, [s * 1.1 for s in noisy])
    d = deploy_choice(e, "hf")
    assert d["proposer"] == "suffix" and d["tied"] == ["suffix"] and d["reason"].startswith("fastest measured")
    # level, but the fastest also has the higher tau: it ships, and the reason names the other and the tie rule
    e["suffix+schema"] = _timed(1.11, 2.5, other)
    d = deploy_choice(e, "hf")
    assert d["proposer"] == "suffix" and "level with it within timing noise" in d["reason"] and \
        "suffix+schema, none with a higher tau" in d["reason"]
    # a level proposer the engine cannot serve, or one no faster than plain decoding, is never chosen
    e["suffix+schema"] = _timed(1.11, 3.0, other)
    assert deploy_choice(e, "vllm")["proposer"] == "suffix"
    e["ngram"] = _timed(0.99, 9.0, noisy)
    assert deploy_choice(e, "hf")["proposer"] == "suffix+schema"


def test_level_with_needs_per_call_timings_of_common_calls():
    from drafters.evaluate.speed import level_with

    a = _timed(1.1, 3.0, [1.0, 1.2, 0.9])
    assert level_with(a, a)
    assert not level_with(a, {"speedup_vs_plain": 1.0})  # nothing to resample
    assert not level_with(a, {"per_call": [{"call_id": "other", "tokens": 10, "seconds": 1.0}]})


def test_speed_section_carries_costs_and_deploy():
    e = _entries()
    sec = speed_section(e, {"suffix": None}, "hf", "a CPU")
    assert sec["deploy"]["proposer"] == "suffix" and sec["hardware"] == "a CPU"
    assert sec["proposers"]["hybrid"]["what_if"] and sec["proposers"]["suffix"]["cost"] is None
    assert "tau / (r + c)" in sec["rule"]


def test_pooled_ratio_interval_resamples_calls_and_pools_like_the_estimate():
    from drafters.evaluate.metrics import pooled_ratio_ci

    # proposer: 10 tokens in 1 s and 30 tokens in 1 s; plain: 10 tokens in 2 s twice -> (40/2) / (20/4) = 4
    est, lo, hi = pooled_ratio_ci([(10, 1, 10, 2), (30, 1, 10, 2)])
    assert est == pytest.approx(4.0)  # pooled, not the mean of per-call ratios (2 and 6 -> 4 here too)
    assert 2.0 <= lo <= est <= hi <= 6.0
    est, lo, hi = pooled_ratio_ci([(10, 1, 10, 1), (90, 9, 90, 1)])
    assert est == pytest.approx((100 / 10) / (100 / 2))  # 0.2; the mean of per-call ratios would be 0.56
    assert pooled_ratio_ci([(5, 1, 5, 1)]) == (1.0, 1.0, 1.0)


def test_the_report_verdict_says_where_the_deploy_choice_was_made():
    from drafters.evaluate.verdict import deploy_choice as verdict_deploy

    base = {"plain": {"tokens_per_s": 3.0}, "proposers": {}, "settings": {}}
    dev = {**base, "speed": {"deploy": {"proposer": "cascade", "speedup_vs_plain": 1.4, "reason": "fastest",
                                        "chosen_on": "development"}}}
    assert verdict_deploy(dev).reason == "fastest; chosen on the development calls, measured on the test calls"
    test = {**base, "speed": {"deploy": {"proposer": None, "reason": "none faster",
                                         "chosen_on": "test: too few held-out calls (2 < 16)"}}}
    got = verdict_deploy(test)
    assert got.proposer == "plain" and got.reason == ("none faster; chosen on the test calls themselves: too few "
                                                      "held-out calls (2 < 16)")
