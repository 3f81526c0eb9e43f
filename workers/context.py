"""What a stage function gets: ``StageContext``, and the transient-error convention.

A stage function (``workers.stages.validate/prepare/train/evaluate/register``) is
``fn(ctx: StageContext) -> dict`` (JSON-able; stored as ``job.result[<job stage>]``). It reports through
``ctx.event`` / ``ctx.progress``, polls ``ctx.cancelled()`` between steps and, when cancelled, checkpoints
and returns ``{"cancelled": True, ...}``. Those calls wait out a restart of the job database
(``workers.db.retry_db``): a blip pauses the stage, never fails it. It signals a failure by raising:

- ``TransientError`` (or any exception with ``transient = True``, e.g. a drafters engine error for an
  SGLang 5xx, since ``drafters`` cannot import ``workers``): the task retries with exponential backoff;
- ``drafters.errors.TracedraftError`` (bad data, out of memory with the same settings, ...): the job
  fails at once with the error's ``code``, ``message`` and ``where`` (as ``error.param``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drafters.errors import TracedraftError
from service.queue import JOB_STAGE, TASK_STAGE
from service.settings import Settings

log = logging.getLogger(__name__)

#: Share of the job's overall progress taken by each stage (training dominates wall time).
STAGE_WEIGHTS: dict[str, float] = {
    "validating": 0.05,
    "preparing": 0.05,
    "regenerating": 0.15,
    "training": 0.50,
    "evaluating": 0.20,
    "registering": 0.05,
}

CANCEL_POLL_S = 1.0
PROGRESS_MIN_INTERVAL_S = 0.5
PROGRESS_EVENT_INTERVAL_S = 5.0


class TransientError(TracedraftError):
    """A failure that may pass on retry (storage or broker unreachable, connection reset, SGLang 5xx).

    The stage task retries it with exponential backoff (``workers.tasks``), or after ``retry_after``
    seconds when given (e.g. an HTTP 503's Retry-After); after the last retry the job fails with this
    error's code. Default code ``transient_error``.
    """

    transient = True

    def __init__(self, message: str, code: str = "transient_error", where: str | None = None,
                 retry_after: float | None = None):
        super().__init__(code, message, where)
        self.retry_after = retry_after


class StageResults(dict):
    """Results of the stages already done, keyed by job stage ("preparing"); the task stage name
    ("prepare") is accepted too on lookup."""

    def __missing__(self, key: str) -> Any:
        if key in JOB_STAGE and JOB_STAGE[key] in self:
            return self[JOB_STAGE[key]]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (
            isinstance(key, str) and key in JOB_STAGE and dict.__contains__(self, JOB_STAGE[key])
        )


@dataclass
class StageContext:
    """Everything one stage of one job needs; built by the stage task, passed to the stage function.

    Attributes:
        job_id, org_id: the job and its organization.
        stage: the task stage being run ("train"); ``job_stage`` is the job's stage value ("training").
        spec: the job's spec (the submitted request, a dict).
        workdir: per-job local working directory ``<settings.home>/work/<job_id>``; it persists across
            deliveries so a re-delivered training task resumes from the checkpoints it finds there.
        settings: the process settings.
        sessions: a SQLAlchemy ``sessionmaker`` for the job database.
        results: ``StageResults`` of the stages already done.
        attempt: how many times this stage has now been started (1 on the first delivery).
        dataset_id: the job's dataset, if any.
    """

    job_id: str
    org_id: str
    stage: str
    spec: dict[str, Any]
    workdir: Path
    settings: Settings
    sessions: Callable[[], Any]
    results: StageResults = field(default_factory=StageResults)
    attempt: int = 1
    dataset_id: str | None = None
    _store: Any = field(default=None, repr=False)
    _cancel_cache: tuple[float, bool] = field(default=(float("-inf"), False), repr=False)
    _last_progress: float = field(default=float("-inf"), repr=False)
    _last_progress_event: float = field(default=float("-inf"), repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def job_stage(self) -> str:
        """The job's ``stage`` value for this stage ("training")."""
        return JOB_STAGE[self.stage]

    @property
    def store(self) -> Any:
        """The artifact store (``service.storage.ArtifactStore`` on ``settings.artifact_uri``), created on
        first use."""
        if self._store is None:
            from service.storage import ArtifactStore

            try:
                self._store = ArtifactStore(self.settings.artifact_uri,
                                            storage_options=self.settings.artifact_storage_options)
            except TypeError:  # a store that takes the URI only
                self._store = ArtifactStore(self.settings.artifact_uri)
        return self._store

    def event(self, level: str, type: str, message: str, data: Mapping[str, Any] | None = None) -> None:
        """Append an event to the job's stream now (readable while the job runs).

        ``level``: debug|info|warning|error; ``type``: message|metrics|stage|progress (raises
        ``service.jobs.JobError`` ``invalid_value`` otherwise). Stage-scoped: ``data`` gets ``stage``.
        """
        from service import jobs

        payload = {"stage": self.job_stage, **dict(data or {})}
        self._write("an event", lambda session: jobs.add_event(session, self.job_id, level, type, message, payload))

    def _write(self, what: str, fn: Callable[[Any], Any]) -> Any:
        """``fn(session)`` in a session of its own, waiting out a database outage (a restart: the stage goes
        on once it is back, and the job gets an event naming the cause; ``workers.db.retry_db``)."""
        from workers.db import retry_db

        def unit() -> Any:
            with self.sessions() as session:
                return fn(session)

        return retry_db(unit, f"{what} of stage {self.job_stage}", job_id=self.job_id, stage=self.job_stage,
                        make_session=self.sessions)

    def metrics(self, values: Mapping[str, Any], message: str = "metrics") -> None:
        """Shorthand for a ``metrics`` event (e.g. ``{"step": 100, "loss": 2.3, "expected_tau": 3.1}``)."""
        self.event("info", "metrics", message, values)

    def progress(self, fraction: float, eta_seconds: float | None = None, message: str | None = None) -> None:
        """Report this stage's progress, ``fraction`` in 0..1, with an ETA in seconds for the stage.

        The job's overall progress is this stage's share (``STAGE_WEIGHTS``) on top of the stages
        before it. Writes are throttled: the job row at most every 0.5 s, a ``progress`` event at most
        every 5 s (always for fraction 1 or when ``message`` is given); throttled calls return at once,
        so a training loop may call this every step.
        """
        now = time.monotonic()
        fraction = min(1.0, max(0.0, float(fraction)))
        with self._lock:
            force = fraction >= 1.0 or message is not None
            if not force and now - self._last_progress < PROGRESS_MIN_INTERVAL_S:
                return
            self._last_progress = now
            want_event = force or now - self._last_progress_event >= PROGRESS_EVENT_INTERVAL_S
            if want_event:
                self._last_progress_event = now
        from service import jobs

        overall = overall_progress(self.job_stage, fraction)
        self._write("a progress update", lambda session: jobs.set_progress(
            session, self.job_id, overall, eta_seconds, message, {"stage_progress": fraction}, event=want_event))

    def cancelled(self) -> bool:
        """Whether a cancel was requested for the job (reads the database at most once per second;
        calls in between return the last answer). Once True it stays True."""
        now = time.monotonic()
        checked_at, value = self._cancel_cache
        if value or now - checked_at < CANCEL_POLL_S:
            return value
        from service import jobs
        from workers.db import is_db_outage

        try:
            with self.sessions() as session:
                value = jobs.is_cancel_requested(session, self.job_id)
        except Exception as exc:
            if not is_db_outage(exc):
                raise
            # the database is restarting: the last answer stands until the next poll (the next write
            # of the stage waits for the database and names the outage)
        self._cancel_cache = (now, value)
        return value


def overall_progress(job_stage: str, fraction: float) -> float:
    """Job progress (0..1) when ``job_stage`` is ``fraction`` done: the weights of the earlier stages
    plus ``fraction`` of this one's (``STAGE_WEIGHTS``)."""
    order = list(STAGE_WEIGHTS)
    job_stage = JOB_STAGE.get(job_stage, job_stage)
    i = order.index(job_stage)
    return sum(STAGE_WEIGHTS[s] for s in order[:i]) + STAGE_WEIGHTS[job_stage] * fraction


def workdir_for(settings: Settings, job_id: str) -> Path:
    """The job's local working directory ``<home>/work/<job_id>`` (created)."""
    path = Path(settings.home) / "work" / job_id
    path.mkdir(parents=True, exist_ok=True)
    return path


__all__ = [
    "STAGE_WEIGHTS",
    "TASK_STAGE",
    "StageContext",
    "StageResults",
    "TransientError",
    "overall_progress",
    "workdir_for",
]
