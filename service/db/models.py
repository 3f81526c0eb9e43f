"""SQLAlchemy 2.0 models of the control plane (docs/architecture.md sections 2-4).

Tables: organizations, api_keys, datasets, jobs, job_events (append-only), drafters, drafter_versions
(immutable), aliases (mutable pointers) and alias_events (their audit history).

Conventions:
- Public ids are strings ``<prefix>_<ulid>`` (``service.db.base.new_id``) that sort by creation time.
- Every row of a tenant carries ``org_id``; the API filters every query by it.
- Timestamps are aware UTC datetimes. JSON columns hold plain dicts; assign a new dict to change one
  (in-place mutation is not tracked).
- Status and stage columns are plain strings whose allowed values are the ``StrEnum``s below.
"""

from __future__ import annotations

import datetime as dt
import enum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column, relationship

from service.db.base import Base, new_id, utcnow

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a 64-bit identity.
BigIntPK = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


class Role(enum.StrEnum):
    """API key role: admins can move aliases (promote/rollback) and manage keys."""

    member = "member"
    admin = "admin"


class DatasetStatus(enum.StrEnum):
    validating = "validating"
    ready = "ready"
    failed = "failed"


class JobStatus(enum.StrEnum):
    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"

    @property
    def terminal(self) -> bool:
        """True for succeeded, failed and cancelled (no further transitions)."""
        return self in TERMINAL_STATUSES


TERMINAL_STATUSES = frozenset({JobStatus.succeeded, JobStatus.failed, JobStatus.cancelled})


class Stage(enum.StrEnum):
    """Pipeline stages in execution order (docs/architecture.md section 2, steps 2 and 4-7)."""

    validating = "validating"
    preparing = "preparing"
    regenerating = "regenerating"
    training = "training"
    evaluating = "evaluating"
    registering = "registering"


STAGE_ORDER: tuple[Stage, ...] = tuple(Stage)


class EventLevel(enum.StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


class EventType(enum.StrEnum):
    message = "message"
    metrics = "metrics"
    stage = "stage"
    progress = "progress"


class Organization(Base):
    """A tenant. Everything else belongs to exactly one organization."""

    __tablename__ = "organizations"

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True, default=lambda: new_id("org"))
    name: Mapped[str] = mapped_column(sa.String(200), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)

    api_keys: Mapped[list[ApiKey]] = relationship(back_populates="org", cascade="all, delete-orphan")


class ApiKey(Base):
    """An API key, stored as a hash only (``service.auth``); ``prefix`` is the visible start of the key."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True, default=lambda: new_id("key"))
    org_id: Mapped[str] = mapped_column(sa.ForeignKey("organizations.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(sa.String(200), default="")
    prefix: Mapped[str] = mapped_column(sa.String(32), index=True)
    key_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    role: Mapped[str] = mapped_column(sa.String(16), default=Role.member)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    last_used_at: Mapped[dt.datetime | None]
    revoked_at: Mapped[dt.datetime | None]

    org: Mapped[Organization] = relationship(back_populates="api_keys")

    @property
    def is_admin(self) -> bool:
        return self.role == Role.admin

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class Dataset(Base):
    """An uploaded trace file: raw bytes kept content-addressed (``raw/<sha256>``) whatever the parser says.

    ``report`` is the ``ValidationReport.to_dict()`` of drafters.traces; ``counts`` its headline counts
    (conversations, calls, tool calls, train/heldout, ...) for listing without loading the report.
    """

    __tablename__ = "datasets"

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True, default=lambda: new_id("ds"))
    org_id: Mapped[str] = mapped_column(sa.ForeignKey("organizations.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(sa.String(300), default="")
    sha256: Mapped[str] = mapped_column(sa.String(64), index=True)
    raw_uri: Mapped[str] = mapped_column(sa.Text)
    canonical_uri: Mapped[str | None] = mapped_column(sa.Text)
    canonical_sha256: Mapped[str | None] = mapped_column(sa.String(64))
    format: Mapped[str | None] = mapped_column(sa.String(64))
    compression: Mapped[str | None] = mapped_column(sa.String(16))
    status: Mapped[str] = mapped_column(sa.String(16), default=DatasetStatus.validating)
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)
    report: Mapped[dict[str, Any] | None]
    counts: Mapped[dict[str, Any]] = mapped_column(default=dict)
    error: Mapped[dict[str, Any] | None]
    size_bytes: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    __table_args__ = (sa.Index("ix_datasets_org_id_created_at", "org_id", "created_at"),)


class Job(Base):
    """A fine-tuning job; the database is its source of truth (docs/architecture.md section 3).

    ``result`` maps stage name -> that stage's output (e.g. ``{"preparing": {"shards_uri": ...},
    "training": {"checkpoints": [...]}, "registering": {"version": 3}}``). ``error`` is
    ``{"code", "message", "param"}``. ``event_seq`` is the last sequence number handed to a job event
    (``service.jobs.add_event``). ``(org_id, idempotency_key)`` is unique; ``request_hash`` is the
    sha256 of the canonical request body the key was first used with. ``lease_owner`` /
    ``lease_expires_at``: the worker running the current stage and until when its heartbeat vouches for
    it (a lapsed lease is a dead worker); ``dispatched_at``: the last successful enqueue.
    """

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True, default=lambda: new_id("job"))
    org_id: Mapped[str] = mapped_column(sa.ForeignKey("organizations.id", ondelete="CASCADE"))
    dataset_id: Mapped[str | None] = mapped_column(
        sa.ForeignKey("datasets.id", ondelete="SET NULL"), index=True
    )
    status: Mapped[str] = mapped_column(sa.String(16), default=JobStatus.queued)
    stage: Mapped[str | None] = mapped_column(sa.String(16))
    attempts: Mapped[int] = mapped_column(default=0)
    max_attempts: Mapped[int] = mapped_column(default=3)
    progress: Mapped[float] = mapped_column(sa.Float, default=0.0)
    eta_seconds: Mapped[float | None] = mapped_column(sa.Float)
    error: Mapped[dict[str, Any] | None]
    cancel_requested: Mapped[bool] = mapped_column(default=False)
    spec: Mapped[dict[str, Any]] = mapped_column(default=dict)
    result: Mapped[dict[str, Any]] = mapped_column(default=dict)
    user_metadata: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
    idempotency_key: Mapped[str | None] = mapped_column(sa.String(255))
    request_hash: Mapped[str | None] = mapped_column(sa.String(64))
    worker_task_id: Mapped[str | None] = mapped_column(sa.String(255))
    lease_owner: Mapped[str | None] = mapped_column(sa.String(255))
    lease_expires_at: Mapped[dt.datetime | None]
    dispatched_at: Mapped[dt.datetime | None]
    event_seq: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    started_at: Mapped[dt.datetime | None]
    finished_at: Mapped[dt.datetime | None]

    dataset: Mapped[Dataset | None] = relationship()
    events: Mapped[list[JobEvent]] = relationship(
        back_populates="job", order_by="JobEvent.seq", cascade="all, delete-orphan", passive_deletes=True
    )

    __table_args__ = (
        sa.UniqueConstraint("org_id", "idempotency_key"),
        sa.Index("ix_jobs_org_id_created_at", "org_id", "created_at"),
        sa.Index("ix_jobs_org_id_status", "org_id", "status"),
        sa.Index("ix_jobs_status_lease_expires_at", "status", "lease_expires_at"),
    )

    @property
    def terminal(self) -> bool:
        """True once the job is succeeded, failed or cancelled."""
        return self.status in TERMINAL_STATUSES


class JobEvent(Base):
    """One append-only event of a job; ``seq`` is 1, 2, 3, ... per job with no gaps or repeats."""

    __tablename__ = "job_events"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(sa.ForeignKey("jobs.id", ondelete="CASCADE"))
    seq: Mapped[int]
    ts: Mapped[dt.datetime] = mapped_column(default=utcnow)
    level: Mapped[str] = mapped_column(sa.String(16), default=EventLevel.info)
    type: Mapped[str] = mapped_column(sa.String(16), default=EventType.message)
    message: Mapped[str] = mapped_column(sa.Text, default="")
    data: Mapped[dict[str, Any] | None]

    job: Mapped[Job] = relationship(back_populates="events")

    __table_args__ = (sa.UniqueConstraint("job_id", "seq"),)


class Drafter(Base):
    """A named drafter of an organization for one target model; holds versions and aliases.

    Its row is the lock that serializes alias moves (``service.registry.promote``).
    """

    __tablename__ = "drafters"

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True, default=lambda: new_id("drf"))
    org_id: Mapped[str] = mapped_column(sa.ForeignKey("organizations.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(sa.String(200))
    target_model: Mapped[str] = mapped_column(sa.String(500))
    description: Mapped[str] = mapped_column(sa.Text, default="")
    lock_counter: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    versions: Mapped[list[DrafterVersion]] = relationship(
        back_populates="drafter", order_by="DrafterVersion.version"
    )
    aliases: Mapped[list[Alias]] = relationship(back_populates="drafter", order_by="Alias.name")

    __table_args__ = (sa.UniqueConstraint("org_id", "name"),)


class DrafterVersion(Base):
    """An immutable registered drafter version (docs/architecture.md section 4).

    ``files`` maps file name (relative to ``checkpoint_uri``) -> sha256; ``lineage`` holds job id, dataset
    sha256s, base version, target model and revision, ``tokenizer_sha256``, ``chat_template_sha256``,
    target layer ids, block size and code version; ``gate`` is the promotion-gate decision
    (``{"passed": bool, "reasons": [...], ...}``). ``job_id`` is UNIQUE: a job registers at most once.
    ``report_uri`` + ``report_files`` (name -> sha256) locate the rendered report (HTML, PNG plots).
    """

    __tablename__ = "drafter_versions"

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True, default=lambda: new_id("dv"))
    drafter_id: Mapped[str] = mapped_column(sa.ForeignKey("drafters.id", ondelete="CASCADE"))
    version: Mapped[int]
    job_id: Mapped[str | None] = mapped_column(sa.ForeignKey("jobs.id", ondelete="SET NULL"), unique=True)
    checkpoint_uri: Mapped[str] = mapped_column(sa.Text)
    files: Mapped[dict[str, Any]] = mapped_column(default=dict)
    size_bytes: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    config: Mapped[dict[str, Any]] = mapped_column(default=dict)
    lineage: Mapped[dict[str, Any]] = mapped_column(default=dict)
    report: Mapped[dict[str, Any] | None]
    report_uri: Mapped[str | None] = mapped_column(sa.Text)
    report_files: Mapped[dict[str, Any]] = mapped_column(default=dict)
    gate: Mapped[dict[str, Any] | None]
    created_by: Mapped[str] = mapped_column(sa.String(200), default="system")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)

    drafter: Mapped[Drafter] = relationship(back_populates="versions")

    __table_args__ = (sa.UniqueConstraint("drafter_id", "version"),)

    @property
    def ref(self) -> str:
        """``name@v<version>``, the reference form ``service.registry.resolve_ref`` accepts."""
        return f"{self.drafter.name}@v{self.version}"


class Alias(Base):
    """A mutable pointer (``champion``, ``challenger``, any name) from a drafter to one of its versions."""

    __tablename__ = "aliases"

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True, default=lambda: new_id("als"))
    drafter_id: Mapped[str] = mapped_column(sa.ForeignKey("drafters.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(sa.String(100))
    version_id: Mapped[str] = mapped_column(sa.ForeignKey("drafter_versions.id"), index=True)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    drafter: Mapped[Drafter] = relationship(back_populates="aliases")
    drafter_version: Mapped[DrafterVersion] = relationship()

    __table_args__ = (sa.UniqueConstraint("drafter_id", "name"),)

    @property
    def version(self) -> int:
        """The version number the alias points to."""
        return self.drafter_version.version


class AliasEvent(Base):
    """One alias move, append-only: who moved which alias from which version to which, when and why.

    ``action`` is ``promote``, ``rollback`` or ``register`` (the automatic challenger move);
    ``from_version`` is None for the first assignment.
    """

    __tablename__ = "alias_events"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    drafter_id: Mapped[str] = mapped_column(sa.ForeignKey("drafters.id", ondelete="CASCADE"))
    alias: Mapped[str] = mapped_column(sa.String(100))
    from_version: Mapped[int | None]
    to_version: Mapped[int]
    action: Mapped[str] = mapped_column(sa.String(16), default="promote")
    actor: Mapped[str] = mapped_column(sa.String(200))
    reason: Mapped[str] = mapped_column(sa.Text, default="")
    forced: Mapped[bool] = mapped_column(default=False)
    ts: Mapped[dt.datetime] = mapped_column(default=utcnow)

    __table_args__ = (sa.Index("ix_alias_events_drafter_id_alias", "drafter_id", "alias", "id"),)


__all__ = [
    "STAGE_ORDER",
    "TERMINAL_STATUSES",
    "Alias",
    "AliasEvent",
    "ApiKey",
    "Base",
    "Dataset",
    "DatasetStatus",
    "Drafter",
    "DrafterVersion",
    "EventLevel",
    "EventType",
    "Job",
    "JobEvent",
    "JobStatus",
    "Organization",
    "Role",
    "Stage",
]
