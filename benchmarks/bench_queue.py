"""Queue benchmark: N no-op-stage jobs through the real Redis broker and PostgreSQL with 2 workers.

    .venv/bin/python benchmarks/bench_queue.py [--jobs 200] [--workers 2]

Each job runs all five stage tasks (validate, prepare, train, evaluate, register) whose stage functions
do nothing (``tests.queue.fake_stages:NOOP_STAGES``), so the figures measure the queue machinery alone:
broker round trips, the stage lock, the job-state and event writes. Each worker is a CPU worker process
(prefork, concurrency 1) consuming both queues, since a no-op "train" needs no GPU.

Prints throughput (jobs/s, from the first submission to the last job finished), and the delay from
submission (``jobs.created_at``) to start (``jobs.started_at``, the first stage picked up): p50, p99, max.
Uses a fresh PostgreSQL database (dropped after) and an empty Redis database number (flushed after).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PG_ADMIN = os.environ.get("TRACEDRAFT_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres")
PG_BASE = os.environ.get("TRACEDRAFT_TEST_PG_BASE", "postgresql+psycopg://postgres@127.0.0.1:5432")


def _empty_redis_db() -> int:
    import redis

    dbs = list(range(2, 16))
    random.shuffle(dbs)
    for db in dbs:
        client = redis.Redis(host="127.0.0.1", port=6379, db=db)
        if client.dbsize() == 0:
            return db
    raise SystemExit("no empty Redis database number among 2..15")


def _percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(q / 100 * len(ordered) + 0.5)) - 1))
    return ordered[k]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout", type=float, default=300.0)
    a = p.parse_args()

    import psycopg

    dbname = f"tdbench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
    redis_db = _empty_redis_db()
    home = Path(tempfile.mkdtemp(prefix="tdbench-"))
    env = {
        "TRACEDRAFT_DATABASE_URL": f"{PG_BASE}/{dbname}",
        "TRACEDRAFT_BROKER_URL": f"redis://127.0.0.1:6379/{redis_db}",
        "TRACEDRAFT_RESULT_BACKEND": f"redis://127.0.0.1:6379/{redis_db}",
        "TRACEDRAFT_PIPELINE": "celery",
        "TRACEDRAFT_HOME": str(home),
        "TRACEDRAFT_AUTO_MIGRATE": "false",
        "TRACEDRAFT_TEST_STAGES": "tests.queue.fake_stages:NOOP_STAGES",
        "TRACEDRAFT_LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    procs: list[subprocess.Popen] = []
    try:
        from service import jobs
        from service.db import Job, Organization, session_factory, upgrade
        from service.db.session import make_engine
        from service.queue import dispatch

        engine = make_engine(env["TRACEDRAFT_DATABASE_URL"])
        upgrade(engine)
        sessions = session_factory(engine)
        with sessions() as s:
            org = Organization(name="bench")
            s.add(org)
            s.commit()
            org_id = org.id

        worker_env = {**os.environ, "PYTHONPATH": str(REPO)}
        logs = []
        for i in range(a.workers):
            log = open(home / f"worker-{i}.log", "wb")  # noqa: SIM115 - closed with the process
            logs.append(log)
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "workers.worker", "--queue", "cpu,gpu", "--concurrency", "1",
                 "--stale-after", "600", "--loglevel", "WARNING"],
                cwd=REPO, env=worker_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        time.sleep(4.0)  # let both workers connect (a worker that is late only lowers the figures)

        t0 = time.monotonic()
        ids = []
        for _ in range(a.jobs):
            with sessions() as s:
                ids.append(jobs.create_job(s, org_id, None, {}).id)
            dispatch("validate", ids[-1])
        submit_s = time.monotonic() - t0

        deadline = time.monotonic() + a.timeout
        while time.monotonic() < deadline:
            with sessions() as s:
                left = s.query(Job).filter(Job.id.in_(ids), Job.status.in_(("queued", "running"))).count()
            if left == 0:
                break
            time.sleep(0.25)
        with sessions() as s:
            rows = s.query(Job).filter(Job.id.in_(ids)).all()
        statuses = {}
        for r in rows:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        done = [r for r in rows if r.status == "succeeded"]
        if not done:
            raise SystemExit(f"no job finished: {statuses}")
        first = min(r.created_at for r in rows)
        last = max(r.finished_at for r in done)
        wall = (last - first).total_seconds()
        delays = [(r.started_at - r.created_at).total_seconds() for r in rows if r.started_at]
        print(f"jobs: {a.jobs} ({statuses}), workers: {a.workers} x concurrency 1, stages per job: 5")
        print(f"submission: {submit_s:.2f} s ({a.jobs / submit_s:.0f} jobs/s submitted)")
        print(f"throughput: {len(done) / wall:.2f} jobs/s ({5 * len(done) / wall:.1f} stage tasks/s) "
              f"over {wall:.1f} s")
        print(f"submission-to-start delay: p50 {statistics.median(delays):.2f} s, "
              f"p99 {_percentile(delays, 99):.2f} s, max {max(delays):.2f} s")
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        import redis

        redis.Redis(host="127.0.0.1", port=6379, db=redis_db).flushdb()
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


if __name__ == "__main__":
    main()
