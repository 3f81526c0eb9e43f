"""The reconciler: finds jobs no live worker is running and whose message is gone, and re-dispatches them.

Every worker's parent process runs ``requeue_stale_jobs`` every ``settings.reconcile_every_s`` seconds
(``workers.worker``). A job is taken over when no live worker holds its ``StageLock`` and:

- its **lease lapsed** (``jobs.lease_expires_at`` in the past): the worker running the stage stopped
  renewing it (kill -9, a lost machine). Its un-acknowledged broker message is deleted first, so the
  broker never hands the dead worker's copy out again when the visibility timeout ends hours later;
- it has **no lease** (queued, or between two stages) and is older than ``dispatch_grace_s``, and either
  it was never enqueued (``dispatched_at`` is NULL: the broker was down when it was created) or the broker
  holds no message for its current stage (a Redis restart without persistence lost it), or the only
  message is held un-acknowledged for over ``stale_after_s`` (prefetched by a worker that is gone);
- without a view of the broker (not Redis, or unreachable), a job with no lease is re-dispatched once it
  has been silent for ``stale_after_s``.

Each pass also deletes un-acknowledged messages older than ``stale_after_s`` of stages already done (a
worker that died between committing a stage and acknowledging it), so none is delivered again when the
visibility timeout ends.

A duplicate message this may create is harmless: the task re-checks the stage under the lock and a
finished stage is a no-op (``workers.tasks``).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from service.queue import JOB_STAGE, QUEUES, TASK_STAGES, StageLock, dispatch, task_id, task_stage
from service.settings import Settings, get_settings

log = logging.getLogger(__name__)

#: kombu's Redis transport: the hash of delivered, un-acknowledged messages and its time index.
UNACKED, UNACKED_INDEX = "unacked", "unacked_index"
_PRIORITY_SEP = "\x06\x16"  # kombu names priority lists "<queue>\x06\x16<priority>"


@dataclass(frozen=True)
class BrokerMessage:
    """Where a task's message sits: ``ready`` in a queue list or ``unacked`` (delivered, tag and age)."""

    state: str
    delivery_tag: str | None = None
    age_s: float = 0.0


class RedisBrokerView:
    """Read-mostly view of Celery's messages in a Redis broker (kombu's list-and-hash layout)."""

    def __init__(self, client: Any):
        self.client = client

    @classmethod
    def from_settings(cls, settings: Settings) -> RedisBrokerView | None:
        """A view of ``settings.broker_url``, or None for a broker that is not Redis."""
        if not settings.broker_url.startswith(("redis://", "rediss://")):
            return None
        import redis

        return cls(redis.Redis.from_url(settings.broker_url, socket_timeout=5, socket_connect_timeout=5))

    @staticmethod
    def _task_id(raw: bytes | str) -> str | None:
        try:
            msg = json.loads(raw)
        except ValueError:
            return None
        if isinstance(msg, list):  # unacked entries are [message, exchange, routing_key]
            msg = msg[0] if msg else {}
        return ((msg or {}).get("headers") or {}).get("id")

    def messages(self, now: float) -> dict[str, list[BrokerMessage]]:
        """Every task id with a message in the broker -> where its messages are."""
        found: dict[str, list[BrokerMessage]] = {}
        for q in QUEUES:
            for key in (q, *(f"{q}{_PRIORITY_SEP}{p}" for p in (3, 6, 9))):
                for raw in self.client.lrange(key, 0, -1):
                    tid = self._task_id(raw)
                    if tid:
                        found.setdefault(tid, []).append(BrokerMessage("ready"))
        delivered = dict(self.client.zrange(UNACKED_INDEX, 0, -1, withscores=True))
        for tag, raw in self.client.hgetall(UNACKED).items():
            tid = self._task_id(raw)
            if tid:
                tag_s = tag.decode() if isinstance(tag, bytes) else str(tag)
                age = now - float(delivered.get(tag, now))
                found.setdefault(tid, []).append(BrokerMessage("unacked", tag_s, age))
        return found

    def purge_unacked(self, tags: Iterable[str]) -> int:
        """Delete delivered, un-acknowledged messages (a dead worker's) so they are never restored."""
        tags = list(tags)
        if not tags:
            return 0
        pipe = self.client.pipeline()
        pipe.hdel(UNACKED, *tags)
        pipe.zrem(UNACKED_INDEX, *tags)
        return int(pipe.execute()[0])


def _why(
    job: Any, now: dt.datetime, msgs: list[BrokerMessage] | None, settings: Settings, stale_after_s: float
) -> tuple[str | None, list[str]]:
    """Why ``job`` must be re-dispatched (None: leave it) and the un-acknowledged tags to purge."""
    unacked = [m.delivery_tag for m in msgs or [] if m.state == "unacked" and m.delivery_tag]
    if job.lease_expires_at is not None:
        if job.lease_expires_at >= now:
            return None, []
        lapsed = (now - job.lease_expires_at).total_seconds()
        return (
            f"the lease of {job.lease_owner or 'its worker'} lapsed {lapsed:.0f} s ago (worker died)",
            unacked,
        )
    age = (now - job.updated_at).total_seconds()
    if age < settings.dispatch_grace_s:
        return None, []
    if job.dispatched_at is None:
        return "it was never enqueued (the broker was unreachable)", []
    if msgs is None:  # no broker view: only silence tells
        if age < stale_after_s:
            return None, []
        return f"no worker holds it and it has been silent for {age:.0f} s", []
    if any(m.state == "ready" for m in msgs):
        return None, []  # waiting its turn in the queue
    held = [m for m in msgs if m.state == "unacked"]
    if held and min(m.age_s for m in held) < stale_after_s:
        return None, []  # a worker just took it and is starting
    if held:
        return "its message is held un-acknowledged by a worker that is gone", unacked
    return "the broker holds no message for it (lost in a broker restart)", []


def _purge_finished(
    view: RedisBrokerView,
    in_broker: dict[str, list[BrokerMessage]],
    make_session: Callable[[], Any],
    stale_after_s: float,
) -> int:
    """Delete un-acknowledged messages older than ``stale_after_s`` whose stage no longer needs running (the
    job ended, or moved past that stage): a worker that died after committing a stage but before its ack
    left them, and the broker would hand them out again when the visibility timeout ends."""
    from service.db import Job

    old = {
        tid: [m for m in msgs if m.state == "unacked" and m.age_s >= stale_after_s]
        for tid, msgs in in_broker.items()
    }
    old = {tid: msgs for tid, msgs in old.items() if msgs and "." in tid}
    if not old:
        return 0
    ids = {tid.rsplit(".", 1)[0] for tid in old}
    with make_session() as session:
        rows = {
            r.id: (r.status, r.stage)
            for r in session.execute(sa.select(Job.id, Job.status, Job.stage).where(Job.id.in_(ids)))
        }
    tags: list[str] = []
    for tid, msgs in old.items():
        job_id, stage = tid.rsplit(".", 1)
        status, current = rows.get(job_id, ("gone", None))
        if status in ("gone", "succeeded", "failed", "cancelled") or current != JOB_STAGE.get(stage):
            tags += [m.delivery_tag for m in msgs if m.delivery_tag]
    n = view.purge_unacked(tags)
    if n:
        log.info("reconciler: deleted %d un-acknowledged message(s) of stages already done", n)
    return n


def requeue_stale_jobs(
    sessions: Callable[[], Any] | None = None,
    *,
    stale_after_s: float | None = None,
    settings: Settings | None = None,
    dispatcher: Callable[[str, str], Any] | None = None,
    broker: RedisBrokerView | None | bool = True,
) -> list[str]:
    """Re-dispatch the jobs the module docstring describes; returns their ids.

    ``broker``: True (default) reads the broker of ``settings`` when it is Redis, a view to use that one,
    False/None to decide without one. A ``queued`` job whose cancel was requested is marked cancelled here
    instead (it never started).
    """
    from service import jobs as jobs_mod
    from service.db import Job
    from service.db.base import utcnow
    from service.db.session import get_sessionmaker, lock_row

    s = settings or get_settings()
    stale = s.stale_after_s if stale_after_s is None else float(stale_after_s)
    make_session = sessions or get_sessionmaker(s.database_url)
    send = dispatcher or (lambda stage, job_id: dispatch(stage, job_id, settings=s))
    now = utcnow()
    with make_session() as session:
        candidates: list[str] = session.scalars(
            sa.select(Job.id)
            .where(
                Job.status.in_(("queued", "running")),
                sa.or_(
                    Job.lease_expires_at < now,
                    sa.and_(
                        Job.lease_expires_at.is_(None),
                        Job.updated_at < now - dt.timedelta(seconds=s.dispatch_grace_s),
                    ),
                ),
            )
            .order_by(Job.created_at)
        ).all()
    view = RedisBrokerView.from_settings(s) if broker is True else (broker or None)
    in_broker: dict[str, list[BrokerMessage]] | None = None
    if view is not None:
        try:
            in_broker = view.messages(now.timestamp())
        except Exception as exc:  # noqa: BLE001 - broker down: decide by the database alone
            log.warning("reconciler: cannot read the broker (%s)", exc)
            view = None
    if view is not None and in_broker:
        _purge_finished(view, in_broker, make_session, stale)
    requeued: list[str] = []
    for job_id in candidates:
        with make_session() as session:
            if StageLock.is_held(session.connection(), job_id):
                continue  # a live worker is on it (a long step, a database hiccup in its heartbeat)
            job = lock_row(session, Job, job_id)
            if job is None or job.status not in ("queued", "running"):
                session.rollback()
                continue
            stage = job.stage or JOB_STAGE[TASK_STAGES[0]]
            msgs = None if in_broker is None else in_broker.get(task_id(job_id, stage), [])
            reason, purge = _why(job, now, msgs, s, stale)
            if reason is None:
                session.rollback()
                continue
            if job.cancel_requested and job.status == "queued":
                jobs_mod.cancel_job(session, job_id, "cancelled while queued; it never started")
                continue
            if purge and view is not None:
                n = view.purge_unacked(purge)
                log.info("job %s: deleted %d un-acknowledged message(s) of a dead worker", job_id, n)
            jobs_mod.set_lease(job, None)
            jobs_mod.add_event(
                session,
                job_id,
                "warning",
                "stage",
                f"re-dispatching stage {stage}: {reason}",
                {"stage": stage, "run": "requeued", "reason": reason},
                commit=False,
            )
            job.updated_at = utcnow()
            session.commit()
        try:
            send(task_stage(stage), job_id)
        except Exception as exc:  # noqa: BLE001 - broker still down: try again on the next pass
            log.warning("re-dispatch of job %s failed: %s", job_id, exc)
            continue
        with make_session() as session:
            jobs_mod.mark_dispatched(session, job_id)
        requeued.append(job_id)
    return requeued


__all__ = ["BrokerMessage", "RedisBrokerView", "requeue_stale_jobs"]
