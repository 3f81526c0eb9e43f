"""The verdict an evaluation report leads with: which drafter and job it is about, the promotion gate's
result, what to deploy and its measured speed-up, the job's warnings, and which figures rest on too few
calls to trust. Pure functions of the report (torch-free); ``html_report`` renders them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Paired intervals over fewer calls than this are flagged as small samples: a bootstrap over a handful of
#: calls is narrow by accident as often as it is wide.
SMALL_SAMPLE_CALLS = 10

#: What each proposer name a job's report uses stands for (names a benchmark invents have no entry).
PROPOSER_TERMS = {
    "candidate": "the drafter this job trained: the version this report registers",
    "untrained": "a drafter of the candidate's shape at the weights training started from (what training "
                 "bought)",
    "base": "the base drafter the job started from (its incumbent)",
    "ngram": "prompt lookup: drafts the tokens that followed the latest earlier occurrence of the last few "
             "tokens in the context; no training",
    "suffix": "suffix decoding over the organization's training answers and the request so far, at its natural "
              "cap (24 drafts, vLLM's default); no training",
    "suffix@block": "the same suffix decoding capped at the drafter's block size",
    "schema": "the tool-schema proposer: drafts the call markup, tool name, argument keys and JSON punctuation "
              "that the request's tool schemas fix (never a value); no training, in-process only today",
    "suffix+schema": "each round the better of suffix decoding and the tool-schema proposer by their own "
                     "estimates of accepted drafts; no training, in-process only today",
    "cascade": "the tool-schema proposer and suffix decoding first, the candidate drafter only in rounds where "
               "they are unsure "
               "(report.selection gives its threshold and where it came from: the development calls, the job "
               "spec, or the default 1.0 when too few calls were held out); decided before verification",
    "hybrid": "what-if: each round the candidate's or suffix decoding's draft, whichever expects more "
              "accepted tokens; its tau is real, its speed is not (no engine serves it, both run every round)",
}


@dataclass(frozen=True)
class Verdict:
    """Who a report is about, known to the job and not to the report: ``drafter`` (registry name),
    ``version`` (None until the register stage numbers it), ``job_id``, ``gate``
    (``GateDecision.to_dict()``: passed, reasons) and the job's ``warnings`` ([{"code", "message"}])."""

    drafter: str | None = None
    version: int | None = None
    job_id: str | None = None
    gate: Mapping[str, Any] | None = None
    warnings: Sequence[Mapping[str, Any]] = field(default_factory=tuple)


@dataclass(frozen=True)
class Deploy:
    """What to deploy: a proposer name ("plain" for plain decoding), its measured speed-up over plain
    decoding and tokens/s on the report's engine (None when not measured), and why it was chosen."""

    proposer: str
    speedup_vs_plain: float | None
    tokens_per_s: float | None
    reason: str


def deploy_choice(report: Mapping[str, Any]) -> Deploy:
    """What to deploy: ``report["speed"]["deploy"]`` when the report names it, else the same rule applied to
    the report's proposers (``drafters.evaluate.speed.deploy_choice``: the highest measured speed-up, what-if
    rows never, plain decoding when none is above 1.0). Plain decoding's tokens/s is the report's own."""
    from drafters.evaluate.speed import deploy_choice as fastest

    named = (report.get("speed") or {}).get("deploy") or fastest(report["proposers"],
                                                                 report["settings"].get("engine") or "hf")
    plain = named.get("proposer") in (None, "plain")
    tps = (report.get("plain") or {}).get("tokens_per_s") if plain else named.get("tokens_per_s")
    where = named.get("chosen_on")
    reason = str(named.get("reason") or "named by the report")
    if where == "development":
        reason += "; chosen on the development calls, measured on the test calls"
    elif where:  # "test: too few held-out calls ..."
        reason += "; chosen on the test calls themselves" + where.removeprefix("test")
    return Deploy("plain" if plain else str(named["proposer"]), named.get("speedup_vs_plain"), tps, reason)


@dataclass(frozen=True)
class SmallSample:
    """A figure resting on fewer than ``SMALL_SAMPLE_CALLS`` calls: what it is and on how many calls."""

    what: str
    calls: int


def small_samples(report: Mapping[str, Any]) -> list[SmallSample]:
    """Every paired interval (overall and per segment) over fewer than ``SMALL_SAMPLE_CALLS`` calls, and the
    held-out set itself when it is that small."""
    out = []
    calls = (report.get("heldout") or {}).get("calls") or 0
    if calls < SMALL_SAMPLE_CALLS:
        out.append(SmallSample("held-out calls replayed", calls))
    for c in (report.get("comparisons") or {}).values():
        pair = f"{c['candidate']} vs {c['incumbent']}"
        if (c.get("calls") or 0) < SMALL_SAMPLE_CALLS:
            out.append(SmallSample(f"{pair}, overall", c.get("calls") or 0))
        for seg, s in (c.get("by_segment") or {}).items():
            if (s.get("calls") or 0) < SMALL_SAMPLE_CALLS:
                out.append(SmallSample(f"{pair}, {seg}", s.get("calls") or 0))
    return out


def reliability_gap(report: Mapping[str, Any]) -> str | None:
    """Why the reliability diagram has no points, or None when it has some."""
    cals = {n: e.get("calibration") for n, e in report["proposers"].items()}
    if not any(cals.values()):
        return ("no proposer reported confidences: only a DSpark drafter replayed in-process (hf engine) has a "
                "confidence head to calibrate; engine counters and model-free proposers have none")
    for cal in filter(None, cals.values()):
        if any(v.get("reliability") for phase in ("before", "after")
               for v in (cal.get(phase) or {}).get("per_position", {}).values()):
            return None
    return ("no rounds in the calibration's evaluation half: temperatures are fitted on half of the calls (a "
            "stable hash of the call id) and judged on the other half, and that half is empty with this few calls")
