"""The job database from a worker: one engine per process (a forked pool process builds its own).

``sessions(settings)`` is the ``sessionmaker`` every worker module uses (the stage tasks, the heartbeat,
the reconciler in the worker's parent); keeping it here, apart from ``workers.tasks`` and
``workers.worker``, lets each of those import it without importing the other.
"""

from __future__ import annotations

import os
from typing import Any

import sqlalchemy as sa

from service.settings import Settings, get_settings

_engines: dict[tuple[int, str], sa.Engine] = {}


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

__all__ = ["sessions"]
