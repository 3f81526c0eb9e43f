"""Operational exposure of the API: no internal storage URI in any error a user sees, /metrics only with
the operator's token, decompression bombs stopped early, complete ``Allow`` headers, coded multipart
errors."""

from __future__ import annotations

import io
import time
import zlib

import pytest

from service import jobs as jobs_mod
from service.api.uploads import RATIO_MIN_BYTES, Budget, InspectingReader
from service.storage import ArtifactError
from tests.api.conftest import METRICS_H, job_body, make_settings, upload


def test_job_errors_and_events_never_show_store_uris(client, app, org_a, dispatched):
    ds = upload(client, org_a)
    job = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()
    uri = f"{app.state.store.root_uri}/raw/{'a' * 64}"
    exc = ArtifactError("artifact_missing", f"artifact {uri} does not exist", where=uri)
    with app.state.sessionmaker() as s:
        jobs_mod.add_event(s, job["id"], "warning", "message", f"fetching {uri} failed: retrying")
        jobs_mod.fail_job(s, job["id"], exc.code, exc.message, exc.where)
    got = client.get(f"/v1/jobs/{job['id']}", headers=org_a.h()).json()
    assert got["error"] == {
        "code": "artifact_missing",
        "message": "a stored file of this resource is missing",
        "param": None,
    }
    events = client.get(f"/v1/jobs/{job['id']}/events", headers=org_a.h()).json()["data"]
    text = repr(events)
    assert "file://" not in text and "/raw/" not in text, text
    assert any("<stored file>" in e["message"] for e in events)


def test_metrics_need_the_operator_token(client, org_a, tmp_path, db_url, dispatched):
    assert client.get("/metrics").status_code == 401
    r = client.get("/metrics", headers=org_a.h(admin=True))  # an organization's key is not the token
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    assert r.headers["www-authenticate"] == "Bearer"
    r = client.get("/metrics", headers=METRICS_H)
    assert r.status_code == 200 and "tracedraft_jobs" in r.text
    from fastapi.testclient import TestClient

    from service.api.app import create_app

    app = create_app(make_settings(tmp_path / "off", db_url, metrics_token=""))
    with TestClient(app) as c:  # no token configured: no metrics at all
        assert c.get("/metrics", headers=METRICS_H).status_code == 404
    app.state.engine.dispose()


def _bomb(mb: int) -> bytes:
    """``mb`` MiB of a JSON line padded with spaces (text, so it passes the sniffing), gzip-compressed
    about 1000:1."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = comp.compress(b'{"messages": [{"role": "user", "content": "x"}]}')
    spaces = b" " * (1 << 20)
    return head + b"".join(comp.compress(spaces) for _ in range(mb)) + comp.flush()


def test_a_decompression_bomb_stops_after_a_few_mib():
    bomb = _bomb(200)  # 200 MiB of zeros in ~200 KB
    budget = Budget(2 * 1024**3, max_ratio=200)
    reader = InspectingReader(io.BytesIO(bomb), budget, "bomb.jsonl.gz")
    with pytest.raises(Exception) as e:
        while reader.read(65536):
            pass
    assert getattr(e.value, "code", None) == "decompressed_too_large"
    # Refused after RATIO_MIN_BYTES and at most a few windows more, not after the 2 GiB limit.
    assert budget.used <= RATIO_MIN_BYTES + 8 * (1 << 20)


def test_gzip_bomb_upload_costs_little_api_time(client, org_a):
    bomb = _bomb(1024)  # 1 GiB inflated, ~1 MB on the wire: under every size limit but the ratio
    t0 = time.perf_counter()
    r = client.post("/v1/datasets", content=bomb, headers=org_a.h(**{"Content-Type": "application/gzip"}))
    elapsed = time.perf_counter() - t0
    assert r.status_code == 413 and r.json()["error"]["code"] == "decompressed_too_large", r.text
    # The work done is what was inflated before the refusal: a few MiB, not the 1 GiB (the limit is 2 GiB).
    inflated = int(r.json()["error"]["message"].split("(")[1].split(" bytes")[0])
    assert inflated <= RATIO_MIN_BYTES + 8 * (1 << 20), inflated
    assert elapsed < 5.0, elapsed  # wall time on a loaded 2-core machine, upload and auth included


def test_a_legitimate_compressed_upload_passes_the_ratio_check(client, org_a):
    from tests.api.conftest import make_traces

    data = make_traces(400) * 40  # repetitive agent traces: a high but honest ratio
    gz = zlib.compress(data, 9, wbits=31)
    r = client.post("/v1/datasets", content=gz, headers=org_a.h(**{"Content-Type": "application/gzip"}))
    assert r.status_code == 201, r.text
    assert len(data) / len(gz) > 30  # far above typical traces (5-15x), well under the 200x refusal


@pytest.mark.parametrize(
    "method,path,allowed",
    [
        ("OPTIONS", "/v1/jobs", "GET, POST"),
        ("DELETE", "/v1/jobs", "GET, POST"),
        ("PUT", "/v1/datasets/ds_x", "DELETE, GET"),
        ("PATCH", "/healthz", "GET"),
    ],
)
def test_405_lists_every_allowed_method(client, org_a, method, path, allowed):
    r = client.request(method, path, headers=org_a.h())
    assert r.status_code == 405
    assert r.headers["allow"] == allowed
    assert r.json()["error"]["code"] == "method_not_allowed"


def test_very_long_file_name_gets_a_coded_error(client, org_a):
    line = b'{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]}\n'
    r = client.post("/v1/datasets", headers=org_a.h(), files=[("file", ("a" * 5000 + ".jsonl", line))])
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["code"] == "filename_too_long" and err["param"] == "file" and "5006" in err["message"]
    r = client.post("/v1/datasets", headers=org_a.h(), files=[("file", ("b" * 20000 + ".jsonl", line))])
    assert r.status_code == 400 and r.json()["error"]["code"] == "header_too_large"
