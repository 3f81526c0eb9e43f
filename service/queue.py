"""The Celery application and the job dispatcher (docs/architecture.md section 3).

The database is the source of truth for a job; Celery only dispatches. This module holds no task code:
the API and CLI enqueue by task *name* (``dispatch``), and only a worker (or the embedded inline
pipeline) imports ``workers.tasks``, through the app's ``include`` list.

Stages and queues (task name -> queue):

=============  ==============  ==========================  =====
task stage     job ``stage``   task name                   queue
=============  ==============  ==========================  =====
validate       validating      tracedraft.stage.validate   cpu
prepare        preparing       tracedraft.stage.prepare    cpu
train          training        tracedraft.stage.train      gpu
evaluate       evaluating      tracedraft.stage.evaluate   gpu
register       registering     tracedraft.stage.register   cpu
=============  ==============  ==========================  =====

Delivery guarantees, and how a lost message is recovered:

- ``task_acks_late`` + ``task_reject_on_worker_lost``: a message is acknowledged only after its task
  returns, and re-queued when the pool process running it dies; the job's ``attempts`` column caps how
  often a stage may be lost that way (``workers.tasks``, error code ``worker_lost``).
- The worker running a stage renews a lease on the job row (``workers.heartbeat``); the reconciler of
  every worker (``service.reconciler``) re-dispatches a job whose lease lapsed (worker killed), that was
  never enqueued (broker down) or whose message the broker lost (a Redis restart), within seconds. The
  tasks make duplicates harmless: a stage runs under a per-job lock (``StageLock``: a PostgreSQL session
  advisory lock, released by the server when the worker's connection dies), and a finished stage is a
  no-op.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging

import sqlalchemy as sa
from celery import Celery
from kombu import Exchange, Queue

from service.settings import Settings, get_settings

log = logging.getLogger(__name__)

#: Task stages in pipeline order (the names of the stage functions in ``workers.stages``).
TASK_STAGES: tuple[str, ...] = ("validate", "prepare", "regenerate", "train", "evaluate", "register")
#: task stage -> the job's ``stage`` column value (``service.db.Stage``).
JOB_STAGE: dict[str, str] = {
    "validate": "validating",
    "prepare": "preparing",
    "regenerate": "regenerating",
    "train": "training",
    "evaluate": "evaluating",
    "register": "registering",
}
#: job ``stage`` value -> task stage.
TASK_STAGE: dict[str, str] = {v: k for k, v in JOB_STAGE.items()}
#: task stage -> queue. Training and evaluation need the target model on a GPU.
STAGE_QUEUE: dict[str, str] = {
    "validate": "cpu",
    "prepare": "cpu",
    "regenerate": "gpu",
    "train": "gpu",
    "evaluate": "gpu",
    "register": "cpu",
}
QUEUES: tuple[str, ...] = ("cpu", "gpu")
TASK_PREFIX = "tracedraft.stage."


def task_stage(stage: str) -> str:
    """Normalize ``stage`` ("train" or "training") to the task stage name ("train").

    Raises ValueError for an unknown stage.
    """
    if stage in JOB_STAGE:
        return stage
    if stage in TASK_STAGE:
        return TASK_STAGE[stage]
    raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(TASK_STAGES)}")


def task_name(stage: str) -> str:
    """The Celery task name of a stage: ``tracedraft.stage.<task stage>``."""
    return TASK_PREFIX + task_stage(stage)


def task_id(job_id: str, stage: str) -> str:
    """The Celery task id used for a job's stage: deterministic, so the reconciler finds a stage's message in
    the broker by it. Never revoked: a worker keeps revoked ids for hours, and a resumed job's stage
    reuses its id (a cancel is the database's ``cancel_requested``, which every delivery reads)."""
    return f"{job_id}.{task_stage(stage)}"


def next_stage(stage: str) -> str | None:
    """The task stage after ``stage``, or None after the last one."""
    i = TASK_STAGES.index(task_stage(stage))
    return TASK_STAGES[i + 1] if i + 1 < len(TASK_STAGES) else None


def make_app(settings: Settings | None = None) -> Celery:
    """Build the Celery app from the settings (broker, result backend, queues, long-task rules).

    Results are not stored by default: a stage writes its result to ``jobs.result`` (the database is the
    source of truth), so the result backend is only there for ad-hoc tasks that ask for it.
    """
    s = settings or get_settings()
    app = Celery("tracedraft", broker=s.broker_url, backend=s.result_backend or None,
                 include=["workers.tasks"])
    transport = {
        # Must exceed the longest stage, else Redis re-delivers a training task that is still running.
        "visibility_timeout": s.visibility_timeout_s,
        "socket_keepalive": True,
    }
    app.conf.update(
        task_queues=[Queue(q, Exchange(q, type="direct"), routing_key=q) for q in QUEUES],
        task_default_queue="cpu",
        task_routes={task_name(st): {"queue": q, "exchange": q, "routing_key": q}
                     for st, q in STAGE_QUEUE.items()},
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        result_expires=dt.timedelta(days=1),
        broker_transport_options=transport,
        result_backend_transport_options=dict(transport),
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,  # a worker outlives a broker restart
        # A training stage keeps running across a broker restart; the database, not the ack, says
        # whether it finished (duplicates are no-ops).
        worker_cancel_long_running_tasks_on_connection_loss=False,
        task_publish_retry=True,
        task_publish_retry_policy={"max_retries": 20, "interval_start": 0.2, "interval_step": 0.5,
                                   "interval_max": 3.0},
        worker_send_task_events=False,
        enable_utc=True,
    )
    return app


#: The process-wide app (``celery -A service.queue worker``), built from the settings at import.
app = make_app()


def reload_app(settings: Settings | None = None) -> Celery:
    """Rebuild the module app from (new) settings, e.g. after ``override_settings`` in tests."""
    global app
    app = make_app(settings)
    return app


def dispatch(stage: str, job_id: str, *, settings: Settings | None = None) -> str:
    """Enqueue (pipeline="celery") or run right away in-process (pipeline="inline") a job's stage.

    Celery: ``send_task`` by name to the stage's queue, with the deterministic ``task_id(job_id, stage)``;
    kombu retries the publish while the broker is briefly down, then raises (kombu/redis connection
    errors): the caller has already committed the job's state, so the reconciler re-dispatches it.
    Inline: the same task code runs synchronously through ``Task.apply`` (the embedded ``tracedraft
    run``); it returns when the whole rest of the pipeline has run, since each stage dispatches the next,
    and re-raises an exception the task itself raised (not a stage failure: that fails the job).
    Returns the task id.
    """
    s = settings or get_settings()
    st = task_stage(stage)
    tid = task_id(job_id, st)
    if s.pipeline == "inline":
        app.loader.import_default_modules()
        task = app.tasks[task_name(st)]
        res = task.apply(args=[job_id], task_id=tid, throw=False)
        if res.failed():  # the task's own bookkeeping broke (a stage's failure is recorded on the job)
            raise res.result
        return tid
    q = STAGE_QUEUE[st]
    # ignore_result: send_task does not read task_ignore_result, and without it every publish first makes
    # the result backend subscribe to the task's result channel; the backend is per thread, so a fresh
    # thread (one per API job creation) also built a Redis client and connection for it each time. No
    # caller reads a stage's Celery result (the job row holds it).
    app.send_task(task_name(st), args=[job_id], task_id=tid, queue=q, exchange=q, routing_key=q,
                  ignore_result=True)
    return tid


# --- stage locks and the reconciler ------------------------------------------------------------------


def lock_key(job_id: str) -> int:
    """The 64-bit signed PostgreSQL advisory-lock key of a job (first 8 bytes of sha256(job id))."""
    return int.from_bytes(hashlib.sha256(f"tracedraft.job:{job_id}".encode()).digest()[:8], "big",
                          signed=True)


class StageLock:
    """Exclusive right to run a job's current stage, held on a dedicated database connection.

    PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock``) on its own connection, held for
    the whole stage. When the worker dies (even kill -9) the server drops the connection and the lock
    with it, so ``is_held`` tells the reconciler whether any live worker is on the job. A machine that
    froze or vanished without closing its connection keeps the lock until TCP gives up, so the reconciler
    ends such a holder (``terminate_holders``) once the job's lease has lapsed well past its length.
    SQLite (embedded, one process): always acquired; liveness then falls back to the heartbeat alone.
    """

    def __init__(self, engine: sa.Engine, job_id: str):
        self.engine = engine
        self.job_id = job_id
        self.key = lock_key(job_id)
        self._conn: sa.Connection | None = None

    def acquire(self) -> bool:
        """Try once to take the lock; True when this process now holds it."""
        if self.engine.dialect.name != "postgresql":
            return True
        conn = self.engine.connect()
        try:
            got = conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar()
            conn.commit()
        except BaseException:
            conn.close()  # a database restart: the caller may try again, on a fresh connection
            raise
        if got:
            self._conn = conn
            return True
        conn.close()
        return False

    def release(self) -> None:
        """Release the lock (idempotent)."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
            conn.commit()
        except sa.exc.SQLAlchemyError as exc:
            # The connection is gone (a database restart, or a reconciler that took the job over
            # terminated it): the server released the lock with it, so there is nothing left to release.
            log.warning("job %s: stage lock connection lost before release (%s)", self.job_id,
                        str(exc).strip().splitlines()[0][:200])
        finally:
            conn.close()

    def __enter__(self) -> StageLock:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    @staticmethod
    def _holders_where(job_id: str) -> tuple[str, dict[str, int]]:
        """The pg_locks condition (and its parameters) matching the job's granted advisory lock.

        A bigint advisory key shows in pg_locks as classid = high 32 bits, objid = low 32 bits,
        objsubid = 1 (PostgreSQL docs, "pg_locks").
        """
        key = lock_key(job_id) & 0xFFFFFFFFFFFFFFFF
        where = ("locktype = 'advisory' AND granted AND objsubid = 1 "
                 "AND classid::bigint = :hi AND objid::bigint = :lo "
                 "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")
        return where, {"hi": key >> 32, "lo": key & 0xFFFFFFFF}

    @staticmethod
    def is_held(conn: sa.Connection, job_id: str) -> bool:
        """Whether some session holds the job's advisory lock (read from pg_locks; takes no lock).

        Always False on SQLite.
        """
        if conn.dialect.name != "postgresql":
            return False
        where, params = StageLock._holders_where(job_id)
        return conn.execute(sa.text(f"SELECT 1 FROM pg_locks WHERE {where}"), params).first() is not None

    @staticmethod
    def terminate_holders(conn: sa.Connection, job_id: str) -> list[int]:
        """End the server backends holding the job's advisory lock (``pg_terminate_backend``): for a worker
        whose machine froze or vanished while the server still keeps its connection. Returns the pids
        signalled; the lock goes when the backend has exited, shortly after (poll ``is_held``).

        Never the caller's own backend; [] on SQLite. Raises sqlalchemy.exc.DBAPIError when the database
        role may not signal them (they must run as the same role, or it needs pg_signal_backend).
        """
        if conn.dialect.name != "postgresql":
            return []
        where, params = StageLock._holders_where(job_id)
        rows = conn.execute(
            sa.text(f"SELECT pid, pg_terminate_backend(pid) FROM pg_locks WHERE {where} "
                    "AND pid <> pg_backend_pid()"),
            params,
        ).all()
        return [int(pid) for pid, signalled in rows if signalled]
