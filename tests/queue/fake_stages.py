"""Stand-in stage functions for the queue tests and the queue benchmark (no ML).

Selected in worker subprocesses with ``TRACEDRAFT_TEST_STAGES=tests.queue.fake_stages:STAGES``.
Behaviour is driven by ``spec["fake"]``:

- ``train_steps`` (default 3) steps of ``step_s`` seconds (default 0); ``train`` checkpoints after every
  step to ``<workdir>/checkpoints/ckpt.json`` (atomic rename; ``checkpoints/`` is what a failed or
  cancelled job's work directory keeps for its resume) and resumes from it, reports progress, polls cancel;
- ``die_at_step``: on the first attempt, SIGKILL its own process when reaching that step;
- ``die_always``: SIGKILL its own process at step 1 on every attempt (a worker that keeps dying);
- ``transient``: raise ``TransientError`` on the first N attempts of ``train``;
- ``fail``: ``{"stage", "code", "message", "where"}``, raise that ``TracedraftError`` in that stage.

Every call appends a JSON line to ``<home>/test-calls/<job_id>.log`` (``stage``, ``event`` start|end,
``pid``, ``attempt``, ``t``) so tests can check what ran, where and how often; outside the work
directory, which goes when the job ends (``workers.workdirs``).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from drafters.errors import TracedraftError
from workers.context import StageContext, TransientError


def calls_path(workdir: Path) -> Path:
    """Where the calls of the job owning ``workdir`` (``<home>/work/<job_id>``) are logged."""
    workdir = Path(workdir)
    return workdir.parent.parent / "test-calls" / f"{workdir.name}.log"


def ckpt_path(workdir: Path) -> Path:
    """The fake training checkpoint of the job owning ``workdir``."""
    return Path(workdir) / "checkpoints" / "ckpt.json"


def _log(ctx: StageContext, event: str, **extra: Any) -> None:
    line = {"stage": ctx.stage, "event": event, "pid": os.getpid(), "attempt": ctx.attempt,
            "t": time.time(), **extra}
    path = calls_path(ctx.workdir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_calls(workdir: Path) -> list[dict[str, Any]]:
    """The logged calls of the job owning ``workdir``."""
    path = calls_path(workdir)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _maybe_fail(ctx: StageContext) -> None:
    fail = ctx.spec.get("fake", {}).get("fail")
    if fail and fail.get("stage") == ctx.stage:
        raise TracedraftError(fail.get("code", "bad_data"), fail.get("message", "bad data"), fail.get("where"))


def _simple(name: str):
    def stage(ctx: StageContext) -> dict[str, Any]:
        _log(ctx, "start")
        _maybe_fail(ctx)
        ctx.progress(1.0)
        _log(ctx, "end")
        return {"ok": True, "stage": name, "pid": os.getpid()}

    stage.__name__ = name
    return stage


def _write_checkpoint(path: Path, step: int) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"step": step, "weights": [step * 0.5] * 4}))
    os.replace(tmp, path)  # atomic: a kill -9 never leaves a half-written checkpoint


def train(ctx: StageContext) -> dict[str, Any]:
    """Fake training: ``train_steps`` steps, checkpoint each, resume, cancel, die on demand."""
    fake = ctx.spec.get("fake", {})
    steps = int(fake.get("train_steps", 3))
    step_s = float(fake.get("step_s", 0.0))
    ckpt = ckpt_path(ctx.workdir)
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    start = json.loads(ckpt.read_text())["step"] if ckpt.exists() else 0
    _log(ctx, "start", resumed_from=start)
    _maybe_fail(ctx)
    if ctx.attempt <= int(fake.get("transient", 0)):
        raise TransientError(f"fake SGLang 503 on attempt {ctx.attempt}", code="engine_unavailable",
                             retry_after=0.2)
    if start:
        ctx.event("info", "message", f"resuming from checkpoint step {start}", {"step": start})
    for step in range(start + 1, steps + 1):
        if fake.get("die_always") or (fake.get("die_at_step") == step and ctx.attempt == 1):
            os.kill(os.getpid(), signal.SIGKILL)
        if ctx.cancelled():
            _log(ctx, "cancelled", step=step - 1)
            return {"cancelled": True, "checkpoint": str(ckpt), "step": step - 1}
        time.sleep(step_s)
        _write_checkpoint(ckpt, step)
        ctx.progress(step / steps, eta_seconds=(steps - step) * step_s)
    ctx.metrics({"step": steps, "loss": 1.0 / steps})
    _log(ctx, "end", step=steps)
    return {"steps": steps, "resumed_from": start, "checkpoint": str(ckpt), "pid": os.getpid()}


def register(ctx: StageContext) -> dict[str, Any]:
    """Fake registration, idempotent by job id like ``service.registry.register_version``."""
    _log(ctx, "start")
    _maybe_fail(ctx)
    marker = ctx.workdir / "registered.json"
    if marker.exists():
        version = json.loads(marker.read_text())
        version["existing"] = True
    else:
        version = {"job_id": ctx.job_id, "version": 1}
        marker.write_text(json.dumps(version))
    _log(ctx, "end")
    return version


STAGES = {
    "validate": _simple("validate"),
    "prepare": _simple("prepare"),
    "regenerate": _simple("regenerate"),
    "train": train,
    "evaluate": _simple("evaluate"),
    "register": register,
}


def _noop(ctx: StageContext) -> dict[str, Any]:
    return {}


#: For the benchmark: every stage does nothing.
NOOP_STAGES = {name: _noop for name in STAGES}
