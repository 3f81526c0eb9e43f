"""Backend failures of the artifact store: every write, commit, delete, list, copy and upload failure is an
ArtifactError ``artifact_io`` that names the store-relative key, never the local root or the bucket; and
``redact_uris`` removes a store's root path and bucket prefix from texts that quote them without a scheme."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from service.redaction import public_error, redact_uris
from service.storage import ArtifactError, ArtifactStore


def _assert_no_root(e: ArtifactError, store: ArtifactStore, *roots: str) -> None:
    for root in (store.root, *roots):
        assert root not in e.message, e.message
        assert root not in (redact_uris(str(e)) or ""), str(e)


@pytest.fixture
def local(tmp_path: Path) -> ArtifactStore:
    return ArtifactStore(f"file://{tmp_path / 'artifacts'}")


def test_a_write_under_a_file_is_a_coded_error_naming_the_key(local):
    local.put_bytes("jobs/j1", b"a file where the job's directory goes")
    with pytest.raises(ArtifactError) as e:
        local.put_bytes("jobs/j1/shards/part-0000.jsonl", b"{}\n")
    assert e.value.code == "artifact_io"
    assert "jobs/j1/shards/part-0000.jsonl" in e.value.message and "NotADirectoryError" in e.value.message
    assert not getattr(e.value, "transient", False)  # retrying will not make the file a directory
    _assert_no_root(e.value, local)
    assert e.value.where == local.uri("jobs/j1/shards/part-0000.jsonl")  # the log keeps the full URI
    assert [i.key for i in local.list()] == ["jobs/j1"]  # no temporary left behind


def test_put_dir_delete_and_copy_failures_are_coded(local, tmp_path):
    src = tmp_path / "ckpt"
    src.mkdir()
    (src / "config.json").write_text("{}")
    local.put_bytes("drafters/o/n/j1", b"blocks the prefix")
    with pytest.raises(ArtifactError) as e:
        local.put_dir("drafters/o/n/j1/files", src)
    assert e.value.code == "artifact_io" and "drafters/o/n/j1/files/config.json" in e.value.message
    _assert_no_root(e.value, local)

    with pytest.raises(ArtifactError) as e:
        local.put_dir("drafters/o/n/j2", tmp_path / "missing")
    assert e.value.code == "artifact_missing" and str(tmp_path) not in e.value.message

    with pytest.raises(ArtifactError) as e:
        local.delete("drafters/o/n/j1/x")  # under a file
    assert e.value.code == "artifact_io" and "drafters/o/n/j1/x" in e.value.message
    _assert_no_root(e.value, local)

    stored = local.put_bytes("a/src.bin", b"payload")
    with pytest.raises(ArtifactError) as e:
        local.copy("a/src.bin", "drafters/o/n/j1/copy.bin", stored.sha256)
    assert e.value.code == "artifact_io" and "drafters/o/n/j1/copy.bin" in e.value.message
    _assert_no_root(e.value, local)


def test_the_body_of_open_write_keeps_its_own_exceptions(local):
    with pytest.raises(ValueError, match="not mine"), local.open_write("a/b.bin") as w:
        w.write(b"x")
        raise ValueError("not mine")
    with pytest.raises(ArtifactError) as e, local.open_write("a/c.bin", max_bytes=2) as w:
        w.write(b"xyz")
    assert e.value.code == "payload_too_large"
    assert local.list() == []


class _Failing:
    """Wraps an fsspec filesystem; the named methods raise ``exc(root/key)`` like s3fs does (``bucket/key``,
    no scheme)."""

    def __init__(self, fs, fail: set[str], exc: type[Exception]):
        self._fs, self._fail, self._exc = fs, fail, exc

    def __getattr__(self, name):
        attr = getattr(self._fs, name)
        if name not in self._fail:
            return attr

        def failing(path, *a, **k):
            raise self._exc(f"Access Denied: {path.lstrip('/')}")

        return failing


@pytest.fixture
def s3_like():
    """A store on an s3://bucket/prefix root whose backend is in memory (no network)."""
    bucket = f"td-bucket-{uuid.uuid4().hex[:8]}"
    store = ArtifactStore(f"s3://{bucket}/tenant", {"anon": True})
    assert store.root == f"{bucket}/tenant"
    mem = ArtifactStore(f"memory://{bucket}/tenant")
    store.fs, store.root = mem.fs, mem.root  # the root keeps the bucket: the paths s3fs errors quote
    yield store, bucket
    if mem.fs.exists(mem.root):
        mem.fs.rm(mem.root, recursive=True)


@pytest.mark.parametrize("method", ["open", "mv", "find", "rm"])
def test_object_store_errors_name_the_key_not_the_bucket(s3_like, method):
    store, bucket = s3_like
    store.put_bytes("jobs/j1/old.bin", b"old")
    store.fs = _Failing(store.fs, {method}, PermissionError)
    with pytest.raises(ArtifactError) as e:
        if method in ("open", "mv"):
            store.put_bytes("jobs/j1/report.json", b"{}")
        elif method == "find":
            store.list("jobs/j1")
        else:
            store.delete("jobs/j1/old.bin")
    assert e.value.code == "artifact_io" and "artifact jobs/j1" in e.value.message, e.value.message
    assert "PermissionError: Access Denied" in e.value.message
    _assert_no_root(e.value, store, bucket)


def test_connection_failures_stay_retryable(s3_like):
    store, _ = s3_like
    store.fs = _Failing(store.fs, {"open"}, ConnectionError)
    with pytest.raises(ArtifactError) as e:
        store.put_bytes("jobs/j1/report.json", b"{}")
    assert e.value.code == "artifact_io" and e.value.transient  # workers.tasks.is_transient retries it


def test_redaction_removes_local_roots_and_bucket_prefixes(local, s3_like):
    _, bucket = s3_like
    root = local.root
    text = (f"NotADirectoryError: [Errno 20] Not a directory: '{root}/jobs/j1/x'; "
            f"s3fs: Access Denied {bucket}/tenant/raw/abc; at {root}")
    out = redact_uris(text)
    assert root not in out and bucket not in out, out
    assert out.count("<stored file>") == 3
    # Neighbours that are not the store stay: another directory, a longer bucket name, a relative key.
    kept = f"{root}2/x, my{bucket}/k, /srv{root}/y, jobs/j1/x"
    assert redact_uris(kept) == kept
    err = public_error({"code": "internal_error", "message": f"boom at {root}/a", "param": f"{root}/a"})
    assert err == {"code": "internal_error", "message": "boom at <stored file>", "param": None}
