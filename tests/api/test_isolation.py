"""Organization isolation: every route of the app, called with organization B's keys on organization A's
resources, answers 404 exactly like a missing resource (403 for admin routes with a member key).

The routes come from ``app.routes``: a route added later without an entry in ``CALLS`` fails the test, so
none can escape it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fastapi.routing import APIRoute

from service.api.deps import require_admin
from tests.api.conftest import job_body, make_traces, register_version, upload

# (method, path template) -> how to call it: json body / files / params; "public" routes carry no tenant
# data; "collection" routes list or create in the caller's own organization.
CALLS: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/datasets"): {"kind": "collection", "files": True},
    ("GET", "/v1/datasets"): {"kind": "collection"},
    ("GET", "/v1/datasets/{dataset_id}"): {"kind": "item"},
    ("GET", "/v1/datasets/{dataset_id}/report"): {"kind": "item"},
    ("DELETE", "/v1/datasets/{dataset_id}"): {"kind": "item"},
    ("POST", "/v1/jobs"): {"kind": "item", "json": "job"},
    ("GET", "/v1/jobs"): {"kind": "collection"},
    ("GET", "/v1/jobs/{job_id}"): {"kind": "item"},
    ("POST", "/v1/jobs/{job_id}/cancel"): {"kind": "item"},
    ("POST", "/v1/jobs/{job_id}/resume"): {"kind": "item"},
    ("GET", "/v1/jobs/{job_id}/events"): {"kind": "item"},
    ("GET", "/v1/jobs/{job_id}/checkpoints"): {"kind": "item"},
    ("GET", "/v1/drafters"): {"kind": "collection"},
    ("GET", "/v1/drafters/{name}/versions"): {"kind": "item"},
    ("GET", "/v1/drafters/{name}/versions/{version}"): {"kind": "item"},
    ("GET", "/v1/drafters/{name}/versions/{version}/report.html"): {"kind": "item"},
    ("GET", "/v1/drafters/{name}/versions/{version}/files/{path:path}"): {"kind": "item"},
    ("GET", "/v1/drafters/{name}/aliases"): {"kind": "item"},
    ("POST", "/v1/drafters/{name}/aliases/{alias}"): {"kind": "item", "json": "promote"},
    ("POST", "/v1/drafters/{name}/aliases/{alias}/rollback"): {"kind": "item", "json": "rollback"},
    ("GET", "/healthz"): {"kind": "public"},
    ("GET", "/readyz"): {"kind": "public"},
    ("GET", "/metrics"): {"kind": "operator"},  # the metrics token, not an API key (test_data_safety.py)
}


def _flat_routes(app) -> list[Any]:
    """Every route of the app with its full path (FastAPI >= 0.160 includes routers lazily, so
    ``app.routes`` holds the included routers; ``iter_route_contexts`` flattens them)."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # older FastAPI: app.routes is already flat
        return list(app.routes)
    return list(iter_route_contexts(app.routes))


def _routes(app) -> list[tuple[str, str, Any]]:
    out = []
    for route in _flat_routes(app):
        original = getattr(route, "original_route", route)
        if not isinstance(original, APIRoute):
            continue  # openapi.json and docs pages: no tenant data
        for method in sorted((route.methods or set()) - {"HEAD", "OPTIONS"}):
            out.append((method, route.path, original))
    return out


def _is_admin(route: APIRoute) -> bool:
    def walk(dep) -> bool:
        return dep.call is require_admin or any(walk(d) for d in dep.dependencies)
    return walk(route.dependant)


def test_route_walk_sees_every_route(app):
    paths = {p for _, p, _ in _routes(app)}
    assert "/v1/jobs/{job_id}/events" in paths and "/metrics" in paths
    assert len(_routes(app)) == len(CALLS)


@pytest.fixture
def world(app, client, org_a, tmp_path):
    """Organization A's resources: a dataset, a job using it, a drafter with a version and aliases."""
    ds = upload(client, org_a)
    assert ds["status"] == "ready", ds
    job = client.post("/v1/jobs", json=job_body(ds["id"]), headers=org_a.h()).json()
    register_version(app, org_a, tmp_path, "smol-agent", job["id"])
    r = client.post("/v1/drafters/smol-agent/aliases/champion", json={"version": 1, "reason": "first"},
                    headers=org_a.h(admin=True))
    assert r.status_code == 200, r.text
    return {"dataset_id": ds["id"], "job_id": job["id"], "name": "smol-agent", "version": "1",
            "alias": "champion", "path": "model.safetensors"}


def _call(client, method: str, path: str, spec: dict, world: dict, headers: dict):
    url = re.sub(r"\{(\w+):\w+\}", r"{\1}", path).format(**world)  # {path:path} -> {path}
    kwargs: dict[str, Any] = {"headers": headers}
    if spec.get("json") == "job":
        kwargs["json"] = job_body(world["dataset_id"])
    elif spec.get("json") == "promote":
        kwargs["json"] = {"version": 1, "reason": "cross-org attempt"}
    elif spec.get("json") == "rollback":
        kwargs["json"] = {"to_version": 1, "reason": "cross-org attempt"}
    if spec.get("files"):
        kwargs["files"] = [("file", ("b.jsonl", make_traces(30, tag="b")))]
    return client.request(method, url, **kwargs)


def test_every_route_is_scoped_to_the_callers_organization(app, client, world, org_a, org_b):
    routes = _routes(app)
    missing = [(m, p) for m, p, _ in routes if (m, p) not in CALLS]
    assert not missing, f"routes without an isolation check (add them to CALLS): {missing}"
    assert len(routes) == len(CALLS)
    a_ids = {world["dataset_id"], world["job_id"], world["name"]}

    for method, path, route in routes:
        spec = CALLS[(method, path)]
        if spec["kind"] == "operator":
            continue
        for admin in (False, True):
            r = _call(client, method, path, spec, world, org_b.h(admin=admin))
            where = f"{method} {path} with org B's {'admin' if admin else 'member'} key"
            body = r.text
            if spec["kind"] == "item":
                expected = 403 if _is_admin(route) and not admin else 404
                assert r.status_code == expected, f"{where}: {r.status_code} {body}"
                err = r.json()["error"]
                assert err["code"] == ("admin_required" if expected == 403 else "not_found"), where
                # Exactly the answer for an id that never existed: no existence oracle.
                ghost = {**world, "dataset_id": "ds_01ghost", "job_id": "job_01ghost", "name": "ghost"}
                r2 = _call(client, method, path, spec, ghost, org_b.h(admin=admin))
                ghost_text = r2.text
                for key in ("dataset_id", "job_id", "name"):
                    ghost_text = ghost_text.replace(ghost[key], world[key])
                assert r2.status_code == expected, where
                assert r.json() == json.loads(ghost_text), where
            else:
                assert r.status_code in (200, 201), f"{where}: {r.status_code} {body}"
                for ident in a_ids:
                    assert ident not in body, f"{where} leaked {ident}"

    # Positive control: organization A reaches every one of them.
    for method, path, _route in routes:
        spec = CALLS[(method, path)]
        if spec["kind"] == "operator":
            continue
        if (method, path) == ("DELETE", "/v1/datasets/{dataset_id}"):
            continue  # checked below (in use by A's job)
        r = _call(client, method, path, spec, world, org_a.h(admin=True))
        assert r.status_code in (200, 201), f"{method} {path} as org A: {r.status_code} {r.text}"
    r = client.delete(f"/v1/datasets/{world['dataset_id']}", headers=org_a.h())
    assert r.status_code == 409 and r.json()["error"]["code"] == "dataset_in_use"


def test_authentication_is_required_everywhere(app, client, world, org_a, db):
    from service.auth import revoke_api_key

    for method, path, _route in _routes(app):
        if CALLS[(method, path)]["kind"] == "public":
            continue
        for headers in ({}, {"Authorization": "Bearer td_not-a-key"}, {"Authorization": "Basic abc"}):
            r = _call(client, method, path, CALLS[(method, path)], world, headers)
            assert r.status_code == 401, f"{method} {path} {headers}: {r.status_code}"
            assert r.json()["error"]["code"] == "unauthorized"
            assert r.headers["www-authenticate"] == "Bearer"
    # A revoked key stops working at once.
    assert client.get("/v1/jobs", headers=org_a.h()).status_code == 200
    revoke_api_key(db, org_a.member[:12])
    r = client.get("/v1/jobs", headers=org_a.h())
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
