"""Fixtures of the queue tests: a fresh PostgreSQL database, a private Redis database number, and real
worker processes (``python -m workers.worker``) running the stand-in stages of ``fake_stages``.

Isolation: the PostgreSQL database ``tdq_<random>`` is created for the session and dropped after; the
broker and result backend use a Redis database number (2..15) that was empty at start and is flushed
after, so concurrent runs on the same Redis do not see each other's messages.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

PG_ADMIN = os.environ.get("TRACEDRAFT_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres")
PG_BASE = os.environ.get("TRACEDRAFT_TEST_PG_BASE", "postgresql+psycopg://postgres@127.0.0.1:5432")
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
REPO = Path(__file__).resolve().parents[2]
STALE_AFTER_S = 2.0
RECONCILE_EVERY_S = 1.0


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "redis_restart: kills and restarts a Redis server of the test's own (never the shared one)"
    )


def redis_client(db: int = 0) -> Any:
    import redis

    return redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=db, socket_timeout=5)


def _claim_key(db: int) -> str:
    return f"tracedraft:test:claim:{db}"


def _pick_redis_db() -> int:
    """A Redis database number (2..15) claimed for this test session, none that a client is connected to. The
    claim is a key in database 0, set atomically (NX), so two test runs at once never share a database, and a
    test that flushes its own database (the reconciler's) cannot drop the claim with it. Released by
    ``_release_redis_db``."""
    client = redis_client()
    # a database some client is still connected to is in use: a worker an earlier module leaked would consume
    # this module's messages (test_reconciler once saw its waiting message taken)
    busy = {int(c["db"]) for c in client.client_list() if str(c.get("db", "")).isdigit()}
    candidates = [db for db in range(2, 16) if db not in busy]
    random.shuffle(candidates)
    try:
        for db in candidates:
            if client.set(_claim_key(db), str(os.getpid()), nx=True, ex=3600):
                redis_client(db).flushdb()  # a crashed run's leftovers
                return db
    finally:
        client.close()
    raise RuntimeError("no free Redis database number among 2..15 (claims: tracedraft:test:claim:* in db 0)")


def _release_redis_db(db: int) -> None:
    redis_client(db).flushdb()
    redis_client().delete(_claim_key(db))


@dataclass
class QueueEnv:
    """The test session's settings environment, database and helpers."""

    env: dict[str, str]
    database_url: str
    redis_db: int
    home: Path
    sessions: Any
    org_id: str = ""

    def workdir(self, job_id: str) -> Path:
        return self.home / "work" / job_id

    def submit(self, spec: dict[str, Any] | None = None, *, dispatch: bool = True) -> str:
        """Create a job (status queued, stage validating) and dispatch its first stage; returns its id."""
        from service import jobs
        from service.queue import dispatch as send

        with self.sessions() as s:
            job = jobs.create_job(s, self.org_id, None, spec or {})
            job_id = job.id
        if dispatch:
            send("validate", job_id)
            with self.sessions() as s:
                jobs.mark_dispatched(s, job_id)
        return job_id

    def job(self, job_id: str) -> Any:
        from service.db import Job

        with self.sessions() as s:
            return s.get(Job, job_id)

    def events(self, job_id: str) -> list[Any]:
        from service import jobs

        with self.sessions() as s:
            return jobs.list_events(s, job_id, limit=10_000)

    def wait(self, job_id: str, until: Callable[[Any], bool] | set[str] | None = None,
             timeout: float = 60.0) -> Any:
        """Poll the job until ``until(job)`` (default: a terminal status); fails the test on timeout."""
        if until is None:
            until = {"succeeded", "failed", "cancelled"}
        pred = (lambda j: j.status in until) if isinstance(until, set) else until
        deadline = time.monotonic() + timeout
        job = None
        while time.monotonic() < deadline:
            job = self.job(job_id)
            if job is not None and pred(job):
                return job
            time.sleep(0.1)
        raise AssertionError(f"job {job_id} did not reach the expected state in {timeout} s: "
                             f"status={getattr(job, 'status', None)} stage={getattr(job, 'stage', None)} "
                             f"error={getattr(job, 'error', None)}")


@pytest.fixture(scope="module")
def queue_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueueEnv]:
    """Settings pointing at a fresh PostgreSQL database and a private Redis db (pipeline=celery), for one
    test module: the environment it sets is restored after the module, so it never leaks into other tests."""
    with make_queue_env(tmp_path_factory) as qe:
        yield qe


@contextlib.contextmanager
def make_queue_env(tmp_path_factory: pytest.TempPathFactory, redis_url: str | None = None) -> Iterator[QueueEnv]:
    """``queue_env``'s setup; ``redis_url`` (``redis://host:port``) names a Redis server of the caller's own
    (database 0 is used) instead of an empty database number of the machine's shared Redis."""
    import psycopg

    from service.db import Organization, session_factory, upgrade
    from service.db.session import make_engine
    from service.queue import reload_app
    from service.settings import reload_settings

    dbname = f"tdq_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
    url = f"{PG_BASE}/{dbname}"
    redis_db = 0 if redis_url else _pick_redis_db()
    redis_base = redis_url or f"redis://{REDIS_HOST}:{REDIS_PORT}"
    home = tmp_path_factory.mktemp("tracedraft-home")
    env = {
        "TRACEDRAFT_DATABASE_URL": url,
        "TRACEDRAFT_BROKER_URL": f"{redis_base}/{redis_db}",
        "TRACEDRAFT_RESULT_BACKEND": f"{redis_base}/{redis_db}",
        "TRACEDRAFT_PIPELINE": "celery",
        "TRACEDRAFT_HOME": str(home),
        "TRACEDRAFT_AUTO_MIGRATE": "false",
        "TRACEDRAFT_JOB_MAX_ATTEMPTS": "3",
        "TRACEDRAFT_TEST_STAGES": "tests.queue.fake_stages:STAGES",
        # These tests are about delivery: their specs name no target. test_real_stages turns it on.
        "TRACEDRAFT_ENFORCE_JOB_POLICY": "false",
        # Short lease and grace: a killed worker is noticed in ~4 s (lease + reconciler period).
        "TRACEDRAFT_JOB_LEASE_S": "3",
        "TRACEDRAFT_DISPATCH_GRACE_S": "2",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    engine = make_engine(url)
    try:
        upgrade(engine)
        reload_settings()
        reload_app()
        sessions = session_factory(engine)
        qe = QueueEnv(env=env, database_url=url, redis_db=redis_db, home=home, sessions=sessions)
        with sessions() as s:
            org = Organization(name=f"queue-tests-{dbname}")
            s.add(org)
            s.commit()
            qe.org_id = org.id
        yield qe
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        reload_settings()
        reload_app()
        engine.dispose()
        from workers import db as worker_db

        for e in worker_db._engines.values():
            e.dispose()
        worker_db._engines.clear()
        if redis_url is None:
            ensure_redis_up()
            _release_redis_db(redis_db)
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


@dataclass
class WorkerProc:
    proc: subprocess.Popen
    log: Path
    queues: str

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill9(self) -> None:
        """SIGKILL the whole worker (parent and pool processes): a machine crash, nothing cleans up."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)

    def stop(self, timeout: float = 15.0) -> None:
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill9()
        except ProcessLookupError:
            pass
        # pool processes left behind by a killed parent
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@dataclass
class Workers:
    """Starts real worker processes for a test and stops them all after it."""

    qe: QueueEnv
    tmp: Path
    procs: list[WorkerProc] = field(default_factory=list)

    def start(self, queues: str = "cpu,gpu", concurrency: int = 1, env: dict[str, str] | None = None,
              wait_ready: bool = True) -> WorkerProc:
        log = self.tmp / f"worker-{len(self.procs)}.log"
        full_env = {**os.environ, **self.qe.env, **(env or {}), "PYTHONUNBUFFERED": "1"}
        full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), full_env.get("PYTHONPATH")]))
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "workers.worker", "--queue", queues, "--concurrency",
                 str(concurrency), "--stale-after", str(STALE_AFTER_S), "--reconcile-every",
                 str(RECONCILE_EVERY_S), "--loglevel", "INFO"],
                cwd=REPO, env=full_env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )
        w = WorkerProc(proc, log, queues)
        self.procs.append(w)
        if wait_ready:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if " ready." in w.output():
                    break
                if not w.alive():
                    raise AssertionError(f"worker exited at start:\n{w.output()[-3000:]}")
                time.sleep(0.1)
            else:
                raise AssertionError(f"worker not ready in 30 s:\n{w.output()[-3000:]}")
        return w

    def stop_all(self) -> None:
        for w in self.procs:
            w.stop()


@pytest.fixture
def workers(queue_env: QueueEnv, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Workers]:
    ws = Workers(queue_env, tmp_path)
    yield ws
    ws.stop_all()
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        for i, w in enumerate(ws.procs):
            print(f"--- worker {i} log (tail) ---\n{w.output()[-4000:]}")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


# --- Redis restarts ----------------------------------------------------------------------------------------

REDIS_START = [
    "redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", str(REDIS_PORT),
    "--save", "", "--appendonly", "no", "--dir", "/var/lib/redis", "--logfile", "/var/log/redis/ci.log",
]


def redis_up() -> bool:
    try:
        return bool(redis_client().ping())
    except Exception:  # noqa: BLE001
        return False


def ensure_redis_up(timeout: float = 20.0) -> None:
    """Start the machine's Redis (the command from the machine doc) if it is not answering."""
    if redis_up():
        return
    os.makedirs("/var/lib/redis", exist_ok=True)
    os.makedirs("/var/log/redis", exist_ok=True)
    subprocess.run(REDIS_START, check=False)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if redis_up():
            return
        time.sleep(0.1)
    raise RuntimeError("Redis did not come back on 127.0.0.1:6379")
