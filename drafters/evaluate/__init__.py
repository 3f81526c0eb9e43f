"""Evaluation: replay held-out calls, collect verification rounds, compute accepted length and the rest.

THE one place tau is computed (docs/architecture.md 1 and 5): ``drafters.evaluate.metrics``. Convention, stated
in every report: tau = mean over verification rounds of (accepted drafts + 1), bonus token included;
maximum block_size + 1 (docs/dspark.md 5.2). End effects: a round ended by an accepted stop token counts a (no
bonus); a round cut by a stop string or by max_new_tokens counts the tokens it committed; the token sampled
at prefill belongs to no round. Remote engines that only return counters use ``tau_from_counts``
(docs/serving.md 3).

Modules: ``metrics`` (tau, conditional acceptance, ECE/AUROC/Brier, sequential temperature scaling, paired
bootstrap, engine counters), ``replay`` (``evaluate``: replay + losslessness check + EvalReport;
``engine_report`` for counter-only engines), ``report`` (the EvalReport record), ``promotion`` (``gate``,
the promotion decision, a pure function) and ``html_report`` (``write_report``: JSON, PNG plots, one-page
HTML). Callers import from ``drafters.evaluate``; three modules are imported by their own path:
``speed`` (the cost model and the deploy choice, docs/dspark.md 5.5), ``select`` (the development/test
split and what it chooses) and ``lineup`` (the proposers a job compares; it imports the drafter, so
importing this package does not).
"""

from drafters.evaluate.html_report import write_report
from drafters.evaluate.metrics import (
    BOOTSTRAP_SAMPLES,
    CALIBRATION_RULE,
    CONDITIONAL_RULE,
    CONVENTION,
    END_EFFECTS,
    PAIRED_RULE,
    SEGMENT_RULE,
    SWEEP_THRESHOLDS,
    TS_GRID,
    auroc,
    bootstrap_mean_ci,
    brier,
    calibration_metrics,
    calibration_samples,
    calibration_split,
    compare_entries,
    conditional_acceptance,
    ece,
    engine_summary,
    fit_sequential_temperatures,
    paired_comparisons,
    pooled_tau_ci,
    reliability_bins,
    round_length,
    tau_by_group,
    tau_from_completion,
    tau_from_counts,
    tau_from_sums,
    tau_of,
    threshold_sweep,
)
from drafters.evaluate.promotion import GateDecision, GatePolicy, gate
from drafters.evaluate.replay import (
    DEFAULT_BUCKETS,
    context_bucket,
    engine_report,
    evaluate,
    segment_name,
    spread_calls,
    turn_index,
)
from drafters.evaluate.report import SCHEMA, EvalReport

__all__ = [
    "BOOTSTRAP_SAMPLES",
    "CALIBRATION_RULE",
    "CONDITIONAL_RULE",
    "CONVENTION",
    "DEFAULT_BUCKETS",
    "END_EFFECTS",
    "PAIRED_RULE",
    "SCHEMA",
    "SEGMENT_RULE",
    "SWEEP_THRESHOLDS",
    "TS_GRID",
    "EvalReport",
    "GateDecision",
    "GatePolicy",
    "auroc",
    "bootstrap_mean_ci",
    "brier",
    "calibration_metrics",
    "calibration_samples",
    "calibration_split",
    "compare_entries",
    "conditional_acceptance",
    "context_bucket",
    "ece",
    "engine_report",
    "engine_summary",
    "evaluate",
    "fit_sequential_temperatures",
    "gate",
    "paired_comparisons",
    "pooled_tau_ci",
    "reliability_bins",
    "round_length",
    "segment_name",
    "spread_calls",
    "tau_by_group",
    "tau_from_completion",
    "tau_from_counts",
    "tau_from_sums",
    "tau_of",
    "threshold_sweep",
    "turn_index",
    "write_report",
]
