"""Publish a drafter version's llama.cpp draft GGUF beside its checkpoint: convert the verified checkpoint
with llama.cpp's converter against the version's target, check that the GGUF says the version's block size, and
store it as an export of the version (``service.registry_exports.publish_export``: sha256 in the version's files,
record in its lineage). A GGUF already published and intact in the store is reused, not converted again.

The converter runs as a subprocess, ``python -m drafters.engines.llamacpp export``: the service never imports
torch or the heavy parts of drafters. Errors raise TracedraftError with the converter's code
(llamacpp_not_installed, target_not_found, gguf_export_bad_input, gguf_export_unsupported, gguf_export_failed,
gguf_export_mismatch), ``export_conflict`` from the registry, or ``checksum_mismatch`` / an artifact code from
the store. ``service.registry`` and ``service.storage`` are imported on use: the CLI reads this module's
constants at startup and should not pay for SQLAlchemy then.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drafters.checksums import sha256_file
from drafters.errors import TracedraftError

GGUF_OUTTYPES = ("f32", "f16", "bf16", "q8_0")
# drafters.engines.llamacpp.build.DEFAULT_VERSION, written again: the service does not import that module.
LLAMACPP_VERSION = "0.3.36"


@dataclass(frozen=True)
class GgufPublication:
    """What ``publish_gguf`` did: ``version`` (the version number), ``export`` (a registry_exports.PublishedExport:
    name, uri, sha256, size, ``published`` False when an intact one was reused, record), ``path`` (the
    verified copy written to ``out_dir``, None when none was asked for)."""

    version: int
    export: Any
    path: Path | None


def run_gguf_converter(checkpoint_dir: Path, target: str, out: Path, outtype: str, llamacpp_version: str,
                       target_cache_dir: Path | None) -> dict[str, Any]:
    """Run ``python -m drafters.engines.llamacpp export`` (a subprocess: the service never imports the
    torch side of drafters) and return its JSON answer ({"ok", "gguf", "bytes", "block_size", "target_dir",
    "target_gguf", "llamacpp_version"}). Its own checks run there: the checkpoint and target agree
    (vocabulary, hidden size), the Markov head is one llama.cpp loads, and the GGUF says what the
    checkpoint says (block size, target layers + 1, mask token, Markov tensors). Raises TracedraftError with
    the converter's code (llamacpp_not_installed, target_not_found, gguf_export_*)."""
    argv = [sys.executable, "-m", "drafters.engines.llamacpp", "export", str(checkpoint_dir), "--target",
            target, "--out", str(out), "--outtype", outtype, "--version", llamacpp_version]
    if target_cache_dir is not None:
        argv += ["--target-cache-dir", str(target_cache_dir)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    try:
        answer = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        answer = None
    if not isinstance(answer, dict):
        raise TracedraftError("gguf_export_failed", f"the GGUF converter exited {proc.returncode} without an "
                              f"answer: {(proc.stderr or proc.stdout)[-1500:]}", str(checkpoint_dir))
    if not answer.get("ok"):
        raise TracedraftError(str(answer.get("code") or "gguf_export_failed"),
                              str(answer.get("message") or ""), answer.get("where"))
    return answer


def publish_gguf(session: Any, store: Any, org: Any, version: Any, *, outtype: str = "f32",
                 target: str | None = None, llamacpp_version: str = LLAMACPP_VERSION,
                 target_cache_dir: Path | None = None, out_dir: Path | None = None, actor: str,
                 progress: Callable[[str], None] | None = None) -> GgufPublication:
    """Publish ``version`` (a DrafterVersion row of ``org``) as llama.cpp's draft GGUF (``outtype`` tensors)
    under ``exports/draft-<outtype>.gguf``, or reuse the published one when the store still holds it intact.

    target: where to find the version's target (default the target recorded with the version). out_dir:
    also write a copy there, verified against the published sha256. progress: told before a conversion
    starts. No transaction is held while the converter runs. Raises TracedraftError (module docstring)."""
    from service import registry_exports
    from service.storage import ArtifactError

    fname = registry_exports.export_file_name("gguf", outtype)
    number = version.version  # read before the conversion ends the session's transaction
    with tempfile.TemporaryDirectory(prefix="tracedraft-gguf-") as tmp:
        try:
            gguf: Path | None = None
            pub = _intact_export(store, version, fname)
            if pub is None:
                pub, gguf = _convert_and_publish(
                    session, store, org, version, fname, Path(tmp), outtype=outtype, target=target,
                    llamacpp_version=llamacpp_version, target_cache_dir=target_cache_dir, actor=actor,
                    progress=progress)
            path = None if out_dir is None else _copy_out(store, pub, gguf, out_dir)
        except ArtifactError as e:
            raise TracedraftError("checksum_mismatch" if e.code == "artifact_corrupt" else e.code, e.message,
                                  e.where) from e
    return GgufPublication(number, pub, path)


def _intact_export(store: Any, version: Any, fname: str) -> Any:
    """The version's published ``fname`` as a PublishedExport (``published`` False) when the store holds it
    with its recorded sha256; None when it was never published, or is lost or altered in the store (it is
    then converted again, and ``publish_export`` repairs the stored file)."""
    from service import registry_exports
    from service.storage import ArtifactError

    recorded = (version.files or {}).get(fname)
    if recorded is None:
        return None
    key = f"{store.key(version.checkpoint_uri)}/{fname}"
    try:
        store.verify(key, recorded)
    except ArtifactError:
        return None
    record = registry_exports.export_record(version, fname) or {}
    size = int(record.get("size") or 0)
    return registry_exports.PublishedExport(fname, store.uri(key), recorded, size, published=False, record=record)


def _convert_and_publish(session: Any, store: Any, org: Any, version: Any, fname: str, work_dir: Path, *,
                         outtype: str, target: str | None, llamacpp_version: str,
                         target_cache_dir: Path | None, actor: str,
                         progress: Callable[[str], None] | None) -> tuple[Any, Path]:
    """Fetch the verified checkpoint into ``work_dir``, convert it, check the block size, publish the GGUF.
    Returns (PublishedExport, the local GGUF). Raises TracedraftError(gguf_export_mismatch) when the GGUF's
    block size is not the version's, and the converter's and the registry's errors."""
    from service import registry_exports

    name, n, ckpt_uri = version.drafter.name, version.version, version.checkpoint_uri
    spec = target or (version.lineage or {}).get("target_model") or version.drafter.target_model
    block = (version.config or {}).get("block_size")
    ckpt_files = registry_exports.checkpoint_files(version)
    if progress is not None:
        progress(f"{name}@v{n}: converting to GGUF ({outtype}) against target {spec} ...")
    # The converter names the model after this directory (general.name): a fixed name per
    # version keeps the GGUF byte-identical from one run to the next.
    ck = store.get_dir(ckpt_uri, work_dir / f"{name}-v{n}", ckpt_files)
    session.rollback()  # no transaction held while the converter runs
    gguf = work_dir / Path(fname).name
    info = run_gguf_converter(ck, spec, gguf, outtype, llamacpp_version, target_cache_dir)
    if block is not None and info.get("block_size") != block:
        raise TracedraftError("gguf_export_mismatch", f"the GGUF says block size {info.get('block_size')}, "
                              f"the version {block}; not published", fname)
    meta = {"format": "gguf", "outtype": outtype, "target": spec,
            "target_gguf": info.get("target_gguf"), "block_size": info.get("block_size"),
            "llamacpp_version": info.get("llamacpp_version") or llamacpp_version,
            "converter": "convert_hf_to_gguf.py --target-model-dir",
            "checkpoint_files": dict(sorted(ckpt_files.items()))}
    return registry_exports.publish_export(session, store, org, name, n, gguf, fname, meta, actor=actor), gguf


def _copy_out(store: Any, pub: Any, gguf: Path | None, out_dir: Path) -> Path:
    """Write the published GGUF to ``out_dir`` (from ``gguf`` when just converted, else from the store) and
    check it hashes to the published sha256. Raises TracedraftError(checksum_mismatch)."""
    dest = out_dir / Path(pub.name).name
    if gguf is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(f".{dest.name}.part-{uuid.uuid4().hex}")
        shutil.copyfile(gguf, part)
        os.replace(part, dest)
    else:
        store.get_file(pub.uri, dest, pub.sha256)
    if sha256_file(dest) != pub.sha256:
        raise TracedraftError("checksum_mismatch", f"{dest} does not hash to the published sha256", str(dest))
    return dest
