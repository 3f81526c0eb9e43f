"""Hands a job's stage to ``service.queue.dispatch`` off the request path: a new job's first stage
(``POST /v1/jobs``), a resumed job's current one (``POST /v1/jobs/{id}/resume``).

- pipeline=celery: one long-lived daemon thread publishes the messages in order (``StageDispatcher``). A
  publish is a short Redis write, but Celery keeps its result backend per thread and kombu its channel per
  connection: a thread per job rebuilt them on every job creation (a Redis client each time). When the
  broker is down, kombu retries the publish for a while (about 50 s, ``task_publish_retry_policy``) and
  then ``dispatch`` raises; the failure is logged and the reconciler
  (``service.reconciler.requeue_stale_jobs``) re-dispatches the committed job. After a failed publish the
  thread does not try again for ``BROKER_DOWN_S``: the jobs submitted meanwhile are left to the reconciler
  at once, instead of each holding the queue behind it for another retry window.
- pipeline=inline (the embedded mode): ``dispatch`` runs the whole pipeline, so each job gets a thread
  of its own (jobs run side by side); the threads are kept in ``threads`` so tests can join them.

The thread is a daemon, as the per-job threads were: a publish retrying against a dead broker never
holds up the process's exit (the job is committed; the reconciler re-dispatches it).
"""

from __future__ import annotations

import logging
import queue as queue_mod
import threading
import time

from service.settings import Settings

log = logging.getLogger("tracedraft.api")

#: Seconds after a failed publish during which the dispatch thread leaves new jobs to the reconciler.
BROKER_DOWN_S = 30.0


def _dispatch_stage(job_id: str, stage: str, settings: Settings) -> bool:
    """Dispatch one stage; False when the publish failed (logged: the reconciler re-dispatches the job)."""
    from service import queue

    try:
        queue.dispatch(stage, job_id, settings=settings)
    except Exception as exc:  # noqa: BLE001
        log.warning("dispatch of job %s failed (%s); the reconciler re-dispatches it", job_id,
                    type(exc).__name__)
        return False
    if settings.pipeline == "celery":
        _mark_dispatched(job_id, settings)
    return True


def _mark_dispatched(job_id: str, settings: Settings) -> None:
    """Record the enqueue (``jobs.dispatched_at``): a job without it is re-sent by the reconciler."""
    from service import jobs
    from service.db.session import get_sessionmaker

    try:
        with get_sessionmaker(settings.database_url)() as session:
            jobs.mark_dispatched(session, job_id)
    except Exception as exc:  # noqa: BLE001 - the reconciler re-sends it: a harmless duplicate
        log.warning("job %s: could not record its dispatch (%s)", job_id, type(exc).__name__)


class StageDispatcher:
    """Starts the pipeline of committed jobs: ``submit(job_id)`` returns at once (see the module doc)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.threads: list[threading.Thread] = []  # inline mode: one per job
        self._queue: queue_mod.SimpleQueue[tuple[str, str] | None] = queue_mod.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._retry_at = 0.0  # monotonic time before which the broker is taken as down (BROKER_DOWN_S)

    def submit(self, job_id: str, stage: str = "validate") -> None:
        """Dispatch ``job_id``'s ``stage`` (task or job stage name; default the first) in the background."""
        if self.settings.pipeline != "celery":
            thread = threading.Thread(target=_dispatch_stage, args=(job_id, stage, self.settings),
                                      name=f"pipeline-{job_id}", daemon=True)
            with self._lock:
                self.threads[:] = [t for t in self.threads if t.is_alive()]
                self.threads.append(thread)
            thread.start()
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, args=(self._queue,), name="stage-dispatch",
                                                daemon=True)
                self._thread.start()
        self._queue.put((job_id, stage))

    def _run(self, jobs: queue_mod.SimpleQueue[tuple[str, str] | None]) -> None:
        while (item := jobs.get()) is not None:
            if time.monotonic() < self._retry_at:  # committed, dispatched_at NULL: the reconciler sends it
                log.warning("job %s: the broker was unreachable under %.0f s ago; the reconciler dispatches it",
                            item[0], BROKER_DOWN_S)
                continue
            if not _dispatch_stage(*item, self.settings):
                self._retry_at = time.monotonic() + BROKER_DOWN_S

    def close(self, timeout: float = 5.0) -> None:
        """Publish what is queued (waiting at most ``timeout`` seconds), then stop the thread."""
        with self._lock:
            thread, self._thread = self._thread, None
            jobs, self._queue = self._queue, queue_mod.SimpleQueue()
        if thread is not None:
            jobs.put(None)
            thread.join(timeout)
