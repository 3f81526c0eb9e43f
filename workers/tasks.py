"""The stage tasks: one Celery task per stage, thin glue between the job database and a stage function.

Each task (``tracedraft.stage.<stage>``, routed by ``service.queue``) does, for one job:

1. load the job; a terminal job, a stage already done (its result stored) or a job at another stage is a
   no-op, so duplicate and late messages are harmless (idempotent);
2. a job whose cancel was requested is marked ``cancelled`` without running anything;
3. take the job's ``StageLock`` (a duplicate delivery while another worker runs the stage gives up);
4. count the delivery: the Nth start of a stage since the job was created or last resumed
   (``jobs.reopen_job``) is its attempt N and sets ``job.attempts`` to at least N; when the stage was
   already started ``job.max_attempts`` times since then by workers that died (started, never finished
   nor retried), the job fails with ``worker_lost`` instead of looping;
5. call the stage function (``STAGE_FUNCTIONS``) with a ``StageContext``;
6. store its result as ``job.result[<job stage>]`` and move to the next stage, then release the lock and
   dispatch the next stage (``service.queue.dispatch``); after the last stage the job ``succeeded``.

Database outages (a PostgreSQL restart) are waited out where they meet a delivery's own writes (the look,
the claim, the stage's progress and events, the commit: ``workers.db.retry_db``): no dead worker, no
attempt used, one log line, an event naming the cause. Failures: a ``TransientError`` (or anything with
``transient = True``, a connection error, a 5xx) is retried with exponential backoff (``RETRY_BASE_S`` * 2^n, capped, ``MAX_RETRIES`` times); a
``TracedraftError`` fails the job at once with its code, message and ``where`` as ``param``; any other
exception is a bug and fails the job with ``internal_error``. A stage function that returns
``{"cancelled": True}`` (after checkpointing) ends the job ``cancelled``.

Stage functions: ``STAGE_FUNCTIONS`` (task stage -> callable). Unfilled entries are looked up, on first
use and inside the pool process (so torch is imported there, never in the worker's parent), in the module
named by ``$TRACEDRAFT_TEST_STAGES`` (``module:attr``, a dict; for tests and benchmarks) or else in
``workers.stages`` (functions named after the stages).
"""

from __future__ import annotations

import importlib
import logging
import os
import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from celery import shared_task

from drafters.errors import TracedraftError
from service import jobs, queue
from service.db.session import shares_one_connection
from service.queue import JOB_STAGE, TASK_STAGES, StageLock, next_stage, task_name
from service.settings import get_settings
from workers.context import StageContext, StageResults, overall_progress, workdir_for
from workers.db import _engines, one_line, retry_db, sessions  # noqa: F401 - _engines re-exported (tests reset it)
from workers.heartbeat import Heartbeat
from workers.worker import connect_signals

log = logging.getLogger(__name__)

#: task stage -> stage function ``fn(ctx) -> dict``; filled lazily (see module docstring), tests patch it.
STAGE_FUNCTIONS: dict[str, Callable[[StageContext], dict[str, Any]]] = {}
TEST_STAGES_ENV = "TRACEDRAFT_TEST_STAGES"

RETRY_BASE_S = 5.0
RETRY_MAX_S = 300.0
MAX_RETRIES = 6


def stage_function(stage: str) -> Callable[[StageContext], dict[str, Any]]:
    """The stage function for a task stage (see the module docstring for where it is looked up).

    Raises LookupError when none is defined.
    """
    fn = STAGE_FUNCTIONS.get(stage)
    if fn is not None:
        return fn
    ref = os.environ.get(TEST_STAGES_ENV)
    if ref:
        module, _, attr = ref.partition(":")
        table = getattr(importlib.import_module(module), attr or "STAGES")
        for name, f in table.items():
            STAGE_FUNCTIONS.setdefault(name, f)
    else:
        stages = importlib.import_module("workers.stages")
        for name in TASK_STAGES:
            f = getattr(stages, name, None)
            if f is not None:
                STAGE_FUNCTIONS.setdefault(name, f)
    if stage not in STAGE_FUNCTIONS:
        raise LookupError(f"no stage function for {stage!r}")
    return STAGE_FUNCTIONS[stage]


# --- database access: workers.db (one engine per process; re-exported for callers of tasks.sessions) ---


# --- failure classification --------------------------------------------------------------------------------

_TRANSIENT_NAMES = {
    # by class name, so no optional client library has to be imported here
    "ConnectionError", "TimeoutError", "OperationalError", "InterfaceError", "TransportError",
    "ConnectTimeout", "ReadTimeout", "RemoteProtocolError", "EndpointConnectionError",
    "ConnectionClosedError", "BusyLoadingError",
}


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` may pass on retry: ``transient = True`` (``TransientError``), a connection or
    timeout error (builtin, redis, kombu, SQLAlchemy/psycopg operational, httpx, botocore), or an
    HTTP status error with a 5xx response. A ``TracedraftError`` is transient only when it says so."""
    if getattr(exc, "transient", False):
        return True
    if isinstance(exc, TracedraftError):
        return False
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and status >= 500:
        return True
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


def retry_countdown(retries: int, base: float = RETRY_BASE_S, cap: float = RETRY_MAX_S) -> float:
    """Backoff before retry number ``retries + 1``: ``base * 2**retries`` capped at ``cap``, with +-20%
    jitter so jobs that failed together do not retry together (seconds)."""
    delay = min(cap, base * (2 ** retries))
    return delay * random.uniform(0.8, 1.2)


# --- the tasks ---------------------------------------------------------------------------------------------


def _make_task(stage: str) -> Any:
    @shared_task(name=task_name(stage), bind=True, acks_late=True, reject_on_worker_lost=True,
                 max_retries=None, ignore_result=True)
    def stage_task(self: Any, job_id: str) -> dict[str, Any]:
        return run_stage(self, stage, job_id)

    stage_task.__doc__ = f"Run stage {stage!r} of job ``job_id`` (see ``workers.tasks.run_stage``)."
    return stage_task


validate = _make_task("validate")
prepare = _make_task("prepare")
regenerate = _make_task("regenerate")
train = _make_task("train")
evaluate = _make_task("evaluate")
register = _make_task("register")
TASKS = {"validate": validate, "prepare": prepare, "regenerate": regenerate, "train": train, "evaluate": evaluate,
         "register": register}


def _drop_result(session: Any, job_id: str, job_stage: str, owner: str) -> dict[str, Any]:
    """The stage finished after its lease went to another delivery (this worker froze, or lost the database
    longer than a lease, and the reconciler re-dispatched the stage): the lease holder's run commits, this
    one's result is dropped so that a stage never completes twice (its checkpoints stay for the other run)."""
    session.rollback()
    message = (f"stage {job_stage} finished on {owner} after its lease was taken over; its result is dropped "
               "(the stage's current run commits)")
    log.warning("job %s: %s", job_id, message)
    jobs.add_event(session, job_id, "warning", "message", message,
                   {"stage": job_stage, "run": "superseded", "worker": owner})
    return {"outcome": "skipped", "reason": "lease taken over"}


def _stage_runs(session: Any, job_id: str, job_stage: str) -> tuple[int, int]:
    """(starts, retried) of a stage since the job's latest resume, read from its ``stage`` events in
    order: each delivery that started the stage wrote ``data.status == "running"`` (``jobs.start_job``),
    each one that ended in a retry wrote ``data.run == "retrying"``, and a resume (``jobs.reopen_job``)
    starts the count again. ``starts - retried`` runs were lost with their worker."""
    from service.db import JobEvent

    rows = session.scalars(
        sa.select(JobEvent.data)
        .where(JobEvent.job_id == job_id, JobEvent.type == "stage")
        .order_by(JobEvent.seq)
    ).all()
    starts = retried = 0
    for data in rows:
        if _is_resume(data):
            starts = retried = 0  # the user resumed: a new series of attempts
        elif not data or data.get("stage") != job_stage:
            continue
        elif data.get("status") == "running" and "attempt" in data:
            starts += 1
        elif data.get("run") == "retrying":
            retried += 1
    return starts, retried


def _is_resume(data: dict[str, Any] | None) -> bool:
    """Whether a ``stage`` event is a resume's (``jobs.reopen_job``). Events written before it carried
    ``run: resumed`` are known by their shape: back to queued from a ``previous_status``."""
    if not data:
        return False
    if data.get("run") == jobs.RUN_RESUMED:
        return True
    return data.get("status") == "queued" and "previous_status" in data


def _skip_reason(job: Any, job_stage: str) -> str | None:
    """Why this delivery must not run the stage (None: run it)."""
    if job is None:
        return "no such job"
    if job.terminal:
        return f"job is {job.status}"
    if job_stage in (job.result or {}):
        return f"stage {job_stage} already done"
    if (job.stage or JOB_STAGE[TASK_STAGES[0]]) != job_stage:
        return f"job is at stage {job.stage}"
    return None


def run_stage(task: Any, stage: str, job_id: str) -> dict[str, Any]:
    """Run one stage of one job with the delivery rules of the module docstring; when the job ended
    (succeeded, failed, cancelled) clean its work directory here (``workers.workdirs.finish``).

    Returns a small summary (``{"job_id", "stage", "outcome"}``; outcome: skipped, cancelled, failed,
    done, retry). Raises ``celery.exceptions.Retry`` to retry a transient failure.
    """
    summary = _run_stage(task, stage, job_id)
    outcome = summary.get("outcome")
    if outcome in ("cancelled", "failed") or (outcome == "done" and next_stage(stage) is None):
        _finish_workdir(job_id)
    if outcome == "done" and next_stage(stage) is None:
        _drop_training_checkpoints(job_id)
    return summary


def _drop_training_checkpoints(job_id: str) -> None:
    """Delete a succeeded job's training checkpoints from the artifact store (``jobs/<id>/checkpoints/``,
    mirrored for a resume it will never need; its version has its own copy of the weights, and the job's
    result keeps ``jobs/<id>/best``). Best effort: ``tracedraft gc`` collects what a failure leaves."""
    from service.storage import ArtifactStore

    settings = get_settings()
    if settings.pipeline != "celery":
        return  # inline, checkpoints stay in the work directory, never in the store
    try:
        ArtifactStore.from_settings(settings).delete(f"jobs/{job_id}/checkpoints", recursive=True)
    except Exception as exc:  # noqa: BLE001 - the job succeeded; a leftover is gc's
        log.warning("job %s: could not delete its training checkpoints from the store (%s)", job_id, exc)
    else:
        log.info("job %s succeeded: its training checkpoints were removed from the artifact store", job_id)


def _finish_workdir(job_id: str) -> None:
    """Clean this machine's work directory of a job that just ended (never fails the task)."""
    from service.db import Job
    from workers import workdirs

    settings = get_settings()
    try:
        with sessions(settings)() as session:
            job = session.get(Job, job_id)
            status, result = (job.status, dict(job.result or {})) if job is not None else ("succeeded", {})
        removed = workdirs.finish(Path(settings.home) / "work" / job_id, status, result)
        if removed:
            log.info("job %s %s: removed %s from its work directory", job_id, status, ", ".join(removed))
    except Exception:  # cleanup is best effort; the reconciler's prune pass retries
        log.exception("job %s: work directory cleanup failed", job_id)


@dataclass(frozen=True)
class Claim:
    """A delivery that holds its job's stage: the stage's context and the lease owner it runs under."""

    ctx: StageContext
    owner: str


def _run_stage(task: Any, stage: str, job_id: str) -> dict[str, Any]:
    """One delivery of ``stage`` for ``job_id`` under the rules of the module docstring; returns its summary
    (``outcome``: done, skipped, cancelled, failed, retrying)."""
    from service.db import Job

    settings = get_settings()
    make_session = sessions(settings)
    summary = {"job_id": job_id, "stage": stage}

    def db(fn: Callable[[], Any], what: str) -> Any:  # waits out a database restart (workers.db.retry_db)
        return retry_db(fn, what, job_id=job_id, stage=JOB_STAGE[stage], make_session=make_session)

    def look() -> str | None:  # a look before the lock: most duplicate deliveries end here
        with make_session() as session:
            return _skip_reason(session.get(Job, job_id), JOB_STAGE[stage])

    reason = db(look, f"the start of stage {JOB_STAGE[stage]}")
    if reason:
        log.info("job %s stage %s: skipped (%s)", job_id, stage, reason)
        return {**summary, "outcome": "skipped", "reason": reason}

    lock = StageLock(make_session.kw["bind"], job_id)
    if not db(lock.acquire, f"the stage lock of stage {JOB_STAGE[stage]}"):
        log.info("job %s stage %s: another worker holds the job; duplicate delivery dropped", job_id, stage)
        return {**summary, "outcome": "skipped", "reason": "held by another worker"}
    try:
        claim = db(lambda: _claim(task, stage, job_id, settings, make_session),
                   f"the start of stage {JOB_STAGE[stage]}")
        if not isinstance(claim, Claim):
            return {**summary, **claim}
        try:
            result = _execute(stage, claim, settings, make_session)
        except Exception as exc:  # noqa: BLE001 - classified in _on_failure; BaseException counts as lost
            return _on_failure(task, claim.ctx, exc, make_session)
        outcome, following = db(lambda: _commit(stage, claim, result, make_session),
                                f"the commit of stage {JOB_STAGE[stage]}'s result")
    finally:
        lock.release()
    if following is not None:
        _dispatch_next(following, job_id, settings, make_session)
    return {**summary, **outcome}


def _claim(task: Any, stage: str, job_id: str, settings: Any, make_session: Any) -> Claim | dict[str, Any]:
    """With the stage lock held: skip, cancel or fail the delivery (its outcome), or start the stage's next
    attempt under a fresh lease (the Claim)."""
    from service.db import Job
    from service.db.session import lock_row

    job_stage = JOB_STAGE[stage]
    with make_session() as session:
        job = lock_row(session, Job, job_id)
        reason = _skip_reason(job, job_stage)
        if reason:
            session.rollback()
            return {"outcome": "skipped", "reason": reason}
        if job.cancel_requested:
            jobs.cancel_job(session, job_id, f"job cancelled before stage {job_stage} started")
            return {"outcome": "cancelled"}
        starts, retried = _stage_runs(session, job_id, job_stage)
        lost = starts - retried
        if lost >= job.max_attempts:
            jobs.add_event(session, job_id, "error", "stage",
                           f"stage {job_stage} was started {starts} times and its worker died "
                           f"{lost} times; giving up", {"stage": job_stage, "run": "lost"}, commit=False)
            jobs.fail_job(session, job_id, "worker_lost",
                          f"the worker running stage {job_stage} died {lost} times "
                          f"(max_attempts={job.max_attempts})", param=job_stage)
            return {"outcome": "failed", "code": "worker_lost"}
        attempt = starts + 1
        job.attempts = max(job.attempts or 0, attempt)
        owner = f"{_worker_name()}:{_task_id(task)}"
        jobs.start_job(session, job_id, stage=job_stage, worker_task_id=_task_id(task),
                       count_attempt=False, attempt=attempt, lease_owner=owner,
                       lease_s=settings.job_lease_s, commit=False)
        if attempt > 1:
            jobs.add_event(session, job_id, "warning", "message",
                           f"stage {job_stage} restarted (attempt {attempt}); resuming from its "
                           f"last checkpoint", {"stage": job_stage, "attempt": attempt,
                                               "worker": _worker_name()}, commit=False)
        session.commit()
        ctx = StageContext(
            job_id=job_id, org_id=job.org_id, stage=stage, spec=dict(job.spec or {}),
            workdir=workdir_for(settings, job_id), settings=settings, sessions=make_session,
            results=StageResults(job.result or {}), attempt=attempt, dataset_id=job.dataset_id,
        )
    return Claim(ctx, owner)


def _execute(stage: str, claim: Claim, settings: Any, make_session: Any) -> Any:
    """Run the stage function while a heartbeat renews the lease; raises what the stage raises."""
    # Inline too: a live lease is what tells a stopped embedded server's job (resumable) from a running one.
    # Not on an in-memory SQLite database, whose one connection the stage's own transaction is using.
    beat = Heartbeat(make_session, claim.ctx.job_id, claim.owner, settings.job_lease_s)
    if not shares_one_connection(settings.database_url):
        beat.start()
    try:
        if settings.enforce_job_policy:
            # The operator may have tightened the allow-lists since the job was accepted.
            from service.policy import check_job_spec

            check_job_spec(claim.ctx.spec, settings)
        return stage_function(stage)(claim.ctx)
    finally:
        beat.stop()


def _commit(stage: str, claim: Claim, result: Any, make_session: Any) -> tuple[dict[str, Any], str | None]:
    """Store the stage's result and move the job on, unless the job ended, the lease went to another
    delivery or the stage stopped for a cancel. Returns (the outcome, the next stage to dispatch or None)."""
    from service.db import Job
    from service.db.session import lock_row

    job_id, job_stage = claim.ctx.job_id, JOB_STAGE[stage]
    with make_session() as session:
        job = lock_row(session, Job, job_id)
        if job is None or job.terminal:
            session.rollback()
            return {"outcome": "skipped", "reason": "job finished meanwhile"}, None
        if job.lease_owner != claim.owner or job.stage != job_stage:  # fenced: not ours any more
            return _drop_result(session, job_id, job_stage, claim.owner), None
        result = dict(result or {})
        if result.get("cancelled"):
            # No stage result: a resumed job must run this stage again (from its checkpoint).
            jobs.add_event(session, job_id, "info", "message", f"stage {job_stage} stopped after a cancel",
                           {"stage": job_stage, "result": result}, commit=False)
            jobs.cancel_job(session, job_id, f"job cancelled during stage {job_stage}")
            return {"outcome": "cancelled"}, None
        jobs.set_lease(job, None)  # the next stage's worker takes its own
        jobs.set_result(session, job_id, job_stage, result, commit=False)
        jobs.add_event(session, job_id, "info", "stage", f"stage {job_stage} done",
                       {"stage": job_stage, "run": "finished", "attempt": claim.ctx.attempt}, commit=False)
        following = next_stage(stage)
        if following is None:
            jobs.succeed_job(session, job_id)
        else:
            jobs.set_progress(session, job_id, overall_progress(JOB_STAGE[following], 0.0), None,
                              event=False, commit=False)
            jobs.set_stage(session, job_id, JOB_STAGE[following], f"stage {JOB_STAGE[following]} queued")
    return {"outcome": "done"}, following


def _dispatch_next(following: str, job_id: str, settings: Any, make_session: Any) -> None:
    """Enqueue the next stage (after the commit and the lock's release); a failure is left to the reconciler."""
    try:
        # Looked up on the module at call time, never bound at import: a stand-in installed there (the
        # API tests' recorder) must not stick to this module for the rest of the process.
        queue.dispatch(following, job_id, settings=settings)
    except Exception as exc:  # noqa: BLE001 - state committed; the reconciler re-dispatches
        log.warning("job %s: dispatch of %s failed (%s); the reconciler will re-dispatch it",
                    job_id, following, exc)
    else:
        if settings.pipeline == "celery":
            def mark() -> None:
                with make_session() as session:
                    jobs.mark_dispatched(session, job_id)

            retry_db(mark, f"the dispatch of stage {JOB_STAGE[following]}", job_id=job_id, stage=None,
                     make_session=make_session)


def _on_failure(task: Any, ctx: StageContext, exc: Exception, make_session: Any) -> dict[str, Any]:
    from service.db import Job
    from service.db.session import lock_row

    job_id, job_stage = ctx.job_id, ctx.job_stage
    summary = {"job_id": job_id, "stage": ctx.stage}
    retries = int(getattr(task.request, "retries", 0) or 0)
    if is_transient(exc) and retries < MAX_RETRIES:
        # An error may say when to come back (an HTTP 503's Retry-After); else exponential backoff.
        retry_after = getattr(exc, "retry_after", None)
        countdown = float(retry_after) if retry_after is not None else retry_countdown(retries)
        log.warning("job %s stage %s: transient failure (%s); retry %d in %.1f s",
                    job_id, ctx.stage, _describe(exc), retries + 1, countdown)

        def record_retry() -> None:
            with make_session() as session:
                jobs.add_event(session, job_id, "warning", "stage",
                               f"stage {job_stage} failed transiently ({_describe(exc)}); retry {retries + 1} "
                               f"of {MAX_RETRIES} in {countdown:.0f} s",
                               {"stage": job_stage, "run": "retrying", "retry": retries + 1,
                                "countdown_s": round(countdown, 2), "error": _error_dict(exc)}, commit=False)
                job = lock_row(session, Job, job_id)
                if job is not None:  # the lease covers the backoff: the reconciler leaves the retry alone
                    jobs.set_lease(job, f"retry:{_task_id(task)}", countdown + ctx.settings.job_lease_s)
                session.commit()

        retry_db(record_retry, f"the retry of stage {job_stage}", job_id=job_id, stage=job_stage,
                 make_session=make_session)
        if task.request.is_eager:
            time.sleep(countdown)  # Task.apply re-runs a retry at once, ignoring the countdown
        raise task.retry(exc=exc, countdown=countdown, max_retries=None)
    err = _error_dict(exc)
    if is_transient(exc):
        err["message"] = f"{err['message']} (gave up after {retries} retries)"
        log.warning("job %s stage %s: gave up after %d retries: %r", job_id, ctx.stage, retries, exc)
    elif not isinstance(exc, TracedraftError):
        log.exception("job %s stage %s: unexpected error", job_id, ctx.stage)
    def record_failure() -> None:
        with make_session() as session:
            jobs.fail_job(session, job_id, err["code"], err["message"], err["param"])

    retry_db(record_failure, f"the failure of stage {job_stage}", job_id=job_id, stage=job_stage,
             make_session=make_session)
    return {**summary, "outcome": "failed", "code": err["code"]}


def _error_dict(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, TracedraftError):
        return {"code": exc.code, "message": exc.message, "param": exc.where}
    if type(exc).__name__ == "OutOfMemoryError" or isinstance(exc, MemoryError):
        return {"code": "out_of_memory", "message": _describe(exc), "param": None}
    code = "transient_error" if is_transient(exc) else "internal_error"
    return {"code": code, "message": _describe(exc), "param": None}


def _describe(exc: BaseException) -> str:
    """The error's text as a job (and so an API user) may see it. An operating-system error names no file:
    its paths are the worker's (work directory, caches), which the worker's log keeps. A database error is
    its first line (no SQL echo)."""
    if isinstance(exc, TracedraftError):
        return str(exc) or type(exc).__name__
    if isinstance(exc, sa.exc.SQLAlchemyError):
        return one_line(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return f"{type(exc).__name__}: {exc.strerror} (the worker's log names the file)"
    return f"{type(exc).__name__}: {str(exc) or type(exc).__name__}"


def _task_id(task: Any) -> str | None:
    return getattr(getattr(task, "request", None), "id", None)


def _worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# Connect the worker signal handlers (GPU pinning, reconciler) however the worker was started: with
# ``python -m workers.worker`` or ``celery -A service.queue worker`` (which loads this module).
connect_signals()
