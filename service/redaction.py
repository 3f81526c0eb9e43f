"""What an API user may see of internal storage: store URIs and the roots of the stores this process opened
are replaced by ``<stored file>`` (``redact_uris``), and a store error's message by its stable public text
(``public_error``). Kept apart from the store so the API's error handling reads it without the store."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

#: What an API user is told for a store error (the detail, which names internal URIs, goes to the log).
ARTIFACT_PUBLIC_TEXT: dict[str, str] = {
    "artifact_missing": "a stored file of this resource is missing",
    "artifact_corrupt": "a stored file of this resource failed its sha256 check (altered or partially written)",
    "checksum_mismatch": "a stored file of this version failed its sha256 check (altered or partially written)",
    "payload_too_large": "the upload exceeds the size limit",
    "artifact_io": "the artifact store is unavailable; retry later",
    "invalid_path": "invalid artifact path",
}
_PATH_CHARS = r"[^\s'\"<>()\[\]{},;]"
_STORE_URI = re.compile(rf"\b(?:file|s3a?|gs|gcs|az|abfss?|memory)://{_PATH_CHARS}*")
#: Roots of the stores this process opened (a local directory, a memory root, an object store's bucket),
#: most recent last; ``redact_uris`` removes them from texts that quote a path without its scheme (an
#: ``OSError``'s ``'/srv/artifacts/jobs/...'``, s3fs' ``bucket/key``). Bounded: tests open many stores.
_STORE_ROOTS: dict[str, None] = {}
_MAX_ROOTS = 64


def register_store_root(root: str, *, bucket: bool) -> None:
    """Remember a store root for ``redact_uris``: a path root (``/srv/artifacts``) matches itself and what
    lies below it; with ``bucket`` (object stores) the bucket matches when followed by ``/``."""
    if bucket:
        name = root.strip("/").split("/", 1)[0]
        if len(name) < 3:  # S3/GCS bucket names have 3 or more characters
            return
        entry = name + "/"
    else:
        entry = root.rstrip("/")
        if entry.count("/") < 1 or len(entry) < 4:  # never "/" or a one-letter directory
            return
    _STORE_ROOTS.pop(entry, None)
    _STORE_ROOTS[entry] = None
    while len(_STORE_ROOTS) > _MAX_ROOTS:
        del _STORE_ROOTS[next(iter(_STORE_ROOTS))]


@functools.lru_cache(maxsize=8)
def _roots_regex(roots: tuple[str, ...]) -> re.Pattern[str] | None:
    if not roots:
        return None
    parts = []
    for root in sorted(roots, key=len, reverse=True):  # the longest first: a root inside another one
        if root.endswith("/"):  # a bucket: "bucket/" and the key after it
            parts.append(re.escape(root) + f"{_PATH_CHARS}*")
        else:  # a directory: itself (not "/srv/artifacts2") and what lies below it
            parts.append(re.escape(root) + f"(?:/{_PATH_CHARS}*)?(?!{_PATH_CHARS})")
    # Not the middle of a longer path or word ("/x/srv/artifacts", "mybucket/" for bucket "bucket/").
    return re.compile(r"(?<![\w./-])(?:" + "|".join(parts) + ")")


def redact_uris(text: str | None) -> str | None:
    """``text`` with every artifact-store URI (``s3://...``, ``file://...``) and every path under the local
    root or object-store bucket of a store this process opened replaced by ``<stored file>``."""
    if not text:
        return text
    text = _STORE_URI.sub("<stored file>", text)
    roots = _roots_regex(tuple(_STORE_ROOTS))
    return roots.sub("<stored file>", text) if roots is not None else text


def _names_store(text: str) -> bool:
    """Whether ``text`` quotes a store URI or a path under a known store root."""
    return redact_uris(text) != text


def public_error(error: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """An ``{"code", "message", "param"}`` error as an API user may see it: a store error gets its stable
    text (``ARTIFACT_PUBLIC_TEXT``), any other message and param lose their store URIs."""
    if not error:
        return None
    code = error.get("code")
    if code in ARTIFACT_PUBLIC_TEXT:
        return {"code": code, "message": ARTIFACT_PUBLIC_TEXT[code], "param": None}
    param = error.get("param")
    return {**error, "message": redact_uris(error.get("message")),
            "param": None if isinstance(param, str) and _names_store(param) else param}
