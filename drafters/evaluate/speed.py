"""The speed section of an evaluation report: each proposer's measured speed-up over plain decoding, the
cost model that explains it, and what to deploy on each engine (docs/dspark.md 5.5).

Cost model. With tau the mean committed tokens per verification round, r the cost of a verification round
and c the cost of a drafting round, both in plain decoding steps (the time plain decoding takes per token
on the same engine and machine), decoding is

    speed-up = tau / (r + c)

Here r includes the loop's own work per round (acceptance, cache cropping), so the identity holds exactly
for the decoding phase (the prefill excluded); the end-to-end speed-up, prefill included, is reported
beside it and is lower for short answers. Nothing here touches a model: the inputs are the per-generation
timings of ``drafters.speculate.Generation``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from drafters.evaluate.metrics import pooled_ratio_ci

SPEED_RULE = ("speed-up = tau / (r + c): r = seconds per verification round (target forward + loop), c = "
              "seconds per drafting round, both divided by plain decoding's seconds per token, decoding phase "
              "(prefill excluded); end-to-end speed-up counts the prefill too")

#: What each serving engine can run today, by the proposer names of the in-process evaluation
#: (docs/serving.md 5): the engine's flag and the proposer it corresponds to. The tool-schema proposer,
#: suffix+schema and the cascade run in-process only.
ENGINE_SUPPORT: dict[str, dict[str, str]] = {
    "vllm": {"suffix": "--speculative-config '{\"method\": \"suffix\", \"num_speculative_tokens\": 24}'",
             "ngram": "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 7}'"},
    "sglang": {"candidate": "DeepSpec's DSpark drafter (docs/serving.md 1)",
               "ngram": "--speculative-algorithm NGRAM"},
    "llamacpp": {"candidate": "tracedraft's llama-server DSpark drafting (docs/serving.md 3.4)"},
    "hf": {},  # the in-process loop runs every proposer; filled from the report
}


@dataclass
class CostModel:
    """One proposer's measured costs. plain_step_ms: plain decoding's ms per token; r, c: per verification
    round, in plain steps; tau: committed tokens per round; decode_speedup: measured, decoding phase;
    formula_speedup: tau / (r + c) (equal to decode_speedup up to rounding: r holds the loop's work);
    rounds: verification rounds measured."""

    plain_step_ms: float
    r: float
    c: float
    tau: float
    decode_speedup: float
    formula_speedup: float
    rounds: int


def speedup(tau: float, r: float, c: float) -> float:
    """tau / (r + c) (module docstring). Raises ValueError for a non-positive cost."""
    if r + c <= 0:
        raise ValueError(f"r + c must be positive, got r={r}, c={c}")
    return tau / (r + c)


def plain_step_s(plain_gens: Sequence[Any]) -> float | None:
    """Plain decoding's seconds per token in the decoding phase (one round per token after the prefill's
    token), over ``plain_gens`` (Generation-like); None without any decoding round."""
    rounds = sum(len(g.rounds) for g in plain_gens)
    secs = sum(g.total_s - g.prefill_s for g in plain_gens)
    return secs / rounds if rounds and secs > 0 else None


def cost_model(gens: Sequence[Any], step_s: float | None) -> CostModel | None:
    """The cost model of one proposer's generations against plain decoding's seconds per token ``step_s``;
    None when either has no decoding round."""
    rounds = sum(len(g.rounds) for g in gens)
    if not rounds or not step_s:
        return None
    committed = sum(r.committed for g in gens for r in g.rounds)
    draft_s = sum(g.drafter_s for g in gens)
    decode_s = sum(g.total_s - g.prefill_s for g in gens)
    tau = committed / rounds
    r = (decode_s - draft_s) / rounds / step_s
    c = draft_s / rounds / step_s
    return CostModel(step_s * 1e3, r, c, tau, committed / decode_s * step_s if decode_s > 0 else 0.0,
                     speedup(tau, r, c), rounds)


#: How the deploy choice treats proposers whose measured speeds timing noise alone could have ordered.
TIE_RULE = ("the fastest measured proposer the engine serves; proposers level with it (the 95% paired "
            "bootstrap interval of its speed over theirs, whole calls resampled and pooled like the "
            "estimate, reaches 1.0) are tied with it, and among the tied the highest tau wins: greedy "
            "replays measure tau without timing noise")


def level_with(fastest: Mapping, other: Mapping, seed: int = 0) -> bool:
    """Whether ``other`` is level with ``fastest`` (report entries with ``per_call`` tokens and seconds, end
    to end): the 95% paired interval of fastest's pooled speed over other's, over the calls both replayed,
    reaches 1.0. False without per-call timings (nothing to resample)."""
    theirs = {c["call_id"]: c for c in other.get("per_call") or () if c.get("seconds")}
    sums = [(c["tokens"], c["seconds"], theirs[c["call_id"]]["tokens"], theirs[c["call_id"]]["seconds"])
            for c in fastest.get("per_call") or () if c.get("seconds") and c["call_id"] in theirs]
    if len(sums) < 2:
        return False
    _, lo, _ = pooled_ratio_ci(sums, seed=seed)
    return lo <= 1.0


def deploy_choice(entries: Mapping[str, Mapping], engine: str = "hf") -> dict:
    """What to deploy on ``engine`` (TIE_RULE): among the proposers the engine can serve (what-if proposers
    never) and faster than plain decoding, the fastest measured end to end, unless others are level with it,
    then the highest tau among those; plain decoding when none is faster than 1.0. entries:
    report["proposers"]. Returns {"engine", "proposer" (None: plain decoding), "speedup_vs_plain",
    "tokens_per_s", "flag", "reason", "tied" (the names level with the fastest, itself included)}."""
    served = ENGINE_SUPPORT.get(engine) or {}
    faster = {name: e for name, e in entries.items()
              if (e.get("speedup_vs_plain") or 0.0) > 1.0 and not e.get("what_if")
              and (not served or name in served)}
    if not faster:
        return {"engine": engine, "proposer": None, "speedup_vs_plain": 1.0, "tokens_per_s": None,
                "flag": None, "tied": [],
                "reason": "no proposer decoded faster than plain decoding on this engine"}
    fastest = max(faster, key=lambda n: faster[n]["speedup_vs_plain"])
    tied = [n for n in faster if n == fastest or level_with(faster[fastest], faster[n])]
    best = max(tied, key=lambda n: (faster[n].get("tau") or 0.0, n == fastest))
    e = faster[best]
    x = e["speedup_vs_plain"]
    tau = e.get("tau", float("nan"))
    others = ", ".join(n for n in sorted(tied) if n != best)
    reason = f"fastest measured: {x:.2f}x plain decoding at tau {tau:.2f}"
    if best == fastest and others:
        reason += (f"; level with it within timing noise (the paired interval of their speeds reaches 1.0): "
                   f"{others}, none with a higher tau")
    elif best != fastest:
        reason = (f"level with the fastest measured ({fastest}, {faster[fastest]['speedup_vs_plain']:.2f}x: "
                  f"the paired interval of their speeds reaches 1.0), and of those level with it "
                  f"({', '.join(sorted(tied))}) the highest tau: {tau:.2f} at {x:.2f}x plain decoding")
    return {"engine": engine, "proposer": best, "speedup_vs_plain": x,
            "tokens_per_s": (e.get("timing") or {}).get("tokens_per_s"), "flag": served.get(best),
            "tied": sorted(tied), "reason": reason}


def speed_section(entries: Mapping[str, Mapping], costs: Mapping[str, CostModel | None], engine: str,
                  hardware: str) -> dict:
    """report["speed"]: the rule, the engine and hardware measured on, each proposer's cost model and
    speed-ups, and the deploy choice on that engine."""
    rows = {}
    for name, e in entries.items():
        cm = costs.get(name)
        rows[name] = {"speedup_vs_plain": e.get("speedup_vs_plain"),
                      "tokens_per_s": (e.get("timing") or {}).get("tokens_per_s"), "tau": e.get("tau"),
                      "what_if": bool(e.get("what_if")), "cost": asdict(cm) if cm else None}
    return {"rule": SPEED_RULE, "deploy_rule": TIE_RULE, "engine": engine, "hardware": hardware, "proposers": rows,
            "deploy": deploy_choice(entries, engine)}
