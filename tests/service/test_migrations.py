"""Alembic migrations: empty -> head -> base -> head on SQLite and PostgreSQL, and no drift between the
models and the migrations (alembic's compare_metadata against an upgraded database finds nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from service.db import session as dbs
from service.db.base import Base


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def empty_url(request, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fresh.db'}"
    return request.getfixturevalue("empty_pg_url")


def _tables(url: str) -> set[str]:
    engine = dbs.make_engine(url)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def _drift(url: str) -> list:
    engine = dbs.make_engine(url)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
            return compare_metadata(ctx, Base.metadata)
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade(empty_url):
    app_tables = set(Base.metadata.tables)
    assert dbs.current(empty_url) is None
    dbs.upgrade(empty_url)
    assert dbs.current(empty_url) == dbs.head()
    assert _tables(empty_url) == app_tables | {"alembic_version"}
    dbs.upgrade(empty_url)  # already at head: a no-op
    dbs.downgrade(empty_url, "base")
    assert dbs.current(empty_url) is None
    assert _tables(empty_url) - {"alembic_version"} == set()
    dbs.upgrade(empty_url)
    assert dbs.current(empty_url) == dbs.head()
    assert _drift(empty_url) == []


def test_models_and_migrations_do_not_drift(empty_url):
    """Fails when a model changes without a migration: run
    ``alembic -c migrations/alembic.ini -x url=sqlite:////tmp/x.db revision --autogenerate -m ...``."""
    dbs.upgrade(empty_url)
    diffs = _drift(empty_url)
    assert diffs == [], f"models and migrations differ; add a migration: {diffs}"


def test_drift_detector_sees_a_model_change(empty_url):
    """The drift test is not vacuous: an extra column on the metadata is reported."""
    dbs.upgrade(empty_url)
    md = sa.MetaData()
    for table in Base.metadata.tables.values():
        table.to_metadata(md)
    sa.Table("jobs", md, sa.Column("priority", sa.Integer), extend_existing=True)
    engine = dbs.make_engine(empty_url)
    try:
        with engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn), md)
    finally:
        engine.dispose()
    assert [(d[0], d[2], d[3].name) for d in diffs if d[0] == "add_column"] == [("add_column", "jobs", "priority")]


def test_migrations_are_located_through_the_package():
    cfg = dbs.alembic_config("sqlite://")
    import migrations

    assert Path(cfg.get_main_option("script_location")) == Path(migrations.__file__).parent
    assert dbs.head() == "0002"
    versions = Path(migrations.__file__).parent / "versions"
    sources = [p.read_text() for p in versions.glob("*.py")]
    assert sources and all("import service" not in s and "from service" not in s for s in sources), \
        "migration scripts must not import application code (it changes; they must not)"


def test_embedded_default_migrates_on_first_use(tmp_path: Path, monkeypatch):
    from service.settings import override_settings

    url = f"sqlite:///{tmp_path / 'home' / 'tracedraft.db'}"
    with override_settings(home=tmp_path / "home"):
        try:
            engine = dbs.get_engine()
            assert str(engine.url) == url
            assert dbs.current(url) == dbs.head()
            with dbs.session_scope() as s:
                s.execute(sa.text("SELECT count(*) FROM jobs")).scalar_one()
        finally:
            dbs.dispose_engines()


def test_sqlite_pragmas(tmp_path: Path):
    engine = dbs.make_engine(f"sqlite:///{tmp_path / 'p.db'}")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == dbs.SQLITE_BUSY_TIMEOUT_MS
    finally:
        engine.dispose()
