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
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import sqlalchemy as sa
from sqlalchemy.orm import Session

from drafters.errors import TracedraftError
from drafters.traces.io import stored_upload_name
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


def _rename_paths(obj: Any, names: Mapping[str, str]) -> Any:
    """Replace work-directory file paths by the user's display names, anywhere in a JSON-able value."""
    if isinstance(obj, str):
        for local, display in names.items():
            obj = obj.replace(local, display)
        return obj
    if isinstance(obj, dict):
        return {k: _rename_paths(v, names) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rename_paths(v, names) for v in obj]
    return obj


def validate_dataset(
    session: Session,
    store: ArtifactStore,
    dataset_id: str,
    workdir: Path,
    *,
    heldout_fraction: float,
    format: str | None = None,
    on_error: str = "skip",
    scrub: bool = True,
    target_model: str | None = None,
) -> Dataset:
    """Validate a dataset: fetch its raw files (hash-verified), detect, parse, scrub, deduplicate and split
    them (``drafters.traces``), store the canonical train/held-out JSONL under ``datasets/<id>/`` (and in
    ``workdir/canonical/``), and record ``ready`` or ``failed`` with the report. Commits.

    The one validation path: the API runs it for small uploads, a job's validate stage for the rest. Raw
    files land in ``workdir/raw/`` under names made of their index and hash (the user's file name is
    never a path) and are removed once parsed; the report speaks of the user's file names. Failure codes
    (``dataset.error``): ``no_valid_conversations`` (the first errors are in the message), ``not_enough_data`` (no training or
    no held-out conversation), or the first bad record's code with ``on_error="fail"``.
    """
    from drafters.traces.ingest import ingest, split_conversations, write_canonical

    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise DatasetError("not_found", f"dataset {dataset_id} not found", where="dataset_id")
    paths, names = [], {}
    for i, f in enumerate(raw_files(dataset)):
        dest = Path(workdir) / "raw" / stored_upload_name(i, f["sha256"], f["name"])
        if not dest.exists():
            store.get_file(f["uri"], dest, f["sha256"])
        paths.append(dest)
        names[str(dest)] = f["name"]
        names[dest.name] = f["name"]
    try:
        result = ingest(paths, format=format, on_error=on_error, scrub=scrub, heldout_fraction=heldout_fraction,
                        target_model=target_model)
    except TracedraftError as exc:  # on_error="fail": the first bad record
        error = {"code": exc.code, "message": _rename_paths(exc.message, names),
                 "param": _rename_paths(exc.where, names) if exc.where else None}
        return record_validation(session, dataset_id, report={"ok": False, "on_error": on_error, "errors": [error]},
                                 canonical=None, format=None, counts={}, failed=True, error=error)
    finally:
        shutil.rmtree(Path(workdir) / "raw", ignore_errors=True)  # the raw bytes live in the store only
    report = _rename_paths(result.report.to_dict(), names)
    train, held = split_conversations(result.conversations, heldout_fraction, min_heldout=1)
    out = Path(workdir) / "canonical"
    out.mkdir(parents=True, exist_ok=True)
    write_canonical(train, out / "train.jsonl")
    write_canonical(held, out / "heldout.jsonl")
    stored = store.put_file(f"datasets/{dataset_id}/canonical-train.jsonl", out / "train.jsonl")
    store.put_file(f"datasets/{dataset_id}/canonical-heldout.jsonl", out / "heldout.jsonl")
    counts = {
        "conversations": len(result.conversations),
        "train_conversations": len(train),
        "heldout_conversations": len(held),
        "calls": sum(1 for c in result.conversations for _ in c.calls()),
        "heldout_calls": sum(1 for c in held for _ in c.calls()),
    }
    error = None
    if not result.conversations:
        first = [f"{p.get('file')}{':' + str(p['line']) if p.get('line') else ''} [{p['code']}] {p['message']}"
                 for p in report.get("errors", [])[:3]]
        error = {"code": "no_valid_conversations",
                 "message": "no conversation could be read from the dataset" + (": " + "; ".join(first) if first else ""),
                 "param": "dataset"}
    elif not train or not held:
        error = {"code": "not_enough_data",
                 "message": f"need at least one training and one held-out conversation, got {len(train)} "
                            f"and {len(held)} (of {len(result.conversations)} valid conversations)",
                 "param": "dataset"}
    formats = sorted({c.source.format for c in result.conversations})
    return record_validation(session, dataset_id, report=report, canonical=stored, format=",".join(formats) or None,
                             counts=counts, failed=error is not None, error=error)
