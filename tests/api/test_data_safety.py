"""Operational exposure of the API: no internal storage URI in any error a user sees."""

from __future__ import annotations

from service import jobs as jobs_mod
from service.storage import ArtifactError
from tests.api.conftest import job_body, upload


def test_job_errors_and_events_never_show_store_uris(client, app, org_a, dispatched):
    ds = upload(client, org_a)
    job = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()
    uri = f"{app.state.store.root_uri}/raw/{'a' * 64}"
    exc = ArtifactError("artifact_missing", f"artifact {uri} does not exist", where=uri)
    with app.state.sessionmaker() as s:
        jobs_mod.add_event(s, job["id"], "warning", "message", f"fetching {uri} failed: retrying")
        jobs_mod.fail_job(s, job["id"], exc.code, exc.message, exc.where)
    got = client.get(f"/v1/jobs/{job['id']}", headers=org_a.h()).json()
    assert got["error"] == {"code": "artifact_missing", "message": "a stored file of this resource is missing",
                            "param": None}
    events = client.get(f"/v1/jobs/{job['id']}/events", headers=org_a.h()).json()["data"]
    text = repr(events)
    assert "file://" not in text and "/raw/" not in text, text
    assert any("<stored file>" in e["message"] for e in events)
