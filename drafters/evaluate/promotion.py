"""The promotion gate: champion or challenger, a pure function of evaluation reports and a policy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from drafters.errors import TracedraftError
from drafters.evaluate.metrics import compare_entries
from drafters.evaluate.report import EvalReport


@dataclass
class GatePolicy:
    """Promotion policy (docs/architecture.md 5): the candidate wins when the lower end of the paired bootstrap
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
    """The promotion decision, a pure function of reports and the policy (docs/architecture.md 5).

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
            oks.append(f"segment {s}: {support:.0f} rounds < min_support {pol.min_support}, not judged")
            continue
        msg = (f"segment {s}: tau {v['candidate_tau']:.3f} vs {v['incumbent_tau']:.3f} ({v['relative']:+.1%}, "
               f"max loss {pol.max_segment_loss:.1%}, {support:.0f} rounds)")
        (fails if v["relative"] < -pol.max_segment_loss else oks).append(msg)
    return GateDecision(not fails, fails + oks, details)
