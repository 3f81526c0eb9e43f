"""Engines, sessions and migrations.

- ``make_engine(url)``: SQLite gets WAL, foreign keys and a busy timeout (so concurrent writers wait
  instead of failing); PostgreSQL gets pre-ping and dead-peer detection on both ends of each connection
  (``pg_keepalive_args``). ``sqlite://`` (in-memory) shares one connection.
- ``session_factory(url_or_engine)``: a ``sessionmaker`` with ``expire_on_commit=False`` (rows stay usable
  after commit, e.g. to serialize in the API).
- ``get_engine()`` / ``get_sessionmaker()`` / ``session_scope()``: process-wide, from the settings; the
  embedded default (SQLite, ``auto_migrate``) migrates the database to head on first use.
- ``upgrade(url)``, ``downgrade(url)``, ``current(url)``, ``head()``: Alembic, programmatically, with the
  migration scripts located inside the installed ``migrations`` package.

SQLite transactions: the pysqlite driver only opens a transaction at the first write, so a
read-modify-write that must not race takes a write lock first (``lock_row``), then re-reads.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

SQLITE_BUSY_TIMEOUT_MS = 30_000


def _sqlite_on_connect(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys=ON")
    # WAL: readers never block the writer and vice versa; NORMAL sync is durable across app crashes.
    mode = cur.execute("PRAGMA journal_mode=WAL").fetchone()
    if mode and str(mode[0]).lower() == "wal":
        cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def shares_one_connection(url: str | sa.URL) -> bool:
    """Whether every thread of the process uses one connection: an in-memory SQLite database (StaticPool)."""
    u = make_url(url)
    return u.get_backend_name() == "sqlite" and u.database in (None, "", ":memory:")


def make_engine(url: str | sa.URL, *, dead_peer_s: float | None = None, **kwargs: Any) -> sa.Engine:
    """Create an Engine for ``url`` with the project's per-dialect settings.

    SQLite file URLs get their parent directory created. PostgreSQL through libpq (psycopg, psycopg2)
    drops a connection whose peer stopped answering after about ``dead_peer_s`` seconds (default
    ``settings.db_dead_peer_s``; 0 leaves the operating system's ~2 h): see ``pg_keepalive_args``. Extra
    ``kwargs`` go to ``sa.create_engine``; keys the caller gives in ``connect_args`` or the URL win.
    """
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        connect_args = dict(kwargs.pop("connect_args", {}))
        connect_args.setdefault("check_same_thread", False)
        connect_args.setdefault("timeout", SQLITE_BUSY_TIMEOUT_MS / 1000)
        if shares_one_connection(u):
            kwargs.setdefault("poolclass", StaticPool)
        elif not str(u.database).startswith("file:"):
            Path(u.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(u, connect_args=connect_args, **kwargs)
        event.listen(engine, "connect", _sqlite_on_connect)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    if u.get_backend_name() == "postgresql" and u.get_driver_name() in LIBPQ_DRIVERS:
        if dead_peer_s is None:
            from service.settings import get_settings

            dead_peer_s = get_settings().db_dead_peer_s
        given = {**u.query, **kwargs.get("connect_args", {})}
        extra = {k: v for k, v in pg_keepalive_args(dead_peer_s, given.get("options")).items()
                 if k == "options" or k not in given}
        kwargs["connect_args"] = {**kwargs.get("connect_args", {}), **extra}
    return sa.create_engine(u, **kwargs)


#: SQLAlchemy PostgreSQL drivers built on libpq, which take its keepalive connection parameters.
LIBPQ_DRIVERS = frozenset({"psycopg", "psycopg_async", "psycopg2", "psycopg2cffi"})


def pg_keepalive_args(dead_peer_s: float, options: str | None = None) -> dict[str, Any]:
    """libpq connection parameters that drop a connection to a dead peer in about ``dead_peer_s`` seconds.

    Why both ends: a worker machine that loses power or its network never closes its connections, so
    the server keeps that worker's backend, and its ``StageLock`` advisory lock, until TCP gives up
    (~2 h with the OS defaults). Client side (``keepalives*``, ``tcp_user_timeout``) the worker's own
    calls fail fast when the database vanishes; server side (``options``: ``-c tcp_keepalives_*``,
    ``-c tcp_user_timeout``, session settings PostgreSQL >= 12 accepts from any user) the server probes
    the worker and ends its backend, releasing the lock. Probes start after a third of ``dead_peer_s``,
    three of them about a ninth apart; ``tcp_user_timeout`` (ms) bounds unacknowledged data to
    ``dead_peer_s``. Whole seconds, at least 1 (libpq's unit). ``options``, the caller's own, are kept and
    come after ours, so their ``-c`` settings win. Returns {} for ``dead_peer_s`` <= 0 (OS defaults).
    """
    if dead_peer_s <= 0:
        return {}
    idle = max(1, round(dead_peer_s / 3))
    interval = max(1, round(dead_peer_s / 9))
    count = 3
    user_timeout_ms = max(1000, round(dead_peer_s * 1000))
    server = (f"-c tcp_keepalives_idle={idle} -c tcp_keepalives_interval={interval} "
              f"-c tcp_keepalives_count={count} -c tcp_user_timeout={user_timeout_ms}")
    return {
        "keepalives": 1,
        "keepalives_idle": idle,
        "keepalives_interval": interval,
        "keepalives_count": count,
        "tcp_user_timeout": user_timeout_ms,
        "options": f"{server} {options}" if options else server,
    }


def session_factory(bind: str | sa.URL | sa.Engine) -> sessionmaker[Session]:
    """A ``sessionmaker`` bound to ``bind`` (a URL or an Engine); sessions keep rows loaded after commit."""
    engine = bind if isinstance(bind, sa.Engine) else make_engine(bind)
    return sessionmaker(bind=engine, expire_on_commit=False)


# --- process-wide engine from the settings ------------------------------------------------------------

_engine_lock = threading.Lock()
_engines: dict[str, sa.Engine] = {}


def get_engine(url: str | None = None) -> sa.Engine:
    """The process-wide Engine for ``url`` (default: ``settings.database_url``), created once.

    When ``settings.auto_migrate`` is on (default for SQLite) the database is upgraded to head first.
    """
    from service.settings import get_settings

    settings = get_settings()
    url = url or settings.database_url
    with _engine_lock:
        engine = _engines.get(url)
        if engine is None:
            engine = make_engine(url)
            if settings.auto_migrate:
                _upgrade_tolerating_races(engine)
            _engines[url] = engine
    return engine


def _upgrade_tolerating_races(engine: sa.Engine) -> None:
    """Upgrade to head; when another process migrated at the same moment (table already exists),
    accept the result if the database ended at head."""
    try:
        upgrade(engine)
    except sa.exc.SQLAlchemyError:
        if current(engine) != head():
            raise


def get_sessionmaker(url: str | None = None) -> sessionmaker[Session]:
    """``sessionmaker`` over ``get_engine(url)``."""
    return sessionmaker(bind=get_engine(url), expire_on_commit=False)


@contextlib.contextmanager
def session_scope(url: str | None = None) -> Iterator[Session]:
    """A session that commits at the end of the block and rolls back on an exception."""
    with get_sessionmaker(url)() as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def dispose_engines() -> None:
    """Close every process-wide engine (tests; after fork in workers)."""
    with _engine_lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()


# --- row locks ----------------------------------------------------------------------------------------


def lock_row(session: Session, model: type, pk: Any) -> Any:
    """Lock one row for the rest of the transaction and return it freshly loaded (or None).

    PostgreSQL: ``SELECT ... FOR UPDATE``. SQLite: a no-op ``UPDATE`` of the row takes the database write
    lock (waiting up to the busy timeout) before the row is re-read, so concurrent read-modify-write
    sequences are serialized. Must be called before the transaction writes anything else it depends on.
    """
    bind = session.get_bind()
    table = model.__table__
    pk_col = next(iter(table.primary_key.columns))
    if bind.dialect.name == "sqlite":
        session.execute(sa.update(table).where(pk_col == pk).values({pk_col.name: pk_col}))
        return session.get(model, pk, populate_existing=True)
    return session.scalars(
        sa.select(model).where(pk_col == pk).with_for_update().execution_options(populate_existing=True)
    ).one_or_none()


# --- migrations ---------------------------------------------------------------------------------------


def _migrations_dir() -> str:
    return str(resources.files("migrations"))


def alembic_config(url: str | sa.URL | sa.Engine | None = None) -> Any:
    """An Alembic ``Config`` pointing at the packaged migrations (works from an installed wheel).

    The database is passed through ``config.attributes`` (not the ini), so URLs with ``%`` are safe.
    """
    from alembic.config import Config

    ini = resources.files("migrations") / "alembic.ini"
    cfg = Config(str(ini)) if ini.is_file() else Config()
    cfg.set_main_option("script_location", _migrations_dir())
    if isinstance(url, sa.Engine):
        cfg.attributes["engine"] = url
    elif url is not None:
        cfg.attributes["url"] = str(url) if isinstance(url, str) else url.render_as_string(False)
    cfg.attributes["configure_logging"] = False
    return cfg


def upgrade(url: str | sa.URL | sa.Engine, revision: str = "head") -> None:
    """Migrate the database to ``revision`` (default head). Safe to call when already there."""
    from alembic import command

    command.upgrade(alembic_config(url), revision)


def downgrade(url: str | sa.URL | sa.Engine, revision: str = "base") -> None:
    """Migrate the database down to ``revision`` (default base: no tables)."""
    from alembic import command

    command.downgrade(alembic_config(url), revision)


def current(url: str | sa.URL | sa.Engine) -> str | None:
    """The database's current Alembic revision, or None when it was never migrated."""
    from alembic.runtime.migration import MigrationContext

    engine = url if isinstance(url, sa.Engine) else make_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        if engine is not url:
            engine.dispose()


@functools.cache
def head() -> str:
    """The head revision of the packaged migrations."""
    from alembic.script import ScriptDirectory

    rev = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert rev is not None, "no migration scripts found"
    return rev
