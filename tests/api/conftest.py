"""Fixtures of the API tests: an app per test over SQLite and PostgreSQL (``db_url`` from the service
tests), two organizations with member and admin keys, a recording ``dispatch`` (no ML runs), and helpers
to create datasets, jobs and registered drafter versions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from service import queue
from service.api.app import create_app
from service.auth import create_api_key, create_org
from service.settings import Settings
from tests.service.conftest import db_url, pg_url  # noqa: F401 - fixtures reused (SQLite + PostgreSQL)


def make_traces(n: int = 40, tag: str = "") -> bytes:
    """``n`` small OpenAI-chat conversations with one tool call each, as JSONL bytes (enough for a
    train and a held-out split at the default 10% held-out fraction)."""
    lines = []
    for i in range(n):
        lines.append(json.dumps({
            "messages": [
                {"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": f"List files in dir{i}{tag}"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"c{i}", "type": "function",
                     "function": {"name": "ls", "arguments": json.dumps({"path": f"/dir{i}{tag}"})}}]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": "a.py b.py"},
                {"role": "assistant", "content": f"dir{i}{tag} holds a.py and b.py"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "ls", "description": "list a directory",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}],
        }))
    return ("\n".join(lines) + "\n").encode()


class DispatchRecorder:
    """Stands in for ``service.queue.dispatch``: records (stage, job_id) instead of running anything."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def __call__(self, stage: str, job_id: str, *, settings: Any = None) -> str:
        self.calls.append((stage, job_id))
        return f"{job_id}.{stage}"


@dataclass
class Tenant:
    org_id: str
    member: str
    admin: str

    def h(self, admin: bool = False, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin if admin else self.member}", **extra}


METRICS_TOKEN = "test-metrics-token"
METRICS_H = {"Authorization": f"Bearer {METRICS_TOKEN}"}


def make_settings(tmp_path: Path, url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "home": tmp_path / "home", "database_url": url, "artifact_uri": f"file://{tmp_path / 'artifacts'}",
        "pipeline": "inline", "auto_migrate": False, "job_rate_limit_per_minute": 1000,
        "max_upload_bytes": 4 * 1024 * 1024, "metrics_token": METRICS_TOKEN,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def dispatched(monkeypatch: pytest.MonkeyPatch) -> DispatchRecorder:
    rec = DispatchRecorder()
    monkeypatch.setattr(queue, "dispatch", rec)
    return rec


@pytest.fixture
def settings(tmp_path: Path, db_url: str) -> Settings:  # noqa: F811
    return make_settings(tmp_path, db_url)


@pytest.fixture
def app(settings: Settings, dispatched: DispatchRecorder) -> Iterator[FastAPI]:
    application = create_app(settings, sse_poll_s=0.02, sse_max_s=3.0)
    yield application
    application.state.engine.dispose()


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@pytest.fixture
def db(app: FastAPI) -> Iterator[Session]:
    with app.state.sessionmaker() as session:
        yield session


def _tenant(db: Session, name: str) -> Tenant:
    org = create_org(db, name)
    member, _ = create_api_key(db, org, "member", "member")
    admin, _ = create_api_key(db, org, "admin", "admin")
    return Tenant(org.id, member, admin)


@pytest.fixture
def org_a(db: Session) -> Tenant:
    return _tenant(db, "org-a")


@pytest.fixture
def org_b(db: Session) -> Tenant:
    return _tenant(db, "org-b")


def upload(client: TestClient, tenant: Tenant, data: bytes | None = None, name: str = "traces.jsonl") -> dict:
    r = client.post("/v1/datasets", headers=tenant.h(), files=[("file", (name, data or make_traces()))])
    assert r.status_code == 201, r.text
    return r.json()


def job_body(dataset_id: str, **extra: Any) -> dict[str, Any]:
    body = {"dataset_id": dataset_id, "target": {"model": "smollm2-135m-instruct"},
            "recipe": {"max_steps": 10}, "metadata": {"team": "search"}}
    body.update(extra)
    return body


def register_version(app: FastAPI, tenant: Tenant, tmp_path: Path, name: str = "smol-agent",
                     job_id: str | None = None, lineage: dict | None = None, report_dir: Path | None = None,
                     report: dict | None = None, tag: str = "") -> Any:
    """Register a drafter version (a tiny fake checkpoint) through ``service.registry``."""
    from service import registry

    ckpt = tmp_path / f"ckpt-{name}-{job_id}-{tag}"
    ckpt.mkdir(parents=True, exist_ok=True)
    (ckpt / "config.json").write_text(json.dumps({"block_size": 7, "tag": tag}))
    (ckpt / "model.safetensors").write_bytes(b"weights" + tag.encode())
    base_lineage = {"target_model": "smollm2-135m-instruct", "tokenizer_sha256": "t" * 64,
                    "chat_template_sha256": "c" * 64, "code_version": tag}
    with app.state.sessionmaker() as s:
        v = registry.register_version(
            s, app.state.store, tenant.org_id, name, "smollm2-135m-instruct", job_id, ckpt,
            config={"block_size": 7}, lineage={**base_lineage, **(lineage or {})},
            report=report if report is not None else {"tau": 3.1, "baseline_tau": 2.0},
            gate={"passed": True, "reasons": ["gain 55%"]}, report_dir=report_dir)
        return v.version
