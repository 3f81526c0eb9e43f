"""Database and artifact-store fixtures of the service tests.

``db_url`` is parametrized over SQLite and PostgreSQL: every test that uses it (directly or through
``engine``/``Session``/``db``) runs on both. PostgreSQL gets one fresh uniquely named database per test
session (migrated to head once, emptied after each test, dropped at the end); the tests skip with the
reason when the server is not reachable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import sessionmaker

from service.db.models import Organization
from service.db.session import make_engine, upgrade
from service.storage import ArtifactStore
from tests.service._databases import (
    create_pg_database,
    drop_pg_database,
    pg_unavailable_reason,
    truncate_all,
)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A migrated PostgreSQL database for the whole test session (dropped at the end)."""
    reason = pg_unavailable_reason()
    if reason:
        pytest.skip(reason)
    url = create_pg_database("svc")
    try:
        upgrade(url)
        yield url
    finally:
        drop_pg_database(url)


@pytest.fixture
def empty_pg_url() -> Iterator[str]:
    """A fresh, empty (never migrated) PostgreSQL database for one test."""
    reason = pg_unavailable_reason()
    if reason:
        pytest.skip(reason)
    url = create_pg_database("mig")
    try:
        yield url
    finally:
        drop_pg_database(url)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """URL of a migrated, empty database: a SQLite file, or the session's PostgreSQL database."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'tracedraft.db'}"
        upgrade(url)
        yield url
        return
    url = request.getfixturevalue("pg_url")
    yield url
    engine = make_engine(url)
    try:
        truncate_all(engine)
    finally:
        engine.dispose()


@pytest.fixture
def engine(db_url: str) -> Iterator[sa.Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


@pytest.fixture
def Session(engine: sa.Engine) -> sessionmaker[OrmSession]:
    return sessionmaker(bind=engine, expire_on_commit=False)


@pytest.fixture
def db(Session: sessionmaker[OrmSession]) -> Iterator[OrmSession]:
    with Session() as session:
        yield session


@pytest.fixture
def org(db: OrmSession) -> Organization:
    o = Organization(name="acme")
    db.add(o)
    db.commit()
    return o


@pytest.fixture
def store(tmp_path: Path) -> ArtifactStore:
    """A local-directory artifact store (the embedded default)."""
    return ArtifactStore(f"file://{tmp_path / 'artifacts'}")
