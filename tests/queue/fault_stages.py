"""Stage functions of the fault-injection suite: short, but every one goes through the real database and
the real artifact store (S3 on moto), so a fault anywhere shows in the outcome.

Selected with ``TRACEDRAFT_TEST_STAGES=tests.queue.fault_stages:STAGES``. ``spec["fault"]``: ``steps``
(training steps, default 6) of ``step_s`` seconds (default 0.4).

- validate: the real ``service.datasets.validate_dataset`` (raw files fetched from the store, verified);
- prepare: a small file to ``jobs/<id>/prepared.json``;
- train: a checkpoint per step to ``jobs/<id>/checkpoints/step_NNN.json`` (atomic store write), each
  announced by a ``checkpoint`` event; a restarted run resumes from the newest announced checkpoint, read
  back hash-verified. When ``<home>/faults/fail-store-write`` exists the next checkpoint write fails
  half-way (the file is consumed): the artifact store failing mid-checkpoint, a transient error;
- evaluate: reads the last checkpoint back, verified;
- register: the real ``service.registry.register_version`` (idempotent by job id: one version per job).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from workers.context import StageContext, TransientError

FAIL_WRITE = "fail-store-write"


def fault_file(home: Path | str, name: str) -> Path:
    """The marker file a fault injector creates for the stages to see (``<home>/faults/<name>``)."""
    return Path(home) / "faults" / name


def _pause(ctx: StageContext, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.05)


def validate(ctx: StageContext) -> dict[str, Any]:
    from service import datasets

    with ctx.sessions() as session:
        ds = datasets.validate_dataset(session, ctx.store, ctx.dataset_id, ctx.workdir, heldout_fraction=0.2)
        status, counts = ds.status, dict(ds.counts or {})
    _pause(ctx, float(ctx.spec.get("fault", {}).get("step_s", 0.4)) * 2)
    if status != "ready":
        from drafters.errors import TracedraftError

        raise TracedraftError("dataset_not_ready", f"dataset validation ended {status}", "dataset")
    return {"counts": counts}


def prepare(ctx: StageContext) -> dict[str, Any]:
    _pause(ctx, float(ctx.spec.get("fault", {}).get("step_s", 0.4)) * 2)
    stored = ctx.store.put_bytes(f"jobs/{ctx.job_id}/prepared.json", json.dumps({"rows": 10}).encode())
    return {"prepared": {"uri": stored.uri, "sha256": stored.sha256}}


def regenerate(ctx: StageContext) -> dict[str, Any]:
    _pause(ctx, float(ctx.spec.get("fault", {}).get("step_s", 0.4)) * 2)
    stored = ctx.store.put_bytes(f"jobs/{ctx.job_id}/regenerated.json", json.dumps({"rows": 10}).encode())
    return {"regenerated": True, "regenerated_dir": {"uri": stored.uri, "sha256": stored.sha256}}


def _write_checkpoint(ctx: StageContext, step: int) -> dict[str, Any]:
    data = json.dumps({"step": step, "weights": [step * 0.25] * 8}).encode()
    key = f"jobs/{ctx.job_id}/checkpoints/step_{step:03d}.json"
    marker = fault_file(ctx.settings.home, FAIL_WRITE)
    with ctx.store.open_write(key) as w:
        w.write(data[: len(data) // 2])
        try:
            marker.unlink()
        except FileNotFoundError:
            pass
        else:
            raise TransientError(f"injected: the artifact store failed writing {key}", code="artifact_io")
        w.write(data[len(data) // 2 :])
    return {"step": step, "uri": w.uri, "sha256": hashlib.sha256(data).hexdigest()}


def _last_checkpoint(ctx: StageContext) -> dict[str, Any] | None:
    from service import jobs

    last = None
    with ctx.sessions() as session:
        for ev in jobs.list_events(session, ctx.job_id, limit=100_000):
            ck = (ev.data or {}).get("fault_checkpoint")
            if ck:
                last = ck
    return last


def train(ctx: StageContext) -> dict[str, Any]:
    fault = ctx.spec.get("fault", {})
    steps, step_s = int(fault.get("steps", 6)), float(fault.get("step_s", 0.4))
    last = _last_checkpoint(ctx)
    start = 0
    if last is not None:
        state = json.loads(ctx.store.get_bytes(last["uri"], last["sha256"]))  # verified: never half a file
        start = state["step"]
        ctx.event("info", "message", f"resuming from checkpoint step {start}", {"step": start})
    for step in range(start + 1, steps + 1):
        _pause(ctx, step_s)
        ck = _write_checkpoint(ctx, step)
        ctx.event("info", "metrics", "checkpoint saved", {"fault_checkpoint": ck})
        ctx.progress(step / steps)
    return {"steps": steps, "resumed_from": start, "last": _last_checkpoint(ctx)}


def evaluate(ctx: StageContext) -> dict[str, Any]:
    last = ctx.results["training"]["last"]
    state = json.loads(ctx.store.get_bytes(last["uri"], last["sha256"]))
    _pause(ctx, float(ctx.spec.get("fault", {}).get("step_s", 0.4)) * 2)
    return {"tau": 1.0 + state["step"] / 10}


def register(ctx: StageContext) -> dict[str, Any]:
    from service import registry

    last = ctx.results["training"]["last"]
    ckpt = ctx.workdir / "final"
    ckpt.mkdir(parents=True, exist_ok=True)
    (ckpt / "weights.json").write_bytes(ctx.store.get_bytes(last["uri"], last["sha256"]))
    _pause(ctx, float(ctx.spec.get("fault", {}).get("step_s", 0.4)) * 2)
    with ctx.sessions() as session:
        v = registry.register_version(
            session,
            ctx.store,
            ctx.org_id,
            "fault-drafter",
            "fault/target",
            ctx.job_id,
            ckpt,
            config={"steps": last["step"]},
            lineage={
                "target_model": "fault/target",
                "tokenizer_sha256": "t" * 64,
                "chat_template_sha256": "c" * 64,
                "pid": os.getpid(),
            },
            report={"tau": ctx.results["evaluating"]["tau"]},
            gate={"passed": False, "reasons": ["fault suite"]},
        )
        return {"version": v.version, "version_id": v.id}


STAGES = {
    "validate": validate,
    "prepare": prepare,
    "regenerate": regenerate,
    "train": train,
    "evaluate": evaluate,
    "register": register,
}
