"""Artifact-store writes that fail, seen through the API. A stage's failed write fails the job with the
store's stable code, and neither the job's error nor its events show the store's local root (the raw
``NotADirectoryError`` text used to reach the API as ``internal_error``, quoting the absolute path); an
upload the store cannot write answers 503 ``artifact_io`` (it was a 500 ``internal_error``)."""

from __future__ import annotations

from types import SimpleNamespace

from service.db import Job
from service.settings import override_settings
from tests.api.conftest import job_body, upload


def _join(app) -> None:
    for t in list(app.state.pipeline_threads):
        t.join(timeout=10)


def test_a_failed_store_write_shows_no_store_path(client, app, settings, org_a, monkeypatch):
    from workers import tasks

    ds = upload(client, org_a)
    r = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h())
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    _join(app)
    store = app.state.store
    store.put_bytes(f"jobs/{job_id}", b"a file where the job's directory goes")
    key = f"jobs/{job_id}/shards/part-0000.jsonl"

    def validate(ctx):
        ctx.store.put_bytes(key, b"{}\n")
        return {"shards": 1}

    monkeypatch.setattr(tasks, "STAGE_FUNCTIONS", {"validate": validate})
    task = SimpleNamespace(request=SimpleNamespace(id="t-store", retries=0, is_eager=True))
    try:
        with override_settings(settings):
            out = tasks.run_stage(task, "validate", job_id)
    finally:
        for e in tasks._engines.values():
            e.dispose()
        tasks._engines.clear()
    assert out["outcome"] == "failed" and out["code"] == "artifact_io", out

    with app.state.sessionmaker() as s:  # what the worker recorded (before any API redaction)
        err = s.get(Job, job_id).error
    assert err["code"] == "artifact_io" and key in err["message"] and store.root not in err["message"], err

    got = client.get(f"/v1/jobs/{job_id}", headers=org_a.h()).json()
    assert got["status"] == "failed"
    assert got["error"] == {"code": "artifact_io", "message": "the artifact store is unavailable; retry later",
                            "param": None}
    events = client.get(f"/v1/jobs/{job_id}/events", headers=org_a.h()).json()["data"]
    text = repr(got) + repr(events)
    assert store.root not in text and "file://" not in text and "Errno" not in text, text
    assert any(key in e["message"] for e in events)  # the event names the key, relative to the store


def test_an_upload_the_store_cannot_write_is_a_coded_503(client, app, org_a):
    store = app.state.store
    store.put_bytes("raw", b"a file where the raw uploads' directory goes")
    r = client.post("/v1/datasets", headers=org_a.h(), files=[("file", ("t.jsonl", b'{"messages": []}\n'))])
    assert r.status_code == 503 and r.headers.get("retry-after") == "5", r.text
    assert r.json()["error"] == {"code": "artifact_io", "message": "the artifact store is unavailable; retry later",
                                 "param": None}
    assert store.root not in r.text
