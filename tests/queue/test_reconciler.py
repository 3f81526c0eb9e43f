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
    assert sorted(ids) == sorted([never_sent, lost, dead])
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
