"""``/metrics``: Prometheus text format from the app's own registry (service/api/metrics.py).

Operator-only: its numbers are summed over every organization, so it answers only a request bearing
``settings.metrics_token`` (``Authorization: Bearer <token>``; in a Prometheus scrape config
``authorization: {type: Bearer, credentials: <token>}``), and 404 when no token is configured.
"""

from __future__ import annotations

import hmac

import anyio.to_thread
from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from service.api.errors import ApiError

router = APIRouter(tags=["metrics"])


def check_metrics_token(request: Request) -> None:
    """Raise ApiError 404 when metrics are off (no token configured), 401 without the right bearer token."""
    token = request.app.state.settings.metrics_token
    if not token:
        raise ApiError(404, "not_found", "metrics are disabled (set TRACEDRAFT_METRICS_TOKEN to enable them)")
    given = request.headers.get("authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        raise ApiError(401, "unauthorized", "GET /metrics needs the operator's metrics token (Authorization: "
                       "Bearer <TRACEDRAFT_METRICS_TOKEN>)", "Authorization", {"WWW-Authenticate": "Bearer"})


@router.get("/metrics", response_class=Response, summary="Prometheus metrics (operator token)",
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}},
                             "description": "Prometheus text exposition format"},
                       401: {"description": "missing or wrong metrics token"},
                       404: {"description": "metrics disabled (no token configured)"}})
async def metrics(request: Request) -> Response:
    check_metrics_token(request)
    registry = request.app.state.metrics.registry
    body = await anyio.to_thread.run_sync(generate_latest, registry)  # the collectors query the database
    return Response(body, media_type=CONTENT_TYPE_LATEST)
