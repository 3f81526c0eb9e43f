"""The local stack: docker-compose.yml validates (`docker compose config`, or `docker-compose config`, or
structurally when no compose client is installed), every variable the settings read is documented in the
table of docs/settings.md and set for the api and worker services, the stack's values are valid settings,
the README shows a local server before the stack, and the Dockerfile runs the commands the other CLI tests
drive.

Regenerate the table with: ``.venv/bin/python -m tests.cli.test_stack``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import typing
from pathlib import Path

import pytest
import yaml

from service.settings import Settings

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"
README = REPO / "README.md"
SETTINGS_DOC = REPO / "docs" / "settings.md"
DOCKERFILE = REPO / "Dockerfile"
APP_SERVICES = ("migrate", "api", "worker-cpu", "worker-gpu")
#: Variables the CLI client reads (not settings of the service); documented in the same table.
CLIENT_VARS = {"TRACEDRAFT_API_URL": "Base URL of the API for the CLI's user and admin verbs "
               "(default http://127.0.0.1:8000).",
               "TRACEDRAFT_API_KEY": "API key the CLI sends as `Authorization: Bearer ...`."}
#: Settings whose environment value is JSON (pydantic-settings parses them; Settings(**kw) does not).
#: Settings read from the environment as JSON (lists and mappings).
JSON_SETTINGS = tuple(k for k, f in Settings.model_fields.items() if typing.get_origin(f.annotation) in (list, dict))
TABLE_START, TABLE_END = "<!-- env-table:start -->", "<!-- env-table:end -->"


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _interpolate(value: str) -> str:
    """Compose's ${NAME:-default} with the defaults (what `docker compose config` gives without a .env)."""
    return re.sub(r"\$\{[A-Za-z0-9_]+:-([^}]*)\}", r"\1", value).replace("$$", "$")


def service_env(name: str) -> dict[str, str]:
    env = compose()["services"][name].get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: _interpolate(str(v)) for k, v in env.items()}


def stack_value(var: str) -> str:
    v = service_env("api").get(var, "")
    return v if len(v) <= 60 else v[:57] + "..."


def env_table() -> str:
    """The environment-variable table of docs/settings.md, generated from ``Settings.env_vars()``."""
    rows = ["| Variable | In the stack (docker-compose.yml) | Meaning and default |", "|---|---|---|"]
    for var, desc in {**Settings.env_vars(), **CLIENT_VARS}.items():
        value = stack_value(var).replace("|", "\\|")
        desc = desc.replace("|", "/").replace("<", "&lt;").replace(">", "&gt;")  # <home> is not an HTML tag
        rows.append(f"| `{var}` | {'`' + value + '`' if value else '(not set)'} | {desc} |")
    return "\n".join(rows)


def documented_table() -> str:
    text = SETTINGS_DOC.read_text()
    assert TABLE_START in text and TABLE_END in text, "docs/settings.md has no generated environment table"
    return text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()


def test_compose_file_validates():
    """`docker compose config` (plugin), else Debian's `docker-compose config`; both profiles."""
    for cmd in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(cmd[0]) is None:
            continue
        probe = subprocess.run([*cmd, "version"], capture_output=True, text=True, check=False)
        if probe.returncode != 0:
            continue
        for profile in ([], ["--profile", "gpu"]):
            proc = subprocess.run([*cmd, "-f", str(COMPOSE), *profile, "config", "-q"], cwd=REPO,
                                  capture_output=True, text=True, check=False, timeout=120)
            assert proc.returncode == 0, proc.stderr
        proc = subprocess.run([*cmd, "-f", str(COMPOSE), "--profile", "gpu", "config", "--services"],
                              cwd=REPO, capture_output=True, text=True, check=False, timeout=120)
        assert set(proc.stdout.split()) == {"postgres", "redis", "minio", "minio-init", "migrate", "api",
                                            "worker-cpu", "worker-gpu", "sglang"}
        return
    pytest.skip("no compose client installed (apt-get install docker-compose); the structural test covers it")


def test_compose_structure():
    c = compose()
    s = c["services"]
    assert set(c["volumes"]) >= {"postgres-data", "redis-data", "minio-data", "tracedraft-data"}
    for name in ("postgres", "redis", "minio", "api", "worker-cpu", "worker-gpu", "sglang"):
        assert "healthcheck" in s[name], name
    assert s["migrate"]["command"] == ["db", "upgrade"]
    assert s["api"]["command"][:1] == ["serve"] and "0.0.0.0" in s["api"]["command"]
    # without the gpu profile the CPU worker serves both queues (training and evaluation are gpu-queue stages)
    assert [_interpolate(w) for w in s["worker-cpu"]["command"][:3]] == ["worker", "--queue", "cpu,gpu"]
    assert s["worker-gpu"]["command"] == ["worker", "--queue", "gpu"]
    for app in ("api", "worker-cpu", "worker-gpu"):
        dep = s[app]["depends_on"]
        assert dep["migrate"]["condition"] == "service_completed_successfully"
        assert dep["minio-init"]["condition"] == "service_completed_successfully"
        assert dep["redis"]["condition"] == "service_healthy"
    assert s["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert s["minio-init"]["depends_on"]["minio"]["condition"] == "service_healthy"
    assert "mc mb --ignore-existing" in " ".join(s["minio-init"]["command"])
    assert s["worker-gpu"]["profiles"] == ["gpu"] and s["sglang"]["profiles"] == ["gpu"]
    assert "profiles" not in s["api"] and "profiles" not in s["worker-cpu"]
    for gpu in ("worker-gpu", "sglang"):
        devices = s[gpu]["deploy"]["resources"]["reservations"]["devices"]
        assert len(devices) == 1 and devices[0]["driver"] == "nvidia" and devices[0]["capabilities"] == ["gpu"]
        assert len(devices[0]["device_ids"]) == 1  # one GPU per worker
    assert s["sglang"]["image"].startswith("lmsysorg/sglang:")
    assert s["worker-gpu"]["build"]["args"]["TORCH_INDEX"].endswith("/cu128")
    # the sglang evaluation engine launches SGLang inside the GPU worker (docs/serving.md section 1)
    assert s["worker-gpu"]["build"]["args"]["EXTRAS"] == "[sglang]"


def test_every_setting_is_set_for_the_app_services_and_valid():
    wanted = set(Settings.env_vars())
    for name in APP_SERVICES:
        env = service_env(name)
        assert wanted <= set(env), f"{name} misses {sorted(wanted - set(env))}"
    env = service_env("api")
    # The stack's values parse as settings: PostgreSQL, Celery over Redis, s3:// on MinIO.
    fields = {k.removeprefix("TRACEDRAFT_").lower(): v for k, v in env.items() if k.startswith("TRACEDRAFT_")}
    s = Settings(**{k: (json.loads(v) if k in JSON_SETTINGS else v)
                    for k, v in fields.items()})
    assert s.database_url.startswith("postgresql+psycopg://") and "@postgres:5432/" in s.database_url
    assert s.pipeline == "celery" and s.broker_url == "redis://redis:6379/0" and s.auto_migrate is False
    assert s.artifact_uri.startswith("s3://")
    assert s.artifact_storage_options["endpoint_url"] == "http://minio:9000"
    # Jobs may name the demo target and the model the sglang service serves, and call only that service.
    assert {"smollm2-135m-instruct", "Qwen/Qwen3-4B"} <= set(s.allowed_targets)
    assert s.allowed_sglang_hosts == ["sglang"] and s.allowed_target_dirs == []
    from service.storage import ArtifactStore

    store = ArtifactStore(s.artifact_uri, s.artifact_storage_options)  # s3fs installed and accepts them
    assert type(store.fs).__name__ == "S3FileSystem" and not store.local


def test_settings_doc_documents_every_variable():
    table = documented_table()
    documented = set(re.findall(r"^\| `(TRACEDRAFT_[A-Z0-9_]+)`", table, flags=re.MULTILINE))
    assert documented == set(Settings.env_vars()) | set(CLIENT_VARS), \
        "docs/settings.md table out of date: run .venv/bin/python -m tests.cli.test_stack"
    assert table == env_table(), "docs/settings.md table out of date: run .venv/bin/python -m tests.cli.test_stack"


def test_readme_runs_a_local_server_with_curl_before_the_stack():
    """The README's first REST example runs against the embedded server with a target it allows, before
    compose; it stays a front door (about 200 lines)."""
    text = README.read_text()
    assert len(text.splitlines()) <= 210
    section = text.split("## Run the stack", 1)[1].split("\n## ", 1)[0]
    for needle in ("tracedraft serve", "tracedraft orgs create", "--admin-key", "curl", "docker compose up",
                   "tracedraft jobs submit", "8000", "--profile gpu"):
        assert needle in section, needle
    assert section.index("tracedraft serve") < section.index("curl") < section.index("docker compose up")
    first_job = section.split("/v1/jobs", 1)[1].split("```", 1)[0]
    model = re.search(r'"model": "([^"]+)"', first_job).group(1)
    assert model in Settings().allowed_targets, f"the first REST example names {model}, which serve refuses"


def test_the_stack_smoke_runs_the_readmes_first_rest_example_as_written():
    """`scripts/stack smoke` uploads the same file under the same name and submits the same job as the README's
    first REST example (only the dataset id differs), so the example a user copies is the one that ran."""
    from deploy.stack import smoke

    section = README.read_text().split("## Run the stack", 1)[1].split("\n## ", 1)[0]
    upload = section.split("/v1/datasets", 1)[1].split("curl", 1)[0]
    files = re.findall(r"-F file=@(\S+)", upload)
    assert files == [str(p.relative_to(REPO)) for p in smoke.TRACES]
    assert re.search(r"-F name=(\S+)", upload).group(1) == smoke.DATASET_NAME
    job = section.split("/v1/jobs", 1)[1].split("```", 1)[0]
    spec = json.loads(re.search(r"-d '(\{.*?\})'", job, re.DOTALL).group(1))
    assert spec == smoke.job_spec("ds_...")
    assert spec["recipe"]["checkpoint_every"] < spec["recipe"]["max_steps"]  # a checkpoint to kill the worker at


def test_dockerfile_runs_the_cli_as_non_root():
    text = DOCKERFILE.read_text()
    assert re.search(r"^ARG BASE_IMAGE=", text, flags=re.MULTILINE) and re.search(r"^ARG TORCH_INDEX=", text, flags=re.MULTILINE)
    assert 'ENTRYPOINT ["tracedraft"]' in text
    users = re.findall(r"^USER (\S+)", text, flags=re.MULTILINE)
    assert users and users[-1] not in ("root", "0")
    # the compose commands are CLI verbs the tests drive (tests/cli/test_admin_ops.py)
    import typer.main

    from service.cli import app

    root = typer.main.get_command(app)
    for svc in ("migrate", "api", "worker-cpu", "worker-gpu"):
        cmd = compose()["services"][svc]["command"]
        group = root
        for word in cmd:
            if word.startswith("-") or not hasattr(group, "commands"):
                break
            assert word in group.commands, (svc, word)
            group = group.commands[word]
    ignore = (REPO / ".dockerignore").read_text().split()
    assert ".venv" in ignore and ".git" in ignore


if __name__ == "__main__":  # regenerate the table in place
    text = SETTINGS_DOC.read_text()
    head, rest = text.split(TABLE_START, 1)
    _, tail = rest.split(TABLE_END, 1)
    SETTINGS_DOC.write_text(f"{head}{TABLE_START}\n{env_table()}\n{TABLE_END}{tail}")
    print("docs/settings.md environment table regenerated")
