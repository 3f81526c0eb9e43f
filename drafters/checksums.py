"""The sha256 of a file, streamed: the one copy drafters and the service share (checkpoints, GGUF targets,
registry artifacts, downloads). Standard library only, so the service may import it
(tests/test_architecture.py lists it in DRAFTERS_LIGHT)."""

from __future__ import annotations

import hashlib
from pathlib import Path

CHUNK_BYTES = 1 << 22  # 4 MiB per read: a multi-GB weight file hashes in flat memory


def sha256_file(path: str | Path, chunk_bytes: int = CHUNK_BYTES) -> str:
    """Hex sha256 of the bytes of the file at ``path``, read ``chunk_bytes`` at a time (the digest does not
    depend on the chunk size). Raises OSError when the file cannot be read."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk_bytes):
            h.update(block)
    return h.hexdigest()
