"""Validation of small uploads inside the API process (docs/architecture.md section 2, step 2).

Stages belong to jobs, so a dataset on its own has no queue task. An upload whose decompressed size is at
most ``settings.inline_validation_max_bytes`` is validated here, before the API answers, with the same
torch-free ingestion (``drafters.traces.ingest``) and the same outcome as a job's validate stage
(workers/stages/validate.py): the canonical train/held-out JSONL under ``datasets/<id>/`` and the
report recorded with ``service.datasets.record_validation``. Larger uploads stay ``validating`` until
the validate stage of a job that uses them runs.

File names: the raw files are fetched (sha256-verified) into a private temporary directory under names
made of their index and hash; the report's file references are mapped back to the user's display names.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from sqlalchemy.orm import Session

from service import datasets as datasets_mod
from service.db.models import Dataset
from service.settings import Settings
from service.storage import ArtifactStore

log = logging.getLogger("tracedraft.api")


def validate_dataset(session: Session, store: ArtifactStore, dataset: Dataset, settings: Settings) -> Dataset:
    """Validate an uploaded dataset now, in a private temporary directory (``service.datasets.validate_dataset``,
    the same path a job's validate stage takes). Options from ``dataset.options``: ``format`` (None detects per
    file), ``on_error`` (skip|fail); a declared ``mapping`` there is fetched and used by
    ``service.datasets.validate_dataset`` itself. Commits; returns the dataset, ``ready`` or ``failed`` with
    its report."""
    opts = dict(dataset.options or {})
    tmp_root = Path(settings.cache_dir or tempfile.gettempdir())
    tmp_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="validate-", dir=tmp_root) as tmp:
        return datasets_mod.validate_dataset(
            session, store, dataset.id, Path(tmp), heldout_fraction=float(settings.default_heldout_fraction),
            format=opts.get("format"), on_error=opts.get("on_error", "skip"))
