"""Alembic environment of tracedraft: the target metadata is ``service.db.Base.metadata``.

The database comes from, in order: ``config.attributes["connection"]`` (an open Connection),
``config.attributes["engine"]``, ``config.attributes["url"]`` (set by ``service.db.session.upgrade``),
``-x url=...`` on the alembic command line, then ``TRACEDRAFT_DATABASE_URL`` / the settings default.
SQLite uses batch mode so ALTERs work there too.
"""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context

from service.db import models  # noqa: F401  (registers every table on the metadata)
from service.db.base import Base, UTCDateTime
from service.db.session import make_engine

config = context.config
target_metadata = Base.metadata

if config.config_file_name is not None and config.attributes.get("configure_logging", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def _url() -> str:
    url = config.attributes.get("url") or context.get_x_argument(as_dictionary=True).get("url")
    if url:
        return url
    from service.settings import get_settings

    return get_settings().database_url


def render_item(type_: str, obj, autogen_context):
    """Render project column types as plain SQLAlchemy types so migrations never import ``service``."""
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _configure(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_item=render_item,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        compare_server_default=True,
    )


def run_migrations_offline() -> None:
    """Emit SQL to stdout (``alembic upgrade head --sql``)."""
    context.configure(
        url=_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        render_as_batch=_url().startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = config.attributes.get("engine")
    owned = engine is None
    if owned:
        engine = make_engine(_url())
    try:
        with engine.connect() as conn:
            _configure(conn)
            with context.begin_transaction():
                context.run_migrations()
            conn.commit()
    finally:
        if owned:
            engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
