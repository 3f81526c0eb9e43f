"""Dataset uploads: multipart and raw bodies, gzip/zstd, inline validation, limits while streaming,
sniffing, zip bombs, pagination and deletion."""

from __future__ import annotations

import gzip
import io
import zlib

import pytest
import zstandard

from service.api.errors import ApiError
from service.api.uploads import Budget, InspectingReader, binary_reason
from tests.api.conftest import METRICS_H, job_body, make_settings, make_traces, upload


def _store_files(app) -> list[str]:
    return [a.key for a in app.state.store.list()]


def test_multipart_upload_is_validated_inline(client, org_a, app):
    data = make_traces(40)
    r = client.post("/v1/datasets", headers=org_a.h(),
                    files=[("file", ("../../etc/passwd\x00.jsonl", data))], data={"name": "agent runs"})
    assert r.status_code == 201, r.text
    ds = r.json()
    assert ds["status"] == "ready"
    assert ds["name"] == "agent runs"
    shown = ds["files"][0]["name"]  # display only, never a path
    assert shown.startswith("passwd") and "/" not in shown and "\x00" not in shown
    assert ds["files"][0]["size"] == len(data) and ds["size_bytes"] == len(data)
    assert ds["format"] == "openai_chat"
    assert ds["counts"]["conversations"] == 40
    assert ds["counts"]["train_conversations"] + ds["counts"]["heldout_conversations"] == 40
    assert ds["report"]["formats"] == {"openai_chat": 1}
    # The raw bytes are stored content-addressed, plus the canonical splits.
    keys = _store_files(app)
    import hashlib

    assert f"raw/{hashlib.sha256(data).hexdigest()}" in keys
    assert f"datasets/{ds['id']}/canonical-train.jsonl" in keys
    rep = client.get(f"/v1/datasets/{ds['id']}/report", headers=org_a.h()).json()
    assert rep["status"] == "ready" and rep["report"]["counts"]["files"] == 1


def test_several_files_gzip_zstd_and_raw_bodies(client, org_a):
    a, b = make_traces(20, tag="a"), make_traces(20, tag="b")
    r = client.post("/v1/datasets", headers=org_a.h(),
                    files=[("file", ("a.jsonl.gz", gzip.compress(a))),
                           ("file", ("b.jsonl.zst", zstandard.ZstdCompressor().compress(b)))])
    assert r.status_code == 201, r.text
    ds = r.json()
    assert [f["compression"] for f in ds["files"]] == ["gzip", "zstd"]
    assert [f["decompressed_size"] for f in ds["files"]] == [len(a), len(b)]
    assert ds["compression"] == "gzip,zstd"
    assert ds["status"] == "ready" and ds["counts"]["conversations"] == 40

    raw = client.post("/v1/datasets?filename=runs.jsonl&format=openai_chat", content=make_traces(30, tag="r"),
                      headers=org_a.h(**{"Content-Type": "application/jsonl"}))
    assert raw.status_code == 201, raw.text
    assert raw.json()["files"][0]["name"] == "runs.jsonl"
    assert raw.json()["status"] == "ready"
    gz = client.post("/v1/datasets", content=gzip.compress(make_traces(30, tag="g")),
                     headers=org_a.h(**{"Content-Type": "application/gzip"}))
    assert gz.status_code == 201 and gz.json()["compression"] == "gzip"


def test_unparseable_upload_is_kept_and_fails_validation(client, org_a, app):
    r = client.post("/v1/datasets", headers=org_a.h(), files=[("file", ("notes.txt", b"just some notes\n"))])
    assert r.status_code == 201, r.text
    ds = r.json()
    assert ds["status"] == "failed"
    assert ds["error"]["code"] == "no_valid_conversations"
    assert "notes.txt" in ds["error"]["message"] and "unknown_format" in ds["error"]["message"]
    assert ds["report"]["errors"], ds["report"]
    assert all("validate-" not in str(e) for e in ds["report"]["errors"])  # no server temp paths
    assert any(k.startswith("raw/") for k in _store_files(app))  # nothing the user sent is lost


def test_large_upload_stays_validating(tmp_path, db_url, dispatched):
    from fastapi.testclient import TestClient

    from service.api.app import create_app
    from tests.api.conftest import _tenant

    app = create_app(make_settings(tmp_path, db_url, inline_validation_max_bytes=100))
    with TestClient(app) as client, app.state.sessionmaker() as s:
        tenant = _tenant(s, "big")
        ds = upload(client, tenant)
        assert ds["status"] == "validating" and ds["report"] is None
        app.state.engine.dispose()


def test_oversized_upload_is_refused_while_streaming(tmp_path, db_url, dispatched):
    from fastapi.testclient import TestClient

    from service.api.app import create_app
    from tests.api.conftest import _tenant

    app = create_app(make_settings(tmp_path, db_url, max_upload_bytes=10_000))
    with TestClient(app) as client, app.state.sessionmaker() as s:
        tenant = _tenant(s, "small")
        big = make_traces(200)
        assert len(big) > 10_000

        read = []

        async def chunks():
            for i in range(0, len(big), 4000):
                read.append(i)
                yield big[i:i + 4000]

        async def send_streamed():
            import httpx

            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as ac:
                return await ac.post("/v1/datasets", content=chunks(),
                                     headers=tenant.h(**{"Content-Type": "application/octet-stream"}))

        import anyio

        r = anyio.run(send_streamed)
        assert r.status_code == 413, r.text
        assert r.json()["error"] == {"code": "payload_too_large", "param": "file",
                                     "message": "the upload exceeds the limit of 10000 bytes"}
        assert len(read) <= 4, "the server kept reading past the limit"  # 3 chunks reach 12000 > 10000
        # A declared Content-Length over the limit is refused before reading anything.
        r = client.post("/v1/datasets", content=big, headers=tenant.h(**{"Content-Type": "application/jsonl"}))
        assert r.status_code == 413
        r = client.post("/v1/datasets", headers=tenant.h(), files=[("file", ("big.jsonl", big))])
        assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"
        assert app.state.store.list() == []  # nothing left behind, not even a temporary
        listed = client.get("/v1/datasets", headers=tenant.h()).json()
        assert listed["data"] == []
        metrics = client.get("/metrics", headers=METRICS_H).text
        assert 'tracedraft_uploads_rejected_total{code="payload_too_large"} 3.0' in metrics
        app.state.engine.dispose()


def test_zip_bomb_is_refused(tmp_path, db_url, dispatched):
    from fastapi.testclient import TestClient

    from service.api.app import create_app
    from tests.api.conftest import _tenant

    app = create_app(make_settings(tmp_path, db_url, max_upload_bytes=1_000_000))
    with TestClient(app) as client, app.state.sessionmaker() as s:
        tenant = _tenant(s, "bomb")
        # 200 MB of the same JSON line compresses to ~200 KB: under the wire limit, far over it inflated.
        line = b'{"messages": [{"role": "user", "content": "' + b"a" * 1000 + b'"}]}\n'
        comp = zlib.compressobj(9, zlib.DEFLATED, 31)
        bomb = b"".join(comp.compress(line * 1000) for _ in range(200)) + comp.flush()
        assert len(bomb) < 1_000_000
        for ctype, body in (("application/gzip", bomb),
                            ("application/zstd", zstandard.ZstdCompressor(level=3).compress(line * 200_000))):
            r = client.post("/v1/datasets", content=body, headers=tenant.h(**{"Content-Type": ctype}))
            assert r.status_code == 413, (ctype, r.text)
            assert r.json()["error"]["code"] == "decompressed_too_large"
        assert app.state.store.list() == []
        app.state.engine.dispose()


@pytest.mark.parametrize("payload,what", [
    (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "PNG"),
    (b"PK\x03\x04" + b"\x00" * 100, "zip"),
    (bytes(range(256)) * 40, "NUL"),
    (gzip.compress(bytes(range(256)) * 40), "NUL"),
])
def test_binary_content_is_refused(client, org_a, app, payload, what):
    r = client.post("/v1/datasets", headers=org_a.h(), files=[("file", ("x.jsonl", payload))])
    assert r.status_code == 415, r.text
    err = r.json()["error"]
    assert err["code"] == "unsupported_media_type" and what in err["message"]
    assert app.state.store.list() == []


def test_wrong_content_type_and_bad_multipart(client, org_a):
    r = client.post("/v1/datasets", content=b"{}", headers=org_a.h(**{"Content-Type": "image/png"}))
    assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media_type"
    assert r.json()["error"]["param"] == "Content-Type"
    r = client.post("/v1/datasets", content=b"{}", headers=org_a.h(**{"Content-Type": "multipart/form-data"}))
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_multipart"
    r = client.post("/v1/datasets", headers=org_a.h(), files=[("data", ("x.jsonl", b"{}"))])
    assert r.status_code == 422 and r.json()["error"] == {
        "code": "unknown_field", "message": "unknown form field 'data'", "param": "data"}
    r = client.post("/v1/datasets", headers=org_a.h(), data={"name": "x"},
                    files=[("file", ("x.jsonl", b""))])
    assert r.status_code == 400 and r.json()["error"]["code"] == "empty_upload"
    r = client.post("/v1/datasets?format=nope", content=b"{}", headers=org_a.h(**{"Content-Type": "application/jsonl"}))
    assert r.status_code == 422 and r.json()["error"]["param"] == "format"


def test_corrupt_gzip_is_refused(client, org_a):
    bad = gzip.compress(make_traces(5))
    bad = bad[:30] + bytes(b ^ 0xFF for b in bad[30:60]) + bad[60:]
    r = client.post("/v1/datasets", content=bad, headers=org_a.h(**{"Content-Type": "application/gzip"}))
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_compression"


def test_inspector_counts_multi_member_gzip_across_chunk_boundaries():
    parts = [make_traces(3, tag=str(i)) for i in range(3)]
    blob = b"".join(gzip.compress(p) for p in parts)
    stream = io.BytesIO(blob)

    class OneByte:
        def read(self, n=-1):
            return stream.read(1)  # worst case: every magic number split

    insp = InspectingReader(OneByte(), Budget(10**9), "x")
    while insp.read(1):
        pass
    assert insp.compression == "gzip" and insp.decompressed_size == sum(map(len, parts))
    with pytest.raises(ApiError) as e:
        r = InspectingReader(io.BytesIO(blob), Budget(100), "x")
        while r.read(65536):
            pass
    assert e.value.code == "decompressed_too_large" and e.value.status == 413


def test_binary_reason():
    assert binary_reason(b'{"a": "caf\xc3\xa9"}\n', True) is None
    assert binary_reason(b"\xef\xbb\xbf[1]", True) is None
    assert binary_reason(b"abc\xc3", False) is None  # a character cut at the end of the sniffed head
    assert "NUL" in binary_reason(b"abc\x00def", True)
    assert "UTF-8" in binary_reason(bytes(range(128, 256)) * 4, True)


def test_list_pagination_get_and_delete(client, org_a, dispatched):
    ids = [upload(client, org_a, make_traces(12, tag=str(i)))["id"] for i in range(5)]
    seen, cursor = [], None
    while True:
        page = client.get("/v1/datasets", params={"limit": 2, **({"after": cursor} if cursor else {})},
                          headers=org_a.h()).json()
        assert all(d["report"] is None for d in page["data"])  # reports only on the item routes
        seen += [d["id"] for d in page["data"]]
        if not page["has_more"]:
            assert page["next_cursor"] is None
            break
        cursor = page["next_cursor"]
    assert seen == ids[::-1]  # newest first, each once
    one = client.get(f"/v1/datasets/{ids[0]}", headers=org_a.h()).json()
    assert one["id"] == ids[0] and one["report"] is not None

    job = client.post("/v1/jobs", json=job_body(ids[0]), headers=org_a.h()).json()
    r = client.delete(f"/v1/datasets/{ids[0]}", headers=org_a.h())
    assert r.status_code == 409 and r.json()["error"]["code"] == "dataset_in_use"
    assert client.post(f"/v1/jobs/{job['id']}/cancel", headers=org_a.h()).status_code == 200
    r = client.delete(f"/v1/datasets/{ids[0]}", headers=org_a.h())
    assert r.status_code == 200 and r.json() == {"id": ids[0], "object": "dataset", "deleted": True}
    assert client.get(f"/v1/datasets/{ids[0]}", headers=org_a.h()).status_code == 404


def test_report_names_files_by_their_upload_names_only(client, org_a):
    """The validation report speaks of the user's file names, in its keys too (they were work-directory
    paths), and a file repeating another's conversations is "duplicate" of that file by its name."""
    data = make_traces(20, tag="d")
    r = client.post("/v1/datasets", headers=org_a.h(),
                    files=[("file", ("first.jsonl", data)), ("file", ("again.jsonl", data))])
    assert r.status_code == 201, r.text
    files = r.json()["report"]["files"]
    assert set(files) == {"first.jsonl", "again.jsonl"}
    assert (files["first.jsonl"]["status"], files["first.jsonl"]["conversations"]) == ("ok", 20)
    assert files["again.jsonl"]["status"] == "duplicate"
    assert files["again.jsonl"]["duplicate_of"] == ["first.jsonl"]
    same = client.post("/v1/datasets", headers=org_a.h(),
                       files=[("file", ("runs.jsonl", make_traces(20, tag="e"))),
                              ("file", ("runs.jsonl", make_traces(20, tag="f")))])
    assert set(same.json()["report"]["files"]) == {"runs.jsonl", "runs.jsonl #2"}


def test_a_refused_empty_upload_writes_nothing_to_the_store(client, org_a, app):
    for files in ([("file", ("x.jsonl", b""))], [("file", ("a.jsonl", b"")), ("file", ("b.jsonl", b""))]):
        r = client.post("/v1/datasets", headers=org_a.h(), files=files)
        assert r.status_code == 400 and r.json()["error"]["code"] == "empty_upload"
    r = client.post("/v1/datasets", content=b"", headers=org_a.h(**{"Content-Type": "application/jsonl"}))
    assert r.status_code == 400 and r.json()["error"]["code"] == "empty_upload"
    assert app.state.store.list() == []
    assert client.get("/v1/datasets", headers=org_a.h()).json()["data"] == []
    # an empty file beside one with bytes is kept, in its place: nothing the user sent is lost
    r = client.post("/v1/datasets", headers=org_a.h(),
                    files=[("file", ("empty.jsonl", b"")), ("file", ("t.jsonl", make_traces(2)))])
    assert r.status_code == 201, r.text
    names = [(f["name"], f["size"]) for f in r.json()["files"]]
    assert names == [("empty.jsonl", 0), ("t.jsonl", len(make_traces(2)))]
