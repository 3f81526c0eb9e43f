"""Job state and THE job event writer (docs/architecture.md section 3: "one event writer").

Everything that changes a job's status, stage, progress, result or error goes through this module, and
every change a user should see is also appended to the job's event stream (``job_events``), so the API
can page through events (``list_events(after_seq=...)``) while the job runs.

Transactions: every mutating function is one unit of work that commits by default (``commit=False``
to compose it into a larger transaction; it then only flushes). Mutations lock the job row first
(``SELECT ... FOR UPDATE`` on PostgreSQL, the write lock on SQLite), so a cancel request and a worker
starting the job cannot interleave.

Event sequence numbers: 1, 2, 3, ... per job without gaps or repeats, even with concurrent writers
(API, several worker processes): each event takes ``jobs.event_seq + 1`` with an atomic
``UPDATE ... RETURNING`` that row-locks the job until the event's transaction commits.

Pure SQLAlchemy: no Celery, no torch.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from drafters.errors import TracedraftError
from service.db.base import new_id, utcnow
from service.db.models import (
    Dataset,
    EventLevel,
    EventType,
    Job,
    JobEvent,
    JobStatus,
    Organization,
    Stage,
)
from service.db.session import lock_row


class JobError(TracedraftError):
    """A job operation that cannot be done. Codes: ``not_found``, ``idempotency_conflict`` (same key,
    different body; HTTP 409), ``job_finished`` (the job is already terminal; 409),
    ``invalid_transition``, ``invalid_value``, ``job_not_resumable`` (queued or under a live lease; 409)."""


def _id(obj: Any) -> str:
    return obj if isinstance(obj, str) else obj.id


def _done(session: Session, commit: bool) -> None:
    if commit:
        session.commit()
    else:
        session.flush()


def request_hash(body: Mapping[str, Any]) -> str:
    """sha256 (hex) of the canonical JSON of a request body (sorted keys, no whitespace)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def get_job(session: Session, job_id: str, org_id: str | None = None) -> Job:
    """The job ``job_id`` (scoped to ``org_id`` when given). Raises JobError ``not_found`` (also for a job
    of another organization, so the API answers 404 either way)."""
    job = session.get(Job, job_id)
    if job is None or (org_id is not None and job.org_id != org_id):
        raise JobError("not_found", f"no job {job_id!r}", where="job_id")
    return job


def _locked(session: Session, job_id: str) -> Job:
    job = lock_row(session, Job, job_id)
    if job is None:
        raise JobError("not_found", f"no job {job_id!r}", where="job_id")
    return job


# --- creation --------------------------------------------------------------------------------------------


def create_job(
    session: Session,
    org: Organization | str,
    dataset: Dataset | str | None,
    spec: Mapping[str, Any],
    idempotency_key: str | None = None,
    *,
    metadata: Mapping[str, Any] | None = None,
    max_attempts: int | None = None,
    body: Mapping[str, Any] | None = None,
    lookup_key: bool = True,
    commit: bool = True,
) -> Job:
    """Create a queued job (status ``queued``, first stage ``validating``) and its first event.

    Idempotency: with ``idempotency_key``, a second call with the same key and the same request body
    returns the first job unchanged; with a different body it raises JobError ``idempotency_conflict``.
    The body compared is ``body`` when given (e.g. the API's parsed request), else
    ``{"dataset_id", "spec", "metadata"}``. Concurrent calls with one key create one job (the unique
    constraint decides; the loser rolls back its own transaction and returns the winner's job).

    ``lookup_key=False`` skips the first look-up of the key, for a caller that just looked it up in the
    same transaction (the API); the unique constraint still settles a race.
    ``max_attempts`` defaults to ``settings.job_max_attempts``.
    """
    org_id = _id(org)
    dataset_id = _id(dataset) if dataset is not None else None
    spec = dict(spec)
    meta = dict(metadata or {})
    digest = request_hash(body if body is not None else {"dataset_id": dataset_id, "spec": spec, "metadata": meta})

    if idempotency_key is not None and lookup_key:
        existing = _by_key(session, org_id, idempotency_key)
        if existing is not None:
            return _replay(existing, digest, idempotency_key)
    if max_attempts is None:
        from service.settings import get_settings

        max_attempts = get_settings().job_max_attempts
    job = Job(
        id=new_id("job"),
        org_id=org_id,
        dataset_id=dataset_id,
        status=JobStatus.queued,
        stage=Stage.validating,
        spec=spec,
        result={},
        user_metadata=meta,
        idempotency_key=idempotency_key,
        request_hash=digest if idempotency_key is not None else None,
        max_attempts=max_attempts,
        event_seq=1,
    )
    # The first event goes in with the job, in one flush. Its seq is 1 without add_event's atomic
    # increment: no other writer can add events to a job that is not committed yet.
    first = JobEvent(job_id=job.id, seq=1, level=EventLevel.info, type=EventType.stage, message="job queued",
                     data={"status": JobStatus.queued, "stage": Stage.validating})
    session.add_all([job, first])
    try:
        session.flush()
    except IntegrityError:
        if idempotency_key is None:
            raise
        session.rollback()
        existing = _by_key(session, org_id, idempotency_key)
        if existing is None:
            raise
        return _replay(existing, digest, idempotency_key)
    _done(session, commit)
    return job


def _by_key(session: Session, org_id: str, key: str) -> Job | None:
    return session.scalars(
        sa.select(Job).where(Job.org_id == org_id, Job.idempotency_key == key)
    ).one_or_none()


def _replay(job: Job, digest: str, key: str) -> Job:
    if job.request_hash != digest:
        raise JobError(
            "idempotency_conflict",
            f"Idempotency-Key {key!r} was already used for job {job.id} with a different request body",
            where="Idempotency-Key",
        )
    return job


# --- events ----------------------------------------------------------------------------------------------


def add_event(
    session: Session,
    job_id: str,
    level: str,
    type: str,
    message: str,
    data: Mapping[str, Any] | None = None,
    *,
    commit: bool = True,
) -> JobEvent:
    """Append one event to the job's stream and return it (with its ``seq``).

    ``level``: debug|info|warning|error; ``type``: message|metrics|stage|progress. Raises JobError
    ``invalid_value`` for other values and ``not_found`` for an unknown job. Safe with concurrent writers:
    the sequence number comes from an atomic increment of ``jobs.event_seq``.
    """
    level = str(level)
    type = str(type)
    if level not in EventLevel.__members__:
        raise JobError("invalid_value", f"event level must be one of {list(EventLevel)}, got {level!r}", "level")
    if type not in EventType.__members__:
        raise JobError("invalid_value", f"event type must be one of {list(EventType)}, got {type!r}", "type")
    seq = session.execute(
        sa.update(Job)
        .where(Job.id == job_id)
        .values(event_seq=Job.event_seq + 1, updated_at=utcnow())
        .returning(Job.event_seq)
        .execution_options(synchronize_session=False)
    ).scalar_one_or_none()
    if seq is None:
        raise JobError("not_found", f"no job {job_id!r}", where="job_id")
    event = JobEvent(job_id=job_id, seq=seq, level=level, type=type, message=message,
                     data=dict(data) if data is not None else None)
    session.add(event)
    _done(session, commit)
    return event


def list_events(session: Session, job_id: str, after_seq: int = 0, limit: int = 100) -> list[JobEvent]:
    """Events of a job with ``seq > after_seq``, oldest first, at most ``limit`` (cursor = last seq)."""
    return list(
        session.scalars(
            sa.select(JobEvent)
            .where(JobEvent.job_id == job_id, JobEvent.seq > after_seq)
            .order_by(JobEvent.seq)
            .limit(limit)
        )
    )


def job_warnings(session: Session, job_id: str) -> list[dict[str, Any]]:
    """The job's warning events, oldest first: [{"code", "message"}] (code None where the event has none)."""
    out: list[dict[str, Any]] = []
    after = 0
    while events := list_events(session, job_id, after_seq=after, limit=500):
        after = events[-1].seq
        out += [{"code": (ev.data or {}).get("code"), "message": ev.message} for ev in events if ev.level == "warning"]
    return out


# --- transitions -----------------------------------------------------------------------------------------


def _check_not_terminal(job: Job, action: str) -> None:
    if job.terminal:
        raise JobError("job_finished", f"cannot {action}: job {job.id} is already {job.status}", "status")


def start_job(
    session: Session,
    job_id: str,
    *,
    stage: Stage | str | None = None,
    worker_task_id: str | None = None,
    count_attempt: bool = True,
    attempt: int | None = None,
    lease_owner: str | None = None,
    lease_s: float | None = None,
    commit: bool = True,
) -> Job:
    """Mark the job ``running`` (a worker picked it up), set ``started_at`` once, and count an attempt.

    ``attempt`` is this stage's attempt number for the event (default: the job's ``attempts``): a stage
    that runs once after another stage's restart is still its attempt 1. With ``lease_owner`` and
    ``lease_s`` the worker takes the job's lease (``renew_lease`` keeps it). Raises JobError
    ``job_finished`` for a terminal job (e.g. cancelled while queued: the task must then do nothing). The
    caller enforces ``attempts <= max_attempts`` (``worker_lost`` past the cap).
    """
    job = _locked(session, job_id)
    _check_not_terminal(job, "start")
    was = job.status
    job.status = JobStatus.running
    if job.started_at is None:
        job.started_at = utcnow()
    if count_attempt:
        job.attempts += 1
    if worker_task_id is not None:
        job.worker_task_id = worker_task_id
    if stage is not None:
        job.stage = Stage(stage)
    if lease_owner is not None and lease_s is not None:
        job.lease_owner = lease_owner
        job.lease_expires_at = utcnow() + dt.timedelta(seconds=lease_s)
    n = job.attempts if attempt is None else attempt
    add_event(session, job.id, EventLevel.info, EventType.stage, f"{job.stage or 'job'} started (attempt {n})",
              {"status": JobStatus.running, "previous_status": was, "stage": job.stage, "attempt": n},
              commit=False)
    _done(session, commit)
    return job


# --- leases: the worker running a stage vouches for itself -------------------------------------------------


def renew_lease(session: Session, job_id: str, owner: str, lease_s: float) -> bool:
    """Extend ``owner``'s lease on a running job to ``lease_s`` seconds from now (one UPDATE, commits).

    Returns False when ``owner`` no longer holds it (the reconciler took the job over, or it ended): the
    caller's stage should then stop writing results.
    """
    n = session.execute(
        sa.update(Job)
        .where(Job.id == job_id, Job.lease_owner == owner, Job.status == JobStatus.running)
        .values(lease_expires_at=utcnow() + dt.timedelta(seconds=lease_s))
        .execution_options(synchronize_session=False)
    ).rowcount
    session.commit()
    return n == 1


def lease_lapsed(session: Session, job_id: str, grace_s: float) -> bool:
    """Whether the job is ``running`` under a lease that lapsed more than ``grace_s`` seconds ago: nobody
    renews it (its worker died, or the server that ran it in-process stopped), so a user may resume it."""
    cutoff = utcnow() - dt.timedelta(seconds=grace_s)
    return session.scalar(sa.select(sa.func.count()).select_from(Job).where(
        Job.id == job_id, Job.status == JobStatus.running, Job.lease_expires_at < cutoff)) == 1


def set_lease(job: Job, owner: str | None, lease_s: float | None = None) -> None:
    """Give the (locked) job's lease to ``owner`` for ``lease_s`` seconds, or clear it (``owner=None``)."""
    job.lease_owner = owner
    job.lease_expires_at = None if owner is None or lease_s is None else utcnow() + dt.timedelta(seconds=lease_s)


def mark_dispatched(session: Session, job_id: str, *, commit: bool = True) -> None:
    """Record that the job's current stage was enqueued now (``dispatched_at``)."""
    session.execute(sa.update(Job).where(Job.id == job_id).values(dispatched_at=utcnow())
                    .execution_options(synchronize_session=False))
    _done(session, commit)


def set_stage(
    session: Session, job_id: str, stage: Stage | str, message: str | None = None, *, commit: bool = True
) -> Job:
    """Move the job to ``stage`` and write a ``stage`` event. Raises JobError ``job_finished``."""
    stage = Stage(stage)
    job = _locked(session, job_id)
    _check_not_terminal(job, f"enter stage {stage}")
    previous = job.stage
    job.stage = stage
    add_event(session, job.id, EventLevel.info, EventType.stage, message or f"stage {stage}",
              {"stage": stage, "previous_stage": previous}, commit=False)
    _done(session, commit)
    return job


def set_progress(
    session: Session,
    job_id: str,
    progress: float,
    eta_seconds: float | None = None,
    message: str | None = None,
    data: Mapping[str, Any] | None = None,
    *,
    event: bool = True,
    commit: bool = True,
) -> Job:
    """Set the job's overall progress (fraction 0..1, clamped) and ETA in seconds; write a ``progress``
    event unless ``event=False`` (callers throttle, e.g. one event per few seconds of training)."""
    if math.isnan(progress):
        raise JobError("invalid_value", "progress is NaN", "progress")
    progress = min(1.0, max(0.0, float(progress)))
    job = _locked(session, job_id)
    job.progress = progress
    job.eta_seconds = None if eta_seconds is None else max(0.0, float(eta_seconds))
    if event:
        payload = {"progress": progress, "eta_seconds": job.eta_seconds, "stage": job.stage}
        payload.update(data or {})
        add_event(session, job.id, EventLevel.info, EventType.progress,
                  message or f"{job.stage or 'job'} {progress:.0%}", payload, commit=False)
    _done(session, commit)
    return job


def set_result(
    session: Session, job_id: str, stage: Stage | str, result: Mapping[str, Any], *, commit: bool = True
) -> Job:
    """Store ``result`` as ``job.result[stage]`` (replacing that stage's previous result)."""
    stage = Stage(stage)
    job = _locked(session, job_id)
    job.result = {**(job.result or {}), stage.value: dict(result)}
    _done(session, commit)
    return job


def _finish(job: Job, status: JobStatus) -> bool:
    """Validate the transition to terminal ``status``; False when already there (idempotent no-op)."""
    if job.status == status:
        return False
    if job.terminal:
        raise JobError("invalid_transition", f"job {job.id} is {job.status}, cannot become {status}", "status")
    job.status = status
    job.finished_at = utcnow()
    job.eta_seconds = None
    set_lease(job, None)
    return True


def succeed_job(
    session: Session, job_id: str, result: Mapping[str, Any] | None = None, *, commit: bool = True
) -> Job:
    """Mark the job ``succeeded`` (progress 1). ``result`` is merged into ``job.result``. Idempotent."""
    job = _locked(session, job_id)
    if _finish(job, JobStatus.succeeded):
        job.progress = 1.0
        if result:
            job.result = {**(job.result or {}), **dict(result)}
        add_event(session, job.id, EventLevel.info, EventType.stage, "job succeeded",
                  {"status": JobStatus.succeeded, "stage": job.stage}, commit=False)
    _done(session, commit)
    return job


def fail_job(
    session: Session,
    job_id: str,
    code: str,
    message: str,
    param: str | None = None,
    *,
    commit: bool = True,
) -> Job:
    """Mark the job ``failed`` with ``error = {code, message, param}`` and write an ``error`` event.

    Idempotent for an already failed job (the first error is kept). Raises JobError
    ``invalid_transition`` for a succeeded or cancelled job.
    """
    job = _locked(session, job_id)
    if _finish(job, JobStatus.failed):
        job.error = {"code": code, "message": message, "param": param}
        add_event(session, job.id, EventLevel.error, EventType.stage, f"job failed: {message}",
                  {"status": JobStatus.failed, "stage": job.stage, "error": job.error}, commit=False)
    _done(session, commit)
    return job


def cancel_job(session: Session, job_id: str, message: str = "job cancelled", *, commit: bool = True) -> Job:
    """Mark the job ``cancelled`` (the worker honoured the cancel flag, or it never started). Idempotent."""
    job = _locked(session, job_id)
    if _finish(job, JobStatus.cancelled):
        job.cancel_requested = True
        add_event(session, job.id, EventLevel.info, EventType.stage, message,
                  {"status": JobStatus.cancelled, "stage": job.stage}, commit=False)
    _done(session, commit)
    return job


def request_cancel(session: Session, job_id: str, *, commit: bool = True) -> Job:
    """Ask the job to stop (``POST /v1/jobs/{id}/cancel``).

    A queued job is cancelled at once (a task delivered later finds it terminal and does nothing; the
    caller also revokes the Celery task). A running job gets ``cancel_requested``; the worker checks
    ``is_cancel_requested`` between steps, checkpoints, then calls ``cancel_job``. Repeated requests are
    no-ops. Raises JobError ``job_finished`` when the job already succeeded or failed (HTTP 409).
    """
    job = _locked(session, job_id)
    if job.status == JobStatus.cancelled or (job.cancel_requested and not job.terminal):
        _done(session, commit)
        return job
    _check_not_terminal(job, "cancel")
    job.cancel_requested = True
    if job.status == JobStatus.queued:
        _finish(job, JobStatus.cancelled)
        add_event(session, job.id, EventLevel.info, EventType.stage, "job cancelled before it started",
                  {"status": JobStatus.cancelled, "stage": job.stage}, commit=False)
    else:
        add_event(session, job.id, EventLevel.info, EventType.message, "cancel requested",
                  {"cancel_requested": True, "stage": job.stage}, commit=False)
    _done(session, commit)
    return job


def is_cancel_requested(session: Session, job_id: str) -> bool:
    """Whether a cancel was requested (reads the database now, not the session's cached row)."""
    value = session.execute(sa.select(Job.cancel_requested).where(Job.id == job_id)).scalar_one_or_none()
    if value is None:
        raise JobError("not_found", f"no job {job_id!r}", where="job_id")
    return bool(value)


def requeue_job(session: Session, job_id: str, message: str, *, commit: bool = True) -> Job:
    """Put a running job back to ``queued`` (a redelivery after a worker was lost); keeps stage and
    attempts, writes a ``warning`` event. Raises JobError ``job_finished`` for a terminal job."""
    job = _locked(session, job_id)
    _check_not_terminal(job, "requeue")
    job.status = JobStatus.queued
    set_lease(job, None)
    add_event(session, job.id, EventLevel.warning, EventType.stage, message,
              {"status": JobStatus.queued, "stage": job.stage, "attempts": job.attempts}, commit=False)
    _done(session, commit)
    return job


#: ``data.run`` of the event ``reopen_job`` writes: stage attempts are counted again from it.
RUN_RESUMED = "resumed"


def reopen_job(session: Session, job_id: str, message: str, *, commit: bool = True) -> Job:
    """Put a cancelled or failed job back to ``queued`` at the stage where it stopped (a user's resume).

    Clears the error, the cancel flag and the finish time; keeps stage, results and the ``attempts``
    column (training resumes from its checkpoints). Its event (``data.run == "resumed"``) is the new base
    of the stage's attempt count: the next delivery is attempt 1 again, and it may be lost with its
    worker ``max_attempts`` times before the job fails with ``worker_lost`` (``workers.tasks``).
    Raises JobError ``job_finished`` for a succeeded job.
    """
    job = _locked(session, job_id)
    if job.status == JobStatus.succeeded:
        raise JobError("job_finished", f"cannot resume: job {job.id} already succeeded", "status")
    was = job.status
    job.status = JobStatus.queued
    job.error = None
    job.cancel_requested = False
    job.finished_at = None
    job.dispatched_at = None  # until the caller's dispatch succeeds: the reconciler sends it otherwise
    set_lease(job, None)
    add_event(session, job.id, EventLevel.info, EventType.stage, message,
              {"status": JobStatus.queued, "previous_status": was, "stage": job.stage, "run": RUN_RESUMED},
              commit=False)
    _done(session, commit)
    return job


def resume_job(session: Session, job_id: str, message: str, grace_s: float, *, commit: bool = True) -> Job:
    """A user's resume (API, ``tracedraft jobs resume``, ``tracedraft run --resume``): reopen the job
    (``reopen_job``) if it failed, was cancelled, or is ``running`` under a lease that lapsed over
    ``grace_s`` seconds ago (``lease_lapsed``: its worker or in-process server is gone). Raises JobError
    ``job_finished`` (succeeded) or ``job_not_resumable`` (queued, or running under a live lease: resuming
    it would run the stage twice)."""
    job = _locked(session, job_id)
    if job.status == JobStatus.succeeded:
        raise JobError("job_finished", f"cannot resume: job {job.id} already succeeded", "status")
    if job.status not in (JobStatus.failed, JobStatus.cancelled) and not lease_lapsed(session, job_id, grace_s):
        raise JobError("job_not_resumable", f"job {job.id} is {job.status}: only a failed or cancelled job, or "
                       "a running one whose worker is gone, can be resumed", "status")
    return reopen_job(session, job_id, message, commit=commit)


def elapsed_seconds(job: Job, now: dt.datetime | None = None) -> float | None:
    """Seconds since the job started (until it finished), or None if it never started."""
    if job.started_at is None:
        return None
    end = job.finished_at or now or utcnow()
    return (end - job.started_at).total_seconds()
