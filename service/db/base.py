"""Declarative base, portable column types and id generation for the tracedraft models.

Portability (SQLite embedded, PostgreSQL in the stack):
- ``JSONType``: ``sa.JSON`` everywhere, ``JSONB`` on PostgreSQL.
- ``UTCDateTime``: always timezone-aware UTC in Python; stored naive-UTC on SQLite (which has no time
  zones) and as ``timestamptz`` on PostgreSQL.
- Constraint names follow a fixed naming convention so Alembic (batch mode on SQLite) can alter them.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import DeclarativeBase

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
"""JSON column type: JSONB on PostgreSQL, JSON (text) elsewhere."""


class UTCDateTime(sa.types.TypeDecorator):
    """A timestamp that is always an aware UTC ``datetime`` in Python.

    Raises ValueError when bound a naive datetime (ambiguous: the project never writes local time).
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: sa.Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime bound to a UTC column; use service.db.base.utcnow()")
        value = value.astimezone(dt.UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: dt.datetime | None, dialect: sa.Dialect) -> dt.datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def utcnow() -> dt.datetime:
    """Now, as an aware UTC datetime (the only clock the models use)."""
    return dt.datetime.now(dt.UTC)


_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def new_id(prefix: str) -> str:
    """A new public id ``<prefix>_<26 chars>``: 48-bit millisecond time + 80 random bits (ULID layout).

    Ids sort by creation time (to the millisecond), so ``ORDER BY id`` is a stable cursor order for
    pagination; the random part makes them unguessable across organizations.
    """
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return f"{prefix}_{''.join(reversed(chars))}"


class Base(DeclarativeBase):
    """Declarative base of every tracedraft table (metadata with the naming convention)."""

    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dict[str, Any]: JSONType,
        list[Any]: JSONType,
        dt.datetime: UTCDateTime(),
    }
