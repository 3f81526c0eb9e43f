"""Throw-away databases for tests: SQLite files and uniquely named PostgreSQL databases.

Importable by other test packages (``from tests.service._databases import pg_available, ...``).
PostgreSQL: the server on 127.0.0.1:5432 (user postgres, trust auth; override with
``TRACEDRAFT_TEST_PG_URL``, a URL of the maintenance database). Databases are created through the
``postgres`` maintenance database and dropped after.
"""

from __future__ import annotations

import os
import uuid

import sqlalchemy as sa
from sqlalchemy.engine import make_url

PG_ADMIN_URL = os.environ.get("TRACEDRAFT_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def pg_unavailable_reason() -> str | None:
    """None when PostgreSQL answers, else why not (for ``pytest.skip``)."""
    try:
        import psycopg
    except ImportError as e:  # pragma: no cover
        return f"psycopg is not installed: {e}"
    u = make_url(PG_ADMIN_URL)
    try:
        with psycopg.connect(host=u.host, port=u.port or 5432, user=u.username, password=u.password,
                             dbname=u.database, connect_timeout=3):
            return None
    except Exception as e:  # noqa: BLE001
        return f"PostgreSQL not reachable at {u.host}:{u.port or 5432} ({type(e).__name__}: {e})"


def _admin_engine() -> sa.Engine:
    return sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)


def create_pg_database(tag: str = "test") -> str:
    """Create a fresh, uniquely named PostgreSQL database; returns its URL."""
    name = f"tracedraft_{tag}_{uuid.uuid4().hex[:12]}"
    engine = _admin_engine()
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    finally:
        engine.dispose()
    return make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)


def drop_pg_database(url: str) -> None:
    """Drop the database of ``url`` (disconnecting any session still connected to it)."""
    name = make_url(url).database
    engine = _admin_engine()
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        engine.dispose()


def truncate_all(engine: sa.Engine) -> None:
    """Empty every application table (keeps ``alembic_version``)."""
    from service.db.base import Base

    tables = [t.name for t in reversed(Base.metadata.sorted_tables)]
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.exec_driver_sql("TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " RESTART IDENTITY CASCADE")
        else:
            for t in tables:
                conn.exec_driver_sql(f'DELETE FROM "{t}"')
