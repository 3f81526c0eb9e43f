"""``tracedraft serve`` runs TRACEDRAFT_API_WORKERS uvicorn processes; 0 (the default) means one per CPU
the process may use, read from the affinity mask and a cgroup v2 quota, at most MAX_AUTO_API_WORKERS."""

from __future__ import annotations

import os

from typer.testing import CliRunner

from service.cli import app as cli_app
from service.cli.ops import MAX_AUTO_API_WORKERS, api_workers, usable_cpus
from service.settings import Settings, override_settings


def test_usable_cpus_honours_the_cgroup_quota(tmp_path):
    affinity = len(os.sched_getaffinity(0))
    cpu_max = tmp_path / "cpu.max"
    cpu_max.write_text("max 100000\n")
    assert usable_cpus(cpu_max) == affinity
    cpu_max.write_text("150000 100000\n")  # --cpus 1.5: two processes can use it
    assert usable_cpus(cpu_max) == min(affinity, 2)
    cpu_max.write_text("50000 100000\n")
    assert usable_cpus(cpu_max) == 1
    assert usable_cpus(tmp_path / "missing") == affinity


def test_api_workers_setting():
    assert api_workers(3) == 3
    assert api_workers(0) == min(usable_cpus(), MAX_AUTO_API_WORKERS) >= 1


def test_serve_takes_its_workers_from_the_setting(monkeypatch, tmp_path):
    import uvicorn

    seen: dict = {}
    monkeypatch.setattr(uvicorn, "run", lambda target, **kw: seen.update(target=target, **kw))
    runner = CliRunner()
    with override_settings(Settings(home=tmp_path, api_workers=3)):
        assert runner.invoke(cli_app, ["serve"]).exit_code == 0
        assert seen["workers"] == 3 and seen["target"] == "service.api.app:create_app"
        assert runner.invoke(cli_app, ["serve", "--workers", "5"]).exit_code == 0
        assert seen["workers"] == 5
    with override_settings(Settings(home=tmp_path, api_workers=0)):
        assert runner.invoke(cli_app, ["serve"]).exit_code == 0
        assert seen["workers"] == api_workers(0)


def test_serve_migrates_once_before_starting_its_workers(monkeypatch, tmp_path):
    """A fresh embedded home: the database is at head before uvicorn starts, and the worker processes (which
    inherit the environment) are told not to migrate it again, all at once."""
    import uvicorn

    from service.db.session import current, head

    seen: dict = {}

    def fake_run(target, **kw):
        seen["revision"] = current(settings.database_url)
        seen["auto_migrate"] = os.environ.get("TRACEDRAFT_AUTO_MIGRATE")

    monkeypatch.setattr(uvicorn, "run", fake_run)
    monkeypatch.setenv("TRACEDRAFT_AUTO_MIGRATE", "true")  # restored afterwards
    settings = Settings(home=tmp_path / "fresh", api_workers=2)
    with override_settings(settings):
        r = CliRunner().invoke(cli_app, ["serve"])
    assert r.exit_code == 0, r.output
    assert seen == {"revision": head(), "auto_migrate": "false"}


def test_serve_with_two_workers_on_a_fresh_home_starts_cleanly(tmp_path):
    """The real thing: `tracedraft serve --workers 2` on a new home answers /readyz and logs no traceback."""
    import socket
    import subprocess
    import sys
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACEDRAFT_")}
    env["TRACEDRAFT_HOME"] = str(tmp_path / "home")
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--workers", "2", "--port", str(port)],
                                env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline, ready = time.monotonic() + 60, False
            while time.monotonic() < deadline and not ready and proc.poll() is None:
                try:
                    ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
                except httpx.HTTPError:
                    time.sleep(0.3)
            time.sleep(1.0)  # both workers have started by now
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    text = log.read_text()
    assert ready, text
    assert "Traceback" not in text and "already exists" not in text, text


def test_serve_leaves_the_environment_as_it_found_it(monkeypatch, tmp_path):
    """The worker processes are told to skip migrating through the environment; the serving process's own
    environment is restored once uvicorn returns (an in-process caller, a test, is not left without
    migrations)."""
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda target, **kw: None)
    monkeypatch.delenv("TRACEDRAFT_AUTO_MIGRATE", raising=False)
    with override_settings(Settings(home=tmp_path / "fresh", api_workers=2)):
        assert CliRunner().invoke(cli_app, ["serve"]).exit_code == 0
    assert "TRACEDRAFT_AUTO_MIGRATE" not in os.environ
