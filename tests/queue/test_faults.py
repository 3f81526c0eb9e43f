"""Fault injection: real worker processes, a private PostgreSQL and Redis, the artifact store on moto's S3
server (behind a TCP proxy the test can cut, ``fault_proxy``), and faults at points chosen by a seed
(``TRACEDRAFT_FAULT_SEED``, default 0):

- kill -9 of the worker (parent and pool process), several times per job; a supervisor starts a new worker
  at once, as a process manager would. At least one kill lands in each of the six stages: a kill whose
  stage ended before it landed is carried over to the next job (and to extra jobs after the planned ones);
- Redis killed and restarted with append-only on (messages survive) and off (queued messages are lost);
- PostgreSQL restarted in ``immediate`` mode (a crash: every connection drops, crash recovery runs);
- an S3 outage in the middle of a checkpoint upload (``CheckpointSync`` -> ``publish`` ->
  ``ArtifactStore.put_dir``): at a seeded checkpoint ``PUT`` the proxy resets the connection and every
  other for ``STORE_DOWN_S`` seconds, longer than the S3 client's own retries, so the failure reaches the
  stage, which retries and resumes from the last checkpoint announced in the store;
- Redis down while jobs are submitted (``service.api.dispatcher``, the API's path), for longer than the
  publish retry window (``task_publish_retry_policy``): the submissions give up, the jobs are committed but
  never enqueued; once Redis is back the reconciler must start them within ``REDIS_START_MAX_S``.

Afterwards every job has either succeeded exactly once with exactly one registered version, or failed with
a coded error and then succeeds when resumed; no job is left non-terminal, no row points at nothing, every
raw file and every file a job's result names is still in the store and verifies, Redis holds no message
(queued or un-acknowledged) of a finished job, and ``tracedraft gc --dry-run`` lists no live file (raw
files, dataset files, version checkpoints, exports and reports, job results; and, checked while a job can
still resume, its checkpoints). The module prints jobs run, faults injected (kills by stage), recovery times
after kill -9 (median and max), the S3 outage and the Redis-down start latency, and anything lost.

Stages are ``tests.queue.fault_stages`` (seconds, not the ML stages); queue, database, worker and store
are real. Slow: about three minutes on two cores (five with the default 15 s lease and 5 s period).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.queue.fault_proxy import FaultProxy, Trigger
from tests.queue.fault_stack import MotoS3, PrivatePostgres, PrivateRedis

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parents[2]
SEED = int(os.environ.get("TRACEDRAFT_FAULT_SEED", "0"))
N_JOBS = int(os.environ.get("TRACEDRAFT_FAULT_JOBS", "4"))
KILLS_PER_JOB = 2
MAX_EXTRA_JOBS = 3  # jobs added for kills that missed their stage in the planned ones
LEASE_S = float(os.environ.get("TRACEDRAFT_FAULT_LEASE_S", "3"))  # 15 = the default setting
RECONCILE_S = float(os.environ.get("TRACEDRAFT_FAULT_RECONCILE_S", "1"))  # 5 = the default setting
STALE_AFTER_S = 10.0
#: S3 outage: botocore's default (legacy) retry mode gives up after 4 retries, at most 1+2+4+8 s of backoff.
STORE_DOWN_S = 20.0
REDIS_DOWN_JOBS = 2
REDIS_START_MAX_S = 30.0
STAGES = ("validating", "preparing", "regenerating", "training", "evaluating", "registering")
TERMINAL = ("succeeded", "failed", "cancelled")
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
    proxy: FaultProxy
    home: Path
    sessions: Any
    store: Any
    org_id: str
    log_dir: Path
    worker: subprocess.Popen | None = None
    n_workers: int = 0
    faults: Counter = field(default_factory=Counter)
    kills_landed: Counter = field(default_factory=Counter)  # stage -> kills that interrupted it
    kills_late: Counter = field(default_factory=Counter)  # stage -> kills that came after it ended
    kills_missed: Counter = field(default_factory=Counter)  # stage -> kills never injected (stage passed)
    hit: list[str] = field(default_factory=list)  # "<other fault> in <stage it hit>"

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
    from service.db.session import dispose_engines, make_engine
    from service.queue import reload_app
    from service.settings import reload_settings
    from service.storage import ArtifactStore

    root = tmp_path_factory.mktemp("faults")
    pg = PrivatePostgres().start()
    redis = PrivateRedis(root / "redis", appendonly=True).start()
    s3 = MotoS3(root / "s3").start()
    proxy = FaultProxy(s3.port).start()  # every store client goes through it
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
        "TRACEDRAFT_ARTIFACT_STORAGE_OPTIONS": json.dumps(s3.storage_options_via(proxy.endpoint)),
        "TRACEDRAFT_JOB_LEASE_S": str(LEASE_S),
        "TRACEDRAFT_RECONCILE_EVERY_S": str(RECONCILE_S),
        "TRACEDRAFT_DISPATCH_GRACE_S": "2",
        "TRACEDRAFT_STALE_AFTER_S": str(STALE_AFTER_S),
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
        st = Stack(env, pg, redis, s3, proxy, home, sessions, store, org_id, root)
        st.start_worker()
        yield st
    finally:
        if st is not None:
            st.stop_worker()
        engine.dispose()
        dispose_engines()  # the API dispatcher's (service.api.dispatcher) engine on this database
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        reload_settings()
        reload_app()
        from workers import db as worker_db

        for e in worker_db._engines.values():
            e.dispose()
        worker_db._engines.clear()
        proxy.stop()
        s3.stop()
        redis.stop()
        pg.stop()


def _words(key: str) -> str:
    """Eight hex words from ``key``: conversations of one template that still differ, so validation's
    near-duplicate rule (``drafters.traces.near_duplicates``) leaves held-out conversations to measure."""
    import hashlib

    return " ".join(hashlib.sha256(f"{key}/{k}".encode()).hexdigest()[:6] for k in range(8))


def _submit(stack: Stack, i: int) -> str:
    """Upload a dataset, create a job and start it the way ``POST /v1/jobs`` does
    (``service.api.dispatcher``: a failed publish is logged, the reconciler sends the job later)."""
    import io

    from service import datasets, jobs
    from service.api.dispatcher import _dispatch_stage
    from service.settings import get_settings

    files = []
    for part in range(2):  # a multi-file dataset: gc and the store must keep every file
        lines = [json.dumps(TRACE).replace("{i}", _words(f"{i}-{part}-{n}")) for n in range(12)]
        files.append((f"part{part}.jsonl", io.BytesIO(("\n".join(lines) + "\n").encode())))
    with stack.sessions() as s:
        ds = datasets.create_dataset(s, stack.store, stack.org_id, files)
        job = jobs.create_job(s, stack.org_id, ds, {"fault": {"steps": 6, "step_s": 0.4}})
        job_id = job.id
    _dispatch_stage(job_id, "validate", get_settings())
    return job_id


@dataclass(frozen=True)
class Fault:
    """One fault: ``kind`` (kill9, redis, postgres, store), its argument, and the stage of the job it is
    injected in (while that stage runs). ``store``: ``arg`` checkpoint PUTs are let through first."""

    kind: str
    arg: Any
    stage: str

    @property
    def label(self) -> str:
        if self.kind == "redis":
            return f"redis restart (append-only {'on' if self.arg else 'off'})"
        return {"kill9": "kill -9", "postgres": "postgres crash restart",
                "store": "S3 outage mid-checkpoint upload"}[self.kind]


def _order(f: Fault) -> tuple[int, int]:
    # within a stage the kill comes first: a short stage may end during a Redis restart
    return STAGES.index(f.stage), {"kill9": 0, "store": 1}.get(f.kind, 2)


def _plan(rng: random.Random) -> list[list[Fault]]:
    """Per job, the faults in stage order: kill -9s (every stage covered across the jobs, in a seeded
    order), each Redis/PostgreSQL fault once on a random job and stage, and the S3 outage during the
    training of a job whose training is not also killed."""
    stages = list(STAGES)
    rng.shuffle(stages)
    plan: list[list[Fault]] = [[] for _ in range(N_JOBS)]
    k = 0
    for job in plan:
        for _ in range(KILLS_PER_JOB):
            job.append(Fault("kill9", None, stages[k % len(stages)]))
            k += 1
    for kind, arg in (("redis", True), ("redis", False), ("postgres", "immediate")):
        plan[rng.randrange(N_JOBS)].append(Fault(kind, arg, rng.choice(STAGES)))
    quiet = [i for i, job in enumerate(plan) if not any(f.kind == "kill9" and f.stage == "training" for f in job)]
    # 2 files per checkpoint directory, a PUT to the temporary name and one copying it into place each:
    # step 1 uploads step_001/ (4 PUTs), step 2 step_002/ and best/ (8): the cut falls on the 6th to 12th
    # checkpoint PUT, inside step 2's upload, so the stage resumes from step 1's checkpoint.
    plan[rng.choice(quiet or range(N_JOBS))].append(Fault("store", rng.randrange(5, 12), "training"))
    for job in plan:
        job.sort(key=_order)
    return plan


def _stage_running(job: Any, stage: str) -> bool:
    return (
        job is not None
        and job.status == "running"
        and job.stage == stage
        and job.lease_owner is not None
        and not job.lease_owner.startswith("retry:")
    )


@dataclass
class Kill:
    stage: str
    wall: float  # time.time() of the kill
    landed: bool  # the stage was running and had not finished: it must run again


def _inject(stack: Stack, job_id: str, fault: Fault, rng: random.Random, deadline: float) -> Kill | Trigger | None:
    """Inject the fault: a kill or a Redis/PostgreSQL fault once its stage runs; the S3 outage is armed at
    once (it fires on the job's own checkpoint upload). Returns the Kill, the armed Trigger or None. A kill
    whose stage the job passed before its turn is counted missed (and not injected)."""
    if fault.kind == "store":
        stack.faults[fault.label] += 1
        pattern = f"PUT /{stack.s3.bucket}/artifacts/jobs/{job_id}/checkpoints/".encode()
        return stack.proxy.arm(pattern, skip=fault.arg, down_s=STORE_DOWN_S)
    bound = fault.kind == "kill9"  # the others may hit any later stage too
    while time.monotonic() < deadline:
        job = stack.job(job_id)
        past = job.stage in STAGES and STAGES.index(job.stage) > STAGES.index(fault.stage)
        if job.status in TERMINAL or (bound and past):
            stack.faults[f"missed {fault.label}"] += 1
            if bound:
                stack.kills_missed[fault.stage] += 1
            return None
        if _stage_running(job, fault.stage) or (past and job.status == "running"):
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"job {job_id} never reached {fault}")
    # Training (6 steps, a checkpoint each) is killed anywhere in its first 2 s, mostly after a checkpoint;
    # the other stages are under a second long.
    time.sleep(rng.uniform(0.0, 2.0 if fault.stage == "training" else 0.3))
    stack.faults[fault.label] += 1
    if fault.kind == "kill9":
        stack.kill9_worker()
        killed = time.time()
        time.sleep(0.1)  # a commit the dead worker sent just before lands now, not after the check
        job = stack.job(job_id)
        landed = job.status == "running" and job.stage == fault.stage and fault.stage not in (job.result or {})
        (stack.kills_landed if landed else stack.kills_late)[fault.stage] += 1
        stack.start_worker()  # the process manager restarts it
        return Kill(fault.stage, killed, landed)
    stack.hit.append(f"{fault.label} in {job.stage}")
    if fault.kind == "redis":
        stack.redis.restart(appendonly=fault.arg, down_s=rng.uniform(0.5, 2.0))
    elif fault.kind == "postgres":
        stack.pg.restart(fault.arg)
    return None


def _first_event(stack: Stack, job_id: str, since_wall: float, deadline: float, pred: Any,
                 what: str) -> tuple[float, Any]:
    """(seconds from ``since_wall``, event) of the job's first event after ``since_wall`` matching ``pred``."""
    since = dt.datetime.fromtimestamp(since_wall, dt.UTC)
    while time.monotonic() < deadline:
        for e in stack.events(job_id):
            if e.ts > since and pred(e.data or {}, e):
                return (e.ts - since).total_seconds(), e
        time.sleep(0.2)
    raise AssertionError(f"job {job_id}: {what} (events: {[e.message for e in stack.events(job_id)][-8:]})")


def _started(data: dict, _e: Any) -> bool:
    return data.get("status") == "running" or data.get("status") in ("succeeded", "failed")


def _wait_terminal(stack: Stack, job_id: str, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = stack.job(job_id)
        if job.status in TERMINAL:
            return job
        time.sleep(0.2)
    job = stack.job(job_id)
    raise AssertionError(
        f"job {job_id} stuck: {job.status} {job.stage} lease={job.lease_owner} "
        f"events={[e.message for e in stack.events(job_id)][-8:]}"
    )


# --- what must survive: the live set, gc, the broker ----------------------------------------------------


def _published_keys(store: Any, obj: Any) -> Iterator[str]:
    """Store keys of the files a job result or event names: ``{"uri", "files"}`` (a published directory)
    and ``{"uri", "sha256"}`` (one file), anywhere in ``obj``."""
    if isinstance(obj, dict):
        uri = obj.get("uri")
        if isinstance(uri, str) and uri.startswith(store.root_uri + "/"):
            if isinstance(obj.get("files"), dict):
                yield from (store.key(f"{uri}/{name}") for name in obj["files"])
            elif isinstance(obj.get("sha256"), str):
                yield store.key(uri)
        for v in obj.values():
            yield from _published_keys(store, v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _published_keys(store, v)


def _published_files(store: Any, obj: Any) -> Iterator[tuple[str, str]]:
    """(key, sha256) of the files ``_published_keys`` finds."""
    if isinstance(obj, dict):
        uri = obj.get("uri")
        if isinstance(uri, str) and uri.startswith(store.root_uri + "/"):
            if isinstance(obj.get("files"), dict):
                yield from ((store.key(f"{uri}/{n}"), h) for n, h in obj["files"].items())
            elif isinstance(obj.get("sha256"), str):
                yield store.key(uri), obj["sha256"]
        for v in obj.values():
            yield from _published_files(store, v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _published_files(store, v)


def _live_keys(stack: Stack, s: Any) -> dict[str, set[str]]:
    """Every store key a row keeps alive, by kind: raw and dataset files, version checkpoints, exports and
    reports, files named by job results, and for a job that can still resume (queued, running, failed,
    cancelled) its checkpoints (named by its ``checkpoint`` events) and every other file it wrote."""
    import sqlalchemy as sa

    from service import datasets
    from service.db import Dataset, DrafterVersion, Job, JobEvent
    from service.registry_exports import is_export_file

    store = stack.store
    listed = [a for a in store.list() if not a.temporary]
    live: dict[str, set[str]] = {k: set() for k in ("raw files", "dataset files", "version checkpoints",
                                                   "exports", "reports", "job results",
                                                   "resumable-job checkpoints", "resumable-job files")}
    for ds in s.scalars(sa.select(Dataset)):
        live["raw files"] |= {store.key(f["uri"]) for f in datasets.raw_files(ds)}
        live["dataset files"] |= {a.key for a in listed if a.key.startswith(f"datasets/{ds.id}/")}
    for v in s.scalars(sa.select(DrafterVersion)):
        for name in v.files or {}:
            kind = "exports" if is_export_file(name) else "version checkpoints"
            live[kind].add(store.key(f"{v.checkpoint_uri}/{name}"))
        if v.report_uri:
            live["reports"] |= {store.key(f"{v.report_uri}/{name}") for name in v.report_files or {}}
    for job in s.scalars(sa.select(Job)):
        live["job results"] |= set(_published_keys(store, job.result or {}))
        if job.status in ("queued", "running", "failed", "cancelled"):
            for data in s.scalars(sa.select(JobEvent.data).where(JobEvent.job_id == job.id)):
                live["resumable-job checkpoints"] |= set(_published_keys(store, (data or {}).get("checkpoint")))
            live["resumable-job files"] |= {a.key for a in listed if a.key.startswith(f"jobs/{job.id}/")}
    return live


def _gc_check(stack: Stack, listed_by_gc: set[str] | None = None) -> tuple[list[str], str]:
    """(problems, summary): gc --dry-run (retention 0) must list no live key. ``listed_by_gc``: what the
    CLI listed; None runs ``service.gc.gc`` here."""
    from service.gc import gc

    with stack.sessions() as s:
        live = _live_keys(stack, s)
        if listed_by_gc is None:
            listed_by_gc = set(gc(s, stack.store, 0.0, dry_run=True).deleted)
    problems = [f"gc --dry-run lists live {kind}: {sorted(keys & listed_by_gc)}"
                for kind, keys in live.items() if keys & listed_by_gc]
    temporaries = sum(1 for k in listed_by_gc if "/.tmp-" in k or k.startswith(".tmp-"))
    summary = (f"{len(listed_by_gc)} listed ({temporaries} temporaries of interrupted writes), none of "
               f"{len(set().union(*live.values()))} live: "
               + ", ".join(f"{kind} {len(keys)}" for kind, keys in live.items() if keys))
    return problems, summary


def _cli_gc_dry_run(stack: Stack) -> set[str]:
    """``tracedraft gc --dry-run --json --retention-hours 0`` in a process of its own; the keys it lists."""
    env = {**os.environ, **stack.env,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-m", "service.cli", "gc", "--dry-run", "--json",
                          "--retention-hours", "0"], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return set(json.loads(out.stdout)["deleted"])


def _broker_leftovers(stack: Stack, job_ids: list[str]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Messages in Redis of finished jobs ({task id: [ready|unacked]}) and the raw sizes of kombu's
    ``unacked`` hash, its ``unacked_index`` and the queue lists."""
    import redis

    from service.queue import QUEUES
    from service.reconciler import UNACKED, UNACKED_INDEX, RedisBrokerView

    client = redis.Redis.from_url(stack.redis.url, socket_timeout=5)
    try:
        found = RedisBrokerView(client).messages(time.time())
        finished = {j for j in job_ids if stack.job(j).status in TERMINAL}
        left = {tid: [m.state for m in msgs] for tid, msgs in found.items() if tid.rsplit(".", 1)[0] in finished}
        sizes = {UNACKED: client.hlen(UNACKED), UNACKED_INDEX: client.zcard(UNACKED_INDEX)}
        sizes |= {f"queue {q}": sum(client.llen(k) for k in client.scan_iter(f"{q}*") if client.type(k) == b"list")
                  for q in QUEUES}
        return left, sizes
    finally:
        client.close()


def _purged_by_reconciler(stack: Stack) -> int:
    n = 0
    for log in stack.log_dir.glob("worker-*.log"):
        for m in re.finditer(rb"deleted (\d+) un-acknowledged", log.read_bytes()):
            n += int(m.group(1))
    return n


def _check_consistency(stack: Stack, job_ids: list[str]) -> list[str]:
    """Everything that would count as lost or orphaned (empty when all is well)."""
    import sqlalchemy as sa

    from service import datasets, registry
    from service.db import Dataset, DrafterVersion, Job, JobEvent

    problems: list[str] = []
    with stack.sessions() as s:
        for job_id in job_ids:
            job = s.get(Job, job_id)
            versions = s.scalars(sa.select(DrafterVersion).where(DrafterVersion.job_id == job_id)).all()
            if job.status == "succeeded" and len(versions) != 1:
                problems.append(f"{job_id} succeeded with {len(versions)} versions")
            if (
                job.status == "succeeded"
                and versions
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
            for key, digest in _published_files(stack.store, job.result or {}):
                try:
                    stack.store.verify(key, digest)
                except Exception as exc:  # noqa: BLE001
                    problems.append(f"{job_id} result file {key} lost: {exc}")
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
                if v.report_uri:
                    stack.store.verify_dir(v.report_uri, v.report_files or {})
            except Exception as exc:  # noqa: BLE001
                problems.append(f"version {v.id} files: {exc}")
        stuck = s.scalar(
            sa.select(sa.func.count()).select_from(Job).where(Job.status.in_(("queued", "running")))
        )
        if stuck:
            problems.append(f"{stuck} jobs left queued/running")
    return problems


# --- the run ---------------------------------------------------------------------------------------------


@dataclass
class Run:
    stack: Stack
    rng: random.Random
    job_ids: list[str] = field(default_factory=list)
    recoveries: list[float] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    carried: list[str] = field(default_factory=list)  # stages whose kill is carried to the next job
    gc_notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    store_outage: str = "not injected"
    gc_killed_checked: bool = False  # gc checked while a killed job with checkpoints waited to resume

    def _has_checkpoint(self, job_id: str) -> bool:
        return any((e.data or {}).get("checkpoint") for e in self.stack.events(job_id))

    def gc_while_resumable(self, job_id: str, why: str) -> None:
        problems, summary = _gc_check(self.stack)
        self.problems += problems
        self.gc_notes.append(f"{why} ({job_id}): {summary}")

    def job(self, faults: list[Fault]) -> None:
        """Submit one job, inject its faults, wait for its end (resuming it once if it failed)."""
        stack = self.stack
        job_id = _submit(stack, len(self.job_ids))
        self.job_ids.append(job_id)
        deadline = time.monotonic() + 240
        trigger: Trigger | None = None
        for fault in sorted(faults, key=_order):
            done = _inject(stack, job_id, fault, self.rng, deadline)
            if isinstance(done, Trigger):
                trigger = done
            elif isinstance(done, Kill):
                if done.landed and done.stage == "training" and not self.gc_killed_checked:
                    # Running with a dead worker: it resumes from these checkpoints, gc must keep them.
                    self.gc_killed_checked = self._has_checkpoint(job_id)
                    self.gc_while_resumable(job_id, "a job whose worker was killed mid-training")
                secs, _ = _first_event(stack, job_id, done.wall, deadline, _started, "no recovery after kill -9")
                self.recoveries.append(secs)
                if not done.landed:
                    self.carried.append(fault.stage)
            elif fault.kind == "kill9":  # not injected: the stage was over before its turn
                self.carried.append(fault.stage)
        job = _wait_terminal(stack, job_id, timeout=240)
        if trigger is not None:
            self.store_outage = self._store_outage_report(job_id, trigger)
        if job.status in ("failed", "cancelled"):  # allowed when coded and resumable: resume it, it must succeed
            from service import jobs
            from service.queue import dispatch, task_stage

            assert job.status == "cancelled" or (job.error and job.error.get("code")), job.error
            self.gc_while_resumable(job_id, f"a {job.status} job's files, before it resumes")
            with stack.sessions() as s:
                jobs.reopen_job(s, job_id, "resumed by the fault suite")
            dispatch(task_stage(job.stage), job_id)
            with stack.sessions() as s:
                jobs.mark_dispatched(s, job_id)
            self.resumed.append(f"{job_id} ({job.error.get('code') if job.error else job.status})")
            _wait_terminal(stack, job_id, timeout=240)

    def _store_outage_report(self, job_id: str, trigger: Trigger) -> str:
        stack = self.stack
        if trigger.fired_at is None:
            stack.proxy.disarm()
            self.problems.append(f"S3 outage never fired on job {job_id} (pattern {trigger.pattern!r})")
            return "armed, never fired"
        deadline = time.monotonic() + 60
        failed_s, ev = _first_event(stack, job_id, trigger.fired_at, deadline,
                                    lambda d, _e: d.get("run") in ("retrying", "lost") or d.get("status") == "failed",
                                    "the stage never saw the S3 outage")
        err = (ev.data or {}).get("error") or {}
        kind = re.search(r"(\w+(?:Error|Exception))", err.get("message") or "")
        resumed_s, resume = _first_event(stack, job_id, trigger.fired_at, deadline,
                                         lambda d, e: d.get("status") == "running" and d.get("stage") == "training"
                                         and (d.get("attempt") or 1) > 1, "training never restarted")
        step = next((e.data["step"] for e in stack.events(job_id)  # fault_stages.train's own event
                     if e.seq > resume.seq and (e.data or {}).get("step") is not None
                     and e.message.startswith("resuming from checkpoint step ")), 0)
        request = trigger.request.decode(errors="replace").split("/checkpoints/", 1)[-1].split(" ")[0]
        request = re.sub(r"\.tmp-[0-9a-f]+-(.*)", r"\1 (to its temporary name)", request)
        return (f"connections reset for {STORE_DOWN_S:.0f} s at the PUT of checkpoints/{request}; the stage "
                f"failed {failed_s:.1f} s later ({err.get('code')}, {kind.group(1) if kind else err.get('message')}; "
                f"{(ev.data or {}).get('run') or 'failed'}), "
                f"restarted {resumed_s:.1f} s after the cut and resumed from checkpoint step {step}")

    def redis_down_submissions(self) -> tuple[float, float, list[float], list[float]]:
        """Submit ``REDIS_DOWN_JOBS`` jobs while Redis is down for longer than the publish retry window;
        returns (window, outage, seconds each submission took to give up, seconds from Redis back to each
        job's first stage starting)."""
        from service.queue import app

        stack = self.stack
        policy = app.conf.task_publish_retry_policy
        window = sum(min(policy["interval_start"] + i * policy["interval_step"], policy["interval_max"])
                     for i in range(policy["max_retries"]))
        stack.redis.stop()
        down_at = time.monotonic()
        stack.faults["redis down during submission"] += 1
        ids: list[str] = []
        gave_up: list[float] = []
        lock = threading.Lock()

        def submit(i: int) -> None:
            t = time.monotonic()
            job_id = _submit(stack, i)
            with lock:
                ids.append(job_id)
                gave_up.append(time.monotonic() - t)

        threads = [threading.Thread(target=submit, args=(len(self.job_ids) + k,)) for k in range(REDIS_DOWN_JOBS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=window + 120)
        assert len(ids) == REDIS_DOWN_JOBS, "a submission did not return while Redis was down"
        self.job_ids += ids
        for job_id in ids:  # committed, never enqueued
            job = stack.job(job_id)
            assert job.status == "queued" and job.dispatched_at is None, (job.status, job.dispatched_at)
        time.sleep(max(0.0, max(window, *gave_up) + 1.0 - (time.monotonic() - down_at)))
        outage = time.monotonic() - down_at
        stack.redis.start()
        up = time.time()
        deadline = time.monotonic() + 120
        starts = [
            _first_event(stack, job_id, up, deadline,
                         lambda d, _e: d.get("status") == "running" and d.get("stage") == "validating",
                         "never started after Redis came back")[0]
            for job_id in ids
        ]
        for job_id in ids:
            _wait_terminal(stack, job_id, timeout=240)
        return window, outage, sorted(gave_up), starts


def test_jobs_survive_random_faults(stack: Stack, capsys: pytest.CaptureFixture[str]) -> None:
    from service import registry_exports

    rng = random.Random(SEED)
    run = Run(stack, rng)
    t_start = time.monotonic()
    for faults in _plan(rng):
        carried, run.carried = run.carried, []
        run.job(faults + [Fault("kill9", None, st) for st in carried])
    for _ in range(MAX_EXTRA_JOBS):  # kills whose stage ended first, in jobs of their own
        if not run.carried:
            break
        carried, run.carried = run.carried, []
        run.job([Fault("kill9", None, st) for st in carried])
    window, outage, gave_up, redis_starts = run.redis_down_submissions()

    # An export of one version (a file derived from its weights): gc must keep it too.
    export = stack.log_dir / "draft-f32.gguf"
    export.write_bytes(b"GGUF" + bytes(4096))
    with stack.sessions() as s:
        registry_exports.publish_export(s, stack.store, stack.org_id, "fault-drafter", 1, export,
                                        "exports/draft-f32.gguf", {"format": "gguf"}, actor="fault-suite")

    # The broker: no message of a finished job, queued or un-acknowledged (the reconciler purges a dead
    # worker's un-acknowledged messages once they are STALE_AFTER_S old).
    t_end = time.monotonic()
    while True:
        left, sizes = _broker_leftovers(stack, run.job_ids)
        if (not left and not any(sizes.values())) or time.monotonic() - t_end > STALE_AFTER_S + 20:
            break
        time.sleep(1.0)
    broker_clean_s = time.monotonic() - t_end
    if left or any(sizes.values()):
        run.problems.append(f"broker holds messages of finished jobs: {left} ({sizes})")

    run.problems += _check_consistency(stack, run.job_ids)
    gc_problems, gc_summary = _gc_check(stack, _cli_gc_dry_run(stack))
    run.problems += gc_problems
    elapsed = time.monotonic() - t_start
    kills = sum(stack.kills_landed.values()) + sum(stack.kills_late.values())
    with capsys.disabled():
        print(
            f"\nfault suite (seed {SEED}; lease {LEASE_S:g} s, reconcile every {RECONCILE_S:g} s): "
            f"{len(run.job_ids)} jobs in {elapsed:.0f} s, {stack.n_workers} worker processes started"
        )
        print("faults injected: " + ", ".join(f"{k} x{v}" for k, v in sorted(stack.faults.items())))
        print(
            f"kill -9 landed per stage ({kills} kills): "
            + ", ".join(f"{st} {stack.kills_landed[st]}" for st in STAGES)
            + (f"; after their stage ended: {dict(stack.kills_late)}" if stack.kills_late else "")
            + (f"; not reached (stage over first): {dict(stack.kills_missed)}" if stack.kills_missed else "")
        )
        print(f"other faults hit: {', '.join(stack.hit)}; S3 outage in training")
        if run.recoveries:
            print(
                f"recovery after kill -9 (s): median {statistics.median(run.recoveries):.1f}, "
                f"max {max(run.recoveries):.1f}, all {[round(r, 1) for r in run.recoveries]}"
            )
        print(f"S3 outage: {run.store_outage}")
        print(
            f"Redis down {outage:.0f} s while {REDIS_DOWN_JOBS} jobs were submitted (publish retry window "
            f"{window:.1f} s; the submissions gave up after {', '.join(f'{g:.1f}' for g in gave_up)} s): first "
            f"stage started {', '.join(f'{s:.1f}' for s in redis_starts)} s after Redis came back"
        )
        print(f"failed or cancelled, then resumed: {run.resumed or 'none'}")
        print(
            f"broker at the end: {sizes} ({broker_clean_s:.0f} s after the last job; the reconciler deleted "
            f"{_purged_by_reconciler(stack)} dead workers' un-acknowledged messages during the run)"
        )
        for note in run.gc_notes:
            print(f"gc --dry-run, {note}")
        print(f"gc --dry-run at the end (tracedraft gc): {gc_summary}")
        print(f"lost or orphaned: {run.problems or 'nothing'}")
    assert not run.problems
    assert all(stack.kills_landed[st] >= 1 for st in STAGES), dict(stack.kills_landed)
    assert statistics.median(run.recoveries) < 60
    assert max(redis_starts) < REDIS_START_MAX_S, redis_starts
    assert outage > window
