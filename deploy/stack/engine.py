"""Which container engine and compose client the stack runs on, and how to call them without hanging.

Docker when its daemon answers; else podman, behind its Docker-compatible API socket (started here when no
socket answers) so that Compose's `depends_on` conditions (service_healthy, service_completed_successfully)
hold: podman-compose ignores health conditions on podman < 4.6 (Debian 12 ships 4.3). On hosts where
podman's defaults fail (crun on hybrid cgroups, RLIMIT_NOFILE that a container may not raise) a
containers.conf of the stack's own selects runc and keeps the host's limits (docs/stack.md, "podman").
Every command runs with a timeout; a timeout is a StackError, never a hang.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from deploy.stack.errors import StackError

REPO = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("TRACEDRAFT_STACK_STATE", Path.home() / ".cache" / "tracedraft-stack"))
INSTALL_PODMAN = "apt-get install -y podman runc iptables docker-compose   (or install Docker Engine with its compose plugin)"


@dataclass
class Engine:
    """A container engine: ``name`` docker or podman, ``env`` for every call (DOCKER_HOST, CONTAINERS_CONF),
    ``compose`` the compose client's argv prefix, ``health_pump`` whether healthchecks need us (podman
    without systemd schedules none)."""

    name: str
    env: dict[str, str] = field(default_factory=dict)
    compose: list[str] = field(default_factory=list)
    health_pump: bool = False

    def run(self, args: Sequence[str], timeout: float, *, check: bool = True, input: str | None = None,
            quiet: bool = True) -> subprocess.CompletedProcess:
        """``<engine> args`` (docker or podman) with the engine's environment; see ``run``."""
        return run([self.name, *args], timeout, env=self.env, check=check, input=input, quiet=quiet)


def deadline_s(default: str) -> float:
    """Seconds a long step may take: TRACEDRAFT_STACK_TIMEOUT_S, else ``default``."""
    return float(os.environ.get("TRACEDRAFT_STACK_TIMEOUT_S", default))


def run(argv: Sequence[str], timeout: float, *, env: dict[str, str] | None = None, check: bool = True,
        input: str | None = None, quiet: bool = True, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """Run ``argv`` with a timeout (seconds). ``quiet`` captures output (else it streams to the terminal).
    Raises StackError ``timeout`` past it, ``engine_failed`` on a non-zero exit when ``check``."""
    try:
        proc = subprocess.run(list(argv), cwd=cwd, env={**os.environ, **(env or {})}, input=input, text=True,
                              capture_output=quiet, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        raise StackError("timeout", f"`{' '.join(argv[:6])}` did not finish in {timeout:.0f} s",
                         "look at the output above; TRACEDRAFT_STACK_TIMEOUT_S raises the limit") from e
    except FileNotFoundError as e:
        raise StackError("engine_failed", f"`{argv[0]}` is not installed", INSTALL_PODMAN) from e
    if check and proc.returncode != 0:
        tail = ((proc.stderr or "") + (proc.stdout or "")).strip()[-2000:] if quiet else ""
        raise StackError("engine_failed", f"`{' '.join(argv[:8])}` exited {proc.returncode}\n{tail}")
    return proc


def docker_daemon_up() -> bool:
    """Whether a Docker daemon answers (a docker CLI alone, without its daemon, is not an engine)."""
    if shutil.which("docker") is None:
        return False
    try:  # podman's Docker-compatible socket (DOCKER_HOST) answers too: its components say "Podman Engine"
        probe = subprocess.run(["docker", "version", "--format", "{{range .Server.Components}}{{.Name}};{{end}}"],
                               capture_output=True, text=True, timeout=15, check=False)
    except subprocess.TimeoutExpired:
        return False
    return probe.returncode == 0 and "podman" not in probe.stdout.lower()


def compose_client(env: dict[str, str]) -> list[str]:
    """The compose client's argv prefix: TRACEDRAFT_COMPOSE (split on spaces), else `docker compose` (v2
    plugin), else `docker-compose` (v2 standalone or Debian's 1.29). Raises StackError ``no_compose``."""
    if os.environ.get("TRACEDRAFT_COMPOSE"):
        return os.environ["TRACEDRAFT_COMPOSE"].split()
    candidates = [["docker", "compose"], ["docker-compose"]]
    for cand in candidates:
        if shutil.which(cand[0]) is None:
            continue
        try:
            probe = subprocess.run([*cand, "version"], capture_output=True, text=True, timeout=30, check=False,
                                   env={**os.environ, **env})
        except subprocess.TimeoutExpired:
            continue
        if probe.returncode == 0:
            return cand
    raise StackError("no_compose", "no compose client: neither `docker compose` nor `docker-compose` runs here",
                     "apt-get install -y docker-compose   (Debian 12's Compose 1.29; or Docker's compose "
                     "plugin, or TRACEDRAFT_COMPOSE=/path/to/docker-compose)")


def podman_conf() -> dict[str, str]:
    """CONTAINERS_CONF for hosts where podman's defaults cannot start a container (empty when they can, or
    when the user set CONTAINERS_CONF): runc instead of crun on cgroup v1/hybrid hosts, and no default
    ulimits (the default RLIMIT_NOFILE may exceed what the host lets a container set)."""
    if os.environ.get("CONTAINERS_CONF") or os.environ.get("TRACEDRAFT_STACK_PODMAN_DEFAULTS"):
        return {}
    hybrid = not Path("/sys/fs/cgroup/cgroup.controllers").exists()
    lines = ["# Written by scripts/stack (deploy/stack/engine.py): see docs/stack.md, \"podman\".",
             "[containers]", "default_ulimits = []"]
    if hybrid and shutil.which("runc"):
        lines += ["[engine]", f'runtime = "{shutil.which("runc")}"']
    STATE.mkdir(parents=True, exist_ok=True)
    conf = STATE / "containers.conf"
    conf.write_text("\n".join(lines) + "\n")
    return {"CONTAINERS_CONF": str(conf)}


def _socket_answers(path: Path) -> bool:
    if not path.exists():
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(3)
            s.connect(str(path))
            s.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
            return b"OK" in s.recv(256)
    except OSError:
        return False


def podman_socket(env: dict[str, str]) -> str:
    """DOCKER_HOST of podman's Docker-compatible API: the running one at STATE/podman.sock, else one started
    here (`podman system service --time=0`, detached, its log in STATE/podman-service.log).
    Raises StackError ``engine_failed`` when it does not answer within 30 s."""
    sock = STATE / "podman.sock"
    if not _socket_answers(sock):
        STATE.mkdir(parents=True, exist_ok=True)
        sock.unlink(missing_ok=True)
        log = open(STATE / "podman-service.log", "ab")  # noqa: SIM115 - handed to the service process
        proc = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{sock}"], stdout=log,
                                stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
                                env={**os.environ, **env})
        (STATE / "podman-service.pid").write_text(str(proc.pid))
        deadline = time.monotonic() + 30
        while not _socket_answers(sock):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise StackError("engine_failed", f"podman's API socket {sock} did not come up; see "
                                 f"{STATE / 'podman-service.log'}", "podman system service --time=0 "
                                 f"unix://{sock}   (run it by hand to see why)")
            time.sleep(0.3)
    return f"unix://{sock}"


def detect() -> Engine:
    """The engine to use: TRACEDRAFT_STACK_ENGINE (docker|podman) if set, else Docker when its daemon
    answers, else podman. Raises StackError ``no_engine`` or ``no_compose``."""
    want = os.environ.get("TRACEDRAFT_STACK_ENGINE", "")
    if want not in ("", "docker", "podman"):
        raise StackError("no_engine", f"TRACEDRAFT_STACK_ENGINE={want!r}: must be docker or podman",
                         "unset TRACEDRAFT_STACK_ENGINE")
    if want in ("", "docker") and docker_daemon_up():
        return Engine("docker", compose=compose_client({}))
    if want == "docker":
        raise StackError("no_engine", "TRACEDRAFT_STACK_ENGINE=docker but no Docker daemon answers `docker info`",
                         "start Docker (systemctl start docker), or unset TRACEDRAFT_STACK_ENGINE to use podman")
    if shutil.which("podman") is None:
        raise StackError("no_engine", "no container engine: no Docker daemon answers and podman is not installed",
                         INSTALL_PODMAN)
    env = podman_conf()
    env["DOCKER_HOST"] = podman_socket(env)
    return Engine("podman", env=env, compose=compose_client(env),
                  health_pump=not Path("/run/systemd/system").is_dir())
