"""Rollback through the API (admin keys), hash-verified checkpoint downloads, and cursor pagination of
drafters and versions; on SQLite and PostgreSQL (the ``db_url`` fixture), with the refusal cases."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.api.conftest import register_version

CHAMPION = "/v1/drafters/smol-agent/aliases/champion"


def _err(r, status: int, code: str, param: str | None = "__any__") -> dict:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code, err
    if param != "__any__":
        assert err["param"] == param, err
    return err


def _champion(client, tenant) -> int:
    data = client.get("/v1/drafters/smol-agent/aliases", headers=tenant.h()).json()["data"]
    return next(a["version"] for a in data if a["alias"] == "champion")


def _version_file(app, tenant, version: int, name: str) -> Path:
    from service import registry

    with app.state.sessionmaker() as s:
        v = registry.get_version(s, registry.get_drafter(s, tenant.org_id, "smol-agent"), version)
        return Path(app.state.store.root) / app.state.store.key(v.checkpoint_uri) / name


# --- rollback ---------------------------------------------------------------------------------------------


def test_rollback_walks_back_and_is_recorded(client, app, org_a, tmp_path):
    for tag in ("1", "2", "3"):
        register_version(app, org_a, tmp_path, tag=tag)
    for v in (1, 2, 3):
        r = client.post(CHAMPION, json={"version": v, "reason": f"to v{v}"}, headers=org_a.h(admin=True))
        assert r.status_code == 200, r.text

    r = client.post(CHAMPION + "/rollback", json={"reason": "p99 regression"}, headers=org_a.h(admin=True))
    assert r.status_code == 200, r.text
    assert r.json() == {"drafter": "smol-agent", "alias": "champion", "from_version": 3, "to_version": 2,
                        "moved": True, "overridden": [], "dry_run": False}
    # Repeated rollbacks walk further back (the history is replayed as a stack), then there is nothing left.
    r = client.post(CHAMPION + "/rollback", json={"reason": "still bad"}, headers=org_a.h(admin=True))
    assert (r.json()["from_version"], r.json()["to_version"]) == (2, 1)
    _err(client.post(CHAMPION + "/rollback", json={"reason": "again"}, headers=org_a.h(admin=True)),
         409, "nothing_to_rollback", "alias")
    assert _champion(client, org_a) == 1

    # To a named version; to the current holder is a no-op.
    r = client.post(CHAMPION + "/rollback", json={"to_version": 3, "reason": "fixed"}, headers=org_a.h(admin=True))
    assert r.status_code == 200 and r.json()["to_version"] == 3 and r.json()["moved"] is True
    r = client.post(CHAMPION + "/rollback", json={"to_version": 3, "reason": "fixed"}, headers=org_a.h(admin=True))
    assert r.status_code == 200 and r.json()["moved"] is False

    history = client.get("/v1/drafters/smol-agent/aliases", headers=org_a.h()).json()["history"]
    moves = [(h["action"], h["from_version"], h["to_version"], h["reason"]) for h in history
             if h["alias"] == "champion"]
    assert moves == [("promote", None, 1, "to v1"), ("promote", 1, 2, "to v2"), ("promote", 2, 3, "to v3"),
                     ("rollback", 3, 2, "p99 regression"), ("rollback", 2, 1, "still bad"),
                     ("rollback", 1, 3, "fixed")]
    assert all(h["actor"] == "key:" + org_a.admin[:12] for h in history if h["action"] == "rollback")


def test_rollback_refusals(client, app, org_a, org_b, tmp_path):
    register_version(app, org_a, tmp_path, tag="1")
    register_version(app, org_a, tmp_path, tag="2")
    register_version(app, org_a, tmp_path, tag="3", lineage={"tokenizer_sha256": "x" * 64})
    for v in (1, 2):
        client.post(CHAMPION, json={"version": v, "reason": "x"}, headers=org_a.h(admin=True))

    # Admin keys only; another organization's drafter is not found.
    _err(client.post(CHAMPION + "/rollback", json={"reason": "x"}, headers=org_a.h()), 403, "admin_required")
    _err(client.post(CHAMPION + "/rollback", json={"reason": "x"}, headers=org_b.h(admin=True)), 404, "not_found")
    # Request validation: the reason is required; unknown fields and bad versions are refused.
    _err(client.post(CHAMPION + "/rollback", json={}, headers=org_a.h(admin=True)), 422, "missing_field", "reason")
    _err(client.post(CHAMPION + "/rollback", json={"reason": "x", "to": 1}, headers=org_a.h(admin=True)),
         422, "unknown_field", "to")
    _err(client.post(CHAMPION + "/rollback", json={"reason": "x", "to_version": 0}, headers=org_a.h(admin=True)),
         422, "invalid_value", "to_version")
    # Unknown drafter / version: 404; an alias that does not exist: nothing to roll back (409).
    _err(client.post("/v1/drafters/ghost/aliases/champion/rollback", json={"reason": "x"},
                     headers=org_a.h(admin=True)), 404, "not_found")
    _err(client.post(CHAMPION + "/rollback", json={"reason": "x", "to_version": 42}, headers=org_a.h(admin=True)),
         404, "not_found")
    _err(client.post("/v1/drafters/smol-agent/aliases/canary/rollback", json={"reason": "x"},
                     headers=org_a.h(admin=True)), 409, "nothing_to_rollback")
    # A version that never held the alias and is incompatible: refused unless forced with the reason.
    _err(client.post(CHAMPION + "/rollback", json={"reason": "x", "to_version": 3}, headers=org_a.h(admin=True)),
         409, "incompatible_version", "to_version")
    _err(client.post(CHAMPION + "/rollback", json={"reason": "  ", "to_version": 3, "force": True},
                     headers=org_a.h(admin=True)), 400, "reason_required", "reason")
    assert _champion(client, org_a) == 2
    # A tampered checkpoint is refused even for a previous holder (checksums re-verified on every move).
    _version_file(app, org_a, 1, "model.safetensors").write_bytes(b"tampered")
    err = _err(client.post(CHAMPION + "/rollback", json={"reason": "x"}, headers=org_a.h(admin=True)),
               409, "checksum_mismatch")
    assert str(app.state.store.root) not in err["message"]
    assert _champion(client, org_a) == 2
    r = client.post(CHAMPION + "/rollback", json={"reason": "new tokenizer", "to_version": 3, "force": True},
                    headers=org_a.h(admin=True))
    assert r.status_code == 200, r.text
    assert r.json()["to_version"] == 3 and "tokenizer_sha256 differs" in r.json()["overridden"][0]
    last = client.get("/v1/drafters/smol-agent/aliases", headers=org_a.h()).json()["history"][-1]
    assert (last["action"], last["forced"], last["reason"]) == ("rollback", True, "new tokenizer")


# --- checkpoint files --------------------------------------------------------------------------------------


def test_download_checkpoint_files_verified(client, app, org_a, org_b, tmp_path):
    register_version(app, org_a, tmp_path, tag="1")
    v = client.get("/v1/drafters/smol-agent/versions/1", headers=org_a.h()).json()
    assert set(v["files"]) == {"config.json", "model.safetensors"}
    for name, digest in v["files"].items():
        r = client.get(f"/v1/drafters/smol-agent/versions/1/files/{name}", headers=org_a.h())
        assert r.status_code == 200, r.text
        assert hashlib.sha256(r.content).hexdigest() == digest
        assert r.headers["x-content-sha256"] == digest
        assert r.headers["content-type"] == "application/octet-stream"
        assert r.headers["content-length"] == str(len(r.content))
        assert r.headers["content-disposition"] == f"attachment; filename*=UTF-8''{name}"
    assert client.get("/v1/drafters/smol-agent/versions/1/files/model.safetensors",
                      headers=org_a.h()).content == b"weights1"

    # Only names of the version's files map: traversal, absolute paths, other store files -> 404.
    store = app.state.store
    ckpt_dir = _version_file(app, org_a, 1, "config.json").parent
    (ckpt_dir / "stray.bin").write_bytes(b"not registered")  # in the store, under the prefix, not in the map
    for bad in ("stray.bin", "../checkpoint/config.json", "..%2Fcheckpoint%2Fconfig.json", "%2Fetc%2Fpasswd",
                "/etc/passwd", "config.json/", "CONFIG.JSON", "nope", "report.html"):
        r = client.get(f"/v1/drafters/smol-agent/versions/1/files/{bad}", headers=org_a.h())
        assert r.status_code == 404, (bad, r.status_code, r.text)
        assert r.json()["error"]["code"] == "not_found" and b"not registered" not in r.content
    # Another organization (member or admin), an unknown version: 404 like a missing drafter.
    for h in (org_b.h(), org_b.h(admin=True)):
        _err(client.get("/v1/drafters/smol-agent/versions/1/files/config.json", headers=h), 404, "not_found")
    _err(client.get("/v1/drafters/smol-agent/versions/2/files/config.json", headers=org_a.h()), 404, "not_found")
    _err(client.get("/v1/drafters/smol-agent/versions/1/files/config.json"), 401, "unauthorized")

    # Hash-verified: a tampered file is refused (409) and none of its bytes are sent; a missing one too.
    _version_file(app, org_a, 1, "model.safetensors").write_bytes(b"evil-bytes")
    r = client.get("/v1/drafters/smol-agent/versions/1/files/model.safetensors", headers=org_a.h())
    err = _err(r, 409, "checksum_mismatch", "path")
    assert b"evil-bytes" not in r.content and str(store.root) not in err["message"]
    _version_file(app, org_a, 1, "config.json").unlink()
    _err(client.get("/v1/drafters/smol-agent/versions/1/files/config.json", headers=org_a.h()),
         409, "artifact_missing", "path")


def test_download_nested_file_names(client, app, org_a, tmp_path):
    from service import registry

    ckpt = tmp_path / "nested"
    (ckpt / "sub dir").mkdir(parents=True)
    (ckpt / "config.json").write_text("{}")
    (ckpt / "sub dir" / "extra.bin").write_bytes(b"\x00\x01extra")
    with app.state.sessionmaker() as s:
        registry.register_version(s, app.state.store, org_a.org_id, "nested", "smollm2-135m-instruct", None, ckpt,
                                  config={}, lineage={})
    r = client.get("/v1/drafters/nested/versions/1/files/sub%20dir/extra.bin", headers=org_a.h())
    assert r.status_code == 200 and r.content == b"\x00\x01extra"
    assert r.headers["content-disposition"] == "attachment; filename*=UTF-8''extra.bin"
    _err(client.get("/v1/drafters/nested/versions/1/files/sub%20dir", headers=org_a.h()), 404, "not_found")


def test_stream_aborts_when_the_file_changes_while_sent(tmp_path):
    from service.api.routers.drafters import _stream_verified
    from service.storage import ArtifactError, ArtifactStore

    store = ArtifactStore(str(tmp_path / "store"))
    stored = store.put_bytes("a/b.bin", b"x" * 3000)
    assert b"".join(_stream_verified(store, stored.uri, stored.sha256, 3000)) == b"x" * 3000
    store.put_bytes("a/b.bin", b"y" * 3000)  # replaced after the pre-check
    with pytest.raises(ArtifactError) as e:
        b"".join(_stream_verified(store, stored.uri, stored.sha256, 3000))
    assert e.value.code == "artifact_corrupt"


# --- pagination ---------------------------------------------------------------------------------------------


def _all_pages(client, tenant, path: str, limit: int) -> list[dict]:
    pages, after = [], None
    while True:
        params = {"limit": limit, **({"after": after} if after else {})}
        page = client.get(path, params=params, headers=tenant.h()).json()
        assert set(page) == {"data", "has_more", "next_cursor"}
        pages.append(page)
        if not page["has_more"]:
            assert page["next_cursor"] is None
            return pages
        after = page["next_cursor"]
        assert after


def test_drafters_and_versions_are_paginated(client, app, org_a, org_b, tmp_path):
    names = ["alpha", "bravo", "charlie", "delta", "echo"]
    for n in reversed(names):
        register_version(app, org_a, tmp_path, n, tag=n)
    register_version(app, org_b, tmp_path, "zulu-b", tag="b")
    pages = _all_pages(client, org_a, "/v1/drafters", 2)
    assert [[d["name"] for d in p["data"]] for p in pages] == [["alpha", "bravo"], ["charlie", "delta"], ["echo"]]
    assert [p["next_cursor"] for p in pages] == ["bravo", "delta", None]
    assert all(d["latest_version"] == 1 for p in pages for d in p["data"])
    assert [d["name"] for d in client.get("/v1/drafters", headers=org_b.h()).json()["data"]] == ["zulu-b"]
    whole = client.get("/v1/drafters", headers=org_a.h()).json()
    assert len(whole["data"]) == 5 and whole["has_more"] is False

    for tag in ("2", "3", "4", "5"):
        register_version(app, org_a, tmp_path, "alpha", tag=tag)
    pages = _all_pages(client, org_a, "/v1/drafters/alpha/versions", 2)
    assert [[v["version"] for v in p["data"]] for p in pages] == [[5, 4], [3, 2], [1]]
    assert [p["next_cursor"] for p in pages] == ["4", "2", None]
    assert pages[0]["data"][0]["aliases"] == ["challenger"] and pages[0]["data"][0]["report"] is None
    page = client.get("/v1/drafters/alpha/versions", params={"limit": 5}, headers=org_a.h()).json()
    assert len(page["data"]) == 5 and page["has_more"] is False
    r = client.get("/v1/drafters/alpha/versions", params={"after": "9999999999"}, headers=org_a.h())
    assert [v["version"] for v in r.json()["data"]] == [5, 4, 3, 2, 1]

    _err(client.get("/v1/drafters", params={"limit": 0}, headers=org_a.h()), 422, "invalid_value", "limit")
    _err(client.get("/v1/drafters", params={"limit": 101}, headers=org_a.h()), 422, "invalid_value", "limit")
    for bad in ("abc", "0", "-1", "1.5"):
        _err(client.get("/v1/drafters/alpha/versions", params={"after": bad}, headers=org_a.h()),
             422, "invalid_value", "after")
    # another organization's drafter: 404 whatever the page
    _err(client.get("/v1/drafters/alpha/versions", params={"limit": 1}, headers=org_b.h()), 404, "not_found")


def test_openapi_documents_the_new_routes(client):
    doc = client.get("/openapi.json").json()
    files = doc["paths"]["/v1/drafters/{name}/versions/{version}/files/{path}"]["get"]
    assert "application/octet-stream" in files["responses"]["200"]["content"]
    assert "X-Content-SHA256" in files["responses"]["200"]["headers"]
    rb = doc["paths"]["/v1/drafters/{name}/aliases/{alias}/rollback"]["post"]
    assert {"403", "404", "409"} <= set(rb["responses"])
    body = doc["components"]["schemas"]["RollbackRequest"]
    assert body["required"] == ["reason"] and body["additionalProperties"] is False
    params = {p["name"] for p in doc["paths"]["/v1/drafters"]["get"]["parameters"]}
    assert params == {"limit", "after"}
    assert json.dumps(doc)  # serializable
