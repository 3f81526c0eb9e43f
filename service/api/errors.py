"""The API's one error shape and the exception handlers that produce it.

Every error response, whatever raised it, is ``{"error": {"code", "message", "param"}}``:

- ``ApiError(status, code, message, param, headers)``: raised by routes and dependencies.
- Project exceptions (``drafters.errors.TracedraftError`` and its subclasses ``JobError``,
  ``DatasetError``, ``RegistryError``, ``ArtifactError``, ``AuthError``, ``TraceError``) map by their
  stable ``code`` through ``STATUS_BY_CODE`` (``not_found`` -> 404, ``idempotency_conflict`` -> 409, ...);
  ``where`` becomes ``param``.
- Request validation errors (FastAPI/pydantic) -> 422 ``invalid_request`` (malformed JSON ->
  ``invalid_json``, unknown field -> ``unknown_field``), ``param`` = the dotted field path
  (``target.model``, ``recipe.lr``, ``Idempotency-Key``; the location prefix ``body``/``query``/``header``
  is dropped).
- Starlette HTTP errors (unknown route 404, wrong method 405) keep their status.
- Anything else -> 500 ``internal_error`` with a generic message (the traceback goes to the log, never to
  the client: exception texts may quote trace content).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException

from drafters.errors import TracedraftError
from service.redaction import ARTIFACT_PUBLIC_TEXT, public_error

log = logging.getLogger("tracedraft.api")

#: Stable project error code -> HTTP status. Codes not listed answer 400.
STATUS_BY_CODE: dict[str, int] = {
    "not_found": 404,
    "target_not_allowed": 422,
    "remote_code_not_allowed": 422,
    "endpoint_not_allowed": 422,
    "base_drafter_not_allowed": 422,
    "bad_mapping": 422,
    "dataset_not_found": 404,
    "unauthorized": 401,
    "forbidden": 403,
    "admin_required": 403,
    "idempotency_conflict": 409,
    "job_finished": 409,
    "job_not_resumable": 409,
    "invalid_transition": 409,
    "dataset_in_use": 409,
    "dataset_not_ready": 409,
    "incompatible_version": 409,
    "gate_not_passed": 409,
    "checksum_mismatch": 409,
    "artifact_missing": 409,
    "nothing_to_rollback": 409,
    "already_exists": 409,
    "artifact_corrupt": 409,
    "payload_too_large": 413,
    "decompressed_too_large": 413,
    "unsupported_media_type": 415,
    "rate_limited": 429,
    "artifact_io": 503,
    "unavailable": 503,
}

_STATUS_CODE_NAMES = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
    406: "not_acceptable", 409: "conflict", 413: "payload_too_large", 415: "unsupported_media_type",
    422: "invalid_request", 429: "rate_limited", 500: "internal_error", 503: "unavailable",
}


_ARTIFACT_TEXT = ARTIFACT_PUBLIC_TEXT


class ApiError(Exception):
    """An error answered as ``{"error": {"code", "message", "param"}}`` with ``status`` and ``headers``."""

    def __init__(self, status: int, code: str, message: str, param: str | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.param = param
        self.headers = headers or {}


def not_found(what: str, ident: str, param: str | None = None) -> ApiError:
    """The 404 for a missing resource, identical for another organization's (no existence oracle)."""
    return ApiError(404, "not_found", f"no {what} {ident!r}", param)


def error_body(code: str, message: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "param": param}}


def error_response(status: int, code: str, message: str, param: str | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(code, message, param), status_code=status, headers=headers)


def status_for(exc: TracedraftError) -> int:
    """HTTP status of a project exception, from its stable code (400 when unknown)."""
    return STATUS_BY_CODE.get(exc.code, 400)


# pydantic names the union member that failed inside ``loc`` ("constrained-float", "literal['auto']",
# "int", "function-after[...]"): not part of the field path the client sent.
_UNION_TAG = re.compile(r"^(constrained-\w+|literal\[.*\]|function-\w+\[.*\]|"
                        r"(int|float|str|bool|list|dict|url|none|json-or-python)(\[.*\])?)$")


def _loc_to_param(loc: tuple[Any, ...] | list[Any]) -> str | None:
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    parts = [p for i, p in enumerate(parts) if i == 0 or not (isinstance(p, str) and _UNION_TAG.match(p))]
    return ".".join(str(p) for p in parts) or None


def _validation_code(err: dict[str, Any]) -> str:
    kind = err.get("type", "")
    if kind == "json_invalid":
        return "invalid_json"
    if kind == "extra_forbidden":
        return "unknown_field"
    if kind == "missing":
        return "missing_field"
    return "invalid_value"


async def _api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, exc.message, exc.param, exc.headers)


async def _project_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, TracedraftError)
    status = status_for(exc)
    headers = {"Retry-After": "5"} if status == 503 else None
    if exc.code in _ARTIFACT_TEXT:
        # Store errors (also re-raised by the registry) name internal URIs: the client gets the code and a
        # URI-free message; the log keeps the detail.
        log.warning("artifact error %s on %s %s: %s", exc.code, request.method, request.url.path, exc.message)
        return error_response(status, exc.code, _ARTIFACT_TEXT[exc.code], None, headers)
    err = public_error({"code": exc.code, "message": exc.message, "param": exc.where}) or {}
    return error_response(status, exc.code, err["message"], err["param"], headers)


#: Request fields that were taken out: sending one is a 422 with its own code saying what to do instead.
REMOVED_FIELDS: dict[str, tuple[str, str]] = {
    "evaluation.incumbent": (
        "incumbent_not_supported",
        ("evaluation.incumbent is not supported (no stage ever read it): the evaluation compares the candidate "
         "with base_drafter, a registry reference of your organization's that training starts from, or, "
         "without one, with the drafter training started from. Remove the field.")),
}
MAX_LISTED_PROBLEMS = 10


def _problem(err: dict[str, Any]) -> tuple[str, str, str | None]:
    """(code, message, param) of one pydantic validation error."""
    param = _loc_to_param(err.get("loc", ()))
    code = _validation_code(err)
    msg = str(err.get("msg", "invalid value"))
    if code == "invalid_json":
        return code, f"the request body is not valid JSON: {err.get('ctx', {}).get('error', msg)}", None
    if code == "unknown_field":
        if param in REMOVED_FIELDS:
            return (*REMOVED_FIELDS[param], param)
        return code, f"unknown field {param!r}", param
    return code, f"{param}: {msg}" if param else msg, param


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    """A 422 whose code and param are the first problem's and whose message lists every problem (up to
    ``MAX_LISTED_PROBLEMS``, then how many more), so one round trip shows all that must change."""
    assert isinstance(exc, RequestValidationError)
    problems: list[tuple[str, str, str | None]] = []
    for code, msg, param in (_problem(e) for e in exc.errors()):
        same = next((i for i, p in enumerate(problems) if p[2] == param and param is not None), None)
        if same is None:
            problems.append((code, msg, param))
        else:  # a union's members each fail ("a number", "'auto'"): one problem of the field, all said
            problems[same] = (problems[same][0], f"{problems[same][1]}, or {msg.removeprefix(f'{param}: ')}", param)
    if not problems:
        return error_response(422, "invalid_request", "invalid request")
    code, message, param = problems[0]
    shown = [m for _, m, _ in problems[:MAX_LISTED_PROBLEMS]]
    if len(problems) > 1:
        message = f"{len(problems)} problems: " + "; ".join(shown)
        if len(problems) > MAX_LISTED_PROBLEMS:
            message += f"; and {len(problems) - MAX_LISTED_PROBLEMS} more"
    return error_response(422, code, message, param)


def allowed_methods(app: Any, scope: Any) -> list[str]:
    """Every method some route serves at the request's path (Starlette answers a 405 with the methods of
    the first route matching the path only: ``GET /v1/jobs`` and ``POST /v1/jobs`` are two routes)."""
    from starlette.routing import Match

    try:
        from fastapi.routing import iter_route_contexts

        routes = list(iter_route_contexts(app.routes))
    except ImportError:  # older FastAPI: app.routes is flat
        routes = list(app.routes)
    methods: set[str] = set()
    for route in routes:
        try:
            match, _ = route.matches(scope)
        except Exception:  # noqa: BLE001, S112 - a mount or route kind that cannot tell
            continue
        if match != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _STATUS_CODE_NAMES.get(exc.status_code, "error")
    message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        allowed = allowed_methods(request.app, request.scope) or headers.get("Allow", "").split(", ")
        headers["Allow"] = ", ".join(m for m in allowed if m)
        message = f"{request.method} is not allowed on {request.url.path}; allowed: {headers['Allow']}"
    return error_response(exc.status_code, code, message, None, headers)


async def _data_error(request: Request, exc: Exception) -> JSONResponse:
    # The database refused a value the schema let through (e.g. a NUL character in a PostgreSQL text
    # parameter): the client's input, not a server fault.
    log.info("database refused a value on %s %s: %s", request.method, request.url.path, type(exc.orig).__name__
             if hasattr(exc, "orig") else type(exc).__name__)
    return error_response(422, "invalid_value", "a parameter holds characters or a value the server cannot store")


async def _unhandled(request: Request, exc: Exception) -> JSONResponse:
    # Only the type and route: exception texts may quote uploaded trace content.
    log.error("unhandled %s on %s %s", type(exc).__name__, request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal_error", "internal server error")


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers above on ``app`` (the one exception handler set of the API)."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(TracedraftError, _project_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(DataError, _data_error)
    app.add_exception_handler(Exception, _unhandled)
