"""The FastAPI application of tracedraft: ``create_app(settings)``, and ``app`` for uvicorn.

``tracedraft serve`` runs ``uvicorn.run(create_app(), ...)``; ``uvicorn service.api.app:app`` works too:
the module attribute ``app`` is built lazily from ``get_settings()`` on first access, so importing this
module (tests, tools) opens no database.

Each app owns its resources, kept on ``app.state``: ``settings``, ``engine`` and ``sessionmaker`` (a pool
sized for the API's thread pool on PostgreSQL), ``store`` (the artifact store), ``metrics`` (its own
Prometheus registry), ``rate_limiter`` (Redis-backed with pipeline=celery, in-process otherwise), ``sse``
(event-stream poll interval and maximum duration), ``dispatcher`` (starts a new job's pipeline off the
request path: ``service.api.dispatcher``) and ``pipeline_threads`` (its per-job threads in inline mode).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from service.api.dispatcher import StageDispatcher
from service.api.errors import install_error_handlers
from service.api.head import HeadAsGet
from service.api.metrics import ApiMetrics
from service.api.ratelimit import MemoryRateLimiter, RedisRateLimiter
from service.api.routers import datasets, drafters, health, jobs, metrics
from service.db.session import make_engine, session_factory, upgrade
from service.settings import Settings, get_settings
from service.storage import ArtifactStore

log = logging.getLogger("tracedraft.api")

API_VERSION = "1.0.0"
DESCRIPTION = """Fine-tune DSpark speculative-decoding drafters on your agent traces.

Authenticate with `Authorization: Bearer <API key>`. Every resource belongs to the key's organization;
another organization's resource answers 404 like a missing one. Errors are always
`{"error": {"code", "message", "param"}}`."""


def create_app(settings: Settings | None = None, *, sse_poll_s: float = 0.5, sse_max_s: float = 3600.0) -> FastAPI:
    """Build the API for ``settings`` (default: ``get_settings()``).

    ``sse_poll_s``/``sse_max_s``: how often ``/v1/jobs/{id}/events?follow=true`` polls the database and
    how long one stream may last (clients reconnect with ``Last-Event-ID``).
    Runs the migrations first when ``settings.auto_migrate`` (the embedded SQLite default).
    """
    settings = settings or get_settings()
    engine_kwargs: dict[str, Any] = {}
    if not settings.is_sqlite:
        # Sync routes run on anyio's thread pool (40 threads): let most of them hold a connection.
        engine_kwargs = {"pool_size": 20, "max_overflow": 20, "pool_timeout": 10}
    engine = make_engine(settings.database_url, dead_peer_s=settings.db_dead_peer_s, **engine_kwargs)
    if settings.auto_migrate:
        upgrade(engine)

    dispatcher = StageDispatcher(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        dispatcher.close()
        engine.dispose()

    app = FastAPI(
        title="tracedraft", version=API_VERSION, description=DESCRIPTION, lifespan=lifespan,
        openapi_tags=[{"name": t} for t in ("datasets", "jobs", "drafters", "health", "metrics")],
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = session_factory(engine)
    app.state.store = ArtifactStore.from_settings(settings)
    celery = settings.pipeline == "celery"
    app.state.metrics = ApiMetrics(app.state.sessionmaker, settings.broker_url if celery else None)
    app.state.rate_limiter = (RedisRateLimiter(settings.broker_url, settings.job_rate_limit_per_minute) if celery
                              else MemoryRateLimiter(settings.job_rate_limit_per_minute))
    app.state.sse = {"poll_s": sse_poll_s, "max_s": sse_max_s}
    app.state.dispatcher = dispatcher
    app.state.pipeline_threads = dispatcher.threads

    install_error_handlers(app)
    app.add_middleware(HeadAsGet)  # HEAD on every GET route, headers only (service/api/head.py)
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_credentials=False,
                           allow_methods=["*"], allow_headers=["Authorization", "Content-Type", "Idempotency-Key",
                                                               "Last-Event-ID"])
    for module in (datasets, jobs, drafters, health, metrics):
        app.include_router(module.router)
    _install_openapi(app)
    return app


def _install_openapi(app: FastAPI) -> None:
    """Generate the OpenAPI document once, with every error response documented as the JSON error shape
    (FastAPI would list it under the route's media type, e.g. text/html for report.html)."""
    from fastapi.openapi.utils import get_openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, description=app.description,
                              routes=app.routes, tags=app.openapi_tags)
            error = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}
            for path_item in doc.get("paths", {}).values():
                for operation in path_item.values():
                    for status, response in operation.get("responses", {}).items():
                        if str(status)[0] in "45":
                            response["content"] = error
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


_app: FastAPI | None = None


def __getattr__(name: str) -> Any:
    # ``service.api.app:app`` for uvicorn, built on first access (not at import).
    global _app
    if name == "app":
        if _app is None:
            _app = create_app()
        return _app
    raise AttributeError(name)
