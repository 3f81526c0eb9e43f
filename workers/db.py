"""The job database from a worker: one engine per process (a forked pool process builds its own), and
riding out its restarts.

``sessions(settings)`` is the ``sessionmaker`` every worker module uses (the stage tasks, the heartbeat,
the reconciler in the worker's parent); keeping it here, apart from ``workers.tasks`` and
``workers.worker``, lets each of those import it without importing the other.

``retry_db(fn, ...)``: a database write of a running stage (its progress, events, the commit of its result)
that meets a database outage (a PostgreSQL restart or fail-over: ``is_db_outage``) waits for the database
and runs again, for up to ``DB_OUTAGE_MAX_S``, instead of failing the stage: a blip is no dead worker and
uses no attempt. The log gets one line when the outage starts (no traceback) and the job an event naming
the cause once the database is back.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
import sqlalchemy as sa

from service.settings import Settings, get_settings

log = logging.getLogger(__name__)
T = TypeVar("T")

_engines: dict[tuple[int, str], sa.Engine] = {}

#: How long a stage's database write waits for the database to come back before its error is raised (s).
DB_OUTAGE_MAX_S = 120.0
DB_RETRY_FIRST_S = 0.5
DB_RETRY_MAX_S = 5.0


def sessions(settings: Settings | None = None) -> Any:
    """A ``sessionmaker`` on the job database for this process.

    Engines are per process id: a pool process forked from a parent that already had connections never
    reuses the parent's sockets (SQLAlchemy's fork rule).
    """
    from service.db.session import get_engine, session_factory

    s = settings or get_settings()
    key = (os.getpid(), s.database_url)
    engine = _engines.get(key)
    if engine is None:
        # SQLite (embedded, one process) shares the process-wide engine that auto-migrates the database.
        engine = get_engine(s.database_url) if s.is_sqlite else _new_engine(s)
        _engines[key] = engine
    return session_factory(engine)


def _new_engine(s: Settings) -> sa.Engine:
    from service.db.session import make_engine

    return make_engine(s.database_url, dead_peer_s=s.db_dead_peer_s, pool_size=2, max_overflow=4)


def _after_fork_in_child() -> None:
    for (pid, _), engine in list(_engines.items()):
        if pid != os.getpid():
            engine.dispose(close=False)  # drop the parent's pooled connections without closing them
    _engines.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def is_db_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the database could not be reached or dropped the connection (SQLAlchemy's
    ``OperationalError``/``InterfaceError``, a DBAPI error that invalidated its connection, a socket
    error), as opposed to a statement the database refused. The exceptions it was raised from count too: a
    pool's pre-ping that meets a closed socket can raise a ``ProgrammingError`` while restoring the
    connection's autocommit (psycopg: "connection in transaction status ACTIVE"), masking the outage."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (sa.exc.OperationalError, sa.exc.InterfaceError, ConnectionError,
                            psycopg.OperationalError, psycopg.InterfaceError)):
            return True
        if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def one_line(exc: BaseException) -> str:
    """``Type: first line`` of an error: the driver's own error for a SQLAlchemy one, without the SQL echo
    and the background link SQLAlchemy appends."""
    inner = getattr(exc, "orig", None) or exc
    lines = str(inner).strip().splitlines()
    return f"{type(inner).__name__}: {lines[0][:200] if lines else ''}".rstrip(": ")


def retry_db(fn: Callable[[], T], what: str, *, job_id: str, stage: str | None, make_session: Any,
             max_s: float = DB_OUTAGE_MAX_S, sleep: Callable[[float], None] = time.sleep) -> T:
    """``fn()``, run again while it fails on a database outage (``is_db_outage``), with backoff from
    ``DB_RETRY_FIRST_S`` doubling to ``DB_RETRY_MAX_S``, for up to ``max_s`` seconds; then its error is
    raised. ``fn`` must be a whole unit of work (its own session), safe to run again after a failure.

    ``what`` names the write in the log line (one, when the outage starts) and in the ``warning`` event the
    job gets through ``make_session`` once the database answers again: the cause, how long it lasted,
    ``data = {"stage", "cause": "database_unavailable", "seconds", "error"}``. Other errors propagate at once.
    """
    started: float | None = None
    delay = DB_RETRY_FIRST_S
    first = ""
    while True:
        try:
            out = fn()
        except Exception as exc:
            if not is_db_outage(exc):
                raise
            now = time.monotonic()
            if started is None:
                started, first = now, one_line(exc)
                log.warning("job %s: the database is unavailable during %s (%s); retrying for up to %.0f s",
                            job_id, what, first, max_s)
            if now - started >= max_s:
                raise
            sleep(delay)
            delay = min(DB_RETRY_MAX_S, delay * 2)
            continue
        if started is not None:
            _outage_event(make_session, job_id, stage, what, time.monotonic() - started, first)
        return out


def _outage_event(make_session: Any, job_id: str, stage: str | None, what: str, seconds: float, error: str) -> None:
    """The job's event naming a database outage its stage rode out (best effort: never raises)."""
    from service import jobs

    message = (f"the job database was unavailable for {seconds:.1f} s during {what} ({error}); the stage "
               "waited for it and went on (no attempt used)")
    log.warning("job %s: %s", job_id, message)
    try:
        with make_session() as session:
            jobs.add_event(session, job_id, "warning", "message", message,
                           {"stage": stage, "cause": "database_unavailable", "seconds": round(seconds, 1),
                            "error": error})
    except Exception as exc:  # noqa: BLE001 - the database flapped again: the log line above stays
        log.warning("job %s: could not record the database outage (%s)", job_id, one_line(exc))


__all__ = ["DB_OUTAGE_MAX_S", "is_db_outage", "one_line", "retry_db", "sessions"]
