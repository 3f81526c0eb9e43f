"""HEAD on a GET route answers as GET would, headers without a body (it was 405); other methods are untouched."""

from __future__ import annotations

import time

from tests.api.conftest import job_body, register_version, upload


def test_head_answers_like_get_without_a_body(client, app, org_a, tmp_path):
    ds = upload(client, org_a)
    job = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()
    register_version(app, org_a, tmp_path)
    for path in ("/healthz", "/v1/datasets", f"/v1/datasets/{ds['id']}", f"/v1/jobs/{job['id']}",
                 f"/v1/jobs/{job['id']}/events", "/v1/drafters/smol-agent/versions/1",
                 "/v1/drafters/smol-agent/versions/1/files/config.json", "/openapi.json"):
        get = client.get(path, headers=org_a.h())
        head = client.head(path, headers=org_a.h())
        assert get.status_code == 200, (path, get.text)
        assert head.status_code == 200 and head.content == b"", path
        assert head.headers["content-type"] == get.headers["content-type"], path
        if "content-length" in get.headers:
            assert head.headers["content-length"] == str(len(get.content)), path
    # errors too: the same status and headers as GET, no body
    assert client.head("/v1/jobs/job_nope", headers=org_a.h()).status_code == 404
    missing_key = client.head("/v1/jobs")
    assert missing_key.status_code == 401 and missing_key.content == b""
    assert missing_key.headers["www-authenticate"] == "Bearer"


def test_head_on_an_event_stream_returns_at_once(client, org_a):
    ds = upload(client, org_a)
    job = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()  # stays queued
    t0 = time.monotonic()
    r = client.head(f"/v1/jobs/{job['id']}/events?follow=true", headers=org_a.h())
    assert r.status_code == 200 and r.content == b"" and r.headers["content-type"].startswith("text/event-stream")
    assert time.monotonic() - t0 < 5


def test_head_is_not_allowed_where_get_is_not(client, org_a):
    r = client.head("/v1/datasets/x/nothing", headers=org_a.h())
    assert r.status_code == 404
    r = client.request("HEAD", "/v1/jobs/job_x/cancel", headers=org_a.h())
    assert r.status_code == 405 and "POST" in r.headers.get("allow", "")
