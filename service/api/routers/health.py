"""``/healthz`` (the process answers) and ``/readyz`` (its dependencies answer)."""

from __future__ import annotations

import logging

import anyio.to_thread
import sqlalchemy as sa
from fastapi import APIRouter, Request

from service.api.errors import ApiError
from service.api.schemas import HealthOut, ReadyOut, error_responses

log = logging.getLogger("tracedraft.api")
router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthOut, summary="Liveness: the process is up")
async def healthz() -> HealthOut:
    return HealthOut()


def _check_database(request: Request) -> str:
    with request.app.state.engine.connect() as conn:
        conn.execute(sa.text("SELECT 1"))
    return "ok"


def _check_broker(url: str) -> str:
    import redis

    client = redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)
    try:
        client.ping()
    finally:
        client.close()
    return "ok"


@router.get("/readyz", response_model=ReadyOut, responses=error_responses(503),
            summary="Readiness: database (and, with pipeline=celery, the broker) reachable")
async def readyz(request: Request) -> ReadyOut:
    settings = request.app.state.settings
    checks: dict[str, str] = {}
    failing: list[str] = []
    probes = [("database", lambda: _check_database(request))]
    if settings.pipeline == "celery":
        probes.append(("broker", lambda: _check_broker(settings.broker_url)))
    for name, probe in probes:
        try:
            with anyio.fail_after(3):
                checks[name] = await anyio.to_thread.run_sync(probe, abandon_on_cancel=True)
        except Exception as exc:  # noqa: BLE001 - any failure means not ready
            log.warning("readiness check %s failed: %s", name, type(exc).__name__)
            checks[name] = f"unavailable ({type(exc).__name__})"
            failing.append(name)
    if failing:
        raise ApiError(503, "unavailable", "not ready: " + ", ".join(f"{n} {checks[n]}" for n in failing),
                       failing[0], {"Retry-After": "5"})
    return ReadyOut(status="ok", checks=checks)
