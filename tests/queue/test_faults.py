"""Fault injection: real worker processes, a private PostgreSQL and Redis, the artifact store on moto's S3
server, and faults at random points chosen by a seed (``TRACEDRAFT_FAULT_SEED``, default 0):

- kill -9 of the worker (parent and pool process), several times per job, in every stage; a supervisor
  starts a new worker at once, as a process manager would;
- Redis killed and restarted with append-only on (messages survive) and off (queued messages are lost);
- PostgreSQL restarted in ``immediate`` mode (a crash: every connection drops, crash recovery runs);
- the artifact store failing a checkpoint write half-way.

Afterwards every job has either succeeded exactly once with exactly one registered version, or failed with
a coded error and then succeeds when resumed; no job is left non-terminal, no row points at nothing, every
raw file of every dataset is still in the store and verifies, and ``gc --dry-run`` lists no live file. The
module prints jobs run, faults injected, recovery times after kill -9 (median and max) and anything lost.

Stages are ``tests.queue.fault_stages`` (seconds, not the ML stages); queue, database, worker and store
are real. Slow: about two to four minutes on two cores.
"""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.queue.fault_stack import MotoS3, PrivatePostgres, PrivateRedis
from tests.queue.fault_stages import FAIL_WRITE, fault_file

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parents[2]
SEED = int(os.environ.get("TRACEDRAFT_FAULT_SEED", "0"))
N_JOBS = int(os.environ.get("TRACEDRAFT_FAULT_JOBS", "4"))
KILLS_PER_JOB = 2
LEASE_S = float(os.environ.get("TRACEDRAFT_FAULT_LEASE_S", "3"))  # 15 = the default setting
STAGES = ("validating", "preparing", "regenerating", "training", "evaluating", "registering")
TRACE = {
    "messages": [
        {"role": "user", "content": "list files in {i}"},
        {"role": "assistant", "content": "src/ and tests/ in {i}"},
    ]
}


@dataclass
class Stack:
    env: dict[str, str]
    pg: PrivatePostgres
    redis: PrivateRedis
    s3: MotoS3
    home: Path
    sessions: Any
    store: Any
    org_id: str
    log_dir: Path
    worker: subprocess.Popen | None = None
    n_workers: int = 0
    faults: Counter = field(default_factory=Counter)

    def start_worker(self) -> None:
        log = open(self.log_dir / f"worker-{self.n_workers}.log", "wb")  # noqa: SIM115 - the worker's lifetime
        self.n_workers += 1
        env = {
            **os.environ,
            **self.env,
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        }
        self.worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "workers.worker",
                "--queue",
                "cpu,gpu",
                "--concurrency",
                "1",
                "--loglevel",
                "INFO",
            ],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill9_worker(self) -> None:
        if self.worker is not None and self.worker.poll() is None:
            os.killpg(self.worker.pid, signal.SIGKILL)
            self.worker.wait(timeout=10)

    def stop_worker(self) -> None:
        if self.worker is not None and self.worker.poll() is None:
            os.killpg(self.worker.pid, signal.SIGTERM)
            try:
                self.worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill9_worker()
        if self.worker is not None:
            try:
                os.killpg(self.worker.pid, signal.SIGKILL)  # pool processes a dead parent left behind
            except ProcessLookupError:
                pass

    def job(self, job_id: str) -> Any:
        from service.db import Job

        for _ in range(50):  # the database may be restarting
            try:
                with self.sessions() as s:
                    return s.get(Job, job_id)
            except Exception:  # noqa: BLE001
                time.sleep(0.2)
        raise AssertionError("database unreachable")

    def events(self, job_id: str) -> list[Any]:
        from service import jobs

        for _ in range(50):
            try:
                with self.sessions() as s:
                    return jobs.list_events(s, job_id, limit=100_000)
            except Exception:  # noqa: BLE001
                time.sleep(0.2)
        raise AssertionError("database unreachable")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory):
    from service.db import Organization, session_factory, upgrade
    from service.db.session import make_engine
    from service.queue import reload_app
    from service.settings import reload_settings
    from service.storage import ArtifactStore

    root = tmp_path_factory.mktemp("faults")
    pg = PrivatePostgres().start()
    redis = PrivateRedis(root / "redis", appendonly=True).start()
    s3 = MotoS3(root / "s3").start()
    home = root / "home"
    env = {
        "TRACEDRAFT_DATABASE_URL": pg.url,
        "TRACEDRAFT_BROKER_URL": redis.url,
        "TRACEDRAFT_RESULT_BACKEND": redis.url,
        "TRACEDRAFT_PIPELINE": "celery",
        "TRACEDRAFT_HOME": str(home),
        "TRACEDRAFT_AUTO_MIGRATE": "false",
        "TRACEDRAFT_TEST_STAGES": "tests.queue.fault_stages:STAGES",
        "TRACEDRAFT_ENFORCE_JOB_POLICY": "false",
        "TRACEDRAFT_ARTIFACT_URI": f"s3://{s3.bucket}/artifacts",
        "TRACEDRAFT_ARTIFACT_STORAGE_OPTIONS": json.dumps(s3.storage_options),
        "TRACEDRAFT_JOB_LEASE_S": str(LEASE_S),
        "TRACEDRAFT_RECONCILE_EVERY_S": os.environ.get("TRACEDRAFT_FAULT_RECONCILE_S", "1"),
        "TRACEDRAFT_DISPATCH_GRACE_S": "2",
        "TRACEDRAFT_STALE_AFTER_S": "10",
        "TRACEDRAFT_JOB_MAX_ATTEMPTS": "50",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    engine = make_engine(pg.url)
    st = None
    try:
        upgrade(engine)
        settings = reload_settings()
        reload_app()
        sessions = session_factory(engine)
        with sessions() as s:
            org = Organization(name="faults")
            s.add(org)
            s.commit()
            org_id = org.id
        store = ArtifactStore(settings.artifact_uri, settings.artifact_storage_options)
        (home / "faults").mkdir(parents=True, exist_ok=True)
        st = Stack(env, pg, redis, s3, home, sessions, store, org_id, root)
        st.start_worker()
        yield st
    finally:
        if st is not None:
            st.stop_worker()
        engine.dispose()
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        reload_settings()
        reload_app()
        from workers import db as worker_db

        for e in worker_db._engines.values():
            e.dispose()
        worker_db._engines.clear()
        s3.stop()
        redis.stop()
        pg.stop()


def _submit(stack: Stack, i: int) -> str:
    import io

    from service import datasets, jobs
    from service.queue import dispatch

    files = []
    for part in range(2):  # a multi-file dataset: gc and the store must keep every file
        lines = [json.dumps(TRACE).replace("{i}", f"{i}-{part}-{n}") for n in range(12)]
        files.append((f"part{part}.jsonl", io.BytesIO(("\n".join(lines) + "\n").encode())))
    with stack.sessions() as s:
        ds = datasets.create_dataset(s, stack.store, stack.org_id, files)
        job = jobs.create_job(s, stack.org_id, ds, {"fault": {"steps": 6, "step_s": 0.4}})
        job_id = job.id
    dispatch("validate", job_id)
    with stack.sessions() as s:
        jobs.mark_dispatched(s, job_id)
    return job_id


@dataclass(frozen=True)
class Fault:
    """One fault: ``kind`` (kill9, redis, postgres, store_write), its argument, and the stage of the job
    it is injected in (while that stage runs)."""

    kind: str
    arg: Any
    stage: str

    @property
    def label(self) -> str:
        return f"redis (append-only {'on' if self.arg else 'off'})" if self.kind == "redis" else self.kind


def _plan(rng: random.Random) -> list[list[Fault]]:
    """Per job, the faults in stage order: kill -9s (every stage covered across the jobs), plus each of the
    global faults once, on a random job and stage (the store write fails during training)."""
    stages = list(STAGES)
    rng.shuffle(stages)
    plan: list[list[Fault]] = [[] for _ in range(N_JOBS)]
    k = 0
    for job in plan:
        for _ in range(KILLS_PER_JOB):
            job.append(Fault("kill9", None, stages[k % len(stages)]))
            k += 1
    for kind, arg in (("redis", True), ("redis", False), ("postgres", "immediate"), ("store_write", None)):
        stage = "training" if kind == "store_write" else rng.choice(STAGES)
        plan[rng.randrange(N_JOBS)].append(Fault(kind, arg, stage))
    for job in plan:  # within a stage the kill comes first: a short stage may end during a Redis restart
        job.sort(key=lambda f: (STAGES.index(f.stage), f.kind != "kill9"))
    return plan


def _stage_running(job: Any, stage: str) -> bool:
    return (
        job is not None
        and job.status == "running"
        and job.stage == stage
        and job.lease_owner is not None
        and not job.lease_owner.startswith("retry:")
    )


def _inject(stack: Stack, job_id: str, fault: Fault, rng: random.Random, deadline: float) -> float | None:
    """Wait until the fault's stage runs and inject it; returns the wall time of a kill (else None). A
    fault whose stage the job passed before its turn is counted as missed."""
    bound = fault.kind in ("kill9", "store_write")  # the others may hit any later stage too
    while time.monotonic() < deadline:
        job = stack.job(job_id)
        past = job.stage in STAGES and STAGES.index(job.stage) > STAGES.index(fault.stage)
        if job.status in ("succeeded", "failed", "cancelled") or (bound and past):
            stack.faults[f"missed {fault.label}"] += 1
            return None
        if _stage_running(job, fault.stage) or (past and job.status == "running"):
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"job {job_id} never reached {fault}")
    time.sleep(rng.uniform(0.0, 0.3))
    stack.faults[fault.label] += 1
    if fault.kind == "kill9":
        stack.kill9_worker()
        killed = time.time()
        stack.start_worker()  # the process manager restarts it
        return killed
    if fault.kind == "redis":
        stack.redis.restart(appendonly=fault.arg, down_s=rng.uniform(0.5, 2.0))
    elif fault.kind == "postgres":
        stack.pg.restart(fault.arg)
    elif fault.kind == "store_write":
        fault_file(stack.home, FAIL_WRITE).touch()
    return None


def _recovered_after(stack: Stack, job_id: str, since_wall: float, deadline: float) -> float:
    """Wall seconds from ``since_wall`` until a stage of the job started again (or the job ended)."""
    import datetime as dt

    since = dt.datetime.fromtimestamp(since_wall, dt.UTC)
    while time.monotonic() < deadline:
        for e in stack.events(job_id):
            data = e.data or {}
            if e.ts > since and (
                data.get("status") == "running" or data.get("status") in ("succeeded", "failed")
            ):
                return (e.ts - since).total_seconds()
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not recover after a kill -9")


def _wait_terminal(stack: Stack, job_id: str, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = stack.job(job_id)
        if job.status in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.2)
    job = stack.job(job_id)
    raise AssertionError(
        f"job {job_id} stuck: {job.status} {job.stage} lease={job.lease_owner} "
        f"events={[e.message for e in stack.events(job_id)][-8:]}"
    )


def _check_consistency(stack: Stack, job_ids: list[str]) -> list[str]:
    """Everything that would count as lost or orphaned (empty when all is well)."""
    import sqlalchemy as sa

    from service import datasets, registry
    from service.db import Dataset, DrafterVersion, Job, JobEvent
    from service.gc import gc

    problems: list[str] = []
    with stack.sessions() as s:
        for job_id in job_ids:
            job = s.get(Job, job_id)
            versions = s.scalars(sa.select(DrafterVersion).where(DrafterVersion.job_id == job_id)).all()
            if job.status == "succeeded" and len(versions) != 1:
                problems.append(f"{job_id} succeeded with {len(versions)} versions")
            if (
                job.status == "succeeded"
                and job.result.get("registering", {}).get("version_id") != versions[0].id
            ):
                problems.append(f"{job_id} result names another version")
            if job.status != "succeeded":
                problems.append(f"{job_id} ended {job.status}: {job.error}")
            finished = [
                e
                for e in s.scalars(sa.select(JobEvent).where(JobEvent.job_id == job_id))
                if (e.data or {}).get("status") == "succeeded"
            ]
            if len(finished) != 1:
                problems.append(f"{job_id} has {len(finished)} 'succeeded' events")
        for ds in s.scalars(sa.select(Dataset)):
            for f in datasets.raw_files(ds):
                try:
                    stack.store.verify(f["uri"], f["sha256"], f["size"])
                except Exception as exc:  # noqa: BLE001
                    problems.append(f"raw file {f['name']} of {ds.id} lost: {exc}")
        for v in s.scalars(sa.select(DrafterVersion)):
            if v.job_id is None:
                problems.append(f"version {v.id} has no job")
            try:
                registry.verify_version(stack.store, v)
            except Exception as exc:  # noqa: BLE001
                problems.append(f"version {v.id} files: {exc}")
        stuck = s.scalar(
            sa.select(sa.func.count()).select_from(Job).where(Job.status.in_(("queued", "running")))
        )
        if stuck:
            problems.append(f"{stuck} jobs left queued/running")
        live_keys = {
            stack.store.key(f["uri"]) for ds in s.scalars(sa.select(Dataset)) for f in datasets.raw_files(ds)
        }
        for v in s.scalars(sa.select(DrafterVersion)):
            live_keys |= {stack.store.key(f"{v.checkpoint_uri}/{name}") for name in v.files}
        would_delete = set(gc(s, stack.store, 0.0, dry_run=True).deleted)
        if would_delete & live_keys:
            problems.append(f"gc --dry-run lists live files: {sorted(would_delete & live_keys)}")
    return problems


def test_jobs_survive_random_faults(stack: Stack, capsys: pytest.CaptureFixture[str]) -> None:
    from service import jobs
    from service.queue import dispatch, task_stage

    rng = random.Random(SEED)
    plan = _plan(rng)
    job_ids: list[str] = []
    recoveries: list[float] = []
    resumed: list[str] = []
    t_start = time.monotonic()
    for i, faults in enumerate(plan):
        job_id = _submit(stack, i)
        job_ids.append(job_id)
        deadline = time.monotonic() + 240
        for fault in faults:
            killed = _inject(stack, job_id, fault, rng, deadline)
            if killed is not None:
                recoveries.append(_recovered_after(stack, job_id, killed, deadline))
        job = _wait_terminal(stack, job_id, timeout=240)
        if job.status == "failed":  # allowed when coded and resumable: resume it, it must then succeed
            assert job.error and job.error.get("code"), job.error
            with stack.sessions() as s:
                jobs.reopen_job(s, job_id, "resumed by the fault suite")
            dispatch(task_stage(job.stage), job_id)
            resumed.append(job_id)
            _wait_terminal(stack, job_id, timeout=240)
    problems = _check_consistency(stack, job_ids)
    elapsed = time.monotonic() - t_start
    with capsys.disabled():
        print(
            f"\nfault suite (seed {SEED}): {len(job_ids)} jobs in {elapsed:.0f} s, "
            f"{stack.n_workers} worker processes started"
        )
        print("faults injected: " + ", ".join(f"{k} x{v}" for k, v in sorted(stack.faults.items())))
        if recoveries:
            print(
                f"recovery after kill -9 (s): median {statistics.median(recoveries):.1f}, "
                f"max {max(recoveries):.1f}, all {[round(r, 1) for r in recoveries]}"
            )
        print(f"failed then resumed: {resumed or 'none'}")
        print(f"lost or orphaned: {problems or 'nothing'}")
    assert not problems
    assert stack.faults["kill9"] >= N_JOBS * KILLS_PER_JOB * 3 // 4  # a very short stage may end first
    assert statistics.median(recoveries) < 60
