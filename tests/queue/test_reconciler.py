"""The reconciler's decisions on the real PostgreSQL and Redis broker (no worker): a lapsed lease is taken
over and the dead worker's un-acknowledged message deleted; a job never enqueued or whose message the
broker lost is re-sent after the grace period; a job whose message waits in the queue, or whose lease is
live, is left alone."""

from __future__ import annotations

import datetime as dt
import json

import pytest

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.timeout(120)]


def _age(queue_env, job_id: str, seconds: float, **cols) -> None:
    from service.db import Job

    with queue_env.sessions() as s:
        job = s.get(Job, job_id)
        job.updated_at = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds)
        for k, v in cols.items():
            setattr(job, k, v)
        s.commit()


def _cancel_all(queue_env, ids) -> None:
    from service import jobs

    with queue_env.sessions() as s:
        for job_id in ids:
            jobs.request_cancel(s, job_id)


def test_reconciler_decisions(queue_env):
    from service.queue import task_id
    from service.reconciler import RedisBrokerView, requeue_stale_jobs
    from service.settings import get_settings
    from tests.queue.conftest import redis_client

    broker = redis_client(queue_env.redis_db)
    broker.flushdb()
    view = RedisBrokerView(broker)
    now = dt.datetime.now(dt.UTC)

    never_sent = queue_env.submit({}, dispatch=False)
    _age(queue_env, never_sent, 30)
    waiting = queue_env.submit({})  # its message is in the cpu queue
    _age(queue_env, waiting, 30)
    lost = queue_env.submit({}, dispatch=False)
    _age(queue_env, lost, 30, dispatched_at=now - dt.timedelta(seconds=30))  # sent, then lost by the broker
    alive = queue_env.submit({}, dispatch=False)
    _age(
        queue_env,
        alive,
        30,
        status="running",
        lease_owner="w:1",
        lease_expires_at=now + dt.timedelta(seconds=60),
        dispatched_at=now,
    )
    dead = queue_env.submit({}, dispatch=False)
    _age(
        queue_env,
        dead,
        30,
        status="running",
        lease_owner="w:2",
        lease_expires_at=now - dt.timedelta(seconds=1),
        dispatched_at=now,
    )
    # the dead worker's delivered, never acknowledged message, as kombu keeps it
    msg = {"headers": {"id": task_id(dead, "validate")}, "properties": {"delivery_tag": "tag-dead"}}
    broker.hset("unacked", "tag-dead", json.dumps([msg, "cpu", "cpu"]))
    broker.zadd("unacked_index", {"tag-dead": now.timestamp() - 30})

    sent: list[tuple[str, str]] = []
    ids = requeue_stale_jobs(
        queue_env.sessions,
        settings=get_settings(),
        broker=view,
        dispatcher=lambda stage, job_id: sent.append((stage, job_id)),
    )
    names = {never_sent: "never_sent", waiting: "waiting", lost: "lost", alive: "alive", dead: "dead"}
    assert sorted(names.get(i, i) for i in ids) == ["dead", "lost", "never_sent"], [
        (names.get(e.job_id), e.message, e.data) for e in _requeue_events(queue_env, ids)]
    assert ("validate", dead) in sent
    assert broker.hget("unacked", "tag-dead") is None and broker.zscore("unacked_index", "tag-dead") is None
    reasons = {e.job_id: e.data.get("reason") for e in _requeue_events(queue_env, ids)}
    assert "lease" in reasons[dead] and "never enqueued" in reasons[never_sent]
    assert "no message" in reasons[lost]
    job = queue_env.job(dead)
    assert job.lease_owner is None and job.dispatched_at is not None
    # a message never acknowledged (its worker died after committing the stage) of a job that has ended
    finished = queue_env.submit({}, dispatch=False)
    from service import jobs

    with queue_env.sessions() as s:
        jobs.succeed_job(s, finished)
    done = {"headers": {"id": task_id(finished, "register")}, "properties": {"delivery_tag": "tag-done"}}
    broker.hset("unacked", "tag-done", json.dumps([done, "gpu", "gpu"]))
    broker.zadd("unacked_index", {"tag-done": now.timestamp() - 3600})
    # a second pass right after sends nothing (the jobs were touched and marked dispatched)
    assert (
        requeue_stale_jobs(
            queue_env.sessions, settings=get_settings(), broker=view, dispatcher=lambda *a: None
        )
        == []
    )
    assert broker.hget("unacked", "tag-done") is None  # never handed out again
    _cancel_all(queue_env, [never_sent, waiting, lost, alive, dead])
    broker.flushdb()


def _requeue_events(queue_env, ids):
    from service import jobs

    out = []
    with queue_env.sessions() as s:
        for job_id in ids:
            out += [
                e for e in jobs.list_events(s, job_id, limit=1000) if (e.data or {}).get("run") == "requeued"
            ]
    return out


def test_heartbeat_renews_and_notices_a_takeover(queue_env):
    import time

    from service import jobs
    from service.db import Job
    from workers.heartbeat import Heartbeat

    job_id = queue_env.submit({}, dispatch=False)
    with queue_env.sessions() as s:
        jobs.start_job(s, job_id, stage="validating", lease_owner="me", lease_s=0.6)
        first = s.get(Job, job_id).lease_expires_at
    beat = Heartbeat(queue_env.sessions, job_id, "me", 0.6).start()
    time.sleep(1.0)
    assert queue_env.job(job_id).lease_expires_at > first and beat.beats >= 2
    with queue_env.sessions() as s:  # the reconciler took the job over
        jobs.set_lease(s.get(Job, job_id), "someone-else", 60)
        s.commit()
    time.sleep(0.6)
    assert beat.lost.is_set()
    beat.stop()
    _cancel_all(queue_env, [job_id])


_HOLDER = """
import sys, time, psycopg
conn = psycopg.connect(sys.argv[1], autocommit=True)
conn.execute("SELECT pg_advisory_lock(%s)", (int(sys.argv[2]),))
print(conn.execute("SELECT pg_backend_pid()").fetchone()[0], flush=True)
time.sleep(600)
"""


def _backend_alive(queue_env, pid: int) -> bool:
    import sqlalchemy as sa

    with queue_env.sessions() as s:
        return s.execute(sa.text("SELECT 1 FROM pg_stat_activity WHERE pid = :p"), {"p": pid}).first() is not None


def test_reconciler_breaks_the_stage_lock_of_a_frozen_worker(queue_env):
    """A worker whose machine froze keeps its stage lock on a connection the server still holds: within
    2 leases of the lapse the job is left alone; past them the reconciler ends that backend, says so in
    the events and re-dispatches the stage."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from service.queue import StageLock, lock_key
    from service.reconciler import LOCK_BREAK_LEASES, requeue_stale_jobs
    from service.settings import get_settings

    settings = get_settings()
    job_id = queue_env.submit({}, dispatch=False)
    now = dt.datetime.now(dt.UTC)
    _age(queue_env, job_id, 30, status="running", lease_owner="frozen:7", dispatched_at=now,
         lease_expires_at=now - dt.timedelta(seconds=1))
    dsn = queue_env.database_url.replace("postgresql+psycopg://", "postgresql://")
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, dsn, str(lock_key(job_id))],
                              stdout=subprocess.PIPE, text=True)
    try:
        pid = int(holder.stdout.readline())
        os.kill(holder.pid, signal.SIGSTOP)  # frozen: its connection stays open and never speaks again
        sent: list[tuple[str, str]] = []

        def reconcile():
            return requeue_stale_jobs(queue_env.sessions, settings=settings, broker=False,
                                      dispatcher=lambda stage, jid: sent.append((stage, jid)))

        assert job_id not in reconcile()  # lapsed 1 s ago: a live worker may just be slow to renew
        assert _backend_alive(queue_env, pid) and sent == []

        lapsed = LOCK_BREAK_LEASES * settings.job_lease_s + 5
        _age(queue_env, job_id, 30, lease_expires_at=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=lapsed))
        assert reconcile() == [job_id] and sent == [("validate", job_id)]
        deadline = time.monotonic() + 5
        while _backend_alive(queue_env, pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _backend_alive(queue_env, pid)
        with queue_env.sessions() as s:
            assert not StageLock.is_held(s.connection(), job_id)
        job = queue_env.job(job_id)
        assert job.lease_owner is None and job.dispatched_at is not None
        events = [e for e in queue_env.events(job_id) if (e.data or {}).get("run") in ("lock_broken", "requeued")]
        assert [e.data["run"] for e in events] == ["lock_broken", "requeued"]
        broken = events[0]
        assert broken.level == "warning" and broken.data["pids"] == [pid] and broken.data["owner"] == "frozen:7"
        assert "frozen:7" in broken.message and str(pid) in broken.message
        assert "lease" in events[1].data["reason"]
    finally:
        holder.kill()
        holder.wait(timeout=10)
        _cancel_all(queue_env, [job_id])


def test_database_connections_drop_a_dead_peer(queue_env):
    """PostgreSQL connections carry TCP keepalives and tcp_user_timeout on both ends, sized from
    db_dead_peer_s (default: the job lease), so the server drops a vanished worker's backend and its stage
    lock within seconds; options and keepalive values the URL gives are kept."""
    import sqlalchemy as sa

    from service.db.session import make_engine
    from service.settings import get_settings

    def probe(url, **kw):
        engine = make_engine(url, **kw)
        try:
            with engine.connect() as conn:
                server = {g: conn.execute(sa.text(f"SHOW {g}")).scalar() for g in (
                    "tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count", "tcp_user_timeout",
                    "statement_timeout")}
                return server, conn.connection.dbapi_connection.info.get_parameters()
        finally:
            engine.dispose()

    url = queue_env.database_url
    server, client = probe(url, dead_peer_s=9)
    assert server["tcp_keepalives_idle"] == "3" and server["tcp_keepalives_interval"] == "1"
    assert server["tcp_keepalives_count"] == "3" and server["tcp_user_timeout"] == "9000"
    assert (client["keepalives"], client["keepalives_idle"], client["keepalives_interval"],
            client["keepalives_count"], client["tcp_user_timeout"]) == ("1", "3", "1", "3", "9000")

    assert get_settings().db_dead_peer_s == get_settings().job_lease_s == 3  # the default follows the lease
    server, client = probe(url)
    assert client["tcp_user_timeout"] == "3000" and server["tcp_user_timeout"] == "3000"

    server, client = probe(f"{url}?keepalives_idle=7&options=-c%20statement_timeout%3D4321", dead_peer_s=9)
    assert client["keepalives_idle"] == "7" and server["statement_timeout"] == "4321ms"
    assert server["tcp_keepalives_idle"] == "3"

    _, client = probe(url, dead_peer_s=0)  # 0: the operating system's defaults
    assert "keepalives_idle" not in client and "tcp_user_timeout" not in client


def test_stage_lock_release_survives_a_terminated_connection(queue_env):
    """A worker whose lock the reconciler broke (it was frozen, then woke up) releases without raising:
    the server already dropped the lock with the connection."""
    import time

    from service.queue import StageLock

    job_id = queue_env.submit({}, dispatch=False)
    engine = queue_env.sessions.kw["bind"]
    lock = StageLock(engine, job_id)
    assert lock.acquire()
    with engine.connect() as conn:
        assert len(StageLock.terminate_holders(conn, job_id)) == 1
        conn.commit()
        deadline = time.monotonic() + 5
        while StageLock.is_held(conn, job_id) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not StageLock.is_held(conn, job_id)
    lock.release()  # its connection is dead: logged, not raised
    again = StageLock(engine, job_id)
    assert again.acquire()
    again.release()
    _cancel_all(queue_env, [job_id])
