"""``HEAD`` on every ``GET`` route: answered as ``GET`` would be, headers only (RFC 9110 9.3.2).

FastAPI routes a ``GET`` route for ``GET`` alone, so Starlette answers ``HEAD`` with 405. ``HeadAsGet`` (an
ASGI middleware) runs a ``HEAD`` request as ``GET`` and sends the response's status and headers
(``Content-Length`` and ``Content-Type`` included) with an empty body. Once those are sent it tells the
route the client has gone (``http.disconnect``), so a stream (``/v1/jobs/{id}/events?follow=true``) ends
at its next poll instead of running for its whole duration.
"""

from __future__ import annotations

from typing import Any

Message = dict[str, Any]


class HeadAsGet:
    """ASGI middleware: ``HEAD`` requests run as ``GET``; every body is dropped (see the module docstring)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        state = {"started": False, "ended": False}

        async def head_receive() -> Message:
            if state["started"]:
                return {"type": "http.disconnect"}
            return await receive()

        async def head_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["started"] = True
                await send(message)
            elif message["type"] == "http.response.body":
                if not state["ended"]:
                    state["ended"] = True
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
            else:
                await send(message)

        await self.app({**scope, "method": "GET"}, head_receive, head_send)
