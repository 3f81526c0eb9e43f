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

A stage lock still held ``LOCK_BREAK_LEASES`` (2) leases after the job's lease lapsed belongs to a worker
whose machine froze or vanished (powered off, network cut) while the server keeps its connection; the
pass ends that database session (``StageLock.terminate_holders``), writes a ``lock_broken`` warning event
and re-dispatches the stage as for any lapsed lease. (``service.db.session.make_engine`` also has the
server drop such a connection itself after ``settings.db_dead_peer_s``; this covers the rest, e.g. a
machine that still answers TCP but whose worker is frozen.)

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
import time
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


#: A stage lock still held this many leases after the job's lease lapsed is broken: the worker stopped
#: renewing, and its connection outlived it on a machine that froze or vanished without closing it.
LOCK_BREAK_LEASES = 2.0
#: How long a pass waits for a terminated lock holder's backend to exit (seconds).
LOCK_RELEASE_WAIT_S = 5.0


def _lapsed_s(lease_expires_at: dt.datetime | None, now: dt.datetime) -> float:
    """Seconds since the lease lapsed (<= 0: live; 0 with no lease)."""
    return 0.0 if lease_expires_at is None else (now - lease_expires_at).total_seconds()


def _break_stale_lock(session: Any, job: Any, now: dt.datetime, settings: Settings) -> list[int] | None:
    """End the database session holding the (row-locked) ``job``'s stage lock when its lease lapsed over
    ``LOCK_BREAK_LEASES`` leases ago, and wait for the lock to go (up to ``LOCK_RELEASE_WAIT_S`` seconds).

    Returns the backend pids terminated ([] when the holder left meanwhile), or None to leave the job
    alone: lease live or lapsed too recently, not permitted, or the lock still held after the wait.
    Database errors are logged, not raised (the next pass tries again).
    """
    lapsed = _lapsed_s(job.lease_expires_at, now)
    if lapsed <= LOCK_BREAK_LEASES * settings.job_lease_s:
        return None
    try:
        # Its own connection: an error (no permission to signal) must not abort the row lock's transaction.
        with session.get_bind().connect() as conn:
            pids = StageLock.terminate_holders(conn, job.id)
            conn.commit()
            deadline = time.monotonic() + LOCK_RELEASE_WAIT_S
            while StageLock.is_held(conn, job.id):
                if time.monotonic() > deadline:
                    log.warning("job %s: its stage lock is still held after ending backend(s) %s", job.id, pids)
                    return None
                time.sleep(0.1)
    except sa.exc.SQLAlchemyError as exc:
        log.warning("job %s: cannot end the session holding its stage lock (%s)", job.id, exc)
        return None
    if pids:
        log.warning("job %s: ended database backend(s) %s holding its stage lock %.0f s after the lease of %s "
                    "lapsed", job.id, pids, lapsed, job.lease_owner)
    return pids


def _lock_broken_event(session: Any, job: Any, stage: str, pids: list[int], now: dt.datetime) -> None:
    """Tell the job's events that its stage lock was taken from a worker that stopped answering."""
    from service import jobs as jobs_mod

    lapsed = _lapsed_s(job.lease_expires_at, now)
    jobs_mod.add_event(
        session, job.id, "warning", "stage",
        f"stage {stage}: ended the database session (backend {', '.join(map(str, pids))}) of "
        f"{job.lease_owner or 'its worker'}, which still held the stage lock {lapsed:.0f} s after its lease "
        "lapsed (its machine stopped answering)",
        {"stage": stage, "run": "lock_broken", "pids": pids, "lapsed_s": round(lapsed, 1),
         "owner": job.lease_owner},
        commit=False,
    )


def _take_over(
    session: Any,
    job_id: str,
    lease_expires_at: dt.datetime | None,
    now: dt.datetime,
    s: Settings,
    in_broker: dict[str, list[BrokerMessage]] | None,
    view: RedisBrokerView | None,
    stale: float,
) -> str | None:
    """Decide on one candidate job in ``session`` and commit; returns the stage to re-dispatch, or None.

    ``lease_expires_at`` is the candidate query's: a held stage lock is left alone without locking the
    row unless that lease lapsed long ago (``_break_stale_lock`` then re-reads it under the row lock).
    """
    from service import jobs as jobs_mod
    from service.db import Job
    from service.db.base import utcnow
    from service.db.session import lock_row

    held = StageLock.is_held(session.connection(), job_id)
    if held and _lapsed_s(lease_expires_at, now) <= LOCK_BREAK_LEASES * s.job_lease_s:
        return None  # a live worker is on it (a long step, a database hiccup in its heartbeat)
    job = lock_row(session, Job, job_id)
    if job is None or job.status not in ("queued", "running"):
        session.rollback()
        return None
    stage = job.stage or JOB_STAGE[TASK_STAGES[0]]
    broken = _break_stale_lock(session, job, now, s) if held else []
    if broken is None:
        session.rollback()
        return None
    msgs = None if in_broker is None else in_broker.get(task_id(job_id, stage), [])
    reason, purge = _why(job, now, msgs, s, stale)
    if reason is None:
        session.rollback()
        return None
    if job.cancel_requested and job.status == "queued":
        jobs_mod.cancel_job(session, job_id, "cancelled while queued; it never started")
        return None
    if purge and view is not None:
        n = view.purge_unacked(purge)
        log.info("job %s: deleted %d un-acknowledged message(s) of a dead worker", job_id, n)
    if broken:
        _lock_broken_event(session, job, stage, broken, now)
    jobs_mod.set_lease(job, None)
    jobs_mod.add_event(session, job_id, "warning", "stage", f"re-dispatching stage {stage}: {reason}",
                       {"stage": stage, "run": "requeued", "reason": reason}, commit=False)
    job.updated_at = utcnow()
    session.commit()
    return stage


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
    from service.db.session import get_sessionmaker

    s = settings or get_settings()
    stale = s.stale_after_s if stale_after_s is None else float(stale_after_s)
    make_session = sessions or get_sessionmaker(s.database_url)
    send = dispatcher or (lambda stage, job_id: dispatch(stage, job_id, settings=s))
    now = utcnow()
    with make_session() as session:
        candidates = session.execute(
            sa.select(Job.id, Job.lease_expires_at)
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
    for job_id, lease_expires_at in candidates:
        with make_session() as session:
            stage = _take_over(session, job_id, lease_expires_at, now, s, in_broker, view, stale)
        if stage is None:
            continue
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
