"""What a training run reports: progress reports while it runs (``TrainProgress``), its outcome
(``TrainResult``), the reporter that hands them to the caller, and the pace it measures (rates, time left,
seconds per step for the time budget)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TrainProgress:
    """One progress report (after every ``log_every`` steps, after validation, during cache building).

    phase: "cache" | "validate" | "schedule" (a time budget's horizon set or re-estimated, said in
    ``message``) | "train" | "done"; step/total_steps: optimizer steps (total_steps 0: not known yet, while a
    time-budgeted run times its first steps); loss/ce/l1/conf:
    global weighted means of the last step (docs/dspark.md 2.2); lr; grad_norm (before clipping); tokens_per_s:
    real (non-pad) training tokens per second over all ranks, averaged since the run (re)started; eta_s:
    seconds to total_steps at that rate (or to the time budget, whichever is sooner); val_expected_tau: the
    latest validation expected accepted length (bonus token included), best_expected_tau the best so far.
    """

    phase: str
    step: int
    total_steps: int
    epoch: float = 0.0
    loss: float | None = None
    ce: float | None = None
    l1: float | None = None
    conf: float | None = None
    lr: float | None = None
    grad_norm: float | None = None
    tokens_per_s: float | None = None
    eta_s: float | None = None
    elapsed_s: float = 0.0
    val_expected_tau: float | None = None
    best_expected_tau: float | None = None
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class TrainResult:
    """Outcome of ``train``: best_dir (export with the best validation expected tau; the last export when
    there is no validation set), last_dir (latest step checkpoint), steps done, cancelled (stopped by
    should_stop/SIGTERM), stop_reason ("max_steps" | "time_budget" | "cancelled"), history (one dict per
    logged step and per validation), best_expected_tau, initial_expected_tau (step 0 or the resumed
    step), feature_cache (how features were produced: {"mode", "dir", "bytes", "estimate_bytes"}),
    parallel ("single" | "ddp" | "fsdp": how the run actually held the drafter), schedule (``Schedule``:
    total_steps, warmup_steps, cap, step_s, estimated_at)."""

    best_dir: Path | None
    last_dir: Path | None
    steps: int
    cancelled: bool
    history: list[dict[str, Any]]
    stop_reason: str = "max_steps"
    best_expected_tau: float | None = None
    initial_expected_tau: float | None = None
    feature_cache: dict[str, Any] = field(default_factory=dict)
    parallel: str = "single"
    schedule: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["best_dir"] = str(self.best_dir) if self.best_dir else None
        d["last_dir"] = str(self.last_dir) if self.last_dir else None
        return d


class Reporter:
    """Hands progress reports to the caller's callback, on rank 0 only, stamped with the seconds since
    the run started (``clock``: a monotonic clock in seconds)."""

    def __init__(self, progress: Callable[[TrainProgress], None] | None, rank: int,
                 clock: Callable[[], float] = time.perf_counter):
        self.progress, self.rank, self.clock = progress, rank, clock
        self.started = clock()

    def elapsed(self) -> float:
        return self.clock() - self.started

    def emit(self, report: TrainProgress) -> None:
        report.elapsed_s = round(self.elapsed(), 3)
        if self.progress is not None and self.rank == 0:
            self.progress(report)

    def feature_pass(self, total_steps: int) -> Callable[[int, int], None]:
        """The feature cache's ``report(done, total)`` (sequences): a "cache" report per call, its ETA (the
        seconds left in the feature pass) recomputed from the pass's own rate at every batch."""
        started: list[float] = []

        def report(done: int, total: int) -> None:
            now = self.clock()
            if not started:
                started.append(now)
            eta = (now - started[0]) / done * (total - done) if done else None
            message = f"target features for the training cache: {done}/{total} sequences" + (
                f", about {eta:.0f} s left in this pass" if eta is not None else "")
            self.emit(TrainProgress("cache", 0, total_steps, eta_s=eta, message=message))

        return report


@dataclass
class Pace:
    """What this process measures of its loop: tokens per second and time left since it started, and the
    seconds per optimizer step over a window of steps (``step_s``). The window starts after the first step
    (one-off costs) and again at every estimate of the horizon (so the estimate follows a machine that
    slows down or speeds up); it leaves out validations and checkpoints (``Budget`` counts those apart)."""

    started: float
    steps: int = 0
    tokens: int = 0
    window_t: float | None = None  # clock at the start of the window
    window_steps: int = 0  # ``steps`` then
    excluded_s: float = 0.0  # validations and checkpoints in the window

    def tokens_per_s(self, now: float) -> float | None:
        return self.tokens / (now - self.started) if now > self.started else None

    def eta(self, now: float, steps_left: int) -> float:
        return (now - self.started) / max(1, self.steps) * steps_left

    def tick(self, now: float) -> None:
        """At the top of each loop iteration: ``steps`` iterations (step, report, validation, checkpoint)
        have ended by ``now``. The first window opens after the first."""
        if self.steps == 1 and self.window_t is None:
            self.restart_window(now)

    def restart_window(self, now: float) -> None:
        self.window_t, self.window_steps, self.excluded_s = now, self.steps, 0.0

    @property
    def timed_steps(self) -> int:
        """Steps in the window."""
        return self.steps - self.window_steps if self.window_t is not None else 0

    def window_s(self, now: float) -> float:
        """Seconds of training in the window (validations and checkpoints left out)."""
        return now - self.window_t - self.excluded_s if self.window_t is not None else 0.0

    def step_s(self, now: float) -> float:
        """Mean seconds of training per step in the window (call with ``timed_steps`` > 0)."""
        assert self.timed_steps > 0
        return self.window_s(now) / self.timed_steps
