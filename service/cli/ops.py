"""Operator verbs: ``serve`` (the API under uvicorn), ``worker`` (a stage worker), ``db upgrade|current``.

``worker`` replaces this process with ``python -m workers.worker`` (exec): the service package never
imports ``workers`` (docs/architecture.md section 1), and signals (SIGTERM from docker stop) then reach the
Celery worker directly.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from service.cli._common import EXIT_CONFLICT, CliError, JsonOpt, console, handled, print_json

db_app = typer.Typer(help="Database migrations.", no_args_is_help=True)

QUEUE_CHOICES = ("cpu", "gpu", "cpu,gpu")


#: Most API processes ``TRACEDRAFT_API_WORKERS=0`` picks: each keeps a database pool of up to 40
#: connections (service.api.app), and PostgreSQL allows 100 by default.
MAX_AUTO_API_WORKERS = 4


def usable_cpus(cpu_max: Path = Path("/sys/fs/cgroup/cpu.max")) -> int:
    """CPUs this process may run on: the affinity mask, lowered by a cgroup v2 CPU quota (``cpu_max``; a
    container's ``--cpus``, where ``os.cpu_count()`` reports the host's CPUs), rounded up; at least 1."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    try:
        quota, period = cpu_max.read_text().split()[:2]  # "max 100000" when unlimited
        if quota != "max":
            n = min(n, -(-int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return max(1, n)


def api_workers(configured: int) -> int:
    """uvicorn worker processes for ``configured`` (``TRACEDRAFT_API_WORKERS``): itself when above 0, else
    one per usable CPU, at most ``MAX_AUTO_API_WORKERS``. Each process runs its own event loop and
    thread pool; Python runs one thread at a time per process, so one process per CPU uses the machine."""
    return configured if configured > 0 else min(usable_cpus(), MAX_AUTO_API_WORKERS)


def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind (0.0.0.0 in a container)."),
    port: int = typer.Option(8000, "--port", help="TCP port."),
    workers: int | None = typer.Option(None, "--workers", min=1,
                                       help="uvicorn worker processes. Default TRACEDRAFT_API_WORKERS "
                                       "(0: one per usable CPU, at most 4)."),
    proxy_headers: bool = typer.Option(True, "--proxy-headers/--no-proxy-headers",
                                       help="Trust X-Forwarded-* from the proxy in front."),
) -> None:
    """Serve the REST API (service.api.app) with uvicorn. Settings come from TRACEDRAFT_* variables.

    Example: tracedraft serve --host 0.0.0.0 --port 8000 --workers 4
    """
    import uvicorn

    from service.settings import ENV_PREFIX, get_settings

    settings = get_settings()
    key, before = f"{ENV_PREFIX}AUTO_MIGRATE", os.environ.get(f"{ENV_PREFIX}AUTO_MIGRATE")
    if settings.auto_migrate:
        # Once, here, before uvicorn starts its processes: each would otherwise migrate a fresh database at
        # the same moment (`table alembic_version already exists`). They inherit the environment: skip it.
        with handled():
            _migrate(settings.database_url)
        os.environ[key] = "false"
    try:
        uvicorn.run("service.api.app:create_app", factory=True, host=host, port=port,
                    workers=workers or api_workers(settings.api_workers), proxy_headers=proxy_headers,
                    log_level=settings.log_level.lower(), access_log=True)
    finally:
        if before is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = before


def worker_argv(queue: str, concurrency: int | None, loglevel: str | None, *, lease_s: float | None = None,
                stale_after_s: float | None = None, reconcile_every_s: float | None = None) -> list[str]:
    """The command ``tracedraft worker`` execs: ``python -m workers.worker --queue Q [...]``."""
    argv = [sys.executable, "-m", "workers.worker", "--queue", queue]
    if concurrency is not None:
        argv += ["--concurrency", str(concurrency)]
    for flag, value in (("--lease", lease_s), ("--stale-after", stale_after_s),
                        ("--reconcile-every", reconcile_every_s)):
        if value is not None:
            argv += [flag, f"{value:g}"]
    if loglevel:
        argv += ["--loglevel", loglevel]
    return argv


def worker(
    queue: str = typer.Option("cpu", "--queue", "-Q", help="cpu, gpu, or cpu,gpu (one machine does both)."),
    concurrency: int | None = typer.Option(None, "--concurrency", "-c", min=1,
                                              help="Pool processes (gpu: forced to one per visible GPU)."),
    loglevel: str | None = typer.Option(None, "--loglevel", help="Default TRACEDRAFT_LOG_LEVEL."),
    lease: float | None = typer.Option(None, "--lease", min=1, help="Seconds of the job lease a running stage "
                                       "renews; a dead worker is noticed this long after its last renewal "
                                       "(default TRACEDRAFT_JOB_LEASE_S, 15)."),
    stale_after: float | None = typer.Option(None, "--stale-after", min=1, help="Re-dispatch a job without a "
                                             "lease whose broker message is unaccounted for this long "
                                             "(default TRACEDRAFT_STALE_AFTER_S, 120)."),
    reconcile_every: float | None = typer.Option(None, "--reconcile-every", min=0.1, help="Seconds between "
                                                 "reconciler passes (default TRACEDRAFT_RECONCILE_EVERY_S, 5)."),
) -> None:
    """Run a stage worker on a queue (Celery, long-task settings, one task per GPU, the reconciler that
    re-dispatches the jobs of dead workers within seconds).

    Example: tracedraft worker --queue gpu --lease 15
    """
    if queue not in QUEUE_CHOICES:
        raise typer.BadParameter(f"must be one of {', '.join(QUEUE_CHOICES)}", param_hint="--queue")
    argv = worker_argv(queue, concurrency, loglevel, lease_s=lease, stale_after_s=stale_after,
                       reconcile_every_s=reconcile_every)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(argv[0], argv)


def _migrate(url: str, revision: str = "head") -> tuple[str | None, str | None]:
    """Migrate the database at ``url`` to ``revision``; returns (revision before, after). Raises CliError
    ``migration_failed`` (one line, not alembic's traceback)."""
    from service.db.session import current, upgrade

    try:
        before = current(url)
        upgrade(url, revision)
        return before, current(url)
    except Exception as e:  # alembic/sqlalchemy: one line, not a traceback
        raise CliError("migration_failed", f"{type(e).__name__}: {str(e).splitlines()[0][:300]}") from e


@db_app.command("upgrade")
def db_upgrade(
    db_url: str | None = typer.Option(None, "--db-url", help="Default: TRACEDRAFT_DATABASE_URL."),
    revision: str = typer.Option("head", "--revision", help="Target revision."),
    as_json: bool = JsonOpt,
) -> None:
    """Migrate the database to the latest schema (idempotent; the stack's `migrate` service runs it).

    Example: tracedraft db upgrade --db-url postgresql+psycopg://tracedraft:secret@localhost/tracedraft
    """
    from service.settings import get_settings

    url = db_url or get_settings().database_url
    with handled(as_json):
        before, after = _migrate(url, revision)
    if as_json:
        print_json({"from": before, "to": after})
    else:
        console.print(f"database at {after}" + ("" if before == after else f" (was {before or 'empty'})"))


@db_app.command("current")
def db_current(
    db_url: str | None = typer.Option(None, "--db-url", help="Default: TRACEDRAFT_DATABASE_URL."),
    as_json: bool = JsonOpt,
) -> None:
    """Print the database's schema revision and the code's head; exits 4 when they differ.

    Example: tracedraft db current --json
    """
    from service.db.session import current, head
    from service.settings import get_settings

    url = db_url or get_settings().database_url
    with handled(as_json):
        try:
            cur = current(url)
        except Exception as e:
            raise CliError("unavailable", f"cannot read the database: {type(e).__name__}: "
                           f"{str(e).splitlines()[0][:300]}") from e
        want = head()
    if as_json:
        print_json({"current": cur, "head": want, "up_to_date": cur == want})
    else:
        console.print(f"current: {cur or 'empty (never migrated)'}\nhead:    {want}")
    if cur != want:
        raise typer.Exit(EXIT_CONFLICT)


engines_app = typer.Typer(help="Serving engines used to measure accepted length.", no_args_is_help=True)


@engines_app.command("install")
def engines_install(
    engine: str = typer.Argument(..., help="The engine to install: llamacpp."),
    version: str = typer.Option("0.3.36", "--version", help="llama-cpp-python sdist whose vendored llama.cpp is built."),
    llama_server: str | None = typer.Option(None, "--llama-server", help="Use this existing llama-server binary."),
    as_json: bool = JsonOpt,
) -> None:
    """Build llama.cpp's llama-server (CPU, with DSpark drafting) once into the cache, or register a binary.

    Takes about 11 minutes on 2 cores the first time; later calls return at once.

    Example: tracedraft engines install llamacpp
    """
    import json
    import subprocess

    if engine != "llamacpp":
        raise typer.BadParameter(f"unknown engine {engine!r}: only llamacpp is installable (sglang is a "
                                 "pip extra on GPU machines: pip install -e '.[sglang]')")
    # The build lives in drafters (stdlib only); run it as a module so service never imports drafters code.
    argv = [sys.executable, "-m", "drafters.engines.llamacpp.build", "--version", version, "--json"]
    if llama_server:
        argv += ["--llama-server", llama_server]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    try:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        result = {"ok": False, "code": "install_failed", "message": (proc.stderr or proc.stdout)[-2000:]}
    if as_json:
        print_json(result)
    elif result.get("ok"):
        console.print(f"llama-server: {result.get('llama_server')}")
    else:
        console.print(f"[red]error[/red] [{result.get('code')}] {result.get('message')}")
    raise typer.Exit(0 if result.get("ok") else 1)
