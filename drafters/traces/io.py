"""Open trace files as text, transparently decompressing gzip and zstd (sniffed, not guessed from names); a
ZIP archive of JSON files, or a directory of numbered event files, reads as the concatenation of its JSON.

Everything is streamed: a multi-GB ``.jsonl.zst`` is read through a bounded decompression window, never
loaded whole. Undecodable bytes become U+FFFD (``errors="replace"``) so a single bad byte produces one
bad record in the report instead of an exception for the whole file.
"""

from __future__ import annotations

import gzip
import io
import re
import zipfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import IO

HEAD_BYTES = 64 * 1024  # what detection sees (formats/base.py)

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ZIP_MAGIC = b"PK\x03\x04"  # an archive of JSON files (Inspect AI ``.eval`` logs): read as their concatenation


def stored_upload_name(index: int, sha256: str, name: str) -> str:
    """The name an uploaded trace file is read under in a job's work directory: its 3-digit index in the
    upload, the first 16 hex digits of its sha256 and its sanitized last two suffixes (format detection uses
    them as a hint). The user's file name itself never reaches a path. Formats that name conversations after
    their file put this name in the conversation ids, so the held-out split depends on it."""
    suffix = "".join(s for s in Path(name).suffixes[-2:] if s[1:].isalnum() and len(s) <= 8)
    return f"{index:03d}-{sha256[:16]}{suffix}"


def upload_names(paths: Sequence[Path]) -> list[str]:
    """The names a dataset of ``paths`` reads them under, in upload order (``stored_upload_name``, the rule
    service/datasets.py uses). They end up in the conversation ids of formats that name conversations after
    their file."""
    from drafters.checksums import sha256_file

    return [stored_upload_name(i, sha256_file(p), p.name) for i, p in enumerate(paths)]


def compression_of(path: str | Path) -> str | None:
    """"gzip", "zstd", "zip" or None, from the file's first bytes. Raises OSError when unreadable."""
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic.startswith(GZIP_MAGIC):
        return "gzip"
    if magic.startswith(ZSTD_MAGIC):
        return "zstd"
    if magic == ZIP_MAGIC:
        return "zip"
    return None


def open_binary(path: str | Path) -> IO[bytes]:
    """A binary stream of the file's decompressed content. Raises OSError when unreadable."""
    kind = compression_of(path)
    raw = open(path, "rb")
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if kind == "zstd":
        import zstandard  # imported lazily: only compressed inputs pay for it

        # read_across_frames: files made by concatenating frames (e.g. appended logs) read whole.
        return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=True)
    return raw


# One JSON file per event, numbered (OpenHands software-agent-sdk: ``events/event-00012-<uuid>.json``): a
# directory of them is one conversation, read as their concatenation.
EVENT_FILE_RE = re.compile(r"^event-\d+(-[0-9A-Za-z-]+)?\.json$")


def event_files(directory: str | Path) -> list[Path]:
    """The numbered event files directly inside ``directory``, in event order ([] when there are none)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(f for f in directory.iterdir() if f.is_file() and EVENT_FILE_RE.match(f.name))


class _Concatenated(io.TextIOBase):
    """Several text sources read as one stream, each followed by a newline (a stream of JSON values).
    ``openers`` are called in order, each returning the next source's text stream."""

    def __init__(self, openers: list[Callable[[], IO[str]]], on_close: Callable[[], None] | None = None):
        self._openers = list(openers)
        self._current: IO[str] | None = None
        self._on_close = on_close

    def readable(self) -> bool:
        return True

    def _next(self) -> bool:
        if self._current is not None:
            self._current.close()
            self._current = None
        if not self._openers:
            return False
        self._current = self._openers.pop(0)()
        return True

    def read(self, n: int | None = -1) -> str:
        out = ""
        while n is None or n < 0 or len(out) < n:
            if self._current is None and not self._next():
                break
            chunk = self._current.read(-1 if n is None or n < 0 else n - len(out))  # type: ignore[union-attr]
            if chunk:
                out += chunk
                continue
            out += "\n"
            self._current.close()  # type: ignore[union-attr]
            self._current = None
        return out

    def readline(self, limit: int | None = -1) -> str:
        while True:
            if self._current is None and not self._next():
                return ""
            line = self._current.readline()  # type: ignore[union-attr]
            if line:
                return line if line.endswith("\n") else line + "\n"
            self._current.close()  # type: ignore[union-attr]
            self._current = None

    def __iter__(self):
        return self

    def __next__(self) -> str:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
        self._openers = []
        if self._on_close is not None:
            self._on_close()
            self._on_close = None
        super().close()


def open_text(path: str | Path) -> IO[str]:
    """A UTF-8 text stream of the decompressed file (BOM stripped, universal newlines, bad bytes replaced);
    for a directory of numbered event files (``event_files``), their concatenation in event order.

    Raises OSError (FileNotFoundError, PermissionError, IsADirectoryError, ...) when it cannot be opened.
    """
    if Path(path).is_dir():
        files = event_files(path)
        if not files:
            raise IsADirectoryError(f"{path} is a directory without numbered event files")
        return _Concatenated([partial(open_text, f) for f in files])  # type: ignore[return-value]
    if compression_of(path) == "zip":
        return _zip_members(path)
    binary = open_binary(path)
    if not isinstance(binary, io.BufferedIOBase) or isinstance(binary, gzip.GzipFile):
        binary = io.BufferedReader(binary, buffer_size=1 << 20)  # type: ignore[arg-type]
    return io.TextIOWrapper(binary, encoding="utf-8-sig", errors="replace", newline=None)


def _zip_members(path: str | Path) -> IO[str]:
    """The ``.json`` members of a ZIP archive, in archive order, as one text stream.

    Raises OSError (``zipfile.BadZipFile`` is re-raised as one) when the archive is unreadable."""
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise OSError(f"not a readable ZIP archive: {exc}") from exc
    names = [n for n in archive.namelist() if n.endswith(".json")]

    def member(name: str) -> IO[str]:
        return io.TextIOWrapper(archive.open(name), encoding="utf-8-sig", errors="replace")

    return _Concatenated([partial(member, n) for n in names], on_close=archive.close)  # type: ignore[return-value]


def read_head(path: str | Path, n_bytes: int = HEAD_BYTES) -> str:
    """The first ``n_bytes`` of the decompressed file decoded as text (a cut final character dropped).

    Raises OSError when the file cannot be read, or a decompression error (EOFError, zstd/gzip errors)
    when its compressed head is corrupt. For an event directory: the head of its concatenation.
    """
    if Path(path).is_dir() or compression_of(path) == "zip":
        with open_text(path) as stream:
            return stream.read(n_bytes)
    with open_binary(path) as f:
        data = b""
        while len(data) < n_bytes:  # decompressing readers may return short reads
            chunk = f.read(n_bytes - len(data))
            if not chunk:
                break
            data += chunk
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", errors="ignore" if len(data) >= n_bytes else "replace")
