"""Every error has the one shape ``{"error": {"code", "message", "param"}}`` and its own status and code."""

from __future__ import annotations

from tests.api.conftest import job_body, upload


def _err(r, status: int, code: str, param: str | None = "__any__") -> dict:
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "param"}, body
    assert body["error"]["code"] == code, body
    assert body["error"]["message"]
    if param != "__any__":
        assert body["error"]["param"] == param, body
    return body["error"]


def test_request_errors(client, org_a):
    ds = upload(client, org_a)
    h = org_a.h(**{"Content-Type": "application/json"})
    _err(client.post("/v1/jobs", content=b'{"dataset_id": ', headers=h), 422, "invalid_json", None)
    e = _err(client.post("/v1/jobs", json={**job_body(ds["id"]), "recipie": {}}, headers=org_a.h()),
             422, "unknown_field", "recipie")
    assert "recipie" in e["message"]
    _err(client.post("/v1/jobs", json=job_body(ds["id"], recipe={"lr": "fast"}), headers=org_a.h()),
         422, "invalid_value", "recipe.lr")
    _err(client.post("/v1/jobs", json=job_body(ds["id"], target={"model": "m", "sglang": {"port": 1}}),
                     headers=org_a.h()), 422, "unknown_field", "target.sglang.port")
    _err(client.post("/v1/jobs", json={"target": {"model": "m"}}, headers=org_a.h()), 422, "missing_field",
         "dataset_id")
    _err(client.post("/v1/jobs", json=job_body("ds_doesnotexist"), headers=org_a.h()), 404, "not_found",
         "dataset_id")
    _err(client.post("/v1/jobs", json=job_body(ds["id"], metadata={"k": "v" * 600}), headers=org_a.h()),
         422, "invalid_value", "metadata")
    _err(client.get("/v1/jobs?limit=0", headers=org_a.h()), 422, "invalid_value", "limit")
    _err(client.get("/v1/jobs?status=done", headers=org_a.h()), 422, "invalid_value", "status")
    _err(client.get("/v1/datasets/ds_nope", headers=org_a.h()), 404, "not_found")
    _err(client.get("/v1/jobs/job_nope/events", headers=org_a.h()), 404, "not_found", "job_id")
    _err(client.get("/v1/nowhere", headers=org_a.h()), 404, "not_found", None)
    _err(client.put("/v1/jobs", headers=org_a.h()), 405, "method_not_allowed", None)
    _err(client.post("/v1/drafters/x/aliases/champion", json={"version": 1, "extra": 1},
                     headers=org_a.h(admin=True)), 422, "unknown_field", "extra")


def test_values_the_database_cannot_store_are_client_errors(client, org_a):
    for url in ("/v1/jobs/abc%00", "/v1/datasets/x%00y", "/v1/drafters/a%00/aliases",
                "/v1/jobs?metadata.team=a%00", "/v1/jobs/job_x/events?after=2147483647"):
        r = client.get(url, headers=org_a.h())
        assert r.status_code in (200, 404, 422), (url, r.status_code, r.text)
        if r.status_code != 200:
            assert set(r.json()["error"]) == {"code", "message", "param"}
    _err(client.get("/v1/jobs/job_x/events?after=2147483648", headers=org_a.h()), 422, "invalid_value", "after")


def test_job_conflicts(client, app, org_a):
    from service import jobs as jobs_mod

    ds = upload(client, org_a)
    h = org_a.h(**{"Idempotency-Key": "k1"})
    assert client.post("/v1/jobs", json=job_body(ds["id"]), headers=h).status_code == 201
    _err(client.post("/v1/jobs", json=job_body(ds["id"], metadata={"x": "y"}), headers=h), 409,
         "idempotency_conflict", "Idempotency-Key")
    job = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()
    with app.state.sessionmaker() as s:
        jobs_mod.start_job(s, job["id"])
        jobs_mod.fail_job(s, job["id"], "oom", "out of memory", "recipe.tokens_per_batch")
    _err(client.post(f"/v1/jobs/{job['id']}/cancel", headers=org_a.h()), 409, "job_finished", "status")
    failed = client.get(f"/v1/jobs/{job['id']}", headers=org_a.h()).json()
    assert failed["error"] == {"code": "oom", "message": "out of memory", "param": "recipe.tokens_per_batch"}


def test_unhandled_errors_are_500_in_the_shape_without_details(client, app, org_a, monkeypatch, caplog):
    from service.api.routers import jobs as jobs_router

    def boom(*a, **k):
        raise RuntimeError("secret trace content sk-123")

    monkeypatch.setattr(jobs_router, "job_out", boom)
    ds = upload(client, org_a)
    r = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h())
    e = _err(r, 500, "internal_error", None)
    assert "secret" not in r.text and e["message"] == "internal server error"
    assert org_a.member not in caplog.text  # keys are never logged


def test_a_validation_error_lists_every_problem(client, org_a):
    ds = upload(client, org_a)
    body = job_body(ds["id"], recipe={"lr": "fast", "max_steps": -3})
    e = _err(client.post("/v1/jobs", json=body, headers=org_a.h()), 422, "invalid_value", "recipe.max_steps")
    assert e["message"].startswith("2 problems: recipe.max_steps: Input should be greater than 0")
    assert "; recipe.lr: " in e["message"] and "more problem" not in e["message"]
    # many problems: the first ten listed, then how many more
    many = {f"x{i}": 1 for i in range(12)}
    e = _err(client.post("/v1/jobs", json={**job_body(ds["id"]), **many}, headers=org_a.h()), 422, "unknown_field")
    assert e["message"].startswith("12 problems: unknown field 'x0'") and e["message"].endswith("; and 2 more")


def test_evaluation_incumbent_is_refused_with_its_own_code(client, org_a, org_b, app, tmp_path):
    """evaluation.incumbent was accepted (any string, another organization's drafter included) and never
    read: it is refused now, with a code that says what to use instead, whatever it names."""
    from tests.api.conftest import register_version

    register_version(app, org_b, tmp_path, name="theirs")
    register_version(app, org_a, tmp_path, name="ours")
    ds = upload(client, org_a)
    for ref in ("theirs@champion", "ours@v1", "anything"):
        e = _err(client.post("/v1/jobs", json=job_body(ds["id"], evaluation={"incumbent": ref}), headers=org_a.h()),
                 422, "incumbent_not_supported", "evaluation.incumbent")
        assert "base_drafter" in e["message"]
    r = client.get("/openapi.json")
    assert "incumbent" not in r.json()["components"]["schemas"]["EvaluationSettings"]["properties"]
