"""``/v1/jobs``: create (idempotent, rate limited), list, get, cancel, events (paged and SSE), checkpoints."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncIterator
from pathlib import PurePath
from typing import Annotated, Any, Literal

import anyio.to_thread
import sqlalchemy as sa
from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from sqlalchemy.orm import Session

from service import jobs as jobs_mod
from service import registry
from service.api.deps import AppSettings, Caller, CurrentCaller, DbSession, run_db
from service.api.errors import ApiError, not_found
from service.api.ratelimit import retry_after_header
from service.api.routers import MAX_PAGE, page_query
from service.api.routers.datasets import get_dataset_row
from service.api.schemas import (
    CheckpointList,
    CheckpointOut,
    EventPage,
    JobCreate,
    JobEventOut,
    JobOut,
    Page,
    error_responses,
    spec_to_stored,
)
from service.db.base import utcnow
from service.db.models import TERMINAL_STATUSES, DatasetStatus, Job, JobEvent
from service.policy import check_base_drafter_ref, check_remote_code, check_sglang_endpoint, check_target
from service.queue import task_stage
from service.redaction import public_error, redact_uris
from service.settings import Settings

log = logging.getLogger("tracedraft.api")
router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

METADATA_PARAM = re.compile(r"^metadata\.([A-Za-z0-9_.:-]{1,64})$")
SSE_HEARTBEAT_S = 15.0
#: One server-sent event: ``id`` = the job event's seq, ``event`` = its type (or ``end``/``timeout``),
#: ``data`` = the event as JSON (``JobEventOut``; for ``end``/``timeout``: ``{"status", "last_seq"}``).
SSE_EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "event": {"type": "string"}, "data": {"type": "string"},
                   "retry": {"type": "integer"}},
}


def job_out(job: Job) -> JobOut:
    return JobOut(
        id=job.id, dataset_id=job.dataset_id, status=job.status, stage=job.stage, progress=job.progress or 0.0,
        eta_seconds=job.eta_seconds, attempts=job.attempts or 0, cancel_requested=bool(job.cancel_requested),
        error=public_error(job.error), spec=dict(job.spec or {}), metadata=dict(job.user_metadata or {}),
        result=dict(job.result or {}), created_at=job.created_at, updated_at=job.updated_at,
        started_at=job.started_at, finished_at=job.finished_at,
    )


def get_job_row(db: Any, caller: Caller, job_id: str) -> Job:
    """The caller's job, else 404 (identical for another organization's)."""
    job = db.get(Job, job_id)
    if job is None or job.org_id != caller.org_id:
        raise not_found("job", job_id, "job_id")
    return job


def _check_base_drafter(db: Any, caller: Caller, ref: str | None) -> None:
    if not ref:
        return
    check_base_drafter_ref(ref)
    try:
        registry.resolve_ref(db, caller.org_id, ref)
    except registry.RegistryError as exc:
        status = 404 if exc.code == "not_found" else 422
        raise ApiError(status, exc.code if status == 404 else "invalid_value", exc.message, "base_drafter") from None


@router.post(
    "", status_code=201, response_model=JobOut,
    responses={200: {"model": JobOut, "description": "Replay of an earlier request with the same Idempotency-Key"},
               **error_responses(400, 401, 404, 409, 422, 429)},
    summary="Create a fine-tuning job",
    description="`target.model` must be allowed by the operator (TRACEDRAFT_ALLOWED_TARGETS, or a local path "
    "under TRACEDRAFT_ALLOWED_TARGET_DIRS), else 422 `target_not_allowed`; `target.sglang.endpoint` must "
    "point at a host of TRACEDRAFT_ALLOWED_SGLANG_HOSTS, else 422 `endpoint_not_allowed`; "
    "`target.trust_remote_code` needs the target in TRACEDRAFT_REMOTE_CODE_TARGETS, else 422 "
    "`remote_code_not_allowed`.",
)
async def create_job(
    body: JobCreate,
    request: Request,
    response: Response,
    caller: CurrentCaller,
    db: DbSession,
    settings: AppSettings,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", min_length=1, max_length=255,
                                                  description="Retries with the same key and body return "
                                                  "the same job; another body answers 409.")] = None,
) -> JobOut:
    job, created = await run_db(db, _create_job, request, db, caller, settings, body, idempotency_key)
    if created:
        request.app.state.dispatcher.submit(job.id)  # after the commit; returns at once
    else:  # a retry with the same key (or a concurrent request carrying it won the race)
        response.status_code = 200
    return job


def _create_job(request: Request, db: Session, caller: Caller, settings: Settings, body: JobCreate,
                idempotency_key: str | None) -> tuple[JobOut, bool]:
    """The database side of ``POST /v1/jobs``: (the job, whether this request created it)."""
    started = utcnow()
    payload = body.model_dump(mode="json")
    if idempotency_key is not None:
        existing = db.scalars(sa.select(Job).where(Job.org_id == caller.org_id,
                                                   Job.idempotency_key == idempotency_key)).one_or_none()
        if existing is not None:  # a retry: no rate-limit charge, no new dispatch
            replay = jobs_mod.create_job(db, caller.org_id, existing.dataset_id, existing.spec, idempotency_key,
                                         body=payload)
            return job_out(replay), False
    # What a worker would load or call: only what the operator allowed (service/policy.py; workers check again).
    check_target(body.target.model, settings)
    check_remote_code(body.target.model, body.target.trust_remote_code, settings)
    if body.target.sglang is not None and body.target.sglang.endpoint is not None:
        check_sglang_endpoint(body.target.sglang.endpoint.host, settings)
    if body.data.regeneration.endpoint is not None:
        check_sglang_endpoint(body.data.regeneration.endpoint.host, settings, "data.regeneration.endpoint")
    dataset = get_dataset_row(db, caller, body.dataset_id, "dataset_id")
    if dataset.status == DatasetStatus.failed:
        raise ApiError(409, "dataset_not_ready", f"dataset {dataset.id} failed validation; see its report",
                       "dataset_id")
    _check_base_drafter(db, caller, body.base_drafter)
    wait = request.app.state.rate_limiter.check("jobs.create", caller.key_id)
    if wait is not None:
        raise ApiError(429, "rate_limited",
                       f"more than {settings.job_rate_limit_per_minute} job creations per minute for this key",
                       None, {"Retry-After": retry_after_header(wait)})
    spec = spec_to_stored(body)
    for key in ("dataset_id", "metadata"):
        spec.pop(key, None)
    job = jobs_mod.create_job(db, caller.org_id, dataset.id, spec, idempotency_key, metadata=body.metadata,
                              body=payload, lookup_key=False)  # looked up above, in this transaction
    created = job.created_at >= started
    if created:
        log.info("job %s created by key %s", job.id, caller.key_prefix)
    return job_out(job), created


@router.get(
    "", response_model=Page[JobOut], responses=error_responses(401, 422),
    summary="List jobs",
    description="Newest first. Filter by `status` and by metadata with `metadata.KEY=VALUE` query "
    "parameters (all must match).",
)
async def list_jobs(
    request: Request,
    caller: CurrentCaller,
    db: DbSession,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 20,
    after: Annotated[str | None, Query(max_length=40, description="next_cursor of the previous page")] = None,
    status: Annotated[Literal["queued", "running", "succeeded", "failed", "cancelled"] | None, Query()] = None,
) -> Page[JobOut]:
    return await run_db(db, _list_jobs, request, caller, db, limit, after, status)


def _list_jobs(request: Request, caller: Caller, db: Session, limit: int, after: str | None,
               status: str | None) -> Page[JobOut]:
    q = sa.select(Job).where(Job.org_id == caller.org_id)
    if status:
        q = q.where(Job.status == status)
    for name, value in request.query_params.multi_items():
        m = METADATA_PARAM.match(name)
        if m:
            q = q.where(Job.user_metadata[m.group(1)].as_string() == value)
        elif name.startswith("metadata."):
            raise ApiError(422, "invalid_value", f"invalid metadata filter {name[:80]!r}", name[:80])
    rows, has_more, cursor = page_query(db, q, Job.id, after, limit)
    return Page[JobOut](data=[job_out(j) for j in rows], has_more=has_more, next_cursor=cursor)


@router.get("/{job_id}", response_model=JobOut, responses=error_responses(401, 404, 422), summary="Get a job")
async def get_job(job_id: str, caller: CurrentCaller, db: DbSession) -> JobOut:
    return await run_db(db, lambda: job_out(get_job_row(db, caller, job_id)))


@router.post("/{job_id}/cancel", response_model=JobOut, responses=error_responses(401, 404, 409, 422),
             summary="Cancel a job")
def cancel_job(job_id: str, caller: CurrentCaller, db: DbSession) -> JobOut:
    """A queued job is cancelled at once (a delivery of its message finds it cancelled and runs nothing); a
    running one stops at its next step (``cancel_requested``). 409 ``job_finished`` when it already
    succeeded or failed."""
    get_job_row(db, caller, job_id)
    return job_out(jobs_mod.request_cancel(db, job_id))


@router.post("/{job_id}/resume", response_model=JobOut, responses=error_responses(401, 404, 409, 422),
             summary="Resume a failed, cancelled or orphaned job")
def resume_job(job_id: str, request: Request, caller: CurrentCaller, db: DbSession,
               settings: AppSettings) -> JobOut:
    """Queue a failed or cancelled job again at the stage where it stopped: training resumes from its last
    checkpoint, the stage's attempts count from 1 again, and the event log shows the resume. A job still
    marked running whose lease lapsed over a lease ago (its worker, or the server that ran it in-process, is
    gone) resumes too. 409 ``job_finished`` when it succeeded, ``job_not_resumable`` while it is queued or
    running under a live lease."""
    job = get_job_row(db, caller, job_id)
    job = jobs_mod.resume_job(db, job_id, f"resumed through the API at stage {job.stage}", settings.job_lease_s)
    request.app.state.dispatcher.submit(job.id, task_stage(job.stage))  # after the commit (else the reconciler)
    return job_out(job)


def _event_out(e: JobEvent) -> JobEventOut:
    data = e.data
    if data and isinstance(data.get("error"), dict):  # a failure's error, as on the job: no store URIs
        data = {**data, "error": public_error(data["error"])}
    message = redact_uris(e.message) or ""
    return JobEventOut(seq=e.seq, ts=e.ts, level=e.level, type=e.type, message=message, data=data)


@router.get(
    "/{job_id}/events",
    response_model=EventPage,
    responses={200: {"description": "A page of events, or with follow=true a text/event-stream",
                     "content": {"text/event-stream": {"schema": SSE_EVENT_SCHEMA}}},
               **error_responses(401, 404, 422)},
    summary="Job events (paged, or streamed with follow=true)",
)
async def job_events(
    job_id: str,
    request: Request,
    caller: CurrentCaller,
    db: DbSession,
    after: Annotated[int, Query(ge=0, le=2**31 - 1, description="Return events with seq > after")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    follow: Annotated[bool, Query(description="Server-sent events until the job is finished")] = False,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID", max_length=32)] = None,
) -> Any:
    """Events with ``seq > after``, oldest first. ``follow=true`` streams them as server-sent events
    (``id`` = seq, ``event`` = type, ``data`` = the event as JSON) while polling the database, and ends
    with an ``end`` event once the job is finished (or after the stream's maximum duration; reconnect
    with ``Last-Event-ID`` to resume)."""
    sessions = request.app.state.sessionmaker

    def read(session: Session, after_seq: int, n: int) -> tuple[list[JobEventOut], bool | None, str | None]:
        job = session.get(Job, job_id)
        if job is None or job.org_id != caller.org_id:
            return [], None, None
        events = jobs_mod.list_events(session, job_id, after_seq, n)
        return [_event_out(e) for e in events], job.status in TERMINAL_STATUSES, job.status

    def load(after_seq: int, n: int) -> tuple[list[JobEventOut], bool | None, str | None]:
        with sessions() as session:
            return read(session, after_seq, n)

    # The first page on the request's session (the one that checked the key: one pool checkout per
    # request), which run_db then closes: a stream polls with short sessions of its own for up to
    # sse_max_s instead of holding a connection.
    events, terminal, _status = await run_db(db, read, db, after, limit + 1)
    if terminal is None:
        raise not_found("job", job_id, "job_id")
    if not follow:
        has_more = len(events) > limit
        events = events[:limit]
        return EventPage(data=events, has_more=has_more, next_after=events[-1].seq if events else after)

    if last_event_id and re.fullmatch(r"[0-9]{1,10}", last_event_id.strip()):
        after = max(after, min(int(last_event_id.strip()), 2**31 - 1))
    cfg = request.app.state.sse
    return StreamingResponse(
        _sse(request, load, after, cfg["poll_s"], cfg["max_s"]), media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _sse(request: Request, load: Any, after: int, poll_s: float, max_s: float) -> AsyncIterator[bytes]:
    deadline = time.monotonic() + max_s
    last_sent = time.monotonic()
    yield b"retry: 2000\n\n"
    while True:
        events, terminal, status = await anyio.to_thread.run_sync(load, after, 500)
        for e in events:
            after = e.seq
            yield f"id: {e.seq}\nevent: {e.type}\ndata: {e.model_dump_json()}\n\n".encode()
            last_sent = time.monotonic()
        if terminal is None or (terminal and not events):
            yield f"event: end\ndata: {json.dumps({'status': status, 'last_seq': after})}\n\n".encode()
            return
        if events and len(events) == 500:
            continue  # more to send right away
        if time.monotonic() >= deadline:
            yield f"event: timeout\ndata: {json.dumps({'last_seq': after})}\n\n".encode()
            return
        if await request.is_disconnected():
            return
        if time.monotonic() - last_sent >= SSE_HEARTBEAT_S:
            yield b": keep-alive\n\n"
            last_sent = time.monotonic()
        await asyncio.sleep(poll_s)


def _step_of(name: str) -> int | None:
    m = re.search(r"(\d+)$", name)
    return int(m.group(1)) if m else None


@router.get(
    "/{job_id}/checkpoints", response_model=CheckpointList, responses=error_responses(401, 404, 422),
    summary="The job's training checkpoints",
    description="Listed: the best (highest validation expected tau) and last exported checkpoints from the "
    "training result once training ended, any checkpoints the training stage recorded in its result, and "
    "each validation point reported while training (step, expected tau) from the job's metrics events.",
)
def job_checkpoints(job_id: str, caller: CurrentCaller, db: DbSession) -> CheckpointList:
    job = get_job_row(db, caller, job_id)
    training = dict((job.result or {}).get("training") or {})
    out: list[CheckpointOut] = []
    for entry in training.get("checkpoints") or []:
        if isinstance(entry, dict) and entry.get("name"):
            name = PurePath(str(entry["name"])).name
            out.append(CheckpointOut(name=name, step=entry.get("step", _step_of(name)), kind="checkpoint",
                                     expected_tau=entry.get("expected_tau")))
    for kind, key in (("best", "best_dir"), ("last", "last_dir")):
        if training.get(key):
            name = PurePath(str(training[key])).name  # the name only: worker paths are not the user's
            tau = training.get("best_expected_tau") if kind == "best" else None
            out.append(CheckpointOut(name=name, step=_step_of(name), kind=kind, expected_tau=tau))
    seen: set[int] = set()
    rows = db.scalars(sa.select(JobEvent).where(JobEvent.job_id == job.id, JobEvent.type == "metrics")
                      .order_by(JobEvent.seq))
    for ev in rows:
        data = ev.data or {}
        if data.get("phase") != "validate" or not isinstance(data.get("step"), int) or data["step"] in seen:
            continue
        seen.add(data["step"])
        out.append(CheckpointOut(name=f"step_{data['step']:06d}", step=data["step"], kind="validation",
                                 expected_tau=data.get("val_expected_tau"), ts=ev.ts))
    return CheckpointList(job_id=job.id, data=out)
