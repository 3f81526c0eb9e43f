"""The one settings object of tracedraft (docs/architecture.md section 1: "one settings object").

Every field is read from an environment variable named ``TRACEDRAFT_<FIELD>`` (upper case), e.g.
``TRACEDRAFT_DATABASE_URL``. Defaults give the embedded mode (SQLite file, local artifact directory,
in-process pipeline) under ``~/.tracedraft``; the stack (docker-compose, a cluster) sets the URLs.

``Settings.env_vars()`` lists every variable name with its description, so docs/settings.md and
docker-compose.yml can be checked against it.

Tests override settings with ``override_settings(...)`` (a context manager) or, for FastAPI,
``app.dependency_overrides[get_settings]``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "TRACEDRAFT_"


def _default_home() -> Path:
    return Path("~/.tracedraft").expanduser()


class Settings(BaseSettings):
    """tracedraft configuration; one instance per process (see ``get_settings``).

    Derived defaults (filled in after validation when left unset): ``database_url`` =
    ``sqlite:///<home>/tracedraft.db``, ``artifact_uri`` = ``file://<home>/artifacts``, ``cache_dir`` =
    ``<home>/cache``, ``result_backend`` = ``broker_url`` with database 1 for Redis URLs,
    ``db_dead_peer_s`` = ``job_lease_s``.
    """

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)

    # --- where things live -------------------------------------------------------------------------
    home: Path = Field(
        default_factory=_default_home,
        description="Base directory of the embedded mode; the default database, artifacts and cache "
        "live under it. Default ~/.tracedraft.",
    )
    database_url: str = Field(
        default="",
        description="SQLAlchemy URL of the database, e.g. "
        "postgresql+psycopg://user:pass@host:5432/tracedraft. Default sqlite:///<home>/tracedraft.db.",
    )
    auto_migrate: bool | None = Field(
        default=None,
        description="Run the Alembic migrations to head when the process first opens the database. "
        "Default: on for SQLite (embedded mode), off otherwise (the stack runs `tracedraft db upgrade`).",
    )
    artifact_uri: str = Field(
        default="",
        description="Root of the artifact store: a local directory or any fsspec URI (s3://bucket/prefix, "
        "memory://...). Default file://<home>/artifacts.",
    )
    artifact_storage_options: dict[str, Any] = Field(
        default_factory=dict,
        description="JSON object of fsspec storage options for the artifact store (e.g. "
        '{"endpoint_url": "http://minio:9000", "key": "...", "secret": "..."} for S3-compatible stores).',
    )
    cache_dir: Path | None = Field(
        default=None,
        description="Local cache for downloaded artifacts, converted targets and feature caches. "
        "Default <home>/cache.",
    )

    # --- queue -----------------------------------------------------------------------------------------
    pipeline: Literal["inline", "celery"] = Field(
        default="inline",
        description='How job stages run: "inline" (in-process, embedded mode) or "celery" '
        "(dispatched to workers through the broker).",
    )
    broker_url: str = Field(
        default="redis://127.0.0.1:6379/0",
        description="Celery broker URL (Redis) used when pipeline=celery.",
    )
    result_backend: str = Field(
        default="",
        description="Celery result backend URL. Default: the broker URL with Redis database 1.",
    )
    visibility_timeout_s: int = Field(
        default=12 * 3600, ge=60,
        description="Broker visibility timeout in seconds; must exceed the longest stage (training).",
    )
    job_lease_s: float = Field(
        default=15.0, gt=0,
        description="The worker running a job's stage renews a lease on the job row every third of this many "
        "seconds; a lease that lapses means the worker died and the reconciler re-dispatches the stage (it "
        "resumes from its last checkpoint). Detection takes at most this plus reconcile_every_s.",
    )
    db_dead_peer_s: float | None = Field(
        default=None, ge=0,
        description="A PostgreSQL connection whose other end stopped answering (a machine powered off, a cut "
        "network) is dropped after about this many seconds, by the worker and by the server (TCP keepalives "
        "and tcp_user_timeout on both ends), so a lost worker's stage lock is released and its stage "
        "re-dispatched within seconds instead of hours. Default: TRACEDRAFT_JOB_LEASE_S. 0 keeps the "
        "operating system's defaults (about 2 hours).",
    )
    reconcile_every_s: float = Field(
        default=5.0, gt=0,
        description="Seconds between a worker's reconciler passes (lapsed leases, lost messages, work "
        "directory pruning).",
    )
    stale_after_s: float = Field(
        default=120.0, gt=0,
        description="A job with no lease whose broker message cannot be seen (a non-Redis broker) or is held "
        "un-acknowledged this long is re-dispatched.",
    )
    dispatch_grace_s: float = Field(
        default=10.0, ge=0,
        description="A queued job never enqueued (the broker was down when it was created), or whose message "
        "the broker lost, is re-dispatched once it is this many seconds old.",
    )
    job_max_attempts: int = Field(
        default=3, ge=1,
        description="How many times a job's stage may be (re)delivered before it fails with worker_lost. "
        "A resume (POST /v1/jobs/{id}/resume, `tracedraft jobs resume`, `tracedraft run --resume`) counts the "
        "stage's attempts from 1 again.",
    )
    train_processes: int = Field(
        default=0, ge=0,
        description="Processes a worker's training stage runs, one per GPU, under torchrun (DDP, or FSDP when "
        "the drafter does not fit). 0 = one per visible CUDA GPU; a CPU-only worker trains in-process.",
    )

    # --- API -------------------------------------------------------------------------------------------
    api_workers: int = Field(
        default=0, ge=0,
        description="uvicorn worker processes of `tracedraft serve` (its --workers overrides it). 0 = one per "
        "CPU the process may use (affinity and cgroup quota), at most 4: each process keeps a database pool "
        "of up to 40 connections.",
    )
    max_upload_bytes: int = Field(
        default=2 * 1024**3, ge=1,
        description="Largest dataset upload accepted, in bytes (compressed size on the wire and "
        "decompressed size are both bounded by it). Default 2 GiB.",
    )
    max_decompressed_bytes: int = Field(
        default=2 * 1024**3, ge=1,
        description="Largest decompressed size of a gzip/zstd upload (all its files together), in bytes; "
        "decompression stops there with 413 decompressed_too_large. Default 2 GiB.",
    )
    max_compression_ratio: float = Field(
        default=200.0, ge=1,
        description="An upload whose decompressed bytes exceed this many times its compressed bytes (once "
        "past 8 MiB decompressed) is refused at once with 413 decompressed_too_large: a decompression bomb "
        "costs milliseconds, not seconds. Compressed agent traces reach 5-50x. Default 200.",
    )
    inline_validation_max_bytes: int = Field(
        default=16 * 1024**2, ge=0,
        description="Uploads up to this many (decompressed) bytes are validated by the API before it "
        "answers; larger ones stay `validating` until a job's validate stage runs. 0 disables. "
        "Default 16 MiB.",
    )
    job_rate_limit_per_minute: int = Field(
        default=30, ge=0,
        description="Job creations allowed per API key per minute (0 disables the limit).",
    )
    api_key_pepper: str = Field(
        default="",
        description="Server-side secret mixed into API key hashes (HMAC-SHA256). Changing it invalidates "
        "every key. Empty means plain SHA-256 of the (high-entropy) key.",
    )
    cors_origins: list[str] = Field(
        default_factory=list,
        description='JSON list of origins allowed by CORS, e.g. ["https://console.example.com"].',
    )

    # --- what a job may load (POST /v1/jobs; the embedded `tracedraft run` does not go through it) -------
    allowed_targets: list[str] = Field(
        default_factory=lambda: ["smollm2-135m-instruct", "smollm2-135m-agent"],
        description='JSON list of the targets a job may name in `target.model`: exact specs or HF ids, or '
        'glob patterns (fnmatch, case-sensitive) such as "Qwen/Qwen3-*". Setting it replaces the default '
        '["smollm2-135m-instruct", "smollm2-135m-agent"], so keep those entries to allow the demo targets '
        "(the plain chat model and its tool-calling agent). Local paths are allowed only under "
        "TRACEDRAFT_ALLOWED_TARGET_DIRS (or when listed here exactly).",
    )
    allowed_target_dirs: list[str] = Field(
        default_factory=list,
        description="JSON list of absolute directories under which `target.model` may name a local model "
        "directory or .gguf file (as the workers see them). Default empty: no local target paths.",
    )
    allowed_sglang_hosts: list[str] = Field(
        default_factory=lambda: ["127.0.0.1", "localhost", "sglang"],
        description="JSON list of host names (or IP addresses) a job's `target.sglang.endpoint` may point "
        'at. Default ["127.0.0.1", "localhost", "sglang"].',
    )

    remote_code_targets: list[str] = Field(
        default_factory=list,
        description='JSON list of the targets a job may load with `target.trust_remote_code: true` (which runs '
        "the Python files of the model's repository on the worker; Kimi-K2's tokenizer needs it): exact specs "
        'or globs as in TRACEDRAFT_ALLOWED_TARGETS, e.g. ["moonshotai/Kimi-K2-*"]. Default empty: none.',
    )

    enforce_job_policy: bool = Field(
        default=True,
        description="Workers re-check each job's target, its remote code, SGLang endpoint and base drafter "
        "against the lists above before every stage, failing the job with target_not_allowed / "
        "remote_code_not_allowed / endpoint_not_allowed / base_drafter_not_allowed. The embedded "
        "`tracedraft run` turns it off in its own process: its user is the operator and names local paths.",
    )

    # --- jobs and registry -------------------------------------------------------------------------------
    default_heldout_fraction: float = Field(
        default=0.1, gt=0.0, lt=1.0,
        description="Fraction of conversations held out for evaluation when a job does not say "
        "(split by a stable hash of the conversation id).",
    )
    gc_retention_hours: float = Field(
        default=24 * 7, ge=0,
        description="`tracedraft gc` deletes unreferenced artifacts older than this many hours.",
    )

    workdir_retention_hours: float = Field(
        default=72, ge=0,
        description="A failed or cancelled job's work directory on a worker (its local checkpoints, for a "
        "fast resume) is removed this many hours after the job ended; a later resume fetches from the "
        "artifact store. A succeeded job's goes at once.",
    )

    metrics_token: str = Field(
        default="",
        description="Bearer token `GET /metrics` requires (Prometheus: `authorization: {credentials: "
        "<token>}` in the scrape config). Empty: /metrics answers 404; its numbers are summed over all "
        "organizations, for the operator only.",
    )

    # --- operations ------------------------------------------------------------------------------------
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        default="INFO", description="Log level of the API, CLI and workers."
    )
    log_json: bool = Field(default=False, description="Log one JSON object per line instead of text.")

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v

    @model_validator(mode="after")
    def _derive_defaults(self) -> Settings:
        # Derived defaults depend on `home`, so they are filled after the fields are read.
        self.home = Path(self.home).expanduser()
        if not self.database_url:
            self.database_url = f"sqlite:///{self.home / 'tracedraft.db'}"
        if not self.artifact_uri:
            self.artifact_uri = f"file://{self.home / 'artifacts'}"
        if self.cache_dir is None:
            self.cache_dir = self.home / "cache"
        self.cache_dir = Path(self.cache_dir).expanduser()
        if not self.result_backend:
            if self.broker_url.startswith(("redis://", "rediss://")):
                base, _, db = self.broker_url.rpartition("/")
                self.result_backend = f"{base}/1" if db.isdigit() and "//" in base else self.broker_url
            else:
                self.result_backend = self.broker_url
        if self.auto_migrate is None:
            self.auto_migrate = self.is_sqlite
        if self.db_dead_peer_s is None:
            self.db_dead_peer_s = self.job_lease_s
        return self

    @property
    def is_sqlite(self) -> bool:
        """True when the database is SQLite (the embedded mode)."""
        return self.database_url.startswith("sqlite")

    @classmethod
    def env_vars(cls) -> dict[str, str]:
        """Every environment variable the settings read -> its description (for docs checks)."""
        return {
            f"{ENV_PREFIX}{name.upper()}": (field.description or "")
            for name, field in cls.model_fields.items()
        }


_override: Settings | None = None


@functools.lru_cache(maxsize=1)
def _cached_settings() -> Settings:
    return Settings()


def get_settings() -> Settings:
    """The process-wide settings (read from the environment once, then cached).

    Use as a FastAPI dependency too. ``override_settings`` replaces it for a block; ``reload_settings``
    re-reads the environment.
    """
    if _override is not None:
        return _override
    return _cached_settings()


def reload_settings() -> Settings:
    """Forget the cached settings and read the environment again."""
    _cached_settings.cache_clear()
    return get_settings()


@contextlib.contextmanager
def override_settings(settings: Settings | None = None, **fields: Any) -> Iterator[Settings]:
    """Make ``get_settings()`` return ``settings`` (or ``Settings(**fields)``) inside the block (tests)."""
    global _override
    previous = _override
    new = settings if settings is not None else Settings(**fields)
    _override = new
    try:
        yield new
    finally:
        _override = previous
