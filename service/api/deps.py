"""FastAPI dependencies: settings, database session, artifact store, the caller's API key and org.

Authentication: ``Authorization: Bearer td_...``. The key is looked up by its hash
(``service.auth.verify_api_key``); a missing, malformed, unknown or revoked key answers 401 with
``WWW-Authenticate: Bearer``. The plaintext key is never logged or stored.

Every tenant query must filter by ``Caller.org_id``; ``require_admin`` guards alias moves (403 for member
keys).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import anyio
import anyio.to_thread
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from service.api.errors import ApiError
from service.auth import verify_api_key
from service.settings import Settings
from service.storage import ArtifactStore

T = TypeVar("T")

_bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer td_...`")


async def get_app_settings(request: Request) -> Settings:
    """The settings the app was created with (``create_app(settings)``)."""
    return request.app.state.settings


async def get_db(request: Request) -> AsyncIterator[Session]:
    """One session per request, closed after the response (rolled back if not committed).

    Async on purpose: creating a session does no I/O (it connects on its first query, in the route's
    worker thread), so this saves a thread-pool hop per request. Closing a session that still holds a
    connection rolls back (a database round trip), so that runs in the thread pool, never on the event
    loop where it would stall every other request; routes that close it themselves (``run_db``) skip it.
    """
    session = request.app.state.sessionmaker()
    try:
        yield session
    finally:
        if session.in_transaction():
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(session.close)
        else:
            session.close()  # no connection held: no I/O


async def run_db(db: Session, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` (a route's database work on the request's session ``db``) in one thread-pool call,
    then ``db`` closed in the same call: the connection goes back to the pool before the response is
    serialized and sent. Async routes use it: a sync route costs FastAPI two more thread hops (the route
    and its response validation). Exceptions of ``fn`` propagate (ApiError and project errors become
    their error responses)."""

    def work() -> T:
        try:
            return fn(*args)
        finally:
            db.close()

    return await anyio.to_thread.run_sync(work)


async def get_store(request: Request) -> ArtifactStore:
    """The app's artifact store."""
    return request.app.state.store


@dataclass(frozen=True)
class Caller:
    """Who is calling: the key's id, visible prefix, organization and role (never the key itself)."""

    key_id: str
    key_prefix: str
    org_id: str
    is_admin: bool

    @property
    def actor(self) -> str:
        """The name written to audit trails (alias history): ``key:<prefix>``."""
        return f"key:{self.key_prefix}"


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message, "Authorization", {"WWW-Authenticate": "Bearer"})


def get_caller(
    request: Request,
    db: Annotated[Session, Depends(get_db)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Caller:
    """The authenticated caller. Raises ApiError 401 (missing, unknown or revoked key)."""
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise _unauthorized("missing API key: send `Authorization: Bearer <key>`")
    key = verify_api_key(db, credentials.credentials.strip())
    if key is None:
        raise _unauthorized("invalid or revoked API key")
    caller = Caller(key.id, key.prefix, key.org_id, key.is_admin)
    request.state.caller = caller  # for the rate limiter and access log (prefix only)
    return caller


async def require_admin(caller: Annotated[Caller, Depends(get_caller)]) -> Caller:
    """The caller, who must hold an admin key. Raises ApiError 403 ``admin_required``."""
    if not caller.is_admin:
        raise ApiError(403, "admin_required", "this action needs an admin API key", "Authorization")
    return caller


DbSession = Annotated[Session, Depends(get_db)]
CurrentCaller = Annotated[Caller, Depends(get_caller)]
AdminCaller = Annotated[Caller, Depends(require_admin)]
AppSettings = Annotated[Settings, Depends(get_app_settings)]
Store = Annotated[ArtifactStore, Depends(get_store)]
