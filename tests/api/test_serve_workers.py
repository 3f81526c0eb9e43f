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
