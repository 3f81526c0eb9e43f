"""The job pipeline on the real Redis broker and PostgreSQL database, with real worker processes.

Stage functions are the stand-ins of ``tests/queue/fake_stages.py`` (no ML): the queue machinery is
tested on its own. Each test starts its own workers (``python -m workers.worker``) and stops them.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.queue.fake_stages import ckpt_path, read_calls

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.timeout(120)]

ALL_STAGES = ["validating", "preparing", "regenerating", "training", "evaluating", "registering"]


def _ends(calls, stage):
    return [c for c in calls if c["stage"] == stage and c["event"] == "end"]


def test_job_runs_through_all_stages_on_a_separate_worker(queue_env, workers):
    w = workers.start("cpu,gpu")
    job_id = queue_env.submit({"fake": {"train_steps": 3}})
    job = queue_env.wait(job_id, timeout=30)

    assert job.status == "succeeded", job.error
    assert job.error is None and job.attempts == 1 and job.progress == pytest.approx(1.0)
    assert sorted(job.result) == sorted(ALL_STAGES)  # JSONB keeps no key order
    assert job.result["registering"] == {"job_id": job_id, "version": 1}
    assert job.result["training"]["steps"] == 3 and job.result["training"]["resumed_from"] == 0
    # ran in the worker's pool process, not in this test process
    assert job.result["validating"]["pid"] not in (w.pid, __import__("os").getpid())
    calls = read_calls(queue_env.workdir(job_id))
    for stage in ("validate", "prepare", "regenerate", "train", "evaluate", "register"):
        assert len(_ends(calls, stage)) == 1, stage
    # the event stream tells the story in order, with gapless sequence numbers
    events = queue_env.events(job_id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    started = [e.data["stage"] for e in events if e.type == "stage" and (e.data or {}).get("status") == "running"]
    assert started == ALL_STAGES
    assert events[-1].data["status"] == "succeeded"
    assert any(e.type == "progress" and e.data["stage"] == "training" for e in events)
    assert any(e.type == "metrics" and e.data.get("step") == 3 for e in events)


def test_redelivered_finished_stage_is_a_noop(queue_env, workers):
    from service.queue import dispatch

    workers.start("cpu,gpu")
    job_id = queue_env.submit({"fake": {"train_steps": 1}})
    assert queue_env.wait(job_id, timeout=30).status == "succeeded"
    n_events = len(queue_env.events(job_id))
    for stage in ("validate", "train", "register"):
        dispatch(stage, job_id)  # duplicates, as a broker or the reconciler may send
    time.sleep(1.5)
    job = queue_env.job(job_id)
    assert job.status == "succeeded" and job.attempts == 1
    assert len(queue_env.events(job_id)) == n_events
    calls = read_calls(queue_env.workdir(job_id))
    assert len([c for c in calls if c["event"] == "start"]) == len(ALL_STAGES)


def test_kill9_during_training_resumes_from_checkpoint(queue_env, workers):
    w1 = workers.start("cpu,gpu")
    job_id = queue_env.submit({"fake": {"train_steps": 30, "step_s": 0.1}})
    ckpt = ckpt_path(queue_env.workdir(job_id))

    def trained_some(_job):
        return ckpt.exists() and json.loads(ckpt.read_text())["step"] >= 5

    queue_env.wait(job_id, trained_some, timeout=30)
    w1.kill9()
    killed = time.monotonic()
    killed_at = json.loads(ckpt.read_text())["step"]
    assert queue_env.job(job_id).status == "running" and queue_env.job(job_id).lease_owner

    workers.start("cpu,gpu")  # its reconciler finds the orphaned job (no lock holder, lapsed lease)
    queue_env.wait(job_id, lambda j: any("lease" in e.message and "lapsed" in e.message
                                         for e in queue_env.events(job_id)), timeout=30)
    detected_s = time.monotonic() - killed
    job = queue_env.wait(job_id, timeout=60)
    assert detected_s < 3 + 1 + 8  # lease + reconciler period + a worker's start-up

    assert job.status == "succeeded", job.error
    assert job.attempts == 2
    assert job.result["training"]["steps"] == 30
    resumed = job.result["training"]["resumed_from"]
    assert killed_at <= resumed <= killed_at + 1  # the last checkpoint, not step 0
    calls = read_calls(queue_env.workdir(job_id))
    assert len([c for c in calls if c["stage"] == "train" and c["event"] == "start"]) == 2
    assert len(_ends(calls, "train")) == 1
    assert len(_ends(calls, "register")) == 1  # exactly one version registered
    assert job.result["registering"] == {"job_id": job_id, "version": 1}
    messages = [e.message for e in queue_env.events(job_id)]
    assert any("re-dispatching stage training" in m for m in messages)
    assert any("restarted (attempt 2)" in m for m in messages)
    # attempt numbers count each stage's real attempts: the stages after training ran once
    started = {e.data["stage"]: e.data["attempt"] for e in queue_env.events(job_id)
               if e.type == "stage" and (e.data or {}).get("status") == "running"}
    assert started == {"validating": 1, "preparing": 1, "regenerating": 1, "training": 2, "evaluating": 1,
                       "registering": 1}
    # the dead worker's un-acknowledged message was deleted: the broker never hands it out again (the last
    # stage's own message is acknowledged when its task returns, a moment after the job's status commits)
    from tests.queue.conftest import redis_client

    def left() -> list[bytes]:
        return [v for v in redis_client(queue_env.redis_db).hgetall("unacked").values() if job_id.encode() in v]

    deadline = time.monotonic() + 10
    while left() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left()


def test_cancel_during_training_leaves_checkpoint_and_no_version(queue_env, workers):
    from service import jobs

    workers.start("cpu,gpu")
    job_id = queue_env.submit({"fake": {"train_steps": 100, "step_s": 0.05}})
    ckpt = ckpt_path(queue_env.workdir(job_id))
    queue_env.wait(job_id, lambda j: ckpt.exists() and json.loads(ckpt.read_text())["step"] >= 3, timeout=30)
    with queue_env.sessions() as s:
        jobs.request_cancel(s, job_id)
    job = queue_env.wait(job_id, timeout=20)

    assert job.status == "cancelled"
    state = json.loads(ckpt.read_text())  # loadable
    assert 3 <= state["step"] < 100 and state["weights"] == [state["step"] * 0.5] * 4
    assert "training" not in job.result  # not done: a resume runs the stage again from its checkpoint
    stopped = [e.data["result"] for e in queue_env.events(job_id) if (e.data or {}).get("result")]
    assert len(stopped) == 1 and stopped[0]["cancelled"] is True and stopped[0]["step"] == state["step"]
    assert "registering" not in job.result and "evaluating" not in job.result
    assert not (queue_env.workdir(job_id) / "registered.json").exists()
    calls = read_calls(queue_env.workdir(job_id))
    assert not [c for c in calls if c["stage"] in ("evaluate", "register")]


def test_cancelled_job_resumes_on_a_live_worker(queue_env, workers):
    """Cancel a training job on a live worker, then resume it as the API does (reopen, dispatch the stage):
    the same worker picks the stage up again, training continues from its checkpoint and the job succeeds
    (when a cancel revoked the stage's task id, that worker dropped the resumed message unrun, for hours)."""
    from service import jobs, queue

    workers.start("cpu,gpu")
    job_id = queue_env.submit({"fake": {"train_steps": 40, "step_s": 0.05}})
    ckpt = ckpt_path(queue_env.workdir(job_id))
    queue_env.wait(job_id, lambda j: ckpt.exists() and json.loads(ckpt.read_text())["step"] >= 3, timeout=30)
    with queue_env.sessions() as s:
        jobs.request_cancel(s, job_id)  # what POST /v1/jobs/{id}/cancel does
    assert queue_env.wait(job_id, timeout=20).status == "cancelled"
    stopped_at = json.loads(ckpt.read_text())["step"]

    with queue_env.sessions() as s:
        job = jobs.reopen_job(s, job_id, "resumed through the API at stage training")
        stage = job.stage
    queue.dispatch(stage, job_id)
    job = queue_env.wait(job_id, timeout=60)
    assert job.status == "succeeded", (job.status, job.error)
    starts = [c for c in read_calls(queue_env.workdir(job_id)) if c["stage"] == "train" and c["event"] == "start"]
    assert len(starts) == 2 and starts[1]["resumed_from"] == stopped_at >= 3


def test_cancel_while_queued_never_starts(queue_env, workers):
    from service import jobs
    from service.db import Job

    # 1. the API path: request_cancel (marks a queued job cancelled), before any worker is up
    a = queue_env.submit({"fake": {}})
    with queue_env.sessions() as s:
        jobs.request_cancel(s, a)
    # 2. a cancel flag racing the dispatch: the job is still queued with cancel_requested set
    b = queue_env.submit({"fake": {}})
    with queue_env.sessions() as s:
        s.get(Job, b).cancel_requested = True
        s.commit()
    c = queue_env.submit({"fake": {"train_steps": 1}})  # a normal job behind them

    workers.start("cpu,gpu")
    assert queue_env.wait(c, timeout=30).status == "succeeded"
    for job_id in (a, b):
        job = queue_env.wait(job_id, timeout=10)
        assert job.status == "cancelled" and job.started_at is None and job.attempts == 0
        assert job.result == {}
        assert read_calls(queue_env.workdir(job_id)) == []
        assert not any((e.data or {}).get("status") == "running" for e in queue_env.events(job_id))


def test_worker_that_keeps_dying_fails_with_worker_lost(queue_env, workers):
    workers.start("cpu,gpu")
    job_id = queue_env.submit({"fake": {"die_always": True, "train_steps": 5}})
    job = queue_env.wait(job_id, timeout=60)

    assert job.status == "failed"
    assert job.error["code"] == "worker_lost" and job.error["param"] == "training"
    assert job.attempts == job.max_attempts == 3
    calls = read_calls(queue_env.workdir(job_id))
    assert len([c for c in calls if c["stage"] == "train" and c["event"] == "start"]) == 3
    assert "evaluating" not in job.result


def test_transient_failure_retries_then_succeeds(queue_env, workers):
    workers.start("cpu,gpu")
    job_id = queue_env.submit({"fake": {"transient": 2, "train_steps": 2}})
    job = queue_env.wait(job_id, timeout=30)

    assert job.status == "succeeded", job.error
    retries = [e for e in queue_env.events(job_id) if (e.data or {}).get("run") == "retrying"]
    assert [e.data["retry"] for e in retries] == [1, 2]
    assert retries[0].data["error"]["code"] == "engine_unavailable"
    assert job.attempts == 3  # three deliveries of the training stage, none lost
    assert len(_ends(read_calls(queue_env.workdir(job_id)), "train")) == 1


def test_deterministic_failure_fails_at_once_with_its_error(queue_env, workers):
    workers.start("cpu,gpu")
    fail = {"stage": "prepare", "code": "bad_data", "message": "line 3 is not JSON", "where": "a.jsonl:3"}
    job_id = queue_env.submit({"fake": {"fail": fail}})
    job = queue_env.wait(job_id, timeout=30)

    assert job.status == "failed"
    assert job.error == {"code": "bad_data", "message": "line 3 is not JSON", "param": "a.jsonl:3"}
    assert job.attempts == 1 and job.stage == "preparing"
    calls = read_calls(queue_env.workdir(job_id))
    assert [c["stage"] for c in calls if c["event"] == "start"] == ["validate", "prepare"]
    assert not any((e.data or {}).get("run") == "retrying" for e in queue_env.events(job_id))


def test_stage_lock_reports_a_live_holder(queue_env):
    import sqlalchemy as sa

    from service.queue import StageLock

    job_id = queue_env.submit({}, dispatch=False)
    engine = queue_env.sessions.kw["bind"]
    a, b = StageLock(engine, job_id), StageLock(engine, job_id)
    with engine.connect() as conn:
        assert not StageLock.is_held(conn, job_id)
        assert a.acquire()
        assert StageLock.is_held(conn, job_id)
        assert not b.acquire()  # a duplicate delivery gives up
        a.release()
        assert not StageLock.is_held(conn, job_id)
        assert b.acquire()
        b.release()
        conn.execute(sa.text("SELECT 1"))
    with queue_env.sessions() as s:  # leave no queued job behind for the other tests' reconcilers
        from service import jobs

        jobs.request_cancel(s, job_id)


def test_reconciler_requeues_only_stale_unheld_jobs(queue_env):
    import datetime as dt

    from service import jobs
    from service.db import Job
    from service.queue import StageLock
    from service.reconciler import requeue_stale_jobs

    fresh = queue_env.submit({}, dispatch=False)
    stale = queue_env.submit({}, dispatch=False)
    held = queue_env.submit({}, dispatch=False)
    old = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=120)
    with queue_env.sessions() as s:
        for job_id in (stale, held):
            s.get(Job, job_id).updated_at = old
        s.commit()
    lock = StageLock(queue_env.sessions.kw["bind"], held)
    assert lock.acquire()
    sent: list[tuple[str, str]] = []
    try:
        ids = requeue_stale_jobs(queue_env.sessions, stale_after_s=60,
                                 dispatcher=lambda stage, job_id: sent.append((stage, job_id)))
    finally:
        lock.release()
    assert stale in ids and fresh not in ids and held not in ids
    assert ("validate", stale) in sent
    assert queue_env.job(stale).updated_at > old  # heartbeat touched: not re-sent on every pass
    again = requeue_stale_jobs(queue_env.sessions, stale_after_s=60, dispatcher=lambda *a: None)
    assert stale not in again
    with queue_env.sessions() as s:
        for job_id in (fresh, stale, held):
            jobs.request_cancel(s, job_id)


class _WorkerDied(BaseException):
    """Raised by a stand-in stage for its worker dying mid-stage: the start is written, nothing after it."""


def test_run_resume_refuses_a_job_under_a_live_lease(queue_env):
    """`tracedraft run --resume` takes what the API's resume takes: a job still running under a live lease
    (another process is on it) is refused with job_not_resumable, naming the flag, and left running; once
    the lease lapsed over a lease ago (that process is gone) it is queued again at its stage."""
    import datetime as dt

    from drafters.errors import TracedraftError
    from service import embedded, jobs
    from service.db.models import Job
    from service.settings import get_settings

    settings = get_settings()
    job_id = queue_env.submit({"fake": {"train_steps": 2}}, dispatch=False)
    with queue_env.sessions() as s:
        jobs.start_job(s, job_id, stage="training", lease_owner="w1", lease_s=settings.job_lease_s)
    with pytest.raises(TracedraftError) as e:
        embedded.resume(settings, job_id)
    assert (e.value.code, e.value.where) == ("job_not_resumable", "--resume")
    assert queue_env.job(job_id).status == "running" and queue_env.job(job_id).lease_owner == "w1"
    with queue_env.sessions() as s:
        s.get(Job, job_id).lease_expires_at = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=2 * settings.job_lease_s)
        s.commit()
    assert embedded.resume(settings, job_id) == "training"
    job = queue_env.job(job_id)
    assert job.status == "queued" and job.lease_owner is None


def test_resume_after_worker_lost_restarts_the_attempt_count(queue_env, monkeypatch):
    """A job that failed with worker_lost, resumed as `tracedraft run --resume` does, runs again: attempts
    count from the resume (1, 2, ...), the resume shows in the events, and the cap applies afresh."""
    from types import SimpleNamespace

    from service import embedded, jobs, queue
    from service.settings import get_settings
    from tests.queue import fake_stages
    from workers import tasks

    job_id = queue_env.submit({"fake": {"train_steps": 2}}, dispatch=False)
    with queue_env.sessions() as s:
        jobs.set_stage(s, job_id, "training")
    deaths = {"left": 3}

    def train(ctx):
        if deaths["left"]:
            deaths["left"] -= 1
            raise _WorkerDied
        return fake_stages.train(ctx)

    monkeypatch.setitem(tasks.STAGE_FUNCTIONS, "train", train)
    sent: list[tuple[str, str]] = []  # the next stage is recorded, not sent: no worker may pick it up later
    monkeypatch.setattr(queue, "dispatch", lambda stage, jid, settings=None: sent.append((stage, jid)))
    task = SimpleNamespace(request=SimpleNamespace(id=f"{job_id}.train", retries=0, is_eager=False))

    def deliver() -> str:
        try:
            return tasks.run_stage(task, "train", job_id)["outcome"]
        except _WorkerDied:
            return "lost"

    assert [deliver() for _ in range(4)] == ["lost", "lost", "lost", "failed"]
    assert queue_env.job(job_id).error["code"] == "worker_lost"

    assert embedded.resume(get_settings(), job_id) == "training"  # the CLI's `tracedraft run --resume`
    deaths["left"] = 1
    assert [deliver(), deliver()] == ["lost", "done"]
    job = queue_env.job(job_id)
    assert job.status == "running" and job.stage == "evaluating" and job.error is None
    assert job.result["training"]["steps"] == 2 and sent == [("evaluate", job_id)]
    assert job.attempts == 3  # the column keeps the most attempts any stage took

    story = []
    for e in queue_env.events(job_id):
        d = e.data or {}
        if d.get("run") == "resumed":
            story.append(("resumed", e.message))
        elif d.get("stage") == "training" and d.get("status") == "running":
            story.append(d["attempt"])
        elif d.get("stage") == "training" and d.get("run") == "finished":
            story.append(("finished", d["attempt"]))
    assert story == [1, 2, 3, ("resumed", "resumed from the command line at stage training"), 1, 2,
                     ("finished", 2)]
    with queue_env.sessions() as s:  # leave no live job behind for the other tests' reconcilers
        jobs.cancel_job(s, job_id)


def test_a_stage_whose_lease_was_taken_over_does_not_commit(queue_env, monkeypatch):
    """A worker that froze past its lease (the reconciler gave the stage to another delivery) and then
    finishes drops its result: the stage completes once, by the lease holder, and the job does not move."""
    from types import SimpleNamespace

    from service import jobs, queue
    from service.db import Job
    from tests.queue import fake_stages
    from workers import tasks

    job_id = queue_env.submit({"fake": {"train_steps": 2}}, dispatch=False)
    with queue_env.sessions() as s:
        jobs.set_stage(s, job_id, "training")

    def train(ctx):
        out = fake_stages.train(ctx)
        with queue_env.sessions() as s:  # meanwhile the reconciler re-dispatched; another worker holds it
            job = s.get(Job, job_id)
            jobs.set_lease(job, "other-worker:task-2", 60)
            s.commit()
        return out

    monkeypatch.setitem(tasks.STAGE_FUNCTIONS, "train", train)
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(queue, "dispatch", lambda stage, jid, settings=None: sent.append((stage, jid)))
    task = SimpleNamespace(request=SimpleNamespace(id=f"{job_id}.train", retries=0, is_eager=False))
    out = tasks.run_stage(task, "train", job_id)
    assert out["outcome"] == "skipped" and out["reason"] == "lease taken over"
    job = queue_env.job(job_id)
    assert job.stage == "training" and "training" not in (job.result or {}) and sent == []
    assert job.lease_owner == "other-worker:task-2"  # the holder's lease is left alone
    dropped = [e for e in queue_env.events(job_id) if (e.data or {}).get("run") == "superseded"]
    assert len(dropped) == 1 and dropped[0].level == "warning"
    with queue_env.sessions() as s:
        jobs.cancel_job(s, job_id)


def test_an_os_error_reaches_the_job_without_the_workers_paths(queue_env, monkeypatch, caplog):
    """A stage's own OSError fails the job with internal_error naming the error, not the worker's file
    path (work directories and caches are the worker's business); the worker's log keeps the path."""
    from types import SimpleNamespace

    from service import jobs
    from workers import tasks

    job_id = queue_env.submit({"fake": {"train_steps": 2}}, dispatch=False)
    with queue_env.sessions() as s:
        jobs.set_stage(s, job_id, "training")

    def train(ctx):
        open("/srv/tracedraft/work/" + job_id + "/shards/missing.safetensors")  # noqa: SIM115 - raises

    monkeypatch.setitem(tasks.STAGE_FUNCTIONS, "train", train)
    task = SimpleNamespace(request=SimpleNamespace(id=f"{job_id}.train", retries=0, is_eager=False))
    with caplog.at_level("ERROR", logger="workers.tasks"):
        assert tasks.run_stage(task, "train", job_id)["outcome"] == "failed"
    error = queue_env.job(job_id).error
    assert error["code"] == "internal_error"
    assert error["message"] == ("FileNotFoundError: No such file or directory (the worker's log names the file)")
    assert "/srv/tracedraft/work" in caplog.text
