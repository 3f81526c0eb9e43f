"""Decisions taken on the development split, never on the test split (docs/dspark.md 5.5): the held-out
calls are split by conversation into development and test; the development replay fits the cascade's
threshold and chooses the proposer to deploy; the test replay, read once, reports and gates."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from drafters.evaluate.speed import deploy_choice

#: Thresholds (expected accepted drafts of the cheap proposal) the cascade is tried at on development.
CASCADE_THRESHOLDS = (0.5, 1.5, 3.0)
#: The name the cascade at threshold t carries in the development report.
CASCADE_AT = "cascade@{:g}"
#: Fewer held-out calls than this are not split: a development half of a handful of calls chooses nothing
#: (the CPU demo evaluates 6); the report then says its choice was made on the calls it reports.
DEV_SPLIT_MIN_CALLS = 16


@dataclass
class Split:
    """Held-out calls split by conversation: ``dev`` chooses, ``test`` reports (each a list of prompts)."""

    dev: list[Any]
    test: list[Any]


def _rank(conversation_id: Any) -> str:
    return hashlib.sha256(str(conversation_id).encode()).hexdigest()


def split_dev_test(prompts: Sequence[Any], min_calls: int = DEV_SPLIT_MIN_CALLS) -> Split:
    """Split ``prompts`` (with ``conversation_id``) by conversation: conversations ordered by a stable hash
    of their id go alternately to test and development (test first), so both halves hold whole
    conversations and neither depends on the order the calls came in. One conversation, or fewer than
    ``min_calls`` prompts: all test."""
    if len(prompts) < min_calls:
        return Split([], list(prompts))
    convs = sorted({getattr(p, "conversation_id", None) for p in prompts}, key=_rank)
    dev_ids = set(convs[1::2])
    return Split([p for p in prompts if getattr(p, "conversation_id", None) in dev_ids],
                 [p for p in prompts if getattr(p, "conversation_id", None) not in dev_ids])


@dataclass
class DevChoice:
    """What the development replay chose: ``threshold`` for the cascade (None without development calls:
    the default is kept), ``deploy`` the deploy_choice record on development, ``calls`` replayed there,
    ``speedups`` {proposer: end-to-end speed-up on development}, ``entries`` the development report's entries
    the deploy choice was made from (the cascade at its fitted threshold as "cascade")."""

    threshold: float | None
    deploy: dict | None
    calls: int
    speedups: dict
    entries: dict = field(default_factory=dict)


def choose_on_dev(run: Callable[[Mapping[str, Any], Sequence[Any]], Any], proposers: Mapping[str, Any],
                  cascade: Callable[[float], Any], dev: Sequence[Any], engine: str = "hf",
                  thresholds: Sequence[float] = CASCADE_THRESHOLDS) -> DevChoice:
    """Replay ``dev`` once with ``proposers`` and the cascade at each threshold (``cascade(t)`` builds
    one), through ``run(proposers, prompts) -> EvalReport``; the cascade's threshold is the one with the
    highest end-to-end speed-up there, and the proposer to deploy is the fastest there (the cascade under
    its own name, "cascade"). Without development calls nothing is chosen (DevChoice(None, None, 0, {}))."""
    if not dev:
        return DevChoice(None, None, 0, {})
    variants = {CASCADE_AT.format(t): cascade(t) for t in thresholds}
    report = run({**proposers, **variants}, dev)
    entries = report["proposers"]
    speed = {n: e.get("speedup_vs_plain") for n, e in entries.items()}
    best_t = max(thresholds, key=lambda t: speed.get(CASCADE_AT.format(t)) or 0.0)
    kept = {n: e for n, e in entries.items() if n not in variants}
    kept["cascade"] = entries[CASCADE_AT.format(best_t)]
    return DevChoice(best_t, deploy_choice(kept, engine), len(dev), speed, kept)


def with_selection(report: Any, choice: DevChoice, threshold: float, fixed: bool, test_calls: int) -> Any:
    """The test report with report["selection"] (what was chosen where) and, when development chose a
    proposer, report["speed"]["deploy"] naming it with its speed measured on the test split; without
    development calls the test report's own choice stays, marked as made on the test calls."""
    report["selection"] = {"rule": "held-out calls split by conversation; development fits the cascade "
                                   "threshold and chooses the proposer to deploy; test reports and gates",
                           "dev_calls": choice.calls, "test_calls": test_calls, "cascade_threshold": threshold,
                           "threshold_from": "job spec" if fixed else "development" if choice.calls else "default",
                           "dev_speedups": choice.speedups}
    if "speed" not in report:
        return report
    if choice.deploy is None:
        report["speed"]["deploy"]["chosen_on"] = (
            f"test: too few held-out calls for a development split ({test_calls} < {DEV_SPLIT_MIN_CALLS}), so "
            "this choice was made on the calls it is reported on")
        return report
    e = report["proposers"].get(choice.deploy["proposer"]) if choice.deploy["proposer"] else None
    test = {"speedup_vs_plain": e.get("speedup_vs_plain"), "tau": e.get("tau"),
            "tokens_per_s": (e.get("timing") or {}).get("tokens_per_s")} if e else None
    report["speed"]["deploy"] = {**choice.deploy, "chosen_on": "development", "on_test": test}
    return report
