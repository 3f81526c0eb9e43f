"""Open trace files as text, transparently decompressing gzip and zstd (sniffed, not guessed from names).

Everything is streamed: a multi-GB ``.jsonl.zst`` is read through a bounded decompression window, never
loaded whole. Undecodable bytes become U+FFFD (``errors="replace"``) so a single bad byte produces one
bad record in the report instead of an exception for the whole file.
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import IO

HEAD_BYTES = 64 * 1024  # what detection sees (formats/base.py)

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def compression_of(path: str | Path) -> str | None:
    """"gzip", "zstd" or None, from the file's first bytes. Raises OSError when unreadable."""
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic.startswith(GZIP_MAGIC):
        return "gzip"
    if magic.startswith(ZSTD_MAGIC):
        return "zstd"
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


def open_text(path: str | Path) -> IO[str]:
    """A UTF-8 text stream of the decompressed file (BOM stripped, universal newlines, bad bytes replaced).

    Raises OSError (FileNotFoundError, PermissionError, ...) when the file cannot be opened.
    """
    binary = open_binary(path)
    if not isinstance(binary, io.BufferedIOBase) or isinstance(binary, gzip.GzipFile):
        binary = io.BufferedReader(binary, buffer_size=1 << 20)  # type: ignore[arg-type]
    return io.TextIOWrapper(binary, encoding="utf-8-sig", errors="replace", newline=None)


def read_head(path: str | Path, n_bytes: int = HEAD_BYTES) -> str:
    """The first ``n_bytes`` of the decompressed file decoded as text (a cut final character dropped).

    Raises OSError when the file cannot be read, or a decompression error (EOFError, zstd/gzip errors)
    when its compressed head is corrupt.
    """
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
