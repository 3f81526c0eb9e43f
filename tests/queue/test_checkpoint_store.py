"""What a job's training leaves in the artifact store: one latest and one best checkpoint while it runs (what
a resume needs), none of its step checkpoints once it succeeded (its version holds the weights), all of them
while it may still resume (failed)."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

from drafters.errors import TracedraftError


def _step(run, step: int, best: bool) -> None:
    d = run / f"step_{step:06d}"
    d.mkdir(parents=True)
    (d / "model.safetensors").write_bytes(os.urandom(64))
    if best:
        (run / "best").mkdir(exist_ok=True)
        (run / "best" / "model.safetensors").write_bytes(os.urandom(64))
        (run / "best.json").write_text(json.dumps({"step": step}))
    (run / "latest.json").write_text(json.dumps({"dir": d.name, "step": step}))


def test_a_running_job_keeps_one_latest_and_one_best_checkpoint_in_the_store(tmp_path):
    from service.storage import ArtifactStore
    from workers.stages.common import CheckpointSync

    store = ArtifactStore(f"file://{tmp_path / 'store'}")
    events: list[dict] = []
    ctx = SimpleNamespace(settings=SimpleNamespace(pipeline="celery"), store=store, job_id="job_x",
                          event=lambda level, type, message, data=None: events.append(data))
    run = tmp_path / "run"
    sync = CheckpointSync(ctx, run)
    for step, best in ((10, True), (20, True), (30, False), (40, False)):  # the best stops improving at 20
        _step(run, step, best)
        sync.push()
    keys = [i.key for i in store.list()]
    assert keys == ["jobs/job_x/checkpoints/best-000020/model.safetensors",
                    "jobs/job_x/checkpoints/step_000040/model.safetensors"]
    # every push was announced, and the last event names what the store still holds (a resume's source)
    named = {k: v["uri"] for e in events for k, v in e["checkpoint"].items()}
    assert named == {"latest": store.uri("jobs/job_x/checkpoints/step_000040"),
                     "best": store.uri("jobs/job_x/checkpoints/best-000020")}


def _stage_files(store, job_id: str) -> None:
    for name in ("checkpoints/step_000040/model.safetensors", "checkpoints/best-000020/model.safetensors",
                 "best/model.safetensors"):
        store.put_bytes(f"jobs/{job_id}/{name}", os.urandom(32))


def test_a_succeeded_job_leaves_no_training_checkpoint_in_the_store(queue_env, monkeypatch):
    from service import jobs, queue
    from service.settings import get_settings
    from service.storage import ArtifactStore
    from workers import tasks

    store = ArtifactStore.from_settings(get_settings())
    monkeypatch.setattr(queue, "dispatch", lambda *a, **k: None)
    task = SimpleNamespace(request=SimpleNamespace(id="t", retries=0, is_eager=False))

    done = queue_env.submit({"fake": {}}, dispatch=False)
    failed = queue_env.submit({"fake": {}}, dispatch=False)
    for job_id in (done, failed):
        with queue_env.sessions() as s:
            jobs.set_stage(s, job_id, "registering")
        _stage_files(store, job_id)

    monkeypatch.setitem(tasks.STAGE_FUNCTIONS, "register", lambda ctx: {"version": 1})
    assert tasks.run_stage(task, "register", done)["outcome"] == "done"
    assert queue_env.job(done).status == "succeeded"
    assert [i.key for i in store.list(f"jobs/{done}")] == [f"jobs/{done}/best/model.safetensors"]

    def fail(ctx):
        raise TracedraftError("registry_unavailable", "the registry refused the version")

    monkeypatch.setitem(tasks.STAGE_FUNCTIONS, "register", fail)
    assert tasks.run_stage(task, "register", failed)["outcome"] == "failed"
    assert len(store.list(f"jobs/{failed}/checkpoints")) == 2  # it may resume: its checkpoints stay
