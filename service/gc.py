"""Garbage collection of the artifact store: delete only what no live row references.

A file is live when any row of the control plane points at it, directly or through a prefix:

- a dataset (any status): every raw file of its manifest (``options["files"]``, all N of a multi-file
  dataset, and ``raw_uri``), its declared mapping file (``options["mapping"]``), and everything under
  ``datasets/<id>/`` (canonical train and held-out files, the validation report);
- a drafter version: its checkpoint prefix (with its published ``exports/``) and every file ``files``
  lists, its report prefix and files;
- a job: every store URI inside its ``result``; and while it can still resume (queued, running, failed or
  cancelled: ``service.jobs.reopen_job``) its whole working prefix ``jobs/<id>/``, where training mirrors
  its checkpoints (``checkpoint`` events name them);
- any URI a job event names (a checkpoint of a job that failed and may resume).

``gc`` deletes the other files once they are older than the retention (files being written right now
have no row yet). Each candidate carries its reason, so ``--dry-run`` says what would go and why.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from service.db.base import utcnow
from service.db.models import Alias, Dataset, DrafterVersion, Job, JobEvent, JobStatus
from service.storage import ArtifactStore

#: Job statuses whose working files stay: the job may still run or be resumed from its checkpoints.
RESUMABLE_STATUSES = frozenset({JobStatus.queued, JobStatus.running, JobStatus.failed, JobStatus.cancelled})


@dataclass
class GcCandidate:
    """A file gc deletes (or would delete): its key, size in bytes, modification time and why."""

    key: str
    size: int
    mtime: dt.datetime | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "size": self.size,
            "reason": self.reason,
            "mtime": self.mtime.isoformat() if self.mtime else None,
        }


@dataclass
class GcReport:
    """What ``gc`` deleted (or would delete with ``dry_run``): keys with reasons, bytes, and what it kept."""

    dry_run: bool
    candidates: list[GcCandidate] = field(default_factory=list)
    bytes_freed: int = 0
    kept_referenced: int = 0
    kept_recent: int = 0

    @property
    def deleted(self) -> list[str]:
        """Keys deleted (or, in a dry run, that would be)."""
        return [c.key for c in self.candidates]

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "deleted": self.deleted,
            "bytes_freed": self.bytes_freed,
            "kept_referenced": self.kept_referenced,
            "kept_recent": self.kept_recent,
            "candidates": [c.to_dict() for c in self.candidates],
        }


@dataclass
class References:
    """Live store keys and prefixes (a prefix ends with ``/``), each mapped to the row that holds it."""

    keys: dict[str, str] = field(default_factory=dict)
    prefixes: dict[str, str] = field(default_factory=dict)

    def holder(self, key: str) -> str | None:
        """Which row keeps ``key`` alive (None: nothing does)."""
        if key in self.keys:
            return self.keys[key]
        parts = key.split("/")
        for i in range(len(parts) - 1, 0, -1):
            why = self.prefixes.get("/".join(parts[:i]) + "/")
            if why is not None:
                return why
        return None


def _uris_in(obj: Any, root: str) -> Iterator[str]:
    """Every string under ``obj`` (nested dicts and lists) that starts with the store root ``root``."""
    if isinstance(obj, str):
        if obj.startswith(root):
            yield obj
    elif isinstance(obj, Mapping):
        for v in obj.values():
            yield from _uris_in(v, root)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _uris_in(v, root)


def live_references(session: Session, store: ArtifactStore) -> References:
    """Every key and prefix of ``store`` that a row references (see the module docstring)."""
    root = store.root_uri + "/"
    refs = References()

    def add(uri: str | None, why: str) -> None:
        if uri and uri.startswith(root):
            key = store.key(uri)
            refs.keys.setdefault(key, why)
            refs.prefixes.setdefault(key + "/", why)  # a URI may name a directory (a checkpoint)

    for ds_id, raw, canonical, options in session.execute(
        sa.select(Dataset.id, Dataset.raw_uri, Dataset.canonical_uri, Dataset.options)
    ):
        add(raw, f"dataset {ds_id} raw file")
        files = (options or {}).get("files") or []
        for i, f in enumerate(files, 1):
            add((f or {}).get("uri"), f"dataset {ds_id} raw file {i}/{len(files)}")
        add(((options or {}).get("mapping") or {}).get("uri"), f"dataset {ds_id} mapping file")
        add(canonical, f"dataset {ds_id} canonical file")
        refs.prefixes.setdefault(f"datasets/{ds_id}/", f"dataset {ds_id}")
    for v_id, ckpt, files, rep, rep_files in session.execute(
        sa.select(
            DrafterVersion.id,
            DrafterVersion.checkpoint_uri,
            DrafterVersion.files,
            DrafterVersion.report_uri,
            DrafterVersion.report_files,
        )
    ):
        add(ckpt, f"drafter version {v_id} checkpoint")
        for name in files or {}:
            add(f"{ckpt}/{name}", f"drafter version {v_id} file {name}")
        if rep:
            add(rep, f"drafter version {v_id} report")
            for name in rep_files or {}:
                add(f"{rep}/{name}", f"drafter version {v_id} report file {name}")
    for job_id, status, result in session.execute(sa.select(Job.id, Job.status, Job.result)):
        for uri in _uris_in(result, root):
            add(uri, f"job {job_id} result")
        if status in RESUMABLE_STATUSES:
            refs.prefixes.setdefault(f"jobs/{job_id}/", f"job {job_id} ({status}, resumable)")
    for job_id, data in session.execute(
        sa.select(JobEvent.job_id, JobEvent.data)
        .join(Job, Job.id == JobEvent.job_id)
        .where(Job.status.in_([str(s) for s in RESUMABLE_STATUSES]), JobEvent.type == "metrics")
    ):
        for uri in _uris_in((data or {}).get("checkpoint"), root):
            add(uri, f"job {job_id} checkpoint")
    return refs


def gc(
    session: Session,
    store: ArtifactStore,
    retention: dt.timedelta | float,
    dry_run: bool = True,
    *,
    now: dt.datetime | None = None,
) -> GcReport:
    """Delete store files no live row references and older than ``retention`` (a timedelta or hours).

    Leftover temporaries of interrupted writes count as unreferenced. ``dry_run`` (the default) only
    reports; each candidate says why it goes. The retention protects files being written right now (a
    registration uploads before committing its row), so keep it well above the longest upload.
    """
    if not isinstance(retention, dt.timedelta):
        retention = dt.timedelta(hours=float(retention))
    cutoff = (now or utcnow()) - retention
    refs = live_references(session, store)
    # Belt and braces: the checkpoint of every aliased version, whatever the scan above found.
    aliased = sa.select(DrafterVersion.checkpoint_uri).join(Alias, Alias.version_id == DrafterVersion.id)
    for ckpt in session.scalars(aliased):
        if ckpt.startswith(store.root_uri + "/"):
            refs.prefixes.setdefault(store.key(ckpt) + "/", "aliased drafter version")
    report = GcReport(dry_run=dry_run)
    hours = retention.total_seconds() / 3600
    for info in store.list():
        if refs.holder(info.key) is not None:
            report.kept_referenced += 1
            continue
        if info.mtime is None or info.mtime > cutoff:
            report.kept_recent += 1
            continue
        if info.temporary:
            reason = "temporary file of an interrupted write"
        else:
            reason = "no dataset, version or job references it"
        reason += f"; last written {info.mtime:%Y-%m-%d %H:%M} UTC, over the {hours:g} h retention"
        report.candidates.append(GcCandidate(info.key, info.size, info.mtime, reason))
        report.bytes_freed += info.size
        if not dry_run:
            store.delete(info.key)
    return report


__all__ = ["RESUMABLE_STATUSES", "GcCandidate", "GcReport", "References", "gc", "live_references"]
