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


def deploy_choice(entries: Mapping[str, Mapping], engine: str = "hf") -> dict:
    """What to deploy on ``engine``: the proposer with the highest measured end-to-end speed-up among those
    the engine can serve (what-if proposers never), or plain decoding when none is faster than 1.0.
    entries: report["proposers"]. Returns {"engine", "proposer" (None: plain decoding), "speedup_vs_plain",
    "tokens_per_s", "reason", "flag"}."""
    served = ENGINE_SUPPORT.get(engine) or {}
    best, best_x = None, 1.0
    for name, e in entries.items():
        x = e.get("speedup_vs_plain")
        if x is None or e.get("what_if") or (served and name not in served):
            continue
        if x > best_x:
            best, best_x = name, x
    if best is None:
        return {"engine": engine, "proposer": None, "speedup_vs_plain": 1.0, "tokens_per_s": None,
                "flag": None, "reason": "no proposer decoded faster than plain decoding on this engine"}
    e = entries[best]
    return {"engine": engine, "proposer": best, "speedup_vs_plain": best_x,
            "tokens_per_s": (e.get("timing") or {}).get("tokens_per_s"), "flag": served.get(best),
            "reason": f"fastest measured: {best_x:.2f}x plain decoding at tau {e.get('tau', float('nan')):.2f}"}


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
    return {"rule": SPEED_RULE, "engine": engine, "hardware": hardware, "proposers": rows,
            "deploy": deploy_choice(entries, engine)}
