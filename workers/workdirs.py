"""Work-directory cleanup: raw uploads live in the artifact store only, work directories end with their job.

A job's work directory ``<home>/work/<job_id>`` holds copies fetched from the store and what its stages
produce. Rules:

- raw copies (``raw/``) never outlive the validation that read them (``service.datasets`` removes them);
- when a job succeeds its work directory goes (``finish``);
- when it fails or is cancelled it may be resumed (``service.jobs.reopen_job``): only what a resume
  reads stays, the training run (``checkpoints/``) and the stage outputs its result points at locally
  (the inline hand-over ``{"local": path}``, ``best_dir``, ``report_dir``); fetched copies and scratch go;
- ``prune`` (each worker's reconciler pass) removes the directories of jobs that succeeded, no longer
  exist, or failed/cancelled longer than ``settings.workdir_retention_hours`` ago (no longer worth
  resuming locally: a resume then fetches from the store), so other machines' leftovers go too.
"""

from __future__ import annotations

import datetime as dt
import logging
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: What a resumed job reads from its own work directory besides the results' local outputs.
RESUME_DIRS = frozenset({"checkpoints"})
#: Never kept once validation is over: the uploaded bytes, fetched from the store.
RAW_DIR = "raw"


def work_root(home: Path) -> Path:
    """The directory holding every job's work directory (``<home>/work``)."""
    return Path(home) / "work"


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, Mapping):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


def resume_entries(workdir: Path, result: Mapping[str, Any] | None) -> set[str]:
    """Top-level names under ``workdir`` a resume needs: ``RESUME_DIRS`` and every entry that a path in the
    job's ``result`` lies in (the inline hand-over ``{"local": ...}``, ``best_dir``, ``report_dir``)."""
    keep = set(RESUME_DIRS)
    root = workdir.resolve()
    for p in _strings(result or {}):
        if not p.startswith("/"):
            continue
        try:
            rel = Path(p).resolve().relative_to(root)
        except ValueError:
            continue
        if rel.parts:
            keep.add(rel.parts[0])
    return keep


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def finish(workdir: Path, status: str, result: Mapping[str, Any] | None = None) -> list[str]:
    """Clean a job's work directory when the job ends with ``status``; returns the names removed.

    ``succeeded``: everything (the directory too). ``failed``/``cancelled``: all but ``resume_entries``.
    Other statuses: only ``raw/``.
    """
    workdir = Path(workdir)
    if not workdir.is_dir():
        return []
    if status == "succeeded":
        names = sorted(p.name for p in workdir.iterdir())
        shutil.rmtree(workdir, ignore_errors=True)
        return names
    keep = resume_entries(workdir, result) if status in ("failed", "cancelled") else None
    removed = []
    for entry in sorted(workdir.iterdir()):
        if entry.name == RAW_DIR or (keep is not None and entry.name not in keep):
            _remove(entry)
            removed.append(entry.name)
    return removed


def prune(
    home: Path,
    job_state: Callable[[list[str]], Mapping[str, tuple[str, dt.datetime | None]]],
    retention_hours: float,
    *,
    now: dt.datetime | None = None,
) -> list[str]:
    """Remove the work directories no job can use any more; returns the job ids removed.

    ``job_state(ids)`` maps each existing job id to ``(status, finished_at)``. A directory goes when its
    job is missing or succeeded, or failed/cancelled more than ``retention_hours`` ago; a live job's keeps
    everything but ``raw/`` left by a crashed validation.
    """
    root = work_root(home)
    if not root.is_dir():
        return []
    dirs = {p.name: p for p in root.iterdir() if p.is_dir()}
    if not dirs:
        return []
    states = job_state(sorted(dirs))
    cutoff = (now or dt.datetime.now(dt.UTC)) - dt.timedelta(hours=retention_hours)
    removed = []
    for job_id, path in sorted(dirs.items()):
        status, finished = states.get(job_id, (None, None))
        if finished is not None and finished.tzinfo is None:
            finished = finished.replace(tzinfo=dt.UTC)
        expired = status in ("failed", "cancelled") and finished is not None and finished < cutoff
        if status in (None, "succeeded") or expired:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(job_id)
        elif status in ("queued", "failed", "cancelled") and (path / RAW_DIR).exists():
            _remove(path / RAW_DIR)
    if removed:
        log.info("removed %d finished job work directories: %s", len(removed), ", ".join(removed))
    return removed


def job_states(
    sessions: Callable[[], Any],
) -> Callable[[list[str]], dict[str, tuple[str, dt.datetime | None]]]:
    """A ``prune`` state reader on the job database (``sessions`` is a sessionmaker)."""
    import sqlalchemy as sa

    from service.db import Job

    def read(ids: list[str]) -> dict[str, tuple[str, dt.datetime | None]]:
        with sessions() as session:
            rows = session.execute(sa.select(Job.id, Job.status, Job.finished_at).where(Job.id.in_(ids)))
            return {r.id: (r.status, r.finished_at) for r in rows}

    return read


__all__ = ["RESUME_DIRS", "finish", "job_states", "prune", "resume_entries", "work_root"]
