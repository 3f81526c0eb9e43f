"""Files derived from a drafter version's weights (the llama.cpp GGUF of a version): recorded beside the
checkpoint, their sha256 joining the version's files (promotion re-verifies them), their provenance under the
version's ``lineage.exports``. The weights themselves never change."""

from __future__ import annotations

import posixpath
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from drafters.checksums import sha256_file
from service.db.base import utcnow
from service.db.models import Drafter, DrafterVersion, Organization
from service.db.session import lock_row
from service.registry import RegistryError, as_registry_error, get_drafter, get_version
from service.storage import ArtifactError, ArtifactStore

# --- derived exports ---------------------------------------------------------------------------

EXPORTS_DIR = "exports"
EXPORT_NAME_RE = re.compile(r"^exports/[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


@dataclass
class PublishedExport:
    """The outcome of ``publish_export``: the file's name in the version's ``files`` (relative to its
    checkpoint URI), URI, sha256, size in bytes, the record kept under ``lineage["exports"][name]``, and
    whether this call published it (False: the same bytes were already published; nothing written)."""

    name: str
    uri: str
    sha256: str
    size: int
    published: bool
    record: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "uri": self.uri, "sha256": self.sha256, "size": self.size,
                "published": self.published, "record": self.record}


def is_export_file(name: str) -> bool:
    """Whether a ``files`` entry is a derived export (``exports/...``) rather than a checkpoint file."""
    return name.startswith(EXPORTS_DIR + "/")


def export_file_name(fmt: str, outtype: str) -> str:
    """The ``files`` name of an export: ``exports/draft-<outtype>.<fmt>`` (e.g. ``exports/draft-f32.gguf``)."""
    name = f"{EXPORTS_DIR}/draft-{outtype}.{fmt}"
    if not EXPORT_NAME_RE.match(name):
        raise RegistryError("invalid_value", f"invalid export name {name!r}", where="format")
    return name


def checkpoint_files(version: DrafterVersion) -> dict[str, str]:
    """``{name: sha256}`` of the version's checkpoint itself (what loads as a drafter): its ``files``
    without the derived exports."""
    return {k: v for k, v in (version.files or {}).items() if not is_export_file(k)}


def export_record(version: DrafterVersion, name: str) -> dict[str, Any] | None:
    """The record of a published export (``lineage["exports"][name]``) when ``files`` lists it, else None."""
    if name not in (version.files or {}):
        return None
    return dict(((version.lineage or {}).get("exports") or {}).get(name) or {}) or {"sha256": version.files[name]}


def publish_export(
    session: Session,
    store: ArtifactStore,
    org: Organization | str,
    drafter_name: str,
    version: int,
    local_path: str | Path,
    name: str,
    meta: Mapping[str, Any] | None = None,
    *,
    actor: str,
) -> PublishedExport:
    """Publish ``local_path`` (a file derived from version ``version``'s weights, e.g. its llama.cpp GGUF)
    beside the checkpoint: stored at ``<checkpoint_uri>/<name>``, ``files[name]`` = its sha256 and
    ``lineage["exports"][name]`` = ``meta`` + sha256, size, actor and time. The checkpoint's own files
    and every other field stay as they were.

    Idempotent: when ``name`` is already published with the same sha256 nothing is written
    (``published=False``; a stored copy found missing or altered is rewritten from ``local_path``). The
    bytes go to a staging key outside the version first (``tmp/exports/<uuid>/``, removed afterwards;
    ``gc`` collects leftovers), then, under the drafter's row lock, are copied into place (verified)
    and recorded, so two concurrent publishers never leave a record that disagrees with the stored file.

    Raises RegistryError ``invalid_value`` (a name outside ``exports/``), ``not_found``,
    ``artifact_missing`` (no ``local_path``), ``export_conflict`` (``name`` already published with other
    bytes: exports of one version are immutable too; nothing written), ``checksum_mismatch``.
    """
    if not isinstance(name, str) or not EXPORT_NAME_RE.match(name):
        raise RegistryError("invalid_value", f"export name {name!r} must look like exports/<file>", where="name")
    local_path = Path(local_path)
    if not local_path.is_file():
        raise RegistryError("artifact_missing", f"export file {local_path} does not exist", where=str(local_path))
    digest, size = sha256_file(local_path), local_path.stat().st_size
    drafter = get_drafter(session, org, drafter_name)
    row = get_version(session, drafter, version)
    final_key = f"{store.key(row.checkpoint_uri)}/{name}"

    def already(recorded: str) -> PublishedExport:
        if recorded != digest:
            raise RegistryError("export_conflict", f"{drafter_name}@v{version} already has {name} with sha256 "
                                f"{recorded}; this file has {digest}. Published exports are immutable; nothing "
                                "was written", where=name)
        try:
            store.verify(final_key, digest)
        except ArtifactError:  # lost or altered in the store: put the recorded bytes back
            store.put_file(final_key, local_path)
            store.verify(final_key, digest)
        return PublishedExport(name, store.uri(final_key), digest, size, False, export_record(row, name) or {})

    recorded = (row.files or {}).get(name)
    if recorded is not None:
        session.rollback()
        return already(recorded)
    session.rollback()  # no read transaction held while uploading
    staging = f"tmp/{EXPORTS_DIR}/{uuid.uuid4().hex}/{posixpath.basename(name)}"
    try:
        stored = store.put_file(staging, local_path)
        if stored.sha256 != digest:
            raise RegistryError("checksum_mismatch", f"{local_path} changed while it was uploaded", where=name)
        drafter = lock_row(session, Drafter, drafter.id)
        try:
            row = get_version(session, drafter, version)
            session.refresh(row)
            recorded = (row.files or {}).get(name)
            if recorded is not None:  # a concurrent publisher won
                session.rollback()
                return already(recorded)
            store.copy(staging, final_key, digest)
            record = {**dict(meta or {}), "sha256": digest, "size": size, "created_by": actor,
                      "created_at": utcnow().isoformat()}
            lineage = dict(row.lineage or {})
            lineage["exports"] = {**dict(lineage.get("exports") or {}), name: record}
            row.files = {**dict(row.files or {}), name: digest}  # new objects: JSON columns see the change
            row.lineage = lineage
            session.commit()
        except BaseException:
            session.rollback()
            raise
    except ArtifactError as e:
        raise as_registry_error(e) from e
    finally:
        store.delete(staging)
    return PublishedExport(name, store.uri(final_key), digest, size, True, record)
