"""``/metrics``: Prometheus text format from the app's own registry (service/api/metrics.py)."""

from __future__ import annotations

import anyio.to_thread
from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response, summary="Prometheus metrics",
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}},
                             "description": "Prometheus text exposition format"}})
async def metrics(request: Request) -> Response:
    registry = request.app.state.metrics.registry
    body = await anyio.to_thread.run_sync(generate_latest, registry)  # the collectors query the database
    return Response(body, media_type=CONTENT_TYPE_LATEST)
