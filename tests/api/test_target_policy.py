"""POST /v1/jobs only accepts the targets and SGLang endpoints the operator allowed
(TRACEDRAFT_ALLOWED_TARGETS / _ALLOWED_TARGET_DIRS / _ALLOWED_SGLANG_HOSTS): refusals are 422
``target_not_allowed`` / ``endpoint_not_allowed`` with the field as param, and nothing is created or
dispatched. Workers apply the same rules again before every stage. Over HTTP on SQLite and PostgreSQL,
through the worker's stage runner, and the path rules directly (``service/policy.py``)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from drafters.errors import TracedraftError
from service.api.app import create_app
from service.policy import check_job_spec, check_sglang_endpoint, check_target
from service.settings import Settings
from tests.api.conftest import job_body, make_settings, upload


def _policy(tmp_path: Path, **kw) -> Settings:
    return Settings(home=tmp_path / "home", **kw)


def _refused(fn, *args) -> TracedraftError:
    with pytest.raises(TracedraftError) as e:
        fn(*args)
    return e.value


def _join(app) -> None:
    for t in list(app.state.pipeline_threads):
        t.join(timeout=10)


def test_default_policy_allows_only_the_demo_target(client, app, org_a, dispatched):
    ds = upload(client, org_a)
    r = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h())
    assert r.status_code == 201, r.text
    _join(app)
    dispatched.calls.clear()
    for model in ("Qwen/Qwen3-4B", "/etc/passwd", "../../secrets/model.gguf", "~/.ssh/id_rsa", "/tmp/x.gguf",
                  "file:///etc/shadow", "models/local.gguf", "smollm2-135m-instruct/../x"):
        r = client.post("/v1/jobs", json=job_body(ds["id"], target={"model": model}), headers=org_a.h())
        assert r.status_code == 422, (model, r.text)
        err = r.json()["error"]
        assert (err["code"], err["param"]) == ("target_not_allowed", "target.model"), model
        assert "smollm2-135m-instruct" in err["message"]  # says what is allowed
    for endpoint in ("http://169.254.169.254/latest/meta-data", "http://evil.example.com:30000",
                     "http://sglang.evil.example.com", "http://sglang@evil.example.com:30000", "http://10.0.0.1",
                     "https://[::1]:30000"):
        body = job_body(ds["id"], target={"model": "smollm2-135m-instruct", "sglang": {"endpoint": endpoint}})
        r = client.post("/v1/jobs", json=body, headers=org_a.h())
        assert r.status_code == 422, (endpoint, r.text)
        err = r.json()["error"]
        assert (err["code"], err["param"]) == ("endpoint_not_allowed", "target.sglang.endpoint"), endpoint
    for endpoint in ("http://sglang:30000", "http://127.0.0.1:30000/", "http://LOCALHOST:30000/v1"):
        body = job_body(ds["id"], target={"model": "smollm2-135m-instruct", "sglang": {"endpoint": endpoint}})
        assert client.post("/v1/jobs", json=body, headers=org_a.h()).status_code == 201, endpoint
    # Refused jobs were neither created nor dispatched.
    jobs = client.get("/v1/jobs", params={"limit": 100}, headers=org_a.h()).json()["data"]
    assert len(jobs) == 4
    _join(app)
    assert len(dispatched.calls) == 3


def test_operator_policy_over_http(tmp_path, db_url, dispatched):
    models = tmp_path / "models"
    (models / "llama").mkdir(parents=True)
    (models / "small.gguf").write_bytes(b"GGUF")
    settings = make_settings(tmp_path, db_url, allowed_targets=["smollm2-135m-instruct", "Qwen/Qwen3-*"],
                             allowed_target_dirs=[str(models)], allowed_sglang_hosts=["gpu-box.internal"])
    app = create_app(settings)
    try:
        with _member_with_dataset(app, "org-p") as (client, h, ds):
            ok = ["Qwen/Qwen3-4B", "Qwen/Qwen3-0.6B", str(models / "small.gguf"), str(models / "llama"),
                  "smollm2-135m-instruct"]
            for model in ok:
                r = client.post("/v1/jobs", json=job_body(ds["id"], target={"model": model}), headers=h)
                assert r.status_code == 201, (model, r.text)
                assert r.json()["spec"]["target"]["model"] == model
            bad = ["Qwen/Qwen2-7B", "qwen/qwen3-4b", f"{models}/../secret.gguf", f"{models}-evil/x.gguf",
                   "/etc/passwd", "llama"]
            for model in bad:
                r = client.post("/v1/jobs", json=job_body(ds["id"], target={"model": model}), headers=h)
                assert r.status_code == 422 and r.json()["error"]["code"] == "target_not_allowed", (model, r.text)
            body = job_body(ds["id"], target={"model": "Qwen/Qwen3-4B",
                                              "sglang": {"endpoint": "http://gpu-box.internal:30000"}})
            assert client.post("/v1/jobs", json=body, headers=h).status_code == 201
            body["target"]["sglang"]["endpoint"] = "http://sglang:30000"  # not in this operator's list
            r = client.post("/v1/jobs", json=body, headers=h)
            assert r.status_code == 422 and r.json()["error"]["code"] == "endpoint_not_allowed"
            _join(app)
            assert len(dispatched.calls) == len(ok) + 1
    finally:
        app.state.engine.dispose()


@contextlib.contextmanager
def _member_with_dataset(app, org_name: str):
    """A client of ``app``, a member key's headers of a new organization, and a dataset it uploaded."""
    from service.auth import create_api_key, create_org

    with TestClient(app, raise_server_exceptions=False) as client, app.state.sessionmaker() as s:
        key, _ = create_api_key(s, create_org(s, org_name), "m", "member")
        h = {"Authorization": f"Bearer {key}"}
        ds = client.post("/v1/datasets", headers=h, files=[("file", ("t.jsonl", _traces()))]).json()
        yield client, h, ds


def _traces() -> bytes:
    from tests.api.conftest import make_traces

    return make_traces()


def test_target_path_rules(tmp_path):
    models = tmp_path / "models"
    (models / "sub").mkdir(parents=True)
    (models / "a.gguf").write_bytes(b"GGUF")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.gguf").write_bytes(b"GGUF")
    os.symlink(outside / "secret.gguf", models / "link.gguf")
    os.symlink(outside, models / "linkdir")
    s = _policy(tmp_path, allowed_targets=["smollm2-135m-instruct", "meta-llama/*", "/opt/exact/model.gguf"],
                allowed_target_dirs=[str(models), "relative/dir"])

    for ok in ("smollm2-135m-instruct", "meta-llama/Llama-3.2-1B", str(models / "a.gguf"), str(models / "sub"),
               str(models), str(models / "not-yet-there.gguf"), "/opt/exact/model.gguf"):
        check_target(ok, s)
    for bad in (str(models / "link.gguf"), str(models / "linkdir" / "secret.gguf"),  # symlinks out
                str(models / ".." / "outside" / "secret.gguf"), str(outside / "secret.gguf"),
                f"{models}evil/a.gguf", "relative/dir/a.gguf", "meta-llama/../../etc", "meta-llama/x.gguf",
                "~/models/a.gguf", "C:\\models\\a.gguf", "meta-llama", "/opt/exact/model.gguf.bak",
                str(models / "a.gguf") + "\x00"):
        err = _refused(check_target, bad, s)
        assert (err.code, err.where) == ("target_not_allowed", "target.model"), bad

    # No directories allowed (the default): every path is refused, even under the home directory.
    plain = _policy(tmp_path)
    assert plain.allowed_targets == ["smollm2-135m-instruct", "smollm2-135m-agent"]
    assert plain.allowed_target_dirs == []
    check_target("smollm2-135m-agent", plain)  # both demo targets are allowed by default
    assert _refused(check_target, str(models / "a.gguf"), plain).code == "target_not_allowed"


def test_sglang_host_rules(tmp_path):
    s = _policy(tmp_path, allowed_sglang_hosts=["sglang", "10.1.2.3", "::1"])
    for host in ("sglang", "SGLANG", "sglang.", "10.1.2.3", "[::1]"):
        check_sglang_endpoint(host, s)
    for host in ("sglang.evil", "10.1.2.4", "", None, "localhost"):
        err = _refused(check_sglang_endpoint, host, s)
        assert (err.code, err.where) == ("endpoint_not_allowed", "target.sglang.endpoint")
    assert _policy(tmp_path).allowed_sglang_hosts == ["127.0.0.1", "localhost", "sglang"]


def test_job_spec_rules_as_a_worker_applies_them(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    s = _policy(tmp_path, allowed_target_dirs=[str(models)], allowed_sglang_hosts=["gpu-box.internal"])
    ok = {"target": {"model": str(models / "a.gguf"), "sglang": {"endpoint": "http://GPU-box.internal:30000/"}},
          "base_drafter": "smol-agent@champion"}
    check_job_spec(ok, s)
    cases = [
        ({"target": {"model": "/etc/passwd"}}, "target_not_allowed", "target.model"),
        ({"target": {}}, "target_not_allowed", "target.model"),
        ({**ok, "target": {**ok["target"], "sglang": {"endpoint": "http://gpu-box.internal@10.0.0.1:30000"}}},
         "endpoint_not_allowed", "target.sglang.endpoint"),
        ({**ok, "target": {**ok["target"], "sglang": {"endpoint": "http://169.254.169.254/"}}},
         "endpoint_not_allowed", "target.sglang.endpoint"),
        ({**ok, "base_drafter": str(tmp_path / "other-org" / "checkpoint")}, "base_drafter_not_allowed",
         "base_drafter"),
        ({**ok, "base_drafter": "~/ckpt"}, "base_drafter_not_allowed", "base_drafter"),
    ]
    for spec, code, where in cases:
        err = _refused(check_job_spec, spec, s)
        assert (err.code, err.where) == (code, where), spec


def test_worker_refuses_a_job_the_operator_no_longer_allows(tmp_path, db_url, dispatched, monkeypatch):
    """The operator removes a directory from TRACEDRAFT_ALLOWED_TARGET_DIRS while a job that names it waits in
    the queue: the worker fails the job with target_not_allowed before loading anything, and says where."""
    import json
    from types import SimpleNamespace

    from service.db import Job
    from service.settings import reload_settings
    from workers import tasks

    models = tmp_path / "models"
    (models / "llama").mkdir(parents=True)
    settings = make_settings(tmp_path, db_url, allowed_target_dirs=[str(models)])
    app = create_app(settings)
    try:
        with _member_with_dataset(app, "org-w") as (client, h, ds):
            r = client.post("/v1/jobs", json=job_body(ds["id"], target={"model": str(models / "llama")}), headers=h)
            assert r.status_code == 201, r.text
            job_id = r.json()["id"]
            _join(app)

        # The worker process: same database, but the operator's new lists (the directory is gone).
        env = {"TRACEDRAFT_DATABASE_URL": db_url, "TRACEDRAFT_HOME": str(tmp_path / "worker"),
               "TRACEDRAFT_ARTIFACT_URI": settings.artifact_uri, "TRACEDRAFT_PIPELINE": "celery",
               "TRACEDRAFT_AUTO_MIGRATE": "false", "TRACEDRAFT_ALLOWED_TARGET_DIRS": json.dumps([])}
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        reload_settings()
        task = SimpleNamespace(request=SimpleNamespace(id="t-1", retries=0))
        out = tasks.run_stage(task, "validate", job_id)
        assert out["outcome"] == "failed" and out["code"] == "target_not_allowed"
        with app.state.sessionmaker() as s:
            job = s.get(Job, job_id)
            assert job.status == "failed" and job.stage == "validating"
            assert job.error["code"] == "target_not_allowed" and job.error["param"] == "target.model"
            assert "validating" not in (job.result or {})  # the stage never ran

        # The same job passes once the operator allows the directory again (resumed by hand here).
        monkeypatch.setenv("TRACEDRAFT_ALLOWED_TARGET_DIRS", json.dumps([str(models)]))
        reload_settings()
        from service import jobs

        with app.state.sessionmaker() as s:
            jobs.reopen_job(s, job_id, "operator allowed the directory again")
        assert tasks.run_stage(task, "validate", job_id)["outcome"] == "done"  # validate loads no target
    finally:
        for k in ("TRACEDRAFT_DATABASE_URL", "TRACEDRAFT_HOME", "TRACEDRAFT_ARTIFACT_URI", "TRACEDRAFT_PIPELINE",
                  "TRACEDRAFT_AUTO_MIGRATE", "TRACEDRAFT_ALLOWED_TARGET_DIRS"):
            monkeypatch.delenv(k, raising=False)
        reload_settings()
        for e in tasks._engines.values():
            e.dispose()
        tasks._engines.clear()
        app.state.engine.dispose()


def test_remote_code_only_for_targets_the_operator_vetted(tmp_path, db_url, dispatched):
    """trust_remote_code runs the target repository's Python on the worker: refused (422 over HTTP, a failed
    stage on a worker) unless the target matches the operator's TRACEDRAFT_REMOTE_CODE_TARGETS."""
    settings = make_settings(tmp_path, db_url, allowed_targets=["smollm2-135m-instruct", "moonshotai/*"],
                             remote_code_targets=["moonshotai/Kimi-K2-*"])
    app = create_app(settings)
    try:
        with _member_with_dataset(app, "org-rc") as (client, h, ds):
            def post(model: str, trust: bool):
                return client.post("/v1/jobs", json=job_body(ds["id"], target={"model": model,
                                                                               "trust_remote_code": trust}), headers=h)

            assert post("moonshotai/Kimi-K2-Instruct", True).status_code == 201
            assert post("moonshotai/Moonlight-16B", False).status_code == 201
            for model in ("moonshotai/Moonlight-16B", "smollm2-135m-instruct"):
                r = post(model, True)
                assert r.status_code == 422, r.text
                assert (r.json()["error"]["code"], r.json()["error"]["param"]) == (
                    "remote_code_not_allowed", "target.trust_remote_code")
    finally:
        app.state.engine.dispose()
    spec = {"target": {"model": "moonshotai/Kimi-K2-Instruct", "trust_remote_code": True}}
    check_job_spec(spec, settings)
    err = _refused(check_job_spec, spec, _policy(tmp_path, allowed_targets=["moonshotai/*"]))
    assert (err.code, err.where) == ("remote_code_not_allowed", "target.trust_remote_code")
