"""Jobs: creation (spec, dispatch, idempotency, rate limit), listing with filters, cancel, events (paged
and server-sent), checkpoints."""

from __future__ import annotations

import json

from service import jobs as jobs_mod
from tests.api.conftest import job_body, make_settings, upload


def _join(app) -> None:
    for t in list(app.state.pipeline_threads):
        t.join(5)


def test_create_job_stores_spec_and_dispatches_validate(client, app, org_a, dispatched):
    ds = upload(client, org_a)
    body = job_body(ds["id"], recipe={"lr": 3e-4, "block_size": 7}, evaluation={"engine": "hf"},
                    promotion={"min_gain": 0.05}, base_drafter=None, drafter_name="smol-agent")
    r = client.post("/v1/jobs", json=body, headers=org_a.h())
    assert r.status_code == 201, r.text
    job = r.json()
    assert job["status"] == "queued" and job["stage"] == "validating" and job["dataset_id"] == ds["id"]
    assert job["metadata"] == {"team": "search"}
    # "auto" values are left out of the stored spec (the worker's defaults apply); set values are kept.
    assert job["spec"]["recipe"] == {"lr": 3e-4, "block_size": 7}
    assert job["spec"]["target"] == {"model": "smollm2-135m-instruct", "template_kwargs": {}, "trust_remote_code": False}
    assert job["spec"]["evaluation"] == {"engine": "hf", "temperature": 0.0, "seed": 0, "suffix_cap": 24,
                                         "suffix_max_sequences": 10000, "suffix_max_tokens": 5_000_000,
                                         "draft_vocab_size": 8192}
    assert job["spec"]["promotion"]["min_gain"] == 0.05 and job["spec"]["drafter_name"] == "smol-agent"
    _join(app)
    assert dispatched.calls == [("validate", job["id"])]
    got = client.get(f"/v1/jobs/{job['id']}", headers=org_a.h()).json()
    assert got["id"] == job["id"] and got["spec"] == job["spec"]


def test_proposer_settings_out_of_range_are_refused_naming_the_field(client, app, org_a, dispatched):
    ds = upload(client, org_a)
    for field, value in (("suffix_cap", 0), ("suffix_cap", 1000), ("cascade_threshold", -1),
                         ("suffix_max_tokens", 0), ("suffix_max_sequences", -5),
                         ("cascade_threshold", "often"), ("draft_vocab_size", 0)):
        r = client.post("/v1/jobs", json=job_body(ds["id"], evaluation={field: value}), headers=org_a.h())
        assert r.status_code == 422, (field, value, r.text)
        err = r.json()["error"]
        assert err["code"] == "invalid_value" and field in err["param"], err
    ok = client.post("/v1/jobs", json=job_body(ds["id"], evaluation={"cascade_threshold": 1.5}), headers=org_a.h())
    assert ok.status_code == 201 and ok.json()["spec"]["evaluation"]["cascade_threshold"] == 1.5
    _join(app)


def test_idempotency_key(client, app, org_a, org_b, dispatched):
    ds = upload(client, org_a)
    h = org_a.h(**{"Idempotency-Key": "retry-1"})
    first = client.post("/v1/jobs", json=job_body(ds["id"]), headers=h)
    again = client.post("/v1/jobs", json=job_body(ds["id"]), headers=h)
    assert first.status_code == 201 and again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    other = client.post("/v1/jobs", json=job_body(ds["id"], recipe={"max_steps": 11}), headers=h)
    assert other.status_code == 409
    assert other.json()["error"]["code"] == "idempotency_conflict"
    assert other.json()["error"]["param"] == "Idempotency-Key"
    _join(app)
    assert len(dispatched.calls) == 1  # a replay dispatches nothing
    # Keys are per organization: B's same key is independent (and A's dataset is invisible to B).
    r = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_b.h(**{"Idempotency-Key": "retry-1"}))
    assert r.status_code == 404 and r.json()["error"]["param"] == "dataset_id"


def test_rate_limit(tmp_path, db_url, dispatched):
    from fastapi.testclient import TestClient

    from service.api.app import create_app
    from tests.api.conftest import _tenant

    app = create_app(make_settings(tmp_path, db_url, job_rate_limit_per_minute=3))
    with TestClient(app) as client, app.state.sessionmaker() as s:
        t = _tenant(s, "busy")
        ds = upload(client, t)
        codes = [client.post("/v1/jobs", json=job_body(ds["id"]), headers=t.h()).status_code for _ in range(3)]
        assert codes == [201, 201, 201]
        r = client.post("/v1/jobs", json=job_body(ds["id"]), headers=t.h())
        assert r.status_code == 429
        assert r.json()["error"]["code"] == "rate_limited"
        assert 1 <= int(r.headers["Retry-After"]) <= 60
        # Per key: the admin key of the same organization still has its budget.
        assert client.post("/v1/jobs", json=job_body(ds["id"]), headers=t.h(admin=True)).status_code == 201
        app.state.engine.dispose()


def test_redis_rate_limiter_sliding_window():
    import uuid

    import pytest

    from service.api.ratelimit import RedisRateLimiter
    from tests.service._databases import pg_unavailable_reason  # noqa: F401 - same skip style

    lim = RedisRateLimiter("redis://127.0.0.1:6379/15", limit=2, window_s=60)
    try:
        lim._redis.ping()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"Redis not reachable: {e}")
    key = uuid.uuid4().hex
    assert lim.check("t", key) is None and lim.check("t", key) is None
    wait = lim.check("t", key)
    assert wait is not None and 59 <= wait <= 60
    assert lim.check("t", "other-" + key) is None
    # Redis down: falls back to the in-process window instead of failing.
    down = RedisRateLimiter("redis://127.0.0.1:1/0", limit=1, window_s=60)
    assert down.check("t", key) is None and down.check("t", key) is not None


def test_memory_rate_limiter_window_slides():
    from service.api.ratelimit import MemoryRateLimiter

    now = [0.0]
    lim = MemoryRateLimiter(2, 60, clock=lambda: now[0])
    assert lim.check("b", "k") is None
    now[0] = 30
    assert lim.check("b", "k") is None
    assert lim.check("b", "k") == 30  # the first call leaves the window at t=60
    now[0] = 60.5
    assert lim.check("b", "k") is None


def test_list_filters_and_pagination(client, org_a):
    ds = upload(client, org_a)
    made = []
    for i in range(5):
        made.append(client.post("/v1/jobs", json=job_body(ds["id"], metadata={"team": "search" if i % 2 else "ads",
                                                                              "run": str(i)}),
                                headers=org_a.h()).json()["id"])
    page1 = client.get("/v1/jobs?limit=3", headers=org_a.h()).json()
    page2 = client.get(f"/v1/jobs?limit=3&after={page1['next_cursor']}", headers=org_a.h()).json()
    assert [j["id"] for j in page1["data"] + page2["data"]] == made[::-1]
    assert page1["has_more"] and not page2["has_more"]
    search = client.get("/v1/jobs", params={"metadata.team": "search"}, headers=org_a.h()).json()
    assert {j["id"] for j in search["data"]} == {made[1], made[3]}
    both = client.get("/v1/jobs", params={"metadata.team": "search", "metadata.run": "3"}, headers=org_a.h()).json()
    assert [j["id"] for j in both["data"]] == [made[3]]
    client.post(f"/v1/jobs/{made[0]}/cancel", headers=org_a.h())
    cancelled = client.get("/v1/jobs?status=cancelled", headers=org_a.h()).json()
    assert [j["id"] for j in cancelled["data"]] == [made[0]]
    bad = client.get("/v1/jobs?metadata.a%20b=1", headers=org_a.h())
    assert bad.status_code == 422


def test_cancel(client, app, org_a):
    ds = upload(client, org_a)
    job = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()
    r = client.post(f"/v1/jobs/{job['id']}/cancel", headers=org_a.h())
    assert r.status_code == 200 and r.json()["status"] == "cancelled" and r.json()["cancel_requested"]
    assert client.post(f"/v1/jobs/{job['id']}/cancel", headers=org_a.h()).status_code == 200  # idempotent
    # A finished job cannot be cancelled.
    done = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()
    with app.state.sessionmaker() as s:
        jobs_mod.start_job(s, done["id"])
        jobs_mod.succeed_job(s, done["id"])
    r = client.post(f"/v1/jobs/{done['id']}/cancel", headers=org_a.h())
    assert r.status_code == 409 and r.json()["error"]["code"] == "job_finished"
    # A running job gets the flag; the worker stops it at its next step.
    run = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()
    with app.state.sessionmaker() as s:
        jobs_mod.start_job(s, run["id"])
    r = client.post(f"/v1/jobs/{run['id']}/cancel", headers=org_a.h()).json()
    assert r["status"] == "running" and r["cancel_requested"] is True


def test_resume_a_failed_or_cancelled_job(client, app, org_a, org_b, dispatched):
    """POST /v1/jobs/{id}/resume queues a failed job again at its stage and dispatches that stage; a running,
    queued or succeeded job is refused with a code, another organization's job is not found."""
    ds = upload(client, org_a)
    job = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()
    r = client.post(f"/v1/jobs/{job['id']}/resume", headers=org_a.h())
    assert r.status_code == 409 and r.json()["error"]["code"] == "job_not_resumable"  # still queued
    with app.state.sessionmaker() as s:
        jobs_mod.start_job(s, job["id"], stage="training")
        jobs_mod.fail_job(s, job["id"], "worker_lost", "the worker running stage training died 3 times")
    _join(app)
    dispatched.calls.clear()
    assert client.post(f"/v1/jobs/{job['id']}/resume", headers=org_b.h()).status_code == 404
    r = client.post(f"/v1/jobs/{job['id']}/resume", headers=org_a.h())
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["status"] == "queued" and out["stage"] == "training" and out["error"] is None
    _join(app)
    assert dispatched.calls == [("train", job["id"])]
    events = client.get(f"/v1/jobs/{job['id']}/events", headers=org_a.h()).json()["data"]
    assert events[-1]["message"] == "resumed through the API at stage training"
    assert events[-1]["data"]["run"] == "resumed" and events[-1]["data"]["previous_status"] == "failed"
    with app.state.sessionmaker() as s:
        jobs_mod.start_job(s, job["id"], stage="training")
        jobs_mod.succeed_job(s, job["id"])
    r = client.post(f"/v1/jobs/{job['id']}/resume", headers=org_a.h())
    assert r.status_code == 409 and r.json()["error"]["code"] == "job_finished"


def test_a_running_job_whose_lease_lapsed_resumes(client, app, org_a, dispatched):
    """A job left running by a server that stopped (an embedded `tracedraft serve`, whose stage ran in its
    own process) or a lost worker: once its lease lapsed over a lease ago it resumes; under a live lease not."""
    import datetime as dt

    from service.db.models import Job

    ds = upload(client, org_a)
    job = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()
    with app.state.sessionmaker() as s:
        jobs_mod.start_job(s, job["id"], stage="training", lease_owner="w1", lease_s=15.0)
    _join(app)
    r = client.post(f"/v1/jobs/{job['id']}/resume", headers=org_a.h())
    assert r.status_code == 409 and r.json()["error"]["code"] == "job_not_resumable"  # its worker is alive
    lease_s = app.state.settings.job_lease_s
    with app.state.sessionmaker() as s:  # the worker stopped renewing: the lease lapsed just under a lease ago
        s.get(Job, job["id"]).lease_expires_at = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=lease_s / 2)
        s.commit()
    assert client.post(f"/v1/jobs/{job['id']}/resume", headers=org_a.h()).status_code == 409  # a grace lease
    with app.state.sessionmaker() as s:
        s.get(Job, job["id"]).lease_expires_at = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=2 * lease_s)
        s.commit()
    dispatched.calls.clear()
    r = client.post(f"/v1/jobs/{job['id']}/resume", headers=org_a.h())
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "queued" and r.json()["stage"] == "training"
    _join(app)
    assert dispatched.calls == [("train", job["id"])]


def test_events_paged_and_streamed(client, app, org_a):
    ds = upload(client, org_a)
    job = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()
    with app.state.sessionmaker() as s:
        jobs_mod.start_job(s, job["id"])
        for i in range(5):
            jobs_mod.add_event(s, job["id"], "info", "metrics", f"step {i}", {"phase": "train", "step": i})
    page = client.get(f"/v1/jobs/{job['id']}/events?limit=3", headers=org_a.h()).json()
    assert [e["seq"] for e in page["data"]] == [1, 2, 3] and page["has_more"] and page["next_after"] == 3
    rest = client.get(f"/v1/jobs/{job['id']}/events?after=3", headers=org_a.h()).json()
    assert [e["seq"] for e in rest["data"]] == [4, 5, 6, 7] and not rest["has_more"]
    assert rest["data"][-1]["data"] == {"phase": "train", "step": 4}

    # Streamed: a running job streams until the stream's maximum duration (3 s in tests).
    with client.stream("GET", f"/v1/jobs/{job['id']}/events?follow=true&after=5", headers=org_a.h()) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        text = "".join(r.iter_text())
    frames = [f for f in text.split("\n\n") if f.startswith("id:")]
    assert [int(f.split("\n")[0][4:]) for f in frames] == [6, 7]
    assert "event: timeout" in text
    # Finished: the stream ends with an `end` event after the last one; Last-Event-ID resumes.
    with app.state.sessionmaker() as s:
        jobs_mod.succeed_job(s, job["id"])
    with client.stream("GET", f"/v1/jobs/{job['id']}/events?follow=true",
                       headers=org_a.h(**{"Last-Event-ID": "7"})) as r:
        text = "".join(r.iter_text())
    frames = [f for f in text.split("\n\n") if f.startswith("id:")]
    assert len(frames) == 1 and "job succeeded" in frames[0] and frames[0].startswith("id: 8\nevent: stage\n")
    end = next(f for f in text.split("\n\n") if f.startswith("event: end"))
    assert json.loads(end.split("data: ", 1)[1]) == {"status": "succeeded", "last_seq": 8}


def test_checkpoints(client, app, org_a):
    ds = upload(client, org_a)
    job = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()
    assert client.get(f"/v1/jobs/{job['id']}/checkpoints", headers=org_a.h()).json() == {
        "job_id": job["id"], "data": []}
    with app.state.sessionmaker() as s:
        jobs_mod.start_job(s, job["id"], stage="training")
        jobs_mod.add_event(s, job["id"], "info", "metrics", "validate step 50/100",
                           {"phase": "validate", "step": 50, "val_expected_tau": 2.5})
        jobs_mod.add_event(s, job["id"], "info", "metrics", "train step 60/100", {"phase": "train", "step": 60})
        jobs_mod.set_result(s, job["id"], "training", {
            "best_dir": "/var/lib/tracedraft/work/job/checkpoints/step_000050",
            "last_dir": "/var/lib/tracedraft/work/job/checkpoints/step_000100", "best_expected_tau": 2.5})
    data = client.get(f"/v1/jobs/{job['id']}/checkpoints", headers=org_a.h()).json()["data"]
    assert [(c["kind"], c["name"], c["step"], c["expected_tau"]) for c in data] == [
        ("best", "step_000050", 50, 2.5), ("last", "step_000100", 100, None),
        ("validation", "step_000050", 50, 2.5)]
    assert "/var/lib" not in json.dumps(data)


def test_job_creation_checks(client, app, org_a, tmp_path):
    ds = upload(client, org_a)
    r = client.post("/v1/jobs", json=job_body(ds["id"], base_drafter="/etc/passwd"), headers=org_a.h())
    assert r.status_code == 422 and r.json()["error"]["param"] == "base_drafter"
    r = client.post("/v1/jobs", json=job_body(ds["id"], base_drafter="nope@champion"), headers=org_a.h())
    assert r.status_code == 404 and r.json()["error"]["param"] == "base_drafter"
    from tests.api.conftest import register_version

    register_version(app, org_a, tmp_path, "smol-agent", None)
    r = client.post("/v1/jobs", json=job_body(ds["id"], base_drafter="smol-agent@v1"), headers=org_a.h())
    assert r.status_code == 201 and r.json()["spec"]["base_drafter"] == "smol-agent@v1"
    bad = client.post("/v1/datasets", headers=org_a.h(), files=[("file", ("n.txt", b"nothing\n"))]).json()
    assert bad["status"] == "failed"
    r = client.post("/v1/jobs", json=job_body(bad["id"]), headers=org_a.h())
    assert r.status_code == 409 and r.json()["error"]["code"] == "dataset_not_ready"
