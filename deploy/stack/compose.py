"""The stack through its compose files: checks before `up`, `up` with a deadline, health, `down`.

Two modes on the same docker-compose.yml: ``local`` (default) layers deploy/compose.local.yml over it, on the
images built here (deploy.stack.images), as compose project ``tracedraft-local``; ``registry`` uses the
official images as they are, as project ``tracedraft``. The modes keep their own volumes.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from deploy.stack.engine import REPO, STATE, Engine, deadline_s
from deploy.stack.errors import StackError

#: Published ports: the variable that moves each, and its default (docker-compose.yml).
PORTS = {"TRACEDRAFT_API_PORT": 8000, "MINIO_CONSOLE_PORT": 9001}
#: Named volumes and the uid that must write them (the app runs as 10001; the others' entrypoints chown).
VOLUMES = {"tracedraft-data": "10001", "postgres-data": "0", "redis-data": "0", "minio-data": "0"}
LONG_RUNNING = ("postgres", "redis", "minio", "api", "worker-cpu")


def timeout_s() -> float:
    return deadline_s("900")


@dataclass
class Stack:
    """One compose project of the stack on an engine."""

    engine: Engine
    mode: str = "local"

    @property
    def project(self) -> str:
        return "tracedraft-local" if self.mode == "local" else "tracedraft"

    @property
    def files(self) -> list[str]:
        extra = ["-f", "deploy/compose.local.yml"] if self.mode == "local" else []
        return ["-f", "docker-compose.yml", *extra]

    def compose(self, *args: str, timeout: float = 300, check: bool = True, quiet: bool = True,
                input: str | None = None) -> subprocess.CompletedProcess:
        """``<compose client> -p PROJECT -f ... args`` with the engine's environment."""
        from deploy.stack.engine import run

        return run([*self.engine.compose, "-p", self.project, *self.files, *args], timeout, env=self.engine.env,
                   check=check, quiet=quiet, input=input)

    def container(self, service: str) -> str | None:
        """The running (or stopped) container of a service, by compose's labels; None when there is none."""
        proc = self.engine.run(["ps", "-a", "--filter", f"label=com.docker.compose.project={self.project}",
                                "--filter", f"label=com.docker.compose.service={service}", "--format",
                                "{{.Names}}"], 60, check=False)
        names = proc.stdout.split()
        return names[0] if names else None

    def health(self, service: str) -> str:
        """``healthy``, ``unhealthy``, ``starting``, ``running`` (no healthcheck), ``exited(N)`` or ``absent``."""
        name = self.container(service)
        return "absent" if name is None else container_health(self.engine, name)


def container_health(engine: Engine, name: str) -> str:
    """A container's state as Stack.health words (podman names the health record Healthcheck, Docker Health)."""
    proc = engine.run(["inspect", "--format", "{{json .State}}", name], 60, check=False)
    if proc.returncode != 0:
        return "absent"
    state = json.loads(proc.stdout)
    if not state.get("Running"):
        return f"exited({state.get('ExitCode')})"
    health = (state.get("Health") or state.get("Healthcheck") or {}).get("Status")
    return health or "running"


def check_ports(stack: Stack) -> None:
    """Every published port free, unless this project's own container holds it. Raises StackError
    ``port_in_use`` naming the port, the variable that moves it, and the command."""
    ours = stack.engine.run(["ps", "--filter", f"label=com.docker.compose.project={stack.project}", "--format",
                             "{{.Ports}}"], 60, check=False).stdout
    for var, default in PORTS.items():
        port = int(os.environ.get(var, default))
        if f":{port}->" in ours:
            continue  # this stack's own container holds it
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("0.0.0.0", port))
            except OSError as e:
                if e.errno != errno.EADDRINUSE:
                    raise
                raise StackError("port_in_use", f"port {port} ({var}) is already in use on this machine",
                                 f"{var}={port + 1} scripts/stack up   (or stop what listens: ss -ltnp "
                                 f"'sport = :{port}')") from e


def check_volumes(stack: Stack, image: str) -> None:
    """Each existing volume of the project writable by the uid that writes it (a throwaway container
    touches a file). Fresh volumes are made by the engine and skipped. Raises StackError
    ``volume_not_writable`` with the volume's path on the host and the fix."""
    for volume, uid in VOLUMES.items():
        full = f"{stack.project}_{volume}"
        inspect = stack.engine.run(["volume", "inspect", "--format", "{{.Mountpoint}}", full], 60, check=False)
        if inspect.returncode != 0:
            continue
        probe = stack.engine.run(["run", "--rm", "--user", uid, "--entrypoint", "/bin/sh", "-v", f"{full}:/v",
                                  image, "-c", "touch /v/.tracedraft-write-probe && rm /v/.tracedraft-write-probe"],
                                 120, check=False)
        if probe.returncode != 0:
            where = inspect.stdout.strip()
            raise StackError("volume_not_writable", f"volume {full} ({where}) is not writable by uid {uid}: "
                             f"{(probe.stderr or probe.stdout).strip()[-300:]}",
                             f"chown -R {uid}:{uid} {where} && chmod u+rwx {where}   (or drop it: "
                             "scripts/stack down -v, which deletes the stack's data)")


def wait_healthy(stack: Stack, services: tuple[str, ...], deadline_s: float, log=print) -> float:
    """Wait until every service is healthy (or running, without a healthcheck); returns the seconds waited.
    Raises StackError ``not_healthy`` at the first one that exited or turned unhealthy, or at the deadline,
    with its last log lines."""
    t0 = time.monotonic()
    while True:
        states = {s: stack.health(s) for s in services}
        bad = {s: st for s, st in states.items() if st == "unhealthy" or st.startswith("exited") or st == "absent"}
        if not bad and all(st in ("healthy", "running") for st in states.values()):
            return time.monotonic() - t0
        if bad or time.monotonic() - t0 > deadline_s:
            which = next(iter(bad or {s: st for s, st in states.items() if st != "healthy"}))
            logs = stack.compose("logs", "--no-color", "--tail", "15", which, check=False).stdout
            raise StackError("not_healthy", f"service {which} is {states[which]} after {time.monotonic() - t0:.0f} s "
                             f"({', '.join(f'{s}: {st}' for s, st in states.items())}); its last lines:\n{logs}",
                             f"scripts/stack logs {which}")
        time.sleep(2)


# --- podman without systemd runs no healthcheck on its own: the pump does ------------------------------


def pump_pidfile(stack: Stack) -> Path:
    return STATE / f"health-pump-{stack.project}.pid"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def start_pump(stack: Stack) -> None:
    """Start the health pump (detached) unless it runs: `python -m deploy.stack health-pump PROJECT`."""
    pidfile = pump_pidfile(stack)
    if pidfile.exists() and _alive(int(pidfile.read_text() or 0)):
        return
    STATE.mkdir(parents=True, exist_ok=True)
    log = open(STATE / f"health-pump-{stack.project}.log", "ab")  # noqa: SIM115 - handed to the process
    proc = subprocess.Popen([sys.executable, "-m", "deploy.stack", "health-pump", stack.mode], cwd=REPO,
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, **stack.engine.env})
    pidfile.write_text(str(proc.pid))


def stop_pump(stack: Stack) -> None:
    pidfile = pump_pidfile(stack)
    if pidfile.exists():
        pid = int(pidfile.read_text() or 0)
        if pid and _alive(pid):
            os.kill(pid, signal.SIGTERM)
        pidfile.unlink()


def pump(stack: Stack) -> None:
    """Forever: run each running container's healthcheck when its interval has passed (what podman's systemd
    timers do), so health states and compose's `service_healthy` conditions move."""
    last: dict[str, float] = {}
    while True:
        proc = stack.engine.run(["ps", "--filter", f"label=com.docker.compose.project={stack.project}",
                                 "--format", "{{.Names}}"], 60, check=False)
        for name in proc.stdout.split():
            spec = stack.engine.run(["inspect", "--format", "{{json .Config.Healthcheck}}", name], 60, check=False)
            try:
                hc = json.loads(spec.stdout or "null")
            except json.JSONDecodeError:
                continue
            if not hc or not hc.get("Test") or hc["Test"][0] == "NONE":
                continue
            interval = (hc.get("Interval") or 30_000_000_000) / 1e9
            # a container not yet healthy is checked every 2 s, so `up` waits no longer than it must
            due = 2.0 if container_health(stack.engine, name) != "healthy" else interval
            if time.monotonic() - last.get(name, 0.0) >= due:
                last[name] = time.monotonic()
                try:  # a check past its own timeout is a failed check, as podman's timer would count it
                    stack.engine.run(["healthcheck", "run", name], (hc.get("Timeout") or 30e9) / 1e9 + 30,
                                     check=False)
                except StackError as e:
                    print(f"health-pump: {name}: {e.message}", flush=True)
        time.sleep(1)
