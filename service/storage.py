"""The artifact store (docs/architecture.md section 1: "one artifact store"): one interface over fsspec.

A local directory by default (``file:///...``), any fsspec URI in a cluster (``s3://bucket/prefix``,
``memory://name`` in tests). Keys are relative POSIX paths under the store's root; URIs are
``<root uri>/<key>``. Layout used by the service:

    raw/<sha256>                          uploaded dataset bytes, content-addressed (put_raw / open_write)
    datasets/<dataset_id>/...             canonical conversations written by validation
    jobs/<job_id>/...                     a job's working files (shards, training checkpoints, reports)
    drafters/<org_id>/<name>/<job_id>/... registered drafter version files (service.registry)

Guarantees:
- Writes are atomic: bytes go to a temporary name (``.tmp-<uuid>-<name>`` next to the target) and are
  renamed (local) or moved (object stores, where the temporary object only exists once its upload
  completed) into place. A crashed write leaves only a temporary name, never a partial final file;
  ``gc`` removes stale temporaries.
- Every read verifies a sha256 the caller provides (``get_bytes``, ``get_file``, ``get_dir``,
  ``open_read``, ``verify``). A missing file raises ArtifactError ``artifact_missing``, a hash or size
  mismatch (tampered or partially written) ``artifact_corrupt``, both naming the path.
- ``open_write(max_bytes=...)`` streams an upload and raises ``payload_too_large`` past the limit, leaving
  nothing behind.
- A backend failure (a write, commit, delete, list, copy or mid-stream read that the filesystem or object
  store refused) raises ArtifactError ``artifact_io`` whose message names the store-relative key and the
  error's kind, never the store's local root or bucket; it is ``transient`` (retried by the workers) when
  its cause is a connection or timeout error.
- Every store registers its local root or bucket with ``service.redaction``, whose ``redact_uris`` (used on
  every message an API user sees) removes artifact-store URIs and those roots.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import os
import posixpath
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO, Self

import fsspec
from fsspec.implementations.local import LocalFileSystem

from drafters.checksums import sha256_file  # re-exported: callers import it from here
from drafters.errors import TracedraftError
from service.redaction import redact_uris, register_store_root

CHUNK = 1 << 20  # 1 MiB streaming chunk
TMP_MARK = ".tmp-"


class ArtifactError(TracedraftError):
    """An artifact problem. Codes: ``artifact_missing``, ``artifact_corrupt`` (sha256 or size mismatch),
    ``payload_too_large``, ``invalid_path`` (a key escaping the store), ``artifact_io`` (the backend
    refused a read, write, commit, delete or list; its message names the store-relative key, never the
    root). ``where`` is the artifact's URI. ``transient`` (read by the workers' retry rule) is True for an
    ``artifact_io`` caused by a connection or timeout error."""

    transient: bool = False


#: Exception class names of a backend failure that may pass on retry (connection lost, timeouts; the
#: botocore / aiohttp names cover s3fs and gcsfs), besides ``ConnectionError`` and ``TimeoutError``.
_TRANSIENT_CAUSES = {"EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "ConnectionClosedError",
                     "ClientConnectorError", "ServerDisconnectedError", "ServerTimeoutError", "ClientOSError"}


def _transient_cause(exc: BaseException) -> bool:
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int) and status >= 500:
        return True
    return any(cls.__name__ in _TRANSIENT_CAUSES for cls in type(exc).__mro__)


@dataclass(frozen=True)
class Stored:
    """A written artifact: its URI, sha256 (hex) and size in bytes."""

    uri: str
    sha256: str
    size: int


@dataclass(frozen=True)
class ArtifactInfo:
    """One listed artifact: key (relative to the store root), URI, size in bytes, modification time (UTC)."""

    key: str
    uri: str
    size: int
    mtime: dt.datetime | None

    @property
    def temporary(self) -> bool:
        """True for a leftover temporary of an interrupted write."""
        return posixpath.basename(self.key).startswith(TMP_MARK)


def _normalize_key(key: str) -> str:
    if not isinstance(key, str) or not key or "\\" in key or "\x00" in key:
        raise ArtifactError("invalid_path", f"invalid artifact key {key!r}", where=str(key))
    norm = posixpath.normpath(key.lstrip("/"))
    if norm in (".", "") or norm.startswith("../") or norm == ".." or key.startswith("/"):
        raise ArtifactError("invalid_path", f"artifact key {key!r} escapes the store", where=key)
    return norm


def _mtime(info: Mapping[str, Any]) -> dt.datetime | None:
    for field in ("mtime", "LastModified", "last_modified", "created", "updated", "timeCreated"):
        value = info.get(field)
        if value is None:
            continue
        if isinstance(value, dt.datetime):
            return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        if isinstance(value, (int, float)):
            return dt.datetime.fromtimestamp(float(value), dt.UTC)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                parsed = dt.datetime.fromisoformat(value)
                return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    return None


class ArtifactWriter:
    """A streaming write into the store (from ``ArtifactStore.open_write``); hashes while writing.

    ``write(data)`` raises ArtifactError ``payload_too_large`` once more than ``max_bytes`` were written.
    After the ``with`` block: ``uri``, ``sha256``, ``size`` (``result``).
    """

    def __init__(self, fh: IO[bytes], max_bytes: int | None, where: str,
                 fail: Callable[[Exception], ArtifactError] | None = None):
        self._fh = fh
        self._hash = hashlib.sha256()
        self._max = max_bytes
        self._where = where
        self._fail = fail  # turns a backend exception into the ArtifactError to raise
        self.size = 0
        self.result: Stored | None = None

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self._max is not None and self.size > self._max:
            raise ArtifactError(
                "payload_too_large", f"upload exceeds the limit of {self._max} bytes", where=self._where
            )
        self._hash.update(data)
        try:
            self._fh.write(data)
        except Exception as e:
            if self._fail is None or isinstance(e, TracedraftError):
                raise
            raise self._fail(e) from e
        return len(data)

    @property
    def sha256(self) -> str:
        return self._hash.hexdigest()

    @property
    def uri(self) -> str:
        if self.result is None:
            raise RuntimeError("the artifact is not committed yet (use it after the with block)")
        return self.result.uri


class VerifyingReader:
    """A read-only stream that hashes what it returns and raises ``artifact_corrupt`` at end of file when
    the sha256 (or size) differs from the expected one. Always read to the end to get the check."""

    def __init__(self, fh: IO[bytes], expected_sha256: str, uri: str, expected_size: int | None = None,
                 fail: Callable[[Exception], ArtifactError] | None = None):
        self._fh = fh
        self._fail = fail  # turns a backend exception into the ArtifactError to raise
        self._hash = hashlib.sha256()
        self._expected = expected_sha256
        self._expected_size = expected_size
        self._uri = uri
        self._size = 0
        self._checked = False

    def read(self, size: int = -1) -> bytes:
        try:
            data = self._fh.read(size) if size is not None and size >= 0 else self._fh.read()
        except Exception as e:
            if self._fail is None or isinstance(e, TracedraftError):
                raise
            raise self._fail(e) from e
        self._hash.update(data)
        self._size += len(data)
        if not data or size is None or size < 0:
            self._check()
        return data

    def _check(self) -> None:
        if self._checked:
            return
        self._checked = True
        actual = self._hash.hexdigest()
        if actual != self._expected or (self._expected_size is not None and self._size != self._expected_size):
            raise ArtifactError(
                "artifact_corrupt",
                f"artifact {self._uri} has sha256 {actual} ({self._size} bytes), expected {self._expected}"
                + (f" ({self._expected_size} bytes)" if self._expected_size is not None else "")
                + ": it was altered or only partially written",
                where=self._uri,
            )

    def __iter__(self) -> Iterator[bytes]:
        while chunk := self.read(CHUNK):
            yield chunk

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ArtifactStore:
    """Artifact store rooted at ``uri`` (``file:///dir``, a plain directory path, ``s3://b/p``, ``memory://x``).

    ``storage_options`` are passed to fsspec (credentials, endpoint). All methods accept either a key
    relative to the root or a full URI inside the root.
    """

    def __init__(self, uri: str, storage_options: Mapping[str, Any] | None = None):
        if "://" not in uri:
            uri = "file://" + str(Path(uri).expanduser().resolve())
        self.fs, root = fsspec.core.url_to_fs(uri, **dict(storage_options or {}))
        self.root = root.rstrip("/") or "/"
        self.root_uri = uri.rstrip("/")
        self.local = isinstance(self.fs, LocalFileSystem)
        if self.local:
            os.makedirs(self.root, exist_ok=True)
        path_root = self.local or self.root.startswith("/")  # local, memory://: a directory-like root
        register_store_root(self.root, bucket=not path_root)
        if self.local and os.path.realpath(self.root) != self.root:
            register_store_root(os.path.realpath(self.root), bucket=False)

    @classmethod
    def from_settings(cls, settings: Any = None) -> ArtifactStore:
        """The store of ``settings.artifact_uri`` (default: ``get_settings()``)."""
        if settings is None:
            from service.settings import get_settings

            settings = get_settings()
        return cls(settings.artifact_uri, settings.artifact_storage_options)

    def __repr__(self) -> str:
        return f"ArtifactStore({self.root_uri!r})"

    # --- naming ------------------------------------------------------------------------------------------

    def key(self, uri_or_key: str) -> str:
        """The key of ``uri_or_key`` relative to the root; ArtifactError ``invalid_path`` when outside."""
        if "://" in uri_or_key:
            prefix = self.root_uri + "/"
            if not uri_or_key.startswith(prefix):
                raise ArtifactError("invalid_path", f"{uri_or_key} is not inside the store {self.root_uri}",
                                    where=uri_or_key)
            uri_or_key = uri_or_key[len(prefix):]
        return _normalize_key(uri_or_key)

    def uri(self, key: str) -> str:
        """Full URI of ``key``."""
        return f"{self.root_uri}/{self.key(key)}"

    def _path(self, key: str) -> str:
        return f"{self.root}/{self.key(key)}" if self.root != "/" else f"/{self.key(key)}"

    # --- backend failures --------------------------------------------------------------------------------

    def _io_error(self, action: str, key: str, exc: Exception) -> ArtifactError:
        """ArtifactError ``artifact_io`` for a backend failure while ``action``-ing ``key`` (store-relative):
        the message names the key and the error's kind and text, with the store's root removed (an
        ``OSError`` quotes the absolute path, s3fs ``bucket/key``); ``where`` is the key's URI (the API
        never shows it). ``transient`` when the cause is a connection or timeout error."""
        if isinstance(exc, OSError) and exc.strerror:
            detail = exc.strerror  # without the filename, which is the absolute path
        else:
            detail = str(exc)
            for root in {self.root, self.root.lstrip("/")} - {"", "/"}:
                detail = detail.replace(root + "/", "").replace(root, "<store>")
            detail = redact_uris(detail) or ""
        where = f"{self.root_uri}/{key}" if key else self.root_uri
        err = ArtifactError("artifact_io", f"cannot {action} artifact {key or '<store root>'}: "
                            f"{type(exc).__name__}: {detail}", where=where)
        if _transient_cause(exc):
            err.transient = True  # workers.tasks.is_transient retries it
        return err

    @contextlib.contextmanager
    def _backend(self, action: str, key: str) -> Iterator[None]:
        """Run backend calls; any exception but a TracedraftError becomes ``_io_error(action, key)``."""
        try:
            yield
        except TracedraftError:
            raise
        except Exception as e:
            raise self._io_error(action, key, e) from e

    # --- writing -----------------------------------------------------------------------------------------

    def _tmp_path(self, key: str) -> str:
        parent, name = posixpath.split(self.key(key))
        tmp_key = posixpath.join(parent, f"{TMP_MARK}{uuid.uuid4().hex}-{name}"[:255])
        return self._path(tmp_key)

    def _commit(self, tmp: str, final: str) -> None:
        if self.local:
            os.replace(tmp, final)  # atomic rename on one filesystem
        else:
            self.fs.mv(tmp, final)  # object stores: a completed object copied into place

    def _discard(self, tmp: str) -> None:
        with contextlib.suppress(Exception):
            if self.fs.exists(tmp):
                self.fs.rm(tmp)

    @contextlib.contextmanager
    def open_write(self, key: str | None = None, *, max_bytes: int | None = None) -> Iterator[ArtifactWriter]:
        """Stream bytes into ``key`` atomically; with ``key=None`` the artifact is content-addressed
        (``raw/<sha256>``). Yields an ArtifactWriter; after the block its ``result`` is the Stored.

        Raises ArtifactError ``payload_too_large`` (from ``write``) past ``max_bytes`` and ``artifact_io`` when
        the backend refuses a write or the commit; an exception of the block itself passes unchanged. On any
        exception the temporary is removed and nothing appears under the final name.
        """
        staging_key = self.key(key if key is not None else f"raw/upload-{uuid.uuid4().hex}")
        tmp = self._tmp_path(staging_key)
        where = self.uri(staging_key)
        fh = None
        try:
            with self._backend("write", staging_key):
                self.fs.makedirs(posixpath.dirname(tmp), exist_ok=True)
                fh = self.fs.open(tmp, "wb")
            writer = ArtifactWriter(fh, max_bytes, where, functools.partial(self._io_error, "write", staging_key))
            yield writer
            with self._backend("write", staging_key):
                if self.local:
                    fh.flush()
                    os.fsync(fh.fileno())
                fh.close()  # object stores upload (the rest of) the temporary here
            final_key = self.key(key) if key is not None else f"raw/{writer.sha256}"
            final = self._path(final_key)
            with self._backend("commit", final_key):
                self.fs.makedirs(posixpath.dirname(final), exist_ok=True)
                self._commit(tmp, final)
            writer.result = Stored(self.uri(final_key), writer.sha256, writer.size)
        except BaseException:
            if fh is not None:
                with contextlib.suppress(Exception):
                    fh.close()
            self._discard(tmp)
            raise

    def put_bytes(self, key: str, data: bytes) -> Stored:
        """Write ``data`` to ``key`` atomically; returns its URI, sha256 and size."""
        with self.open_write(key) as w:
            w.write(data)
        assert w.result is not None
        return w.result

    def put_stream(self, key: str | None, stream: BinaryIO, *, max_bytes: int | None = None,
                   head: bytes = b"") -> Stored:
        """Copy a binary stream to ``key`` (``None``: content-addressed ``raw/<sha256>``), atomically.
        ``head``: bytes already read from the stream, written first."""
        with self.open_write(key, max_bytes=max_bytes) as w:
            if head:
                w.write(head)
            while chunk := stream.read(CHUNK):
                w.write(chunk)
        assert w.result is not None
        return w.result

    def put_raw(self, data: bytes | BinaryIO, *, max_bytes: int | None = None) -> Stored:
        """Store uploaded bytes content-addressed under ``raw/<sha256>`` (same bytes, same URI)."""
        if isinstance(data, (bytes, bytearray, memoryview)):
            with self.open_write(None, max_bytes=max_bytes) as w:
                w.write(bytes(data))
            assert w.result is not None
            return w.result
        return self.put_stream(None, data, max_bytes=max_bytes)

    def put_file(self, key: str, path: str | Path) -> Stored:
        """Upload the local file ``path`` to ``key`` atomically (hashed while copying)."""
        with open(path, "rb") as f:
            return self.put_stream(key, f)

    def put_dir(self, prefix: str, local_dir: str | Path) -> tuple[str, dict[str, str]]:
        """Upload every file under ``local_dir`` to ``prefix/<relative path>``.

        Returns (URI of the prefix, {relative POSIX path: sha256}). Each file is written atomically; the
        directory as a whole is made visible by whoever records the returned map (e.g. a registry row).
        """
        local_dir = Path(local_dir)
        prefix = self.key(prefix)
        if not local_dir.is_dir():
            raise ArtifactError("artifact_missing", f"cannot upload to {prefix}: the local directory "
                                f"{local_dir.name!r} does not exist", where=str(local_dir))
        files: dict[str, str] = {}
        with self._backend("upload", prefix):  # reading the local files (store writes raise their own)
            paths = sorted(p for p in local_dir.rglob("*") if p.is_file())
        for path in paths:
            rel = path.relative_to(local_dir).as_posix()
            key = f"{prefix}/{rel}"
            with self._backend("upload", self.key(key)):
                files[rel] = self.put_file(key, path).sha256
        return self.uri(prefix), files

    def copy(self, src: str, dst: str, sha256: str) -> Stored:
        """Copy ``src`` to ``dst`` inside the store, verifying ``src`` against ``sha256`` while streaming
        (a corrupt source raises ``artifact_corrupt`` and leaves nothing at ``dst``)."""
        with self.open_read(src, sha256) as r:
            return self.put_stream(dst, r)  # type: ignore[arg-type]

    # --- reading (always verified) ----------------------------------------------------------------------

    def _open_existing(self, uri_or_key: str) -> tuple[IO[bytes], str]:
        path, uri = self._path(uri_or_key), self.uri(uri_or_key)
        try:
            return self.fs.open(path, "rb"), uri
        except (FileNotFoundError, IsADirectoryError):
            raise ArtifactError("artifact_missing", f"artifact {uri} does not exist", where=uri) from None
        except TracedraftError:
            raise
        except Exception as e:
            raise self._io_error("read", self.key(uri_or_key), e) from e

    def open_read(self, uri_or_key: str, sha256: str, size: int | None = None) -> VerifyingReader:
        """Open for streaming; the sha256 (and size) are checked when the end is reached."""
        fh, uri = self._open_existing(uri_or_key)
        return VerifyingReader(fh, sha256, uri, size, functools.partial(self._io_error, "read", self.key(uri_or_key)))

    def get_bytes(self, uri_or_key: str, sha256: str, size: int | None = None) -> bytes:
        """The artifact's bytes, after checking they hash to ``sha256``."""
        with self.open_read(uri_or_key, sha256, size) as r:
            return r.read()

    def verify(self, uri_or_key: str, sha256: str, size: int | None = None) -> None:
        """Stream the artifact and check its sha256 (and size). Raises ``artifact_missing`` /
        ``artifact_corrupt``."""
        with self.open_read(uri_or_key, sha256, size) as r:
            for _ in r:
                pass

    def verify_dir(self, uri_or_key: str, expected_files: Mapping[str, str]) -> None:
        """Verify every ``name -> sha256`` under the prefix ``uri_or_key``. Raises on the first problem;
        the message lists every missing or corrupt file."""
        problems: list[ArtifactError] = []
        prefix = self.key(uri_or_key)
        for name, digest in sorted(expected_files.items()):
            try:
                self.verify(f"{prefix}/{_normalize_key(name)}", digest)
            except ArtifactError as e:
                if e.code == "artifact_io":
                    raise
                problems.append(e)
        if problems:
            first = problems[0]
            detail = "; ".join(p.message for p in problems)
            raise ArtifactError(first.code, f"{len(problems)} of {len(expected_files)} files failed "
                                f"verification: {detail}", where=first.where)

    def get_file(self, uri_or_key: str, dest: str | Path, sha256: str) -> Path:
        """Download to the local ``dest`` (written to a temporary name, verified, then renamed)."""
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.is_file() and sha256_file(dest) == sha256:
            return dest  # already there and intact (a cache hit)
        tmp = dest.with_name(f"{TMP_MARK}{uuid.uuid4().hex}-{dest.name}")
        try:
            with self.open_read(uri_or_key, sha256) as r, open(tmp, "wb") as out:
                out.writelines(r)
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
        return dest

    def get_dir(self, uri_or_key: str, dest: str | Path, expected_files: Mapping[str, str]) -> Path:
        """Download the files ``expected_files`` (relative name -> sha256) under the prefix ``uri_or_key``
        into ``dest``, verifying each. Files already present and intact are not downloaded again."""
        dest = Path(dest)
        prefix = self.key(uri_or_key)
        for name, digest in sorted(expected_files.items()):
            rel = _normalize_key(name)
            self.get_file(f"{prefix}/{rel}", dest / rel, digest)
        return dest

    # --- housekeeping ---------------------------------------------------------------------------------

    def exists(self, uri_or_key: str) -> bool:
        """Whether a file (or a non-empty prefix) exists at ``uri_or_key``."""
        path = self._path(uri_or_key)
        with self._backend("check", self.key(uri_or_key)):
            return bool(self.fs.exists(path))

    def delete(self, uri_or_key: str, *, recursive: bool = False) -> None:
        """Delete a file (or, with ``recursive``, everything under a prefix). Missing is not an error."""
        path = self._path(uri_or_key)
        with self._backend("delete", self.key(uri_or_key)), contextlib.suppress(FileNotFoundError):
            if self.fs.isdir(path):
                if recursive:
                    self.fs.rm(path, recursive=True)
            else:
                self.fs.rm(path)

    def list(self, prefix: str = "") -> list[ArtifactInfo]:
        """Every file under ``prefix`` (the whole store by default) with size and modification time,
        including temporaries of interrupted writes (``ArtifactInfo.temporary``), sorted by key."""
        base = self._path(prefix) if prefix else self.root
        with self._backend("list", self.key(prefix) if prefix else ""):
            try:
                found = self.fs.find(base, detail=True)
            except FileNotFoundError:
                return []
        root = self.root.rstrip("/") + "/"
        out = []
        for path, info in found.items():
            if info.get("type") == "directory":
                continue
            if not path.startswith(root):  # some backends drop or add the leading slash
                path = "/" + path.lstrip("/") if root.startswith("/") else path.lstrip("/")
                if not path.startswith(root):
                    continue
            key = path[len(root):]
            out.append(ArtifactInfo(key, f"{self.root_uri}/{key}", int(info.get("size") or 0), _mtime(info)))
        return sorted(out, key=lambda a: a.key)
