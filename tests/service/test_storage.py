"""Artifact store: atomic writes, verified reads, size limits; on a local directory and memory://."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import os
import uuid
from pathlib import Path

import pytest

from service.storage import TMP_MARK, ArtifactError, ArtifactStore, sha256_file


@pytest.fixture(params=["file", "memory"])
def any_store(request, tmp_path: Path):
    if request.param == "file":
        yield ArtifactStore(f"file://{tmp_path / 'store'}")
        return
    store = ArtifactStore(f"memory://tdtest-{uuid.uuid4().hex}/root")
    yield store
    if store.fs.exists(store.root):
        store.fs.rm(store.root, recursive=True)


def _raw_path(store: ArtifactStore, key: str) -> str:
    return store._path(key)


def _tamper(store: ArtifactStore, key: str, data: bytes) -> None:
    """Overwrite a stored file behind the store's back (what a corrupting disk or an attacker does)."""
    with store.fs.open(_raw_path(store, key), "wb") as f:
        f.write(data)


def test_put_get_round_trip(any_store):
    data = os.urandom(3 * 1024 * 1024 + 17)  # spans several streaming chunks
    stored = any_store.put_bytes("a/b/model.safetensors", data)
    assert stored.sha256 == hashlib.sha256(data).hexdigest() and stored.size == len(data)
    assert stored.uri == any_store.root_uri + "/a/b/model.safetensors"
    assert any_store.get_bytes(stored.uri, stored.sha256) == data
    assert any_store.get_bytes("a/b/model.safetensors", stored.sha256, size=len(data)) == data
    assert any_store.exists(stored.uri) and not any_store.exists("a/b/other")
    assert [i.key for i in any_store.list()] == ["a/b/model.safetensors"]


def test_tampered_file_is_detected_with_its_path(any_store):
    stored = any_store.put_bytes("ck/weights.bin", b"\x00" * 1000)
    _tamper(any_store, "ck/weights.bin", b"\x00" * 999 + b"\x01")
    with pytest.raises(ArtifactError) as e:
        any_store.get_bytes(stored.uri, stored.sha256)
    assert e.value.code == "artifact_corrupt"
    assert e.value.where == stored.uri and stored.sha256 in e.value.message
    with pytest.raises(ArtifactError) as e:
        any_store.verify(stored.uri, stored.sha256)
    assert e.value.code == "artifact_corrupt"


def test_partially_written_file_is_detected(any_store):
    data = os.urandom(50_000)
    stored = any_store.put_bytes("ck/part.bin", data)
    _tamper(any_store, "ck/part.bin", data[:20_000])  # truncated, as by a crashed non-atomic copy
    with pytest.raises(ArtifactError) as e:
        any_store.get_bytes(stored.uri, stored.sha256)
    assert e.value.code == "artifact_corrupt" and "20000 bytes" in e.value.message
    # streaming readers raise at the end too
    with pytest.raises(ArtifactError) as e, any_store.open_read(stored.uri, stored.sha256) as r:
        b"".join(r)
    assert e.value.code == "artifact_corrupt"


def test_missing_file_is_detected(any_store):
    with pytest.raises(ArtifactError) as e:
        any_store.get_bytes("nope/x.bin", "0" * 64)
    assert e.value.code == "artifact_missing" and e.value.where == any_store.root_uri + "/nope/x.bin"


def test_interrupted_write_leaves_nothing_under_the_final_name(any_store):
    with pytest.raises(RuntimeError), any_store.open_write("ck/big.bin") as w:
        w.write(b"x" * 1000)
        raise RuntimeError("worker died mid-upload")
    assert not any_store.exists("ck/big.bin")
    assert any_store.list() == []  # the temporary was removed too


def test_crash_leftover_temporary_is_listed_as_such(any_store):
    # A process killed mid-write leaves only a temporary name: readers never see it as the artifact.
    any_store.fs.makedirs(os.path.dirname(_raw_path(any_store, "ck/x")), exist_ok=True)
    with any_store.fs.open(_raw_path(any_store, f"ck/{TMP_MARK}dead-model.bin"), "wb") as f:
        f.write(b"half")
    with pytest.raises(ArtifactError) as e:
        any_store.get_bytes("ck/model.bin", hashlib.sha256(b"half").hexdigest())
    assert e.value.code == "artifact_missing"
    (info,) = any_store.list()
    assert info.temporary and info.size == 4


def test_upload_size_limit(any_store):
    with pytest.raises(ArtifactError) as e, any_store.open_write(None, max_bytes=10_000) as w:
        for _ in range(20):
            w.write(b"y" * 1000)
    assert e.value.code == "payload_too_large"
    assert any_store.list() == []
    ok = any_store.put_raw(io.BytesIO(b"y" * 10_000), max_bytes=10_000)  # exactly at the limit
    assert ok.size == 10_000


def test_raw_uploads_are_content_addressed(any_store):
    a = any_store.put_raw(b"same bytes")
    b = any_store.put_raw(io.BytesIO(b"same bytes"))
    assert a == b and a.uri.endswith("/raw/" + hashlib.sha256(b"same bytes").hexdigest())
    assert [i.key for i in any_store.list("raw")] == ["raw/" + a.sha256]


def test_dirs(any_store, tmp_path: Path):
    src = tmp_path / "ckpt"
    (src / "sub").mkdir(parents=True)
    (src / "config.json").write_text('{"block_size": 7}')
    (src / "sub" / "model.safetensors").write_bytes(os.urandom(4096))
    uri, files = any_store.put_dir("drafters/o/d/job1/checkpoint", src)
    assert files == {"config.json": sha256_file(src / "config.json"),
                     "sub/model.safetensors": sha256_file(src / "sub" / "model.safetensors")}
    any_store.verify_dir(uri, files)
    dest = any_store.get_dir(uri, tmp_path / "out", files)
    assert (dest / "sub" / "model.safetensors").read_bytes() == (src / "sub" / "model.safetensors").read_bytes()
    # one tampered and one missing file: both named, the first code raised
    _tamper(any_store, "drafters/o/d/job1/checkpoint/config.json", b"{}")
    any_store.delete(uri + "/sub/model.safetensors")
    with pytest.raises(ArtifactError) as e:
        any_store.verify_dir(uri, files)
    assert "config.json" in e.value.message and "model.safetensors" in e.value.message
    assert "2 of 2 files" in e.value.message
    with pytest.raises(ArtifactError) as e:
        any_store.get_dir(uri, tmp_path / "out2", files)
    assert e.value.code == "artifact_corrupt" and e.value.where.endswith("config.json")
    assert not (tmp_path / "out2" / "config.json").exists()  # nothing unverified lands locally


def test_copy_verifies_the_source(any_store):
    s = any_store.put_bytes("jobs/j/ckpt/w.bin", b"weights")
    c = any_store.copy("jobs/j/ckpt/w.bin", "drafters/x/w.bin", s.sha256)
    assert c.sha256 == s.sha256 and any_store.get_bytes(c.uri, c.sha256) == b"weights"
    _tamper(any_store, "jobs/j/ckpt/w.bin", b"weightz")
    with pytest.raises(ArtifactError) as e:
        any_store.copy("jobs/j/ckpt/w.bin", "drafters/y/w.bin", s.sha256)
    assert e.value.code == "artifact_corrupt"
    assert not any_store.exists("drafters/y/w.bin")


@pytest.mark.parametrize("key", ["../escape", "/abs/path", "a/../../b", "", "a\\b"])
def test_keys_cannot_escape_the_store(any_store, key):
    with pytest.raises(ArtifactError) as e:
        any_store.put_bytes(key, b"x")
    assert e.value.code == "invalid_path"


def test_uri_outside_the_store_is_refused(any_store):
    with pytest.raises(ArtifactError) as e:
        any_store.get_bytes("file:///etc/passwd", "0" * 64)
    assert e.value.code == "invalid_path"


def test_list_reports_mtimes(any_store):
    before = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=5)
    any_store.put_bytes("a.txt", b"1")
    any_store.put_bytes("d/b.txt", b"22")
    infos = any_store.list()
    assert [(i.key, i.size) for i in infos] == [("a.txt", 1), ("d/b.txt", 2)]
    assert all(i.mtime is not None and i.mtime >= before for i in infos)
    assert [i.key for i in any_store.list("d")] == ["d/b.txt"]
    any_store.delete("d", recursive=True)
    assert [i.key for i in any_store.list()] == ["a.txt"]


def test_plain_directory_path_and_settings(tmp_path: Path):
    store = ArtifactStore(str(tmp_path / "plain"))
    assert store.root_uri == f"file://{tmp_path / 'plain'}" and store.local
    from service.settings import override_settings

    with override_settings(artifact_uri=f"file://{tmp_path / 'fromsettings'}"):
        s = ArtifactStore.from_settings()
    assert s.put_bytes("x", b"1").uri == f"file://{tmp_path / 'fromsettings'}/x"
