"""Validation of small uploads inside the API process (issue 10; ARCHITECTURE.md section 2, step 2).

Stages belong to jobs, so a dataset on its own has no queue task. An upload whose decompressed size is at
most ``settings.inline_validation_max_bytes`` is validated here, before the API answers, with the same
torch-free ingestion (``drafters.traces.ingest``) and the same outcome as a job's validate stage
(workers/stages.py ``validate``): the canonical train/held-out JSONL under ``datasets/<id>/`` and the
report recorded with ``service.datasets.record_validation``. Larger uploads stay ``validating`` until
the validate stage of a job that uses them runs.

File names: the raw files are fetched (sha256-verified) into a private temporary directory under names
made of their index and hash; the report's file references are mapped back to the user's display names.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from drafters.errors import TracedraftError
from service import datasets as datasets_mod
from service.db.models import Dataset
from service.settings import Settings
from service.storage import ArtifactStore

log = logging.getLogger("tracedraft.api")


def _suffix(name: str) -> str:
    # Only a sanitized extension survives (format sniffing uses it as a hint), never the name itself.
    return "".join(s for s in Path(name).suffixes[-2:] if s[1:].isalnum() and len(s) <= 8)


def _rename_paths(obj: Any, names: dict[str, str]) -> Any:
    if isinstance(obj, str):
        for tmp, display in names.items():
            if tmp in obj:
                obj = obj.replace(tmp, display)
        return obj
    if isinstance(obj, dict):
        return {k: _rename_paths(v, names) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rename_paths(v, names) for v in obj]
    return obj


def validate_dataset(session: Session, store: ArtifactStore, dataset: Dataset, settings: Settings) -> Dataset:
    """Ingest the dataset's raw files and record the outcome (``ready`` or ``failed`` with the report).

    Options read from ``dataset.options``: ``format`` (None detects per file), ``on_error`` (skip|fail).
    A dataset without at least one training and one held-out conversation fails with
    ``not_enough_data``; ``on_error="fail"`` turns the first bad record into a ``failed`` dataset whose
    error names file and line. Commits.
    """
    from drafters.traces.ingest import ingest, write_canonical

    opts = dict(dataset.options or {})
    files = datasets_mod.raw_files(dataset)
    tmp_root = Path(settings.cache_dir or tempfile.gettempdir())
    tmp_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="validate-", dir=tmp_root) as tmp:
        tmpdir = Path(tmp)
        paths, names = [], {}
        for i, f in enumerate(files):
            dest = tmpdir / "raw" / f"{i:03d}-{f['sha256'][:16]}{_suffix(f['name'])}"
            store.get_file(f["uri"], dest, f["sha256"])
            paths.append(dest)
            names[str(dest)] = f["name"]
        heldout = float(settings.default_heldout_fraction)
        try:
            result = ingest(paths, format=opts.get("format"), on_error=opts.get("on_error", "skip"),
                            scrub=True, heldout_fraction=heldout)
        except TracedraftError as exc:  # on_error="fail": the first bad record
            where = _rename_paths(exc.where, names) if exc.where else None
            error = {"code": exc.code, "message": _rename_paths(exc.message, names), "param": where}
            return datasets_mod.record_validation(
                session, dataset.id, report={"ok": False, "on_error": "fail", "errors": [error]},
                canonical=None, format=None, counts={}, failed=True, error=error)
        report = _rename_paths(result.report.to_dict(), names)
        train, held = result.train(), result.heldout()
        out = tmpdir / "canonical"
        out.mkdir()
        write_canonical(train, out / "train.jsonl")
        write_canonical(held, out / "heldout.jsonl")
        stored = store.put_file(f"datasets/{dataset.id}/canonical-train.jsonl", out / "train.jsonl")
        store.put_file(f"datasets/{dataset.id}/canonical-heldout.jsonl", out / "heldout.jsonl")
    counts = {
        "conversations": len(result.conversations),
        "train_conversations": len(train),
        "heldout_conversations": len(held),
        "calls": sum(1 for c in result.conversations for _ in c.calls()),
        "heldout_calls": sum(1 for c in held for _ in c.calls()),
    }
    failed = not train or not held
    error = None
    if failed:
        error = {"code": "not_enough_data",
                 "message": f"need at least one training and one held-out conversation, got {len(train)} "
                            f"and {len(held)} (of {len(result.conversations)} valid conversations)",
                 "param": "file"}
    formats = sorted({c.source.format for c in result.conversations})
    return datasets_mod.record_validation(session, dataset.id, report=report, canonical=stored,
                                          format=",".join(formats) or None, counts=counts, failed=failed,
                                          error=error)
