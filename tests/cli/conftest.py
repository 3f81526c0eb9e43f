"""Fixtures of the CLI tests: a real API server (uvicorn, in a thread, on 127.0.0.1 and a free port) over
the real database (SQLite and PostgreSQL, from tests/service), with queue dispatch recorded instead of
run, and a CLI runner that drives ``service.cli.app`` in-process against it.

``stack`` gives: ``url`` (the API), ``settings`` (what the server and the CLI both use), ``Session`` (a
sessionmaker on the same database), ``store`` (its artifact store), ``dispatched`` (the (stage, job id)
pairs the API enqueued), ``org``/``admin_key``/``member_key`` and ``register(...)`` to publish drafter
versions straight through ``service.registry``.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.service.conftest import db_url, pg_url  # noqa: F401 - fixtures reused (SQLite + PostgreSQL)

TARGET = "HuggingFaceTB/SmolLM2-135M-Instruct"
LINEAGE = {"target_model": TARGET, "target_revision": "main", "tokenizer_sha256": "t" * 64,
           "chat_template_sha256": "c" * 64, "target_layer_ids": [1, 8, 15, 22, 28], "block_size": 7,
           "dataset_sha256s": ["d" * 64], "base_version": None, "code_version": "0.1.0"}
PASSED = {"passed": True, "reasons": ["tau +12.0% (95% CI 8.1..15.7)"]}
FAILED = {"passed": False, "reasons": ["tau gain 0.4% < min_gain 2%"]}
REPO = Path(__file__).resolve().parents[2]
EXAMPLE_TRACE = REPO / "examples" / "traces" / "llamafactory__glaive_toolcall_en_demo.json"


@dataclass
class Result:
    """What one CLI invocation gave: exit code, stdout, stderr, and stdout parsed as JSON when it is."""

    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Stack:
    url: str
    settings: Any
    Session: Any
    store: Any
    tmp: Path
    dispatched: list[tuple[str, str]] = field(default_factory=list)
    org: Any = None
    admin_key: str = ""
    member_key: str = ""

    def register(self, seed: int, *, name: str = "smol-agent", gate: dict | None = PASSED,
                 lineage: dict | None = None, org: Any = None, report: dict | None = None) -> Any:
        """Register a drafter version from a fresh checkpoint (config.json + model.safetensors)."""
        from service import jobs, registry

        ckpt = self.tmp / f"ckpt{seed}"
        ckpt.mkdir(parents=True, exist_ok=True)
        (ckpt / "config.json").write_text(json.dumps({"block_size": 7, "seed": seed}))
        (ckpt / "model.safetensors").write_bytes(os.urandom(4096) + bytes([seed % 256]))
        with self.Session() as s:
            job = jobs.create_job(s, org or self.org, None, {"seed": seed})
            v = registry.register_version(
                s, self.store, org or self.org, name, TARGET, job.id, ckpt,
                config={"block_size": 7, "lr": 1e-4 * seed}, lineage=lineage or LINEAGE,
                report=report or {"tau": 3.0 + seed / 10}, gate=gate,
            )
            return v.version


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@pytest.fixture
def stack(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:  # noqa: F811
    """The API on a free port over ``db_url`` (both dialects), dispatch recorded; settings overridden for
    the CLI process too (the break-glass and export paths read them)."""
    import uvicorn

    from service import auth, queue
    from service.api.app import create_app
    from service.db.session import session_factory
    from service.settings import Settings, override_settings
    from service.storage import ArtifactStore

    settings = Settings(home=tmp_path / "home", database_url=db_url, artifact_uri=f"file://{tmp_path / 'artifacts'}",
                        pipeline="inline", job_rate_limit_per_minute=0,
                        # the targets the CLI tests submit (the API refuses targets it was not told to allow)
                        allowed_targets=["smollm2-135m-instruct", "HuggingFaceTB/*", "m", "m2"])
    dispatched: list[tuple[str, str]] = []
    monkeypatch.setattr(queue, "dispatch", lambda stage, job_id, **_: dispatched.append((stage, job_id)) or "t")
    for var in ("TRACEDRAFT_API_URL", "TRACEDRAFT_API_KEY"):
        monkeypatch.delenv(var, raising=False)

    with override_settings(settings):
        app = create_app(settings, sse_poll_s=0.05, sse_max_s=30)
        sock = _free_socket()
        port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline, "the API server did not start"
            time.sleep(0.02)
        Session = session_factory(db_url)
        st = Stack(url=f"http://127.0.0.1:{port}", settings=settings, Session=Session,
                   store=ArtifactStore.from_settings(settings), tmp=tmp_path, dispatched=dispatched)
        with Session() as s:
            st.org = auth.create_org(s, "acme").id
            st.admin_key, _ = auth.create_api_key(s, st.org, "ops", role="admin")
            st.member_key, _ = auth.create_api_key(s, st.org, "dev", role="member")
        try:
            yield st
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            sock.close()
            Session.kw["bind"].dispose()


@pytest.fixture
def cli(stack: Stack, monkeypatch: pytest.MonkeyPatch):
    """``cli(*args, key="member"|"admin"|None|<key>, input=None, api=True)`` -> Result.

    Runs ``tracedraft`` in-process (the same Typer app the console script runs) with --api-url/--api-key
    given through the environment, like a user's shell; wide rich consoles so table cells stay whole.
    """
    from service.cli import _common
    from service.cli import app as cli_app

    monkeypatch.setattr(_common.console, "width", 250)
    monkeypatch.setattr(_common.err_console, "width", 250)
    runner = CliRunner()

    def run(*args: str, key: str | None = "member", input: str | None = None, api: bool = True) -> Result:
        env: dict[str, str | None] = {"TRACEDRAFT_API_URL": None, "TRACEDRAFT_API_KEY": None}
        if api:
            env["TRACEDRAFT_API_URL"] = stack.url
            env["TRACEDRAFT_API_KEY"] = {"member": stack.member_key, "admin": stack.admin_key}.get(key, key) \
                if key else None
        r = runner.invoke(cli_app, [str(a) for a in args], env=env, input=input, catch_exceptions=False)
        return Result(r.exit_code, r.stdout, r.stderr)

    return run
