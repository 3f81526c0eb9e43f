"""Drafters (versions, report pages, aliases, promotion by admins), health, readiness and metrics."""

from __future__ import annotations

from pathlib import Path

from service import jobs as jobs_mod
from tests.api.conftest import METRICS_H, job_body, make_settings, register_version, upload


def test_versions_aliases_and_promotion(client, app, org_a, tmp_path):
    register_version(app, org_a, tmp_path, "smol-agent", None, tag="1")
    register_version(app, org_a, tmp_path, "smol-agent", None, tag="2", report={"tau": 3.4})
    drafters = client.get("/v1/drafters", headers=org_a.h()).json()["data"]
    assert [(d["name"], d["latest_version"], d["aliases"]) for d in drafters] == [
        ("smol-agent", 2, {"challenger": 2})]
    versions = client.get("/v1/drafters/smol-agent/versions", headers=org_a.h()).json()["data"]
    assert [(v["version"], v["aliases"], v["report"]) for v in versions] == [(2, ["challenger"], None), (1, [], None)]
    v1 = client.get("/v1/drafters/smol-agent/versions/1", headers=org_a.h()).json()
    assert v1["ref"] == "smol-agent@v1" and v1["report"] == {"tau": 3.1, "baseline_tau": 2.0}
    assert v1["lineage"]["target_model"] == "smollm2-135m-instruct" and set(v1["files"]) == {
        "config.json", "model.safetensors"}
    assert client.get("/v1/drafters/smol-agent/versions/9", headers=org_a.h()).status_code == 404

    # Promotion: admins only.
    r = client.post("/v1/drafters/smol-agent/aliases/champion", json={"version": 2, "reason": "wins"},
                    headers=org_a.h())
    assert r.status_code == 403 and r.json()["error"]["code"] == "admin_required"
    r = client.post("/v1/drafters/smol-agent/aliases/champion", json={"version": 1, "reason": "first"},
                    headers=org_a.h(admin=True))
    assert r.json() == {"drafter": "smol-agent", "alias": "champion", "from_version": None, "to_version": 1,
                        "moved": True, "overridden": [], "dry_run": False}
    r = client.post("/v1/drafters/smol-agent/aliases/champion", json={"version": 2, "reason": "gate passed"},
                    headers=org_a.h(admin=True))
    assert r.status_code == 200 and r.json()["from_version"] == 1
    aliases = client.get("/v1/drafters/smol-agent/aliases", headers=org_a.h()).json()
    champ = next(a for a in aliases["data"] if a["alias"] == "champion")
    assert champ["version"] == 2
    assert [(h["from_version"], h["to_version"], h["reason"]) for h in champ["history"]] == [
        (None, 1, "first"), (1, 2, "gate passed")]
    assert champ["history"][0]["actor"] == "key:" + org_a.admin[:12]
    assert len(aliases["history"]) == 4  # two challenger moves at registration + two promotions

    # Registry refusals map to 409 / 404.
    register_version(app, org_a, tmp_path, "smol-agent", None, tag="3", lineage={"tokenizer_sha256": "x" * 64})
    r = client.post("/v1/drafters/smol-agent/aliases/champion", json={"version": 3}, headers=org_a.h(admin=True))
    assert r.status_code == 409 and r.json()["error"]["code"] == "incompatible_version"
    r = client.post("/v1/drafters/smol-agent/aliases/champion", json={"version": 3, "force": True},
                    headers=org_a.h(admin=True))
    assert r.status_code == 400 and r.json()["error"]["code"] == "reason_required"
    r = client.post("/v1/drafters/smol-agent/aliases/champion", json={"version": 3, "force": True,
                                                                      "reason": "new tokenizer"},
                    headers=org_a.h(admin=True))
    assert r.status_code == 200 and r.json()["overridden"]
    r = client.post("/v1/drafters/smol-agent/aliases/champion", json={"version": 42, "reason": "x"},
                    headers=org_a.h(admin=True))
    assert r.status_code == 404
    # A tampered checkpoint is refused (checksums re-verified on every move).
    store = app.state.store
    ckpt = next(a for a in store.list() if a.key.endswith("model.safetensors"))
    Path(store.root, ckpt.key).write_bytes(b"tampered")
    r = client.post("/v1/drafters/smol-agent/aliases/prod", json={"version": 1, "reason": "x"},
                    headers=org_a.h(admin=True))
    if r.status_code == 200:  # the tampered file belonged to another version
        r = client.post("/v1/drafters/smol-agent/aliases/prod", json={"version": 2, "reason": "x"},
                        headers=org_a.h(admin=True))
    assert r.status_code == 409 and r.json()["error"]["code"] == "checksum_mismatch"
    assert "file://" not in r.text or str(store.root) not in r.text


def test_report_html_stored_verified_or_rendered(client, app, org_a, tmp_path):
    report_dir = tmp_path / "report"
    report_dir.mkdir()
    (report_dir / "report.html").write_text("<html><body><h1>tau 3.10</h1></body></html>")
    register_version(app, org_a, tmp_path, "smol-agent", None, tag="1", report_dir=report_dir)
    register_version(app, org_a, tmp_path, "smol-agent", None, tag="2", report={"tau": "<script>x</script>"})
    r = client.get("/v1/drafters/smol-agent/versions/1/report.html", headers=org_a.h())
    assert r.status_code == 200 and "tau 3.10" in r.text
    assert r.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in r.headers["content-security-policy"]
    r = client.get("/v1/drafters/smol-agent/versions/2/report.html", headers=org_a.h())
    assert r.status_code == 200 and "smol-agent@v2" in r.text
    assert "<script>" not in r.text and "&lt;script&gt;" in r.text  # escaped
    # The stored page is hash-verified.
    page = next(a for a in app.state.store.list() if a.key.endswith("report.html"))
    Path(app.state.store.root, page.key).write_text("<html>evil</html>")
    r = client.get("/v1/drafters/smol-agent/versions/1/report.html", headers=org_a.h())
    assert r.status_code == 409 and r.json()["error"]["code"] == "artifact_corrupt"
    assert "evil" not in r.text


def test_health_ready_metrics(client, app, org_a):
    assert client.get("/healthz").json() == {"status": "ok"}
    r = client.get("/readyz")
    assert r.status_code == 200 and r.json() == {"status": "ok", "checks": {"database": "ok"}}
    ds = upload(client, org_a)
    job = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()
    client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h())
    with app.state.sessionmaker() as s:
        jobs_mod.start_job(s, job["id"], stage="validating")
        jobs_mod.add_event(s, job["id"], "info", "stage", "stage validating done",
                           {"stage": "validating", "run": "finished", "attempt": 1})
    text = client.get("/metrics", headers=METRICS_H).text
    assert 'tracedraft_jobs{status="queued"} 1.0' in text
    assert 'tracedraft_jobs{status="running"} 1.0' in text
    assert 'tracedraft_jobs{status="failed"} 0.0' in text
    assert 'tracedraft_stage_duration_seconds_count{stage="validating"} 1.0' in text
    assert f"tracedraft_upload_bytes_total {float(ds['size_bytes'])}" in text
    assert "tracedraft_queue_depth" not in text  # inline mode: no broker


def test_readiness_fails_without_database_or_broker(tmp_path, dispatched):
    from fastapi.testclient import TestClient

    from service.api.app import create_app

    settings = make_settings(tmp_path, "postgresql+psycopg://nobody@127.0.0.1:1/none", pipeline="celery",
                             broker_url="redis://127.0.0.1:1/0")
    app = create_app(settings)
    with TestClient(app) as client:
        r = client.get("/readyz")
        assert r.status_code == 503 and r.headers["retry-after"] == "5"
        err = r.json()["error"]
        assert err["code"] == "unavailable" and "database" in err["message"] and "broker" in err["message"]
        assert client.get("/healthz").status_code == 200
        assert client.get("/metrics", headers=METRICS_H).status_code == 200  # a scrape survives a dead database


def test_readiness_and_queue_depth_with_celery(tmp_path, db_url, dispatched):
    import pytest
    import redis
    from fastapi.testclient import TestClient

    from service.api.app import create_app

    try:
        redis.Redis.from_url("redis://127.0.0.1:6379/14", socket_timeout=1).ping()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"Redis not reachable: {e}")
    app = create_app(make_settings(tmp_path, db_url, pipeline="celery", broker_url="redis://127.0.0.1:6379/14"))
    with TestClient(app) as client:
        r = client.get("/readyz")
        assert r.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok"}}
        assert 'tracedraft_queue_depth{queue="gpu"}' in client.get("/metrics", headers=METRICS_H).text
    app.state.engine.dispose()


def test_app_module_attribute_and_openapi(tmp_path, monkeypatch):
    import importlib

    monkeypatch.setenv("TRACEDRAFT_HOME", str(tmp_path))
    from service.settings import reload_settings

    reload_settings()
    try:
        mod = importlib.import_module("service.api.app")
        app = mod.app
        assert app is mod.app  # built once, lazily
        assert app.state.settings.home == tmp_path
        spec = app.openapi()
        assert spec["paths"]["/v1/jobs"]["post"]["responses"]["429"]["headers"]["Retry-After"]
        assert set(spec["paths"]["/v1/datasets"]["post"]["requestBody"]["content"]) >= {
            "multipart/form-data", "application/octet-stream", "application/gzip", "application/zstd"}
        app.state.engine.dispose()
    finally:
        monkeypatch.setattr(mod, "_app", None)
        monkeypatch.delenv("TRACEDRAFT_HOME")
        reload_settings()
