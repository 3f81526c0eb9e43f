"""Admin verbs on the database (orgs, keys, gc), operator verbs (db, serve, worker), and the CLI's
surface: every verb's --help has an example, `python -m service.cli` works, no torch is imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from tests.cli.conftest import REPO


def test_orgs_and_keys(stack, cli):
    db = ["--db-url", stack.settings.database_url]
    r = cli("orgs", "create", "initech", "--admin-key", "--json", *db, api=False)
    assert r.code == 0, r.err
    created = r.json
    key = created["api_key"]["key"]
    assert key.startswith("td_") and created["api_key"]["role"] == "admin"
    assert cli("orgs", "create", "initech", *db, api=False).code == 4  # already_exists

    r = cli("orgs", "list", "--json", *db, api=False)
    assert {o["name"]: o["active_keys"] for o in r.json} == {"acme": 2, "initech": 1}
    assert "initech" in cli("orgs", "list", *db, api=False).out

    # the new admin key works against the API right away
    assert cli("drafters", "list", "--json", key=key).code == 0

    # create prints the plaintext once, as the last stdout line; list shows the prefix only
    r = cli("keys", "create", "--org", "initech", "--role", "member", "--name", "ci", *db, api=False)
    assert r.code == 0, r.err
    member = r.out.strip().splitlines()[-1]
    assert member.startswith("td_") and len(member) == 46 and "only once" in r.err
    r = cli("keys", "list", "--org", "initech", "--json", *db, api=False)
    listed = r.json
    assert {k["name"] for k in listed} == {"admin", "ci"}
    assert all(k["prefix"] == k["prefix"][:12] and "key" not in k for k in listed)
    assert member not in cli("keys", "list", "--org", "initech", *db, api=False).out
    assert cli("keys", "create", "--org", "initech", "--role", "root", *db, api=False).code == 2
    assert cli("keys", "create", "--org", "nobody", *db, api=False).code == 3

    # revoke by prefix: the key answers 401 (exit 4) from now on; revoking again is a no-op
    prefix = member[:12]
    r = cli("keys", "revoke", prefix, "--org", "initech", "--json", *db, api=False)
    assert r.code == 0 and r.json["revoked_at"]
    assert cli("datasets", "list", key=member).code == 4
    assert cli("keys", "revoke", prefix, *db, api=False).code == 0
    assert cli("keys", "revoke", "td_doesnotexist", *db, api=False).code == 3
    r = cli("keys", "list", "--org", "initech", "--all", "--json", *db, api=False)
    assert len(r.json) == 2
    assert len(cli("keys", "list", "--org", "initech", "--json", *db, api=False).json) == 1


def test_gc(stack, cli):
    import datetime as dt

    stack.register(1)
    orphan = stack.store.put_bytes("jobs/job_gone/shard-0.bin", b"x" * 100)
    path = Path(stack.store.root) / stack.store.key(orphan.uri)
    old = (dt.datetime.now() - dt.timedelta(days=30)).timestamp()
    os.utime(path, (old, old))
    db = ["--db-url", stack.settings.database_url]

    r = cli("gc", "--dry-run", "--json", *db, api=False)
    assert r.code == 0, r.err
    assert r.json["deleted"] == ["jobs/job_gone/shard-0.bin"] and r.json["bytes_freed"] == 100
    assert r.json["kept_referenced"] >= 2 and path.exists()
    r = cli("gc", *db, api=False, input="n\n")
    assert r.code == 4 and path.exists()
    r = cli("gc", "--yes", *db, api=False)
    assert r.code == 0 and "deleted 1 files" in r.out and not path.exists()
    # the registered version is intact
    r = cli("promote", "smol-agent", "1", "--reason", "after gc", "--yes", key="admin")
    assert r.code == 0, r.err


def test_db_upgrade_and_current(tmp_path: Path, cli):
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    r = cli("db", "current", "--db-url", url, "--json", api=False)
    assert r.code == 4 and r.json["current"] is None and r.json["up_to_date"] is False
    r = cli("db", "upgrade", "--db-url", url, "--json", api=False)
    assert r.code == 0, r.err
    assert r.json["from"] is None and r.json["to"]
    r = cli("db", "current", "--db-url", url, api=False)
    assert r.code == 0 and "head" in r.out
    assert cli("db", "upgrade", "--db-url", url, api=False).code == 0  # idempotent
    r = cli("db", "upgrade", "--db-url", "postgresql+psycopg://nobody@127.0.0.1:9/x", api=False)
    assert r.code == 1 and r.err.startswith("error [migration_failed]")


def test_worker_execs_the_worker_module(monkeypatch, cli):
    from service.cli import ops

    calls = []
    monkeypatch.setattr(ops.os, "execvp", lambda exe, argv: calls.append(argv))
    assert cli("worker", "--queue", "gpu", "--concurrency", "2", api=False).code == 0
    assert calls == [[sys.executable, "-m", "workers.worker", "--queue", "gpu", "--concurrency", "2"]]
    assert cli("worker", "--queue", "tpu", api=False).code == 2
    # the module the worker verb execs accepts exactly these options
    proc = subprocess.run(check=False, args=[sys.executable, "-m", "workers.worker", "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "--queue" in proc.stdout and "--concurrency" in proc.stdout


def test_serve_runs_uvicorn_on_the_app_factory(monkeypatch, cli):
    import uvicorn

    seen = {}
    monkeypatch.setattr(uvicorn, "run", lambda target, **kw: seen.update(target=target, **kw))
    assert cli("serve", "--host", "0.0.0.0", "--port", "8080", "--workers", "2", api=False).code == 0
    assert seen["target"] == "service.api.app:create_app" and seen["factory"] is True
    assert (seen["host"], seen["port"], seen["workers"]) == ("0.0.0.0", 8080, 2)
    from service.api import app as api_app

    assert callable(api_app.create_app)


def _leaf_commands(group, prefix: tuple[str, ...] = ()):
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):  # a group (typer vendors its own click)
            yield from _leaf_commands(cmd, (*prefix, name))
        else:
            yield (*prefix, name), cmd


def test_every_verb_has_help_with_an_example():
    from service.cli import app

    root = typer.main.get_command(app)
    leaves = dict(_leaf_commands(root))
    expected = {("run",), ("serve",), ("worker",), ("db", "upgrade"), ("db", "current"),
                ("datasets", "upload"), ("datasets", "validate"), ("datasets", "list"), ("datasets", "show"),
                ("jobs", "submit"), ("jobs", "list"), ("jobs", "show"), ("jobs", "events"), ("jobs", "cancel"),
                ("drafters", "list"), ("drafters", "versions"), ("drafters", "show"), ("drafters", "diff"),
                ("drafters", "export"), ("promote",), ("rollback",), ("alias", "history"), ("orgs", "create"),
                ("orgs", "list"), ("keys", "create"), ("keys", "list"), ("keys", "revoke"), ("gc",)}
    assert expected <= set(leaves)
    for path, cmd in leaves.items():
        assert "Example: tracedraft " + " ".join(path) in (cmd.help or ""), path
        # every user/admin verb offers --json
        if path[0] not in ("run", "serve", "worker"):
            assert any("--json" in p.opts for p in cmd.params), path


@pytest.mark.parametrize("args", [["--help"], ["promote", "--help"], ["datasets", "validate", "--help"]])
def test_python_m_service_cli(args):
    code = ("import runpy, sys; sys.argv = ['tracedraft', *sys.argv[1:]]; "
            "runpy.run_module('service.cli', run_name='__main__')")
    proc = subprocess.run(check=False, args=[sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run(check=False, args=[sys.executable, "-m", "service.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert "Usage: tracedraft" in proc.stdout


def test_cli_import_loads_no_torch_and_no_workers():
    code = ("import sys, service.cli; bad = [m for m in ('torch', 'transformers', 'workers', 'fastapi') "
            "if m in sys.modules]; print(bad); sys.exit(bool(bad))")
    proc = subprocess.run(check=False, args=[sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_usage_errors_exit_2():
    proc = subprocess.run(check=False, args=[sys.executable, "-m", "service.cli", "jobs", "submit"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
