"""A time budget is the schedule: the trainer measures its step time, sets the horizon so that warm-up and
cosine decay end with the budget, re-estimates it as the pace changes, and keeps it across a resume.

No test here waits on a real clock: ``train`` runs on a fake clock that only the (real, tiny) optimizer
steps, validations and checkpoints advance, by fixed fake durations.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from drafters.train import TrainConfig, TrainError, train
from drafters.train import loop as train_loop
from drafters.train.config import Budget, Schedule
from tests.test_train import TRAIN, VAL, cfg, make_drafter, target, target_dir  # noqa: F401

LR = 3e-3


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fake_durations(monkeypatch, clock: FakeClock, step_s: Callable[[int], float], validate_s: float = 0.0,
                   checkpoint_s: float = 0.0) -> None:
    """Optimizer step n (1-based, of this process) takes ``step_s(n)`` fake seconds, a validation
    ``validate_s``, a checkpoint ``checkpoint_s``; nothing else moves the clock."""
    real_step, real_validation, real_save = train_loop.train_step, train_loop.run_validation, train_loop.save
    done = {"steps": 0}

    def step(*args, **kw):
        out = real_step(*args, **kw)
        done["steps"] += 1
        clock.now += step_s(done["steps"])
        return out

    def validation(*args, **kw):
        out = real_validation(*args, **kw)
        clock.now += validate_s
        return out

    def save(*args, **kw):
        out = real_save(*args, **kw)
        clock.now += checkpoint_s
        return out

    monkeypatch.setattr(train_loop, "train_step", step)
    monkeypatch.setattr(train_loop, "run_validation", validation)
    monkeypatch.setattr(train_loop, "save", save)


def budgeted(**kw) -> TrainConfig:
    """The budget alone sets the length; warm-up 30% so that it reaches past the timed first steps."""
    return cfg(**{"max_steps": None, "epochs": None, "time_budget_s": 120.0, "warmup_ratio": 0.3, "lr": LR,
                  "validate_every": None, "checkpoint_every": None, **kw})


def lrs(res) -> list[float]:
    return [h["lr"] for h in res.history if h["phase"] == "train"]


def assert_full_schedule(res, steps: int) -> None:
    """Warm-up to the peak LR, then a monotone cosine decay whose last step is the last before 0: the step
    after it would have LR 0 (a schedule cut short would end high, in its warm-up or mid-decay)."""
    rates = lrs(res)
    assert len(rates) == steps == res.steps == res.schedule["total_steps"]
    peak = rates.index(max(rates))
    assert rates[peak] == pytest.approx(LR) and peak == res.schedule["warmup_steps"] - 1
    assert all(a >= b for a, b in zip(rates[peak:], rates[peak + 1:], strict=False))
    schedule = Schedule(steps, res.schedule["warmup_steps"])
    assert rates[-1] == pytest.approx(LR * schedule.factor(steps - 1)) and schedule.factor(steps) == 0.0
    assert rates[-1] < 0.02 * LR


# ---------------------------------------------------------------------------------------------- the estimate
def test_budget_fit_is_the_longest_horizon_that_fits_and_is_stable():
    c = TrainConfig(max_steps=None, epochs=None, time_budget_s=100.0, warmup_ratio=0.1, validate_every=None,
                    checkpoint_every=0)
    budget = Budget(100.0, validate_s=2.0)
    first = budget.fit(Schedule.budgeted(None, 0.1), c, step=4, used_s=10.0, step_s=1.0)
    # 90 s left: (H - 4) steps of 1 s and 2 s per validation (every H // 4 = 21 steps, and the final one)
    assert (first.total_steps, first.warmup_steps, first.step_s, first.estimated_at) == (84, 8, 1.0, 4)
    assert 80 + 4 * 2.0 <= 90 < 81 + 5 * 2.0
    # at step 40 the same pace has spent 36 s more and one validation (step 21): the same horizon
    again = budget.fit(first, c, step=40, used_s=10.0 + 36 + 2.0, step_s=1.0)
    assert (again.total_steps, again.warmup_steps) == (84, 8)
    # twice as slow from now on: 52 s left = 24 steps of 2 s + validations at 48 and at the end; warm-up kept
    slower = budget.fit(first, c, step=40, used_s=48.0, step_s=2.0)
    assert slower.total_steps == 64 and slower.warmup_steps == 8
    assert budget.fit(first, c, step=40, used_s=101.0, step_s=1.0).total_steps == 40  # spent: stop now
    # an estimate during the warm-up resizes it, never below the steps done: twice as slow from step 6
    # leaves 88 s for 39 steps and 5 validations, and a warm-up of 10% = 4 < 6 steps ends it now
    early = budget.fit(first, c, step=6, used_s=12.0, step_s=2.0)
    assert (early.total_steps, early.warmup_steps) == (45, 6) and early.factor(6) == 1.0
    capped = budget.fit(Schedule.budgeted(50, 0.1), c, step=4, used_s=10.0, step_s=1.0)
    assert (capped.total_steps, capped.warmup_steps) == (50, 5)


def test_schedule_before_the_estimate():
    assert Schedule.budgeted(None, 0.3).factor(0) == 0.0  # nothing known: the timed steps do not move
    capped = Schedule.budgeted(20, 0.3)  # with a cap: that schedule's (longest) warm-up
    assert [capped.factor(s) for s in range(3)] == [1 / 6, 2 / 6, 3 / 6] and capped.end == 20
    with pytest.raises(TrainError) as e:
        TrainConfig(max_steps=None, epochs=None).validate()
    assert e.value.code == "invalid_train_config" and e.value.where == "max_steps"


# ------------------------------------------------------------------------------------------------ whole runs
def test_budgeted_run_warms_up_and_decays_within_the_budget(target, tmp_path, monkeypatch):  # noqa: F811
    clock = FakeClock()
    fake_durations(monkeypatch, clock, lambda n: 4.0, validate_s=1.0, checkpoint_s=0.5)
    seen = []
    res = train(target, make_drafter(target), TRAIN, VAL, budgeted(), tmp_path, progress=seen.append,
                clock=clock)
    # 1 s initial validation + 4 timed steps, then 103 s left: 24 steps of 4 s and 4.5 s of the validations
    # and checkpoints at steps 10 and 20 and at the end
    assert_full_schedule(res, 28)
    assert res.stop_reason == "time_budget" and res.schedule["step_s"] == 4.0
    assert lrs(res)[:4] == [0.0] * 4  # the timed first steps, before anything is known of the horizon
    assert 120 - 4 < clock.now <= 120  # trained for the budget, and no longer
    # the first estimate (step 4) cannot know a checkpoint's cost; the one after the first checkpoint takes
    # it in, and the later ones at the same pace change nothing
    schedule = [p for p in seen if p.phase == "schedule"]
    assert [(p.step, p.total_steps) for p in schedule] == [(4, 29), (10, 28)]
    assert "4 s per step" in schedule[0].message and "schedule of 29 steps, warm-up 8" in schedule[0].message
    train_reports = [p for p in seen if p.phase == "train"]
    assert train_reports[0].step == 5 and {p.total_steps for p in train_reports} == {29, 28}


def test_horizon_follows_a_slowdown(target, tmp_path, monkeypatch):  # noqa: F811
    clock = FakeClock()
    fake_durations(monkeypatch, clock, lambda n: 4.0 if n <= 12 else 6.0)
    seen = []
    res = train(target, make_drafter(target), TRAIN, [], budgeted(), tmp_path, progress=seen.append,
                clock=clock)
    horizons = [p.total_steps for p in seen if p.phase == "schedule"]
    assert horizons[0] == 30 and horizons == sorted(horizons, reverse=True) and len(horizons) >= 2
    assert_full_schedule(res, horizons[-1])
    assert res.stop_reason == "time_budget" and clock.now <= 120


def test_resume_keeps_the_horizon(target, tmp_path, monkeypatch):  # noqa: F811
    clock = FakeClock()  # reset to 0 for each run: each stands for a new process
    fake_durations(monkeypatch, clock, lambda n: 4.0)
    full = train(target, make_drafter(target), TRAIN, VAL, budgeted(), tmp_path / "full", clock=clock)
    assert_full_schedule(full, 30)
    at = {"step": 0}
    clock.now = 0.0
    part = train(target, make_drafter(target), TRAIN, VAL, budgeted(), tmp_path / "run", clock=clock,
                 progress=lambda p: at.update(step=p.step), should_stop=lambda: at["step"] >= 15)
    assert part.cancelled and part.steps == 15
    seen = []
    clock.now = 0.0  # the budget spent before comes from the checkpoint
    resumed = train(target, make_drafter(target), TRAIN, VAL, budgeted(), tmp_path / "run", clock=clock,
                    progress=seen.append)
    horizon = {k: full.schedule[k] for k in ("total_steps", "warmup_steps", "step_s")}
    assert {k: resumed.schedule[k] for k in horizon} == horizon and lrs(resumed) == lrs(full)
    assert not [p for p in seen if p.phase == "schedule"]  # kept, not measured again
    assert resumed.stop_reason == "time_budget" and clock.now == 15 * 4.0  # 60 s used before, 60 s here


def test_step_cap_under_a_generous_budget_is_the_fixed_schedule(target, tmp_path, monkeypatch):  # noqa: F811
    clock = FakeClock()
    fake_durations(monkeypatch, clock, lambda n: 4.0)
    capped = train(target, make_drafter(target), TRAIN, [], budgeted(max_steps=12, time_budget_s=1000.0),
                   tmp_path / "b", clock=clock)
    fixed = train(target, make_drafter(target), TRAIN, [], budgeted(max_steps=12, time_budget_s=None),
                  tmp_path / "f")
    assert capped.stop_reason == "max_steps" and capped.steps == capped.schedule["total_steps"] == 12
    assert lrs(capped) == lrs(fixed)  # the timed first steps followed the cap's warm-up, as the estimate does


def test_training_stage_states_the_estimate(target_dir, tmp_path, monkeypatch):  # noqa: F811
    """recipe.time_budget_s reaches the trainer through the stage, and the estimate reaches the job as a
    progress message. A cap far inside the budget, and an estimate after the 3 timed steps whatever share
    of the budget they took, make the outcome independent of the machine's speed."""
    from tests.test_train_fsdp import _run_train_stage

    monkeypatch.setattr(train_loop, "PROBE_FRACTION", 0.0)
    messages: list[str] = []
    out, _ = _run_train_stage(target_dir, tmp_path, "work", time_budget_s=3600.0, max_steps=6,
                              progress=lambda frac, eta=None, message=None: messages.append(message))
    assert out["steps"] == 6 and out["stop_reason"] == "max_steps"
    assert out["schedule"]["total_steps"] == 6 and out["train_config"]["checkpoint_every"] is None
    stated = [m for m in messages if m and "schedule of 6 steps" in m]
    assert len(stated) == 1 and "time budget 3600 s" in stated[0] and "(the step cap)" in stated[0]
