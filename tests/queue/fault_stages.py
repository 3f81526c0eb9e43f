"""Stage functions of the fault-injection suite: short, but every one goes through the real database and
the real artifact store (S3 on moto, reached through ``tests.queue.fault_proxy``), so a fault anywhere shows
in the outcome.

Selected with ``TRACEDRAFT_TEST_STAGES=tests.queue.fault_stages:STAGES``. ``spec["fault"]``: ``steps``
(training steps, default 6) of ``step_s`` seconds (default 0.4).

- validate: the real ``service.datasets.validate_dataset`` (raw files fetched from the store, verified);
- prepare, regenerate: a small file each to ``jobs/<id>/`` (``ArtifactStore.put_bytes``);
- train: a checkpoint directory per step (``step_NNN/``: state and weights; ``best/`` every other step and
  at the end) mirrored to the store by the real ``workers.stages.common.CheckpointSync`` (``publish`` ->
  ``ArtifactStore.put_dir``, then a ``checkpoint`` event naming it), as the training stage does. Every start
  discards the local run directory first, as if it ran on another machine, so a restarted or retried stage
  resumes from the newest checkpoint announced in the store (``CheckpointSync.restore``, hash-verified;
  the weights are checked again here). After a checkpoint it stops when the job's cancel was requested;
- evaluate: fetches ``best`` (verified), writes a small report directory and publishes it;
- register: the real ``service.registry.register_version`` with the fetched checkpoint and report directory
  (idempotent by job id: one version per job).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from drafters.errors import TracedraftError
from workers.context import StageContext

WEIGHTS_BYTES = 32 * 1024


def _pause(ctx: StageContext, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.05)


def _step_s(ctx: StageContext) -> float:
    return float(ctx.spec.get("fault", {}).get("step_s", 0.4))


def validate(ctx: StageContext) -> dict[str, Any]:
    from service import datasets

    with ctx.sessions() as session:
        ds = datasets.validate_dataset(session, ctx.store, ctx.dataset_id, ctx.workdir, heldout_fraction=0.2)
        status, counts = ds.status, dict(ds.counts or {})
    _pause(ctx, _step_s(ctx) * 2)
    if status != "ready":
        raise TracedraftError("dataset_not_ready", f"dataset validation ended {status}", "dataset")
    return {"counts": counts}


def prepare(ctx: StageContext) -> dict[str, Any]:
    _pause(ctx, _step_s(ctx) * 2)
    stored = ctx.store.put_bytes(f"jobs/{ctx.job_id}/prepared.json", json.dumps({"rows": 10}).encode())
    return {"prepared": {"uri": stored.uri, "sha256": stored.sha256}}


def regenerate(ctx: StageContext) -> dict[str, Any]:
    _pause(ctx, _step_s(ctx) * 2)
    stored = ctx.store.put_bytes(f"jobs/{ctx.job_id}/regenerated.json", json.dumps({"rows": 10}).encode())
    return {"regenerated": True, "regenerated_dir": {"uri": stored.uri, "sha256": stored.sha256}}


def weights(step: int) -> bytes:
    """The (made-up) weights after ``step``: deterministic, so a resumed run can check what it read."""
    return (hashlib.sha256(f"step {step}".encode()).digest() * (WEIGHTS_BYTES // 32))[:WEIGHTS_BYTES]


def _save_step(run_dir: Path, step: int, best: bool) -> None:
    """Write ``step_NNN/`` (and ``best/`` when ``best``), then the markers CheckpointSync reads."""
    d = run_dir / f"step_{step:03d}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "state.json").write_text(json.dumps({"step": step}))
    (d / "weights.bin").write_bytes(weights(step))
    if best:
        shutil.rmtree(run_dir / "best", ignore_errors=True)
        shutil.copytree(d, run_dir / "best")
        (run_dir / "best.json").write_text(json.dumps({"step": step, "dir": d.name}))
    (run_dir / "latest.json").write_text(json.dumps({"dir": d.name, "step": step}))


def _resume_step(run_dir: Path) -> int:
    """The step the run directory's latest checkpoint holds (0: none), its weights checked."""
    marker = run_dir / "latest.json"
    if not marker.is_file():
        return 0
    step_dir = run_dir / json.loads(marker.read_text())["dir"]
    step = json.loads((step_dir / "state.json").read_text())["step"]
    if (step_dir / "weights.bin").read_bytes() != weights(step):
        raise TracedraftError("checkpoint_corrupt", f"checkpoint {step_dir.name} holds other weights", "training")
    return step


def train(ctx: StageContext) -> dict[str, Any]:
    from workers.stages.common import CheckpointSync, publish

    fault = ctx.spec.get("fault", {})
    steps, step_s = int(fault.get("steps", 6)), float(fault.get("step_s", 0.4))
    run_dir = ctx.workdir / "checkpoints"
    shutil.rmtree(run_dir, ignore_errors=True)  # as on another machine: resume from the store
    sync = CheckpointSync(ctx, run_dir)
    sync.restore()
    start = _resume_step(run_dir)
    if start:
        ctx.event("info", "message", f"resuming from checkpoint step {start}", {"step": start})
    for step in range(start + 1, steps + 1):
        _pause(ctx, step_s)
        _save_step(run_dir, step, best=step % 2 == 0 or step == steps)
        sync.push()  # publish -> ArtifactStore.put_dir, then the checkpoint event
        ctx.progress(step / steps)
        if step < steps and ctx.cancelled():
            return {"cancelled": True, "step": step}
    return {"steps": steps, "resumed_from": start, "best_step": steps,
            "best": publish(ctx, run_dir / "best", "best")}


def evaluate(ctx: StageContext) -> dict[str, Any]:
    from workers.stages.common import fetch, publish

    best = fetch(ctx, ctx.results["training"]["best"], ctx.workdir / "evaluation" / "best")
    step = json.loads((best / "state.json").read_text())["step"]
    _pause(ctx, _step_s(ctx) * 2)
    tau = 1.0 + step / 10
    report = ctx.workdir / "evaluation" / "report"
    report.mkdir(parents=True, exist_ok=True)
    (report / "report.json").write_text(json.dumps({"tau": tau, "step": step}))
    (report / "report.html").write_text(f"<html><body>tau {tau}</body></html>")
    return {"tau": tau, "report": {"tau": tau}, "report_files": publish(ctx, report, "report")}


def register(ctx: StageContext) -> dict[str, Any]:
    from service import registry
    from workers.stages.common import fetch

    trained, evaluated = ctx.results["training"], ctx.results["evaluating"]
    best = fetch(ctx, trained["best"], ctx.workdir / "final")
    report_dir = fetch(ctx, evaluated["report_files"], ctx.workdir / "report")
    _pause(ctx, _step_s(ctx) * 2)
    with ctx.sessions() as session:
        v = registry.register_version(
            session,
            ctx.store,
            ctx.org_id,
            "fault-drafter",
            "fault/target",
            ctx.job_id,
            best,
            config={"steps": trained["best_step"]},
            lineage={
                "target_model": "fault/target",
                "tokenizer_sha256": "t" * 64,
                "chat_template_sha256": "c" * 64,
                "pid": os.getpid(),
            },
            report=evaluated["report"],
            gate={"passed": False, "reasons": ["fault suite"]},
            report_dir=report_dir,
        )
        return {"version": v.version, "version_id": v.id, "checkpoint_uri": v.checkpoint_uri,
                "report_uri": v.report_uri}


STAGES = {
    "validate": validate,
    "prepare": prepare,
    "regenerate": regenerate,
    "train": train,
    "evaluate": evaluate,
    "register": register,
}
