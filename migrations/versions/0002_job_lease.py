"""job lease: the worker running a job's stage renews a lease on the row; a lapsed lease is a dead worker

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

``lease_owner`` names the worker process holding the job's current stage (``host:pid:task id``);
``lease_expires_at`` is renewed by its heartbeat every third of the lease. The reconciler re-dispatches a
running job whose lease has lapsed (``service.reconciler.requeue_stale_jobs``). ``dispatched_at`` records the
last successful enqueue, so a job whose first dispatch failed (broker down) is re-sent at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("lease_owner", sa.String(length=255), nullable=True))
        batch.add_column(sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("dispatched_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index("ix_jobs_status_lease_expires_at", "jobs", ["status", "lease_expires_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_jobs_status_lease_expires_at", table_name="jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("dispatched_at")
        batch.drop_column("lease_expires_at")
        batch.drop_column("lease_owner")
