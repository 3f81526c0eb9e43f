"""A first use of a target that converts or merges it (drafters.target_cache.build_once) is never silent:
a report when it starts, at each step, every BUILD_REPORT_S seconds from a clock, and when it ends; the
ETA is None until a step has finished, then recomputed from the seconds the finished steps took."""

from __future__ import annotations

import time

from drafters import target_cache
from drafters.target_cache import CACHE_MARKER, build_once, build_step, reporting_builds

STEPS = (("reading", 0.5), ("merging", 0.25), ("writing", 0.25))


def _build(tmp):
    build_step("reading")
    time.sleep(0.4)
    build_step("merging")
    time.sleep(0.3)
    build_step("writing")
    (tmp / "model.safetensors").write_bytes(b"x")
    return {"name": "fake"}


def test_a_build_reports_its_steps_a_clock_and_an_eta_recomputed_as_it_proceeds(tmp_path, monkeypatch):
    monkeypatch.setattr(target_cache, "BUILD_REPORT_S", 0.05)
    seen = []
    with reporting_builds(lambda message, eta: seen.append((message, eta))):
        dest = build_once(tmp_path / "targets" / "abc", _build, "converting the target x.gguf", STEPS)
    assert (dest / CACHE_MARKER).is_file()
    messages = [m for m, _ in seen]
    assert messages[0].startswith("converting the target x.gguf (once: cached under ")
    reading = [(m, eta) for m, eta in seen if "step 1 of 3, reading" in m]
    assert len(reading) >= 2 and all(eta is None for _, eta in reading)  # the clock ticks; no step done yet
    merging = [eta for m, eta in seen if "step 2 of 3, merging" in m]
    assert len(merging) >= 2 and all(eta is not None for eta in merging)
    assert merging[0] > merging[-1] >= 0  # recomputed at every tick: it counts down as the step runs
    assert 0.35 <= merging[0] < 1.5  # reading took 0.4 s or more for half the work: the other half about as long
    assert messages[-1].startswith("converting the target x.gguf: done in") and seen[-1][1] == 0.0
    seen.clear()
    with reporting_builds(lambda message, eta: seen.append((message, eta))):
        build_once(tmp_path / "targets" / "abc", _build, "converting the target x.gguf", STEPS)
    assert seen == []  # cached: nothing to build, nothing to say


def test_a_build_without_a_listener_runs_silently(tmp_path):
    assert (build_once(tmp_path / "t", _build, "x", STEPS) / CACHE_MARKER).is_file()


def test_a_stage_hears_the_build_as_progress_events(tmp_path, monkeypatch):
    """The stages load the target inside ``reporting_target_builds``: a build becomes stage progress (fraction
    0, the build's ETA, its message: a progress event each, the job row's ETA with it)."""
    from workers.stages.common import reporting_target_builds

    class Ctx:
        calls: list = []

        def progress(self, fraction, eta=None, message=None):
            self.calls.append((fraction, eta, message))

    monkeypatch.setattr(target_cache, "BUILD_REPORT_S", 0.05)
    ctx = Ctx()
    with reporting_target_builds(ctx):
        build_once(tmp_path / "t", _build, "merging the adapter", STEPS)
    assert ctx.calls[0][0] == 0.0 and ctx.calls[0][2].startswith("merging the adapter (once")
    assert any(eta is not None for _, eta, _ in ctx.calls) and ctx.calls[-1][2].startswith("merging the adapter: done")


def test_stage_pace_reports_from_a_clock_between_units_with_an_eta_that_counts_down(monkeypatch):
    """A stage of long units (held-out replays): each report says how far it is; between two units the
    clock's reports count the ETA down, never below the units after the one running."""
    from workers.stages import common

    class Ctx:
        def __init__(self):
            self.calls = []

        def progress(self, fraction, eta=None, message=None):
            self.calls.append((fraction, eta, message))

    now = [100.0]
    monkeypatch.setattr(common.time, "monotonic", lambda: now[0])
    ctx = Ctx()
    pace = common.StagePace(ctx, "held-out replays")
    pace.report()
    assert ctx.calls[-1] == (0.0, None, "held-out replays (0 s so far)")
    now[0] += 10
    pace.done(1, 4)  # 10 s a unit, 3 left
    assert ctx.calls[-1] == (0.25, 30.0, "held-out replays 1/4 (10 s so far)")
    now[0] += 4
    pace.report()
    assert ctx.calls[-1][1] == 26.0
    now[0] += 40  # the second unit overran: the two after it are still left
    pace.report()
    assert ctx.calls[-1][1] == 20.0 and ctx.calls[-1][2] == "held-out replays 1/4 (54 s so far)"
