"""Datasets: raw trace files kept as uploaded, and their validation state.

A dataset is one or more raw files. Each file is stored content-addressed (``raw/<sha256>``) exactly as
the user sent it, whatever the parser later thinks of it, so nothing is ever lost; the dataset row keeps
the manifest (``options["files"]``: name, sha256, uri, size) and its ``sha256`` is the hash of that
manifest, so the same files give the same dataset hash. The user's file names are metadata only: they
are never used as paths.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import sqlalchemy as sa
from sqlalchemy.orm import Session

from drafters.errors import TracedraftError
from service.db.models import Dataset, DatasetStatus, Job, JobStatus
from service.storage import ArtifactStore, Stored

MAX_NAME = 255


class DatasetError(TracedraftError):
    """Codes: ``not_found``, ``dataset_in_use``, ``empty_upload``, ``dataset_not_ready``."""


def safe_name(name: str | None) -> str:
    """A display name derived from a user-supplied file name: its last path component, printable, bounded."""
    base = (name or "upload").replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = "".join(ch if ch.isprintable() and ch not in "\x00" else "_" for ch in base).strip()
    return (cleaned or "upload")[:MAX_NAME]


def manifest_sha256(files: list[Mapping[str, Any]]) -> str:
    """sha256 of the ordered file hashes: the dataset's identity."""
    return hashlib.sha256(json.dumps([f["sha256"] for f in files]).encode()).hexdigest()


def create_dataset(
    session: Session,
    store: ArtifactStore,
    org_id: str,
    uploads: Iterable[tuple[str, BinaryIO]],
    *,
    name: str | None = None,
    options: Mapping[str, Any] | None = None,
    max_bytes: int | None = None,
    commit: bool = True,
) -> Dataset:
    """Store each ``(file name, binary stream)`` under its sha256 and create a ``validating`` dataset.

    ``max_bytes`` bounds the total size (ArtifactError ``payload_too_large`` while streaming; what was
    written stays content-addressed and unreferenced until gc). Raises DatasetError ``empty_upload`` when
    no bytes arrived.
    """
    files: list[dict[str, Any]] = []
    remaining = max_bytes
    for filename, stream in uploads:
        stored: Stored = store.put_stream(None, stream, max_bytes=remaining)
        if remaining is not None:
            remaining -= stored.size
        files.append({"name": safe_name(filename), "sha256": stored.sha256, "uri": stored.uri, "size": stored.size})
    if not files or sum(f["size"] for f in files) == 0:
        raise DatasetError("empty_upload", "the upload holds no bytes", where="file")
    dataset = Dataset(
        org_id=org_id,
        name=safe_name(name) if name else ", ".join(f["name"] for f in files)[:300],
        sha256=manifest_sha256(files),
        raw_uri=files[0]["uri"],
        status=DatasetStatus.validating,
        options={**dict(options or {}), "files": files},
        size_bytes=sum(f["size"] for f in files),
    )
    session.add(dataset)
    session.flush()
    if commit:
        session.commit()
    return dataset


def create_dataset_from_paths(
    session: Session, store: ArtifactStore, org_id: str, paths: Iterable[str | Path], **kwargs: Any
) -> Dataset:
    """``create_dataset`` for local files (the embedded ``tracedraft run``)."""
    opened = [Path(p).expanduser() for p in paths]
    handles = [p.open("rb") for p in opened]
    try:
        return create_dataset(session, store, org_id, [(p.name, h) for p, h in zip(opened, handles)], **kwargs)
    finally:
        for h in handles:
            h.close()


def raw_files(dataset: Dataset) -> list[dict[str, Any]]:
    """The dataset's manifest: [{"name", "sha256", "uri", "size"}] in upload order."""
    return list(dataset.options.get("files") or [{"name": dataset.name, "sha256": dataset.sha256,
                                                  "uri": dataset.raw_uri, "size": dataset.size_bytes}])


def record_validation(
    session: Session,
    dataset_id: str,
    *,
    report: Mapping[str, Any],
    canonical: Stored | None,
    format: str | None,
    counts: Mapping[str, Any],
    failed: bool,
    error: Mapping[str, Any] | None = None,
    commit: bool = True,
) -> Dataset:
    """Store the validation outcome: ``ready`` with the canonical JSONL, or ``failed`` with the report."""
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise DatasetError("not_found", f"dataset {dataset_id} not found", where="dataset_id")
    dataset.report = dict(report)
    dataset.counts = dict(counts)
    dataset.format = format
    dataset.status = DatasetStatus.failed if failed else DatasetStatus.ready
    dataset.error = dict(error) if error else None
    if canonical is not None:
        dataset.canonical_uri = canonical.uri
        dataset.canonical_sha256 = canonical.sha256
    if commit:
        session.commit()
    return dataset


def delete_dataset(session: Session, store: ArtifactStore, org_id: str, dataset_id: str) -> None:
    """Delete a dataset row (its raw files go with gc once nothing references them).

    Raises DatasetError ``not_found`` (also for another organization's dataset) or ``dataset_in_use``
    while a job that is not finished uses it.
    """
    dataset = session.get(Dataset, dataset_id)
    if dataset is None or dataset.org_id != org_id:
        raise DatasetError("not_found", f"dataset {dataset_id} not found", where="dataset_id")
    active = session.scalar(
        sa.select(sa.func.count()).select_from(Job).where(
            Job.dataset_id == dataset_id, Job.status.in_([JobStatus.queued, JobStatus.running])
        )
    )
    if active:
        raise DatasetError("dataset_in_use", f"dataset {dataset_id} is used by {active} active job(s)",
                           where="dataset_id")
    session.delete(dataset)
    session.commit()
