"""drafters.checksums.sha256_file: the one file-hashing helper of drafters and the service."""

from __future__ import annotations

import hashlib

import pytest

from drafters.checksums import sha256_file


def test_sha256_file_streams_any_chunk_size(tmp_path):
    data = bytes(range(256)) * 1000 + b"tail"  # 256004 bytes: the last read is short
    path = tmp_path / "weights.bin"
    path.write_bytes(data)
    want = hashlib.sha256(data).hexdigest()
    assert sha256_file(path) == want
    assert sha256_file(str(path), chunk_bytes=1000) == want
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert sha256_file(empty) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    with pytest.raises(OSError):
        sha256_file(tmp_path / "missing")


def test_every_module_that_hashes_files_uses_the_one_copy():
    from drafters import agent_target
    from drafters.dspark import checkpoint
    from drafters.engines.llamacpp import build
    from service import gguf_export, storage
    from service.cli import registry_api

    for module in (checkpoint, build, agent_target, gguf_export, storage, registry_api):
        assert module.sha256_file is sha256_file, module.__name__
