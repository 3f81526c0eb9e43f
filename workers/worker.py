"""Start a stage worker: ``tracedraft worker --queue cpu|gpu [--concurrency N]``.

``run_worker(queue, concurrency)`` runs a Celery worker (prefork pool) on the ``cpu`` or ``gpu`` queue
(or both, ``cpu,gpu``, for a single-machine setup) with the long-task rules of ``service.queue``:

- gpu: one task at a time per GPU. The concurrency is forced to the number of GPUs visible
  (``CUDA_VISIBLE_DEVICES``, else ``nvidia-smi -L``, else 1) and each pool process is pinned to one GPU
  by setting ``CUDA_VISIBLE_DEVICES`` in the child before anything imports torch. On a gpu-only worker a
  pool process serves one task and is replaced (``max_tasks_per_child=1``) so GPU memory is given back
  between jobs.
- CUDA is never touched in the parent: torch is imported only by the stage functions, inside the pool
  processes (``workers.tasks`` loads them lazily); ``run_worker`` refuses to start when torch is
  already imported.
- Reconciler: the parent runs ``service.reconciler.requeue_stale_jobs`` at start and every
  ``reconcile_every_s`` seconds (default 5) in a daemon thread, so a job whose worker was killed outright
  (its lease, renewed by the stage's heartbeat, lapsed: ``--lease``, default 15 s) or whose message the
  broker lost (a Redis restart) is re-dispatched within seconds; the same pass prunes work directories of
  finished jobs (``workers.workdirs.prune``).

Also ``python -m workers.worker --queue cpu``. With ``celery -A service.queue worker`` directly the
reconciler and GPU pinning run too (``workers.tasks`` calls ``connect_signals`` when the worker loads it),
with the intervals of the settings.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence

from celery import signals

log = logging.getLogger(__name__)

_config: dict[str, object] = {
    # None: the settings' values (TRACEDRAFT_STALE_AFTER_S, TRACEDRAFT_RECONCILE_EVERY_S); set by flags.
    "stale_after_s": None,
    "reconcile_every_s": None,
    "gpus": None,  # list[str] of device ids to pin pool processes to, or None (cpu worker)
}
_reconciler_started = threading.Event()
_signals_connected = threading.Event()


def visible_gpus() -> list[str]:
    """GPU ids this machine offers, without importing torch or initializing CUDA.

    ``CUDA_VISIBLE_DEVICES`` when set (an empty value means none), else one id per ``nvidia-smi -L``
    line, else an empty list.
    """
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(line for line in out.splitlines() if line.startswith("GPU "))]


def parse_queues(queue: str | Sequence[str]) -> list[str]:
    """``"cpu"``, ``"gpu"``, ``"cpu,gpu"`` (or a list) -> validated queue names. Raises ValueError."""
    from service.queue import QUEUES

    names = [q.strip() for q in (queue.split(",") if isinstance(queue, str) else queue) if q.strip()]
    bad = [q for q in names if q not in QUEUES]
    if not names or bad:
        raise ValueError(f"unknown queue {', '.join(bad) or queue!r}; expected one of {', '.join(QUEUES)}")
    return names


def worker_argv(queues: list[str], concurrency: int, loglevel: str = "INFO",
                max_tasks_per_child: int | None = None) -> list[str]:
    """The ``celery worker`` arguments for these queues (prefork pool, fair scheduling, unique name).

    ``max_tasks_per_child`` defaults to 1 for a gpu-only worker (a fresh process per stage gives the GPU
    memory back) and unlimited otherwise: recycling costs seconds per task in billiard's pool, which a
    mixed cpu,gpu worker running many short stages should not pay.
    """
    name = "-".join(queues)
    argv = [
        "worker", "-Q", ",".join(queues), "-c", str(concurrency), "-P", "prefork", "-O", "fair",
        "-n", f"{name}-{os.getpid()}@{socket.gethostname()}", "--loglevel", loglevel,
        "--without-gossip", "--without-mingle",
    ]
    if max_tasks_per_child is None and queues == ["gpu"]:
        max_tasks_per_child = 1
    if max_tasks_per_child:
        argv += ["--max-tasks-per-child", str(max_tasks_per_child)]
    return argv


def run_worker(
    queue: str | Sequence[str] = "cpu",
    concurrency: int | None = None,
    *,
    stale_after_s: float | None = None,
    reconcile_every_s: float | None = None,
    loglevel: str | None = None,
) -> None:
    """Run a worker in the foreground until it is stopped (SIGTERM: warm shutdown, tasks finish).

    ``concurrency``: pool processes for a cpu worker (default: the number of cores); ignored for a gpu
    worker, which gets one process per visible GPU (at least one, for a CPU-only test machine).
    Raises ValueError for an unknown queue and RuntimeError when torch is already imported (CUDA must
    not be initialized in the parent of a prefork pool).
    """
    from service.queue import app
    from service.settings import get_settings

    queues = parse_queues(queue)
    if "torch" in sys.modules:
        raise RuntimeError("torch is imported in the worker's parent process; CUDA must only be touched "
                           "inside the task processes")
    settings = get_settings()
    if "gpu" in queues:
        gpus = visible_gpus()
        n = max(1, len(gpus))
        if concurrency not in (None, n):
            log.warning("gpu worker: concurrency forced to %d (one task at a time per GPU), not %s",
                        n, concurrency)
        concurrency = n
        _config["gpus"] = gpus or None
    else:
        concurrency = concurrency or os.cpu_count() or 1
    if stale_after_s is not None:
        _config["stale_after_s"] = stale_after_s
    if reconcile_every_s is not None:
        _config["reconcile_every_s"] = reconcile_every_s
    connect_signals()
    app.worker_main(argv=worker_argv(queues, concurrency, loglevel or settings.log_level))


# --- signal handlers (connect_signals: called by run_worker and when workers.tasks is loaded) -----------


def connect_signals() -> None:
    """Connect the Celery signal handlers: GPU pinning in each pool process, the reconciler thread in the
    worker's parent (idempotent)."""
    if _signals_connected.is_set():
        return
    _signals_connected.set()
    signals.worker_process_init.connect(_pin_gpu, weak=False)
    signals.worker_ready.connect(_start_reconciler, weak=False)


def _pin_gpu(**_: object) -> None:
    """In each pool process: see exactly one GPU (by pool process index), before torch is imported."""
    gpus = _config["gpus"]
    if not gpus:
        return
    from billiard.process import current_process

    index = getattr(current_process(), "index", 0) or 0
    os.environ["CUDA_VISIBLE_DEVICES"] = gpus[index % len(gpus)]


def _start_reconciler(**_: object) -> None:
    """In the worker's parent process: reconcile now and then every ``reconcile_every_s`` seconds."""
    if _reconciler_started.is_set():
        return
    _reconciler_started.set()
    thread = threading.Thread(target=_reconcile_loop, name="tracedraft-reconciler", daemon=True)
    thread.start()


def _reconcile_loop() -> None:
    from service.reconciler import requeue_stale_jobs
    from service.settings import get_settings
    from workers import workdirs
    from workers.db import is_db_outage, one_line, sessions

    stop = threading.Event()
    while True:
        stale = _config["stale_after_s"]
        try:
            ids = requeue_stale_jobs(sessions(), stale_after_s=None if stale is None else float(stale))
            if ids:
                log.warning("reconciler re-dispatched %d stale job(s): %s", len(ids), ", ".join(ids))
        except Exception as exc:
            if not is_db_outage(exc):
                log.exception("reconciler pass failed")
            else:  # a database restart: one line per pass, not a traceback
                log.warning("reconciler pass skipped: the database is unavailable (%s)", one_line(exc))
        try:
            settings = get_settings()
            workdirs.prune(settings.home, workdirs.job_states(sessions()), settings.workdir_retention_hours)
        except Exception as exc:
            if not is_db_outage(exc):
                log.exception("work directory pruning failed")
        every = _config["reconcile_every_s"]
        if stop.wait(float(every) if every is not None else get_settings().reconcile_every_s):
            return


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m workers.worker --queue cpu|gpu [--concurrency N]``."""
    p = argparse.ArgumentParser(prog="tracedraft worker", description=__doc__.splitlines()[0])
    p.add_argument("--queue", "-Q", default="cpu", help="cpu, gpu or cpu,gpu")
    p.add_argument("--concurrency", "-c", type=int, default=None,
                   help="pool processes (cpu; a gpu worker runs one per GPU)")
    p.add_argument("--stale-after", type=float, default=None,
                   help="re-dispatch a job without a lease whose message is unaccounted for this many seconds "
                   "(default TRACEDRAFT_STALE_AFTER_S, 120)")
    p.add_argument("--reconcile-every", type=float, default=None,
                   help="seconds between reconciler passes (default TRACEDRAFT_RECONCILE_EVERY_S, 5)")
    p.add_argument("--lease", type=float, default=None,
                   help="seconds of the job lease a stage's heartbeat renews; a dead worker is noticed this long "
                   "after its last renewal (default TRACEDRAFT_JOB_LEASE_S, 15)")
    p.add_argument("--loglevel", default=None)
    a = p.parse_args(argv)
    if a.lease is not None:
        # The pool processes read it from the settings (inherited environment).
        os.environ["TRACEDRAFT_JOB_LEASE_S"] = str(a.lease)
        from service.settings import reload_settings

        reload_settings()
    run_worker(a.queue, a.concurrency, stale_after_s=a.stale_after, reconcile_every_s=a.reconcile_every,
               loglevel=a.loglevel)


if __name__ == "__main__":
    # Run through the importable module, so its config and signal handlers are the ones in use.
    from workers.worker import main as _main

    _main()
