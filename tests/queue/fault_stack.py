"""Private services for the fault-injection suite: a PostgreSQL cluster (initdb/pg_ctl in a temp dir, on a
free port), a Redis server (its own port and directory, append-only on or off) and moto's S3 server.

Nothing here touches the machine's shared PostgreSQL or Redis: each service is started by the test, on
127.0.0.1 and a port of its own, and stopped (its directory removed) at the end. PostgreSQL refuses to run
as root, so as root its commands run as the ``postgres`` user (``runuser``). Its programs are found by ``find_pg_bin``
(``$TRACEDRAFT_TEST_PG_BIN``, ``pg_config --bindir``, ``/usr/lib/postgresql/*/bin``, ``PATH``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

PG_BIN_ENV = "TRACEDRAFT_TEST_PG_BIN"


def _pg_version(bindir: Path) -> tuple[int, ...]:
    """``/usr/lib/postgresql/15/bin`` -> (15,): newest first when several servers are installed."""
    try:
        return tuple(int(p) for p in bindir.parent.name.split("."))
    except ValueError:
        return (0,)


def find_pg_bin() -> Path:
    """The directory holding PostgreSQL's server programs (``initdb``, ``pg_ctl``).

    In order: ``$TRACEDRAFT_TEST_PG_BIN``; ``pg_config --bindir`` (on Debian that is the libpq version's
    directory, which may hold no server, so it must contain them); the Debian/Ubuntu layout
    ``/usr/lib/postgresql/<version>/bin`` (newest version); a directory on ``PATH`` with both. Raises
    RuntimeError saying what was looked at when none has them.
    """
    tried: list[str] = []

    def ok(d: Path | str | None) -> bool:
        if not d:
            return False
        tried.append(str(d))
        return all(os.access(Path(d) / exe, os.X_OK) for exe in ("initdb", "pg_ctl"))

    env = os.environ.get(PG_BIN_ENV)
    if env:
        if ok(env):
            return Path(env)
        raise RuntimeError(f"{PG_BIN_ENV}={env} holds no executable initdb and pg_ctl")
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            bindir = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10,
                                    check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            bindir = ""
        if ok(bindir):
            return Path(bindir)
    for d in sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_pg_version, reverse=True):
        if ok(d):
            return d
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl and ok(Path(initdb).parent) and Path(initdb).parent == Path(pg_ctl).parent:
        return Path(initdb).parent
    raise RuntimeError(
        "PostgreSQL server programs (initdb, pg_ctl) not found; looked in: "
        + (", ".join(tried) or "nothing (no pg_config, no /usr/lib/postgresql/*/bin, none on PATH)")
        + f". Install the PostgreSQL server (Debian: apt-get install postgresql) or set {PG_BIN_ENV} to "
        "the directory holding initdb and pg_ctl."
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not open port {port} in {timeout} s")


def _as_postgres(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def _pg_root() -> Path:
    # Directly under the system temp dir: the postgres user must traverse every parent (pytest's tmp_path
    # parents are private to root).
    import tempfile

    return Path(tempfile.mkdtemp(prefix="tracedraft-pg-"))


@dataclass
class PrivatePostgres:
    """A throw-away PostgreSQL cluster: ``start``, ``restart`` (fast or immediate), ``stop`` (removes it).
    ``bin``: the server programs' directory (``find_pg_bin``)."""

    bin: Path = field(default_factory=find_pg_bin)  # first: a missing server fails before any temp dir
    root: Path = field(default_factory=_pg_root)
    port: int = field(default_factory=free_port)

    @property
    def data(self) -> Path:
        return self.root / "pgdata"

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/tracedraft"

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            _as_postgres([str(self.bin / argv[0]), *argv[1:]]),
            check=check,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def start(self) -> PrivatePostgres:
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        if not self.data.exists():
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        self._pg_ctl("start")
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as c:
            if not c.execute("SELECT 1 FROM pg_database WHERE datname = 'tracedraft'").fetchone():
                c.execute("CREATE DATABASE tracedraft")
        return self

    def _pg_ctl(self, action: str, mode: str = "fast") -> None:
        opts = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        argv = ["pg_ctl", "-D", str(self.data), "-l", str(self.root / "pg.log"), "-w", "-t", "60", "-o", opts]
        if action in ("stop", "restart"):
            argv += ["-m", mode]
        self._run(*argv, action)
        if action != "stop":
            _wait_port(self.port, 30, "PostgreSQL")

    def restart(self, mode: str = "fast") -> None:
        """Restart the server (``immediate`` = a crash: no checkpoint, crash recovery at start)."""
        self._pg_ctl("restart", mode)

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class PrivateRedis:
    """A Redis server of its own (port, directory); ``restart(appendonly=...)`` loses what it must."""

    root: Path
    port: int = field(default_factory=free_port)
    appendonly: bool = True
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        self.root.mkdir(parents=True, exist_ok=True)
        argv = [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.root),
            "--save",
            "",
            "--appendonly",
            "yes" if self.appendonly else "no",
            "--appendfsync",
            "always",
            "--logfile",
            str(self.root / "redis.log"),
        ]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_port(self.port, 20, "Redis")
        return self

    def stop(self) -> None:
        """Stop the server at once (SIGKILL: what is not in the append-only file is gone)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def restart(self, appendonly: bool | None = None, down_s: float = 0.0) -> None:
        self.stop()
        time.sleep(down_s)
        if appendonly is not None:
            self.appendonly = appendonly
        if not self.appendonly:  # nothing on disk: a restart loses every queued message
            for f in self.root.glob("appendonly*"):
                shutil.rmtree(f, ignore_errors=True) if f.is_dir() else f.unlink()
        self.start()


@dataclass
class MotoS3:
    """moto's S3 API server (in memory) on a free port, with one bucket."""

    root: Path
    bucket: str = "tracedraft"
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def storage_options(self) -> dict:
        return self.storage_options_via(self.endpoint)

    def storage_options_via(self, endpoint: str) -> dict:
        """fsspec options for the bucket reached at ``endpoint`` (this server, or a proxy in front of it)."""
        return {
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
        }

    def start(self) -> MotoS3:
        self.root.mkdir(parents=True, exist_ok=True)
        log = open(self.root / "moto.log", "wb")  # noqa: SIM115 - lives as long as the server
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        _wait_port(self.port, 60, "moto")
        import boto3

        boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        ).create_bucket(Bucket=self.bucket)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
