"""The heartbeat of a running stage: renews the job's lease so the reconciler knows the worker is alive.

``Heartbeat(sessions, job_id, owner, lease_s)`` renews every ``lease_s / 3`` seconds in a daemon thread
(``service.jobs.renew_lease``) from ``start()`` to ``stop()``. When the worker dies (kill -9, a lost
machine) the renewals stop, the lease lapses ``lease_s`` seconds later at most, and the reconciler of any
live worker re-dispatches the stage (``service.reconciler.requeue_stale_jobs``), which resumes from its last
checkpoint. A renewal that fails on a database hiccup is retried at the next beat; ``lost`` is set when
the lease turned out to belong to someone else (the job ended or was taken over).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class Heartbeat:
    """Renews ``owner``'s lease on ``job_id`` every ``lease_s / 3`` seconds while started."""

    def __init__(self, sessions: Callable[[], Any], job_id: str, owner: str, lease_s: float):
        self.sessions = sessions
        self.job_id = job_id
        self.owner = owner
        self.lease_s = float(lease_s)
        self.lost = threading.Event()
        self.beats = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Heartbeat:
        """Start beating (idempotent); returns self."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"heartbeat-{self.job_id}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop beating and wait for the thread (at most one renewal in flight)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        from service import jobs
        from workers.db import one_line

        while not self._stop.wait(self.lease_s / 3):
            try:
                with self.sessions() as session:
                    held = jobs.renew_lease(session, self.job_id, self.owner, self.lease_s)
            except Exception as exc:  # noqa: BLE001 - the database may be restarting: try at the next beat
                log.warning("job %s: lease renewal failed (%s); retrying", self.job_id, one_line(exc))
                continue
            self.beats += 1
            if not held:
                log.warning("job %s: lease of %s is gone (job ended or taken over)", self.job_id, self.owner)
                self.lost.set()
                return

    def __enter__(self) -> Heartbeat:  # noqa: PYI034
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["Heartbeat"]
