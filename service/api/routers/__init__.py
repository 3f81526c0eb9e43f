"""Routers of the REST API: datasets, jobs, drafters, health, metrics."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

MAX_PAGE = 100


def page_query(session: Session, query: sa.Select[Any], id_col: Any, after: str | None,
               limit: int) -> tuple[list[Any], bool, str | None]:
    """One page of ``query`` ordered newest first by its time-sortable id (``service.db.base.new_id``).

    ``after`` is the ``next_cursor`` of the previous page (the last id it held). Returns
    (rows, has_more, next_cursor).
    """
    if after:
        query = query.where(id_col < after)
    rows = list(session.scalars(query.order_by(id_col.desc()).limit(limit + 1)))
    has_more = len(rows) > limit
    rows = rows[:limit]
    return rows, has_more, (rows[-1].id if has_more and rows else None)
