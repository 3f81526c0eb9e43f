"""Prometheus metrics of one API app, in their own ``CollectorRegistry`` (tests stay isolated).

Exposed at ``GET /metrics``:

- ``tracedraft_jobs{status}`` (gauge): jobs per status, all organizations (read from the database at
  scrape time; no organization labels, so a scrape reveals no tenant).
- ``tracedraft_stage_duration_seconds{stage}`` (histogram): wall time of finished stage runs, from the job
  event stream (a stage's ``started`` event to its ``done`` event), over the last
  ``STAGE_WINDOW`` of events; recomputed at most every ``CACHE_S`` seconds.
- ``tracedraft_queue_depth{queue}`` (gauge): messages waiting in the Celery queues ``cpu`` and ``gpu``
  (Redis ``LLEN``), only when pipeline=celery.
- ``tracedraft_upload_bytes_total`` (counter): bytes accepted by ``POST /v1/datasets``.
- ``tracedraft_uploads_rejected_total{code}`` (counter): uploads refused, by error code.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import sqlalchemy as sa
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy.orm import Session

from service.db.base import utcnow
from service.db.models import Job, JobEvent, JobStatus

log = logging.getLogger("tracedraft.api")

STAGE_BUCKETS = (1, 5, 15, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400)
STAGE_WINDOW = dt.timedelta(days=7)
CACHE_S = 15.0
MAX_STAGE_EVENTS = 200_000


def stage_durations(session: Session, since: dt.datetime) -> dict[str, list[float]]:
    """Seconds per finished stage run since ``since``: stage -> [durations].

    A run starts with the ``stage`` event whose data has ``status=running`` (``service.jobs.start_job``)
    and ends with the ``stage`` event whose data has ``run=finished`` for the same stage (workers.tasks).
    """
    rows = session.execute(
        sa.select(JobEvent.job_id, JobEvent.ts, JobEvent.data)
        .where(JobEvent.type == "stage", JobEvent.ts >= since)
        .order_by(JobEvent.job_id, JobEvent.seq)
        .limit(MAX_STAGE_EVENTS)
    )
    started: dict[tuple[str, str], dt.datetime] = {}
    out: dict[str, list[float]] = {}
    for job_id, ts, data in rows:
        data = data or {}
        stage = data.get("stage")
        if not stage:
            continue
        if data.get("status") == JobStatus.running:
            started[(job_id, stage)] = ts
        elif data.get("run") == "finished" and (job_id, stage) in started:
            out.setdefault(stage, []).append((ts - started.pop((job_id, stage))).total_seconds())
    return out


class _DbCollector(Collector):
    def __init__(self, sessions: Callable[[], Session], queue_depth: Callable[[], dict[str, int]] | None):
        self._sessions = sessions
        self._queue_depth = queue_depth
        self._lock = threading.Lock()
        self._stage_cache: tuple[float, dict[str, list[float]]] | None = None

    def _stages(self, session: Session) -> dict[str, list[float]]:
        with self._lock:
            if self._stage_cache and time.monotonic() - self._stage_cache[0] < CACHE_S:
                return self._stage_cache[1]
            durations = stage_durations(session, utcnow() - STAGE_WINDOW)
            self._stage_cache = (time.monotonic(), durations)
            return durations

    def collect(self) -> Iterator[Any]:
        jobs = GaugeMetricFamily("tracedraft_jobs", "Jobs by status (all organizations).", labels=["status"])
        hist = HistogramMetricFamily("tracedraft_stage_duration_seconds",
                                     "Wall time of finished stage runs (last 7 days).", labels=["stage"])
        try:
            with self._sessions() as session:
                counts = dict(session.execute(sa.select(Job.status, sa.func.count()).group_by(Job.status)).all())
                durations = self._stages(session)
        except Exception as exc:  # noqa: BLE001 - a scrape must not fail because the database blinked
            log.warning("metrics: database query failed: %s", type(exc).__name__)
            counts, durations = {}, {}
        for status in JobStatus:
            jobs.add_metric([status.value], float(counts.get(status.value, 0)))
        yield jobs
        for stage, values in sorted(durations.items()):
            buckets, acc = [], 0
            for bound in STAGE_BUCKETS:
                acc = sum(1 for v in values if v <= bound)
                buckets.append((str(float(bound)), float(acc)))
            buckets.append(("+Inf", float(len(values))))
            hist.add_metric([stage], buckets, sum_value=float(sum(values)))
        yield hist
        if self._queue_depth is not None:
            depth = GaugeMetricFamily("tracedraft_queue_depth", "Messages waiting per Celery queue.",
                                      labels=["queue"])
            try:
                for queue, n in self._queue_depth().items():
                    depth.add_metric([queue], float(n))
            except Exception as exc:  # noqa: BLE001
                log.warning("metrics: queue depth unavailable: %s", type(exc).__name__)
            yield depth


class ApiMetrics:
    """The metrics of one app, in ``self.registry``."""

    def __init__(self, sessions: Callable[[], Session], broker_url: str | None = None):
        self.registry = CollectorRegistry()
        self.upload_bytes = Counter("tracedraft_upload_bytes", "Bytes accepted by dataset uploads.",
                                    registry=self.registry)
        self.uploads_rejected = Counter("tracedraft_uploads_rejected", "Dataset uploads refused, by code.",
                                        ["code"], registry=self.registry)
        depth = _redis_queue_depth(broker_url) if broker_url else None
        self.registry.register(_DbCollector(sessions, depth))


def _redis_queue_depth(url: str) -> Callable[[], dict[str, int]]:
    import redis

    from service.queue import QUEUES

    client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)

    def depth() -> dict[str, int]:
        pipe = client.pipeline()
        for q in QUEUES:
            pipe.llen(q)
        return dict(zip(QUEUES, (int(n) for n in pipe.execute())))

    return depth
