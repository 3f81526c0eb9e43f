"""Datasets: raw trace files kept as uploaded, and their validation state.

A dataset is one or more raw files. Each file is stored content-addressed (``raw/<sha256>``) exactly as
the user sent it, whatever the parser later thinks of it, so nothing is ever lost; the dataset row keeps
the manifest (``options["files"]``: name, sha256, uri, size) and its ``sha256`` is the hash of that
manifest, so the same files give the same dataset hash. The user's file names are metadata only: they
are never used as paths.

A dataset in a format that has no module can carry a declared mapping (``drafters/traces/mapping.py``):
checked when the dataset is created (``bad_mapping``), stored content-addressed like the raw files, recorded
as ``options["mapping"]`` (name, sha256, uri, size) and covered by the dataset's ``sha256``; every
validation of the dataset reads its files with it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import sqlalchemy as sa
from sqlalchemy.orm import Session

from drafters.errors import TracedraftError
from drafters.traces.io import stored_upload_name
from service.db.models import Dataset, DatasetStatus, Job, JobStatus
from service.storage import CHUNK, ArtifactStore, Stored

if TYPE_CHECKING:
    from drafters.traces.mapping import Mapping
    from drafters.traces.mapping_text import TextMapping

    TraceMapping = Mapping | TextMapping

MAX_NAME = 255
MAX_MAPPING_BYTES = 64 * 1024  # a declared mapping is a few hundred bytes; it is read into memory


class DatasetError(TracedraftError):
    """Codes: ``not_found``, ``dataset_in_use``, ``empty_upload``, ``dataset_not_ready``, ``bad_mapping``."""


@dataclass(frozen=True)
class MappingFile:
    """A declared mapping file as the user gave it: its file name (display only, never a path) and bytes."""

    name: str
    data: bytes


def safe_name(name: str | None) -> str:
    """A display name derived from a user-supplied file name: its last path component, printable, bounded."""
    base = (name or "upload").replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = "".join(ch if ch.isprintable() and ch not in "\x00" else "_" for ch in base).strip()
    return (cleaned or "upload")[:MAX_NAME]


def manifest_sha256(files: list[Mapping[str, Any]], mapping_sha256: str | None = None) -> str:
    """sha256 of the ordered file hashes (and of the declared mapping's hash, when the dataset has one):
    the dataset's identity."""
    hashes = [f["sha256"] for f in files]
    payload: Any = hashes if mapping_sha256 is None else {"files": hashes, "mapping": mapping_sha256}
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()


def check_mapping(mapping: MappingFile) -> TraceMapping:
    """Parse and check a declared mapping file (``drafters.traces.mapping_file.parse_mapping``).

    Raises:
        DatasetError ``bad_mapping`` (where: the file's display name and the field at fault) when the file
        is over ``MAX_MAPPING_BYTES``, not UTF-8, not YAML/JSON, or not a valid mapping.
    """
    from drafters.traces.mapping_file import parse_mapping

    name = safe_name(mapping.name)
    if len(mapping.data) > MAX_MAPPING_BYTES:
        raise DatasetError("bad_mapping", f"the mapping file {name!r} is over {MAX_MAPPING_BYTES} bytes "
                           "(a mapping is a few hundred)", where=name)
    try:
        text = mapping.data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError("bad_mapping", f"the mapping file {name!r} is not UTF-8 text ({exc.reason} at byte "
                           f"{exc.start})", where=name) from None
    try:
        return parse_mapping(text, name)
    except TracedraftError as exc:
        raise DatasetError("bad_mapping", f"the mapping file {name!r} is refused: {exc.message}",
                           where=exc.where or name) from None


def attach_mapping(store: ArtifactStore, dataset: Dataset, mapping: MappingFile) -> TraceMapping:
    """Check ``mapping`` (``check_mapping``), store its bytes content-addressed (``raw/<sha256>``, like the
    trace files) and record it on ``dataset``: ``options["mapping"]`` = {name, sha256, uri, size}, and the
    dataset's sha256 then covers it (the same traces read with another mapping are another dataset). Does
    not commit. Raises DatasetError ``bad_mapping`` before anything is stored."""
    checked = check_mapping(mapping)
    stored = store.put_raw(mapping.data)
    entry = {"name": safe_name(mapping.name), "sha256": stored.sha256, "uri": stored.uri, "size": stored.size}
    dataset.options = {**dict(dataset.options or {}), "mapping": entry}
    dataset.sha256 = manifest_sha256(raw_files(dataset), stored.sha256)
    return checked


def mapping_entry(dataset: Dataset) -> dict[str, Any] | None:
    """The dataset's declared mapping ({"name", "sha256", "uri", "size"}), or None when it has none."""
    return (dataset.options or {}).get("mapping")


def create_dataset(
    session: Session,
    store: ArtifactStore,
    org_id: str,
    uploads: Iterable[tuple[str, BinaryIO]],
    *,
    name: str | None = None,
    options: Mapping[str, Any] | None = None,
    max_bytes: int | None = None,
    mapping: MappingFile | None = None,
    commit: bool = True,
) -> Dataset:
    """Store each ``(file name, binary stream)`` under its sha256 and create a ``validating`` dataset, with
    its declared ``mapping`` when given (``attach_mapping``).

    ``max_bytes`` bounds the total size (ArtifactError ``payload_too_large`` while streaming; what was
    written stays content-addressed and unreferenced until gc). Raises DatasetError ``empty_upload`` when
    no bytes arrived (and then nothing was written to the store: an empty file is stored only beside
    files that hold bytes), ``bad_mapping`` for a mapping that does not check.
    """
    if mapping is not None:
        check_mapping(mapping)  # a bad mapping is refused before any trace byte is stored
    files: list[dict[str, Any]] = []
    remaining = max_bytes
    for filename, stream in uploads:
        head = stream.read(CHUNK)
        entry: dict[str, Any] = {"name": safe_name(filename), "size": 0}
        if head:  # an empty file waits: the upload may hold no bytes at all
            stored: Stored = store.put_stream(None, stream, max_bytes=remaining, head=head)
            if remaining is not None:
                remaining -= stored.size
            entry.update(sha256=stored.sha256, uri=stored.uri, size=stored.size)
        files.append(entry)
    if sum(f["size"] for f in files) == 0:
        raise DatasetError("empty_upload", "the upload holds no bytes", where="file")
    for entry in files:
        if "uri" not in entry:
            stored = store.put_raw(b"")
            entry.update(sha256=stored.sha256, uri=stored.uri)
    dataset = Dataset(
        org_id=org_id,
        name=safe_name(name) if name else ", ".join(f["name"] for f in files)[:300],
        sha256=manifest_sha256(files),
        raw_uri=files[0]["uri"],
        status=DatasetStatus.validating,
        options={**dict(options or {}), "files": files},
        size_bytes=sum(f["size"] for f in files),
    )
    if mapping is not None:
        attach_mapping(store, dataset, mapping)
    session.add(dataset)
    session.flush()
    if commit:
        session.commit()
    return dataset


def create_dataset_from_paths(
    session: Session, store: ArtifactStore, org_id: str, paths: Iterable[str | Path], *,
    mapping: str | Path | None = None, **kwargs: Any
) -> Dataset:
    """``create_dataset`` for local files (the embedded ``tracedraft run``), with the declared mapping file
    ``mapping`` when given. Raises DatasetError ``bad_mapping`` when that file cannot be read or checked."""
    if mapping is not None:
        kwargs["mapping"] = read_mapping_file(mapping)
    opened = [Path(p).expanduser() for p in paths]
    handles = [p.open("rb") for p in opened]
    try:
        return create_dataset(session, store, org_id, [(p.name, h) for p, h in zip(opened, handles)], **kwargs)
    finally:
        for h in handles:
            h.close()


def read_mapping_file(path: str | Path) -> MappingFile:
    """A local mapping file as a ``MappingFile`` (at most ``MAX_MAPPING_BYTES`` + 1 bytes are read, so
    ``check_mapping`` can refuse a larger one). Raises DatasetError ``bad_mapping`` when it cannot be read."""
    path = Path(path).expanduser()
    try:
        with path.open("rb") as f:
            return MappingFile(path.name, f.read(MAX_MAPPING_BYTES + 1))
    except OSError as exc:
        raise DatasetError("bad_mapping", f"cannot read the mapping file: {exc.strerror or exc}",
                           where=str(path)) from None


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
    """Replace work-directory file paths by the user's display names, anywhere in a JSON-able value (keys
    too: the report's ``files`` is keyed by path)."""
    if isinstance(obj, str):
        for local, display in names.items():
            obj = obj.replace(local, display)
        return obj
    if isinstance(obj, dict):
        return {_rename_paths(k, names): _rename_paths(v, names) for k, v in obj.items()}
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
    never a path) and are removed once parsed; the report speaks of the user's file names. A dataset with a
    declared mapping (``mapping_entry``) is read with it instead of detecting formats, and its report says
    so (``report["mapping"]``: file, sha256, format). Failure codes (``dataset.error``):
    ``no_valid_conversations`` (the first errors are in the message), ``not_enough_data`` (no training or
    no held-out conversation), ``format_and_mapping`` (a forced ``format`` for a dataset with a mapping),
    ``bad_mapping``, or the first bad record's code with ``on_error="fail"``.
    """
    from drafters.traces.ingest import ingest, split_conversations, write_canonical
    from drafters.traces.near_duplicates import NEAR_DUPLICATE_RULE, split_without_near_duplicates

    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise DatasetError("not_found", f"dataset {dataset_id} not found", where="dataset_id")
    entry = mapping_entry(dataset)
    mapping_bytes = store.get_bytes(entry["uri"], entry["sha256"], entry["size"]) if entry else None
    paths, names = _fetch_raw(store, dataset, Path(workdir) / "raw")
    try:
        if entry and format:
            raise DatasetError("format_and_mapping", f"the dataset is read with its declared mapping "
                               f"{entry['name']!r}: a forced format ({format!r}) cannot apply too", where="format")
        mapping = check_mapping(MappingFile(entry["name"], mapping_bytes or b"")) if entry else None
        result = ingest(paths, format=format, on_error=on_error, scrub=scrub, heldout_fraction=heldout_fraction,
                        target_model=target_model, mapping=mapping)
    except TracedraftError as exc:  # on_error="fail": the first bad record; or the mapping
        error = {"code": exc.code, "message": _rename_paths(exc.message, names),
                 "param": _rename_paths(exc.where, names) if exc.where else None}
        return record_validation(session, dataset_id, report={"ok": False, "on_error": on_error, "errors": [error]},
                                 canonical=None, format=None, counts={}, failed=True, error=error)
    finally:
        shutil.rmtree(Path(workdir) / "raw", ignore_errors=True)  # the raw bytes live in the store only
    report = _rename_paths(result.report.to_dict(), names)
    if entry and mapping is not None:
        report["mapping"] = {"file": entry["name"], "sha256": entry["sha256"], "format": mapping.format().name}
    train, held = split_conversations(result.conversations, heldout_fraction, min_heldout=1)
    # Held-out conversations that nearly repeat a training one would measure memory: they train instead.
    train, held, moved = split_without_near_duplicates(train, held)
    report["near_duplicates"] = {"rule": NEAR_DUPLICATE_RULE, "moved_to_train": [
        {"heldout": d.heldout_id, "train": d.train_id, "jaccard": round(d.similarity, 3)} for d in moved]}
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
        "near_duplicates_moved": len(moved),
    }
    error = _split_error(report, counts)
    formats = sorted({c.source.format for c in result.conversations})
    return record_validation(session, dataset_id, report=report, canonical=stored, format=",".join(formats) or None,
                             counts=counts, failed=error is not None, error=error)


def _fetch_raw(store: ArtifactStore, dataset: Dataset, raw_dir: Path) -> tuple[list[Path], dict[str, str]]:
    """Fetch the dataset's raw files (hash-verified) into ``raw_dir`` under ``stored_upload_name``s.
    Returns (their local paths in upload order, {local path or file name: the user's display name})."""
    paths, names = [], {}
    for i, f in enumerate(raw_files(dataset)):
        dest = raw_dir / stored_upload_name(i, f["sha256"], f["name"])
        if not dest.exists():
            store.get_file(f["uri"], dest, f["sha256"])
        paths.append(dest)
        # Two uploads of one name stay two entries of the report (its files are keyed by name).
        shown = f["name"] if f["name"] not in names.values() else f"{f['name']} #{i + 1}"
        names[str(dest)] = shown
        names[dest.name] = shown
    return paths, names


def _split_error(report: Mapping[str, Any], counts: Mapping[str, int]) -> dict[str, Any] | None:
    """The dataset's error when validation left nothing to train on or nothing to hold out, else None."""
    if not counts["conversations"]:
        first = [f"{p.get('file')}{':' + str(p['line']) if p.get('line') else ''} [{p['code']}] {p['message']}"
                 for p in report.get("errors", [])[:3]]
        return {"code": "no_valid_conversations",
                "message": "no conversation could be read from the dataset" + (": " + "; ".join(first) if first else ""),
                "param": "dataset"}
    if not counts["train_conversations"] or not counts["heldout_conversations"]:
        return {"code": "not_enough_data",
                "message": f"need at least one training and one held-out conversation, got "
                           f"{counts['train_conversations']} and {counts['heldout_conversations']} (of "
                           f"{counts['conversations']} valid conversations)"
                           + (f"; {counts['near_duplicates_moved']} held-out conversation(s) nearly duplicated a "
                              "training one and moved to training" if counts.get("near_duplicates_moved") else ""),
                "param": "dataset"}
    return None
