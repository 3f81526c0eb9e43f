"""Shared plumbing of the CLI: consoles, exit codes, the one-line error printer, the REST client and the
break-glass database session.

Exit codes (documented in ``service.cli``): 0 ok, 1 error, 2 usage or invalid input, 3 not found,
4 conflict or refused (409, 401/403, 429, a promotion the registry refuses, a declined confirmation),
130 interrupted.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn, Self

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from drafters.errors import TracedraftError


def _width(stream) -> int | None:
    """Rich's width: the terminal's, or COLUMNS; 200 when output goes to a file or pipe (rich's 80 folds
    file paths in tables into pieces)."""
    return None if "COLUMNS" in os.environ or stream.isatty() else 200


console = Console(width=_width(sys.stdout))
err_console = Console(stderr=True, width=_width(sys.stderr))

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_CONFLICT = 4
EXIT_INTERRUPTED = 130

#: Project error codes (TracedraftError.code, the API's error.code) -> exit code; others exit 1.
_CODE_EXIT: dict[str, int] = {
    **dict.fromkeys(("not_found", "dataset_not_found", "no_such_file"), EXIT_NOT_FOUND),
    **dict.fromkeys(
        ("idempotency_conflict", "job_finished", "invalid_transition", "dataset_in_use", "dataset_not_ready",
         "incompatible_version", "gate_not_passed", "checksum_mismatch", "artifact_missing", "artifact_corrupt",
         "nothing_to_rollback", "already_exists", "reason_required", "unauthorized", "forbidden",
         "admin_required", "rate_limited", "conflict", "declined", "unsupported_format"),
        EXIT_CONFLICT,
    ),
    **dict.fromkeys(
        ("invalid_value", "invalid_ref", "invalid_request", "invalid_json", "unknown_field", "missing_field",
         "no_input", "bad_request", "usage", "unknown_format", "payload_too_large",
         "decompressed_too_large", "unsupported_media_type"),
        EXIT_USAGE,
    ),
}


def exit_code_for(code: str | None, status: int | None = None) -> int:
    """Exit code of an error: from the HTTP status when there is one, else from the stable error code."""
    if status is not None:
        if status == 404:
            return EXIT_NOT_FOUND
        if status in (401, 403, 409, 429):
            return EXIT_CONFLICT
        if status in (400, 413, 415, 422):
            return EXIT_USAGE
        if status >= 500:
            return EXIT_ERROR
    return _CODE_EXIT.get(code or "", EXIT_ERROR)


class CliError(TracedraftError):
    """An error the CLI reports and exits on. ``status`` is the HTTP status when it came from the API."""

    def __init__(self, code: str, message: str, where: str | None = None, status: int | None = None):
        super().__init__(code, message, where)
        self.status = status


def fail(exc: TracedraftError, code: int | None = None) -> NoReturn:
    """Print one clear error line (with its stable code) and exit.

    The exit code is ``code`` when given, else derived from the error (see ``exit_code_for``).
    """
    where = f" (at {exc.where})" if exc.where else ""
    err_console.print(f"[red]error[/red] {escape(f'[{exc.code}] {exc.message}{where}')}", soft_wrap=True,
                      highlight=False)
    if code is None:
        code = exit_code_for(exc.code, getattr(exc, "status", None))
    raise typer.Exit(code)


@contextlib.contextmanager
def handled(as_json: bool = False) -> Iterator[None]:
    """Run a command body: project errors print one line and exit with their code; Ctrl-C exits 130.

    With ``as_json`` (a command's ``--json``), an error also prints the API's error document on stdout,
    ``{"error": {"code", "message", "param"}}``, so a script reading stdout always gets JSON."""
    try:
        yield
    except TracedraftError as exc:
        if as_json:
            print_json({"error": {"code": exc.code, "message": exc.message, "param": exc.where}})
        fail(exc)
    except KeyboardInterrupt:
        err_console.print("[red]aborted[/red]")
        raise typer.Exit(EXIT_INTERRUPTED) from None


def print_json(obj: Any) -> None:
    """Machine output: one JSON document on stdout (no colours, no wrapping)."""
    print(json.dumps(obj, indent=1, default=str, sort_keys=False))


def table(title: str | None, columns: list[str], rows: list[list[Any]]) -> Table:
    """A rich table with string cells (None prints empty)."""
    t = Table(title=title)
    for c in columns:
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*[Text("" if v is None else str(v)) for v in r])  # cells are data, never markup
    return t


def short_ts(value: Any) -> str:
    """An ISO timestamp shortened to seconds for tables."""
    s = str(value or "")
    return s.replace("T", " ")[:19]


def confirm(question: str, yes: bool) -> None:
    """Ask for confirmation unless ``yes``; a refusal (or no terminal to ask on) exits 4."""
    if yes:
        return
    try:
        ok = typer.confirm(question, default=False)
    except typer.Abort:
        ok = False
    if not ok:
        raise CliError("declined", "not confirmed; nothing changed (pass --yes to skip the question)")


# --- the REST client -------------------------------------------------------------------------------------

API_URL_ENV = "TRACEDRAFT_API_URL"
API_KEY_ENV = "TRACEDRAFT_API_KEY"
DEFAULT_API_URL = "http://127.0.0.1:8000"


class ApiClient:
    """A thin httpx client of the tracedraft REST API (routes).

    Every non-2xx answer raises ``CliError`` with the API's ``{"error": {"code","message","param"}}``
    (code, message, param -> where) and the HTTP status; a connection failure raises ``CliError``
    ``unavailable``. The key is sent as ``Authorization: Bearer <key>`` and never printed.
    """

    def __init__(self, base_url: str, api_key: str | None, *, timeout: float = 60.0):
        import httpx

        self.base_url = base_url.rstrip("/")
        headers = {"User-Agent": "tracedraft-cli"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._httpx = httpx
        self.http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def error_from(response: Any) -> CliError:
        """The CliError of an error response (the API's error shape, or the status line otherwise)."""
        try:
            body = response.json()
            err = body.get("error") if isinstance(body, dict) else None
        except ValueError:
            err = None
        if isinstance(err, dict) and err.get("code"):
            return CliError(str(err["code"]), str(err.get("message") or ""), err.get("param"),
                            status=response.status_code)
        code = {401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "conflict"}.get(
            response.status_code, "http_error")
        text = (response.text or "").strip().splitlines()
        return CliError(code, f"HTTP {response.status_code} from {response.request.method} "
                        f"{response.request.url.path}" + (f": {text[0][:200]}" if text else ""),
                        status=response.status_code)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """Send a request; returns the parsed JSON body (None for an empty one). Raises CliError."""
        try:
            r = self.http.request(method, path, **kwargs)
        except self._httpx.TimeoutException as e:
            raise CliError("unavailable", f"the API at {self.base_url} did not answer in time ({e})") from e
        except self._httpx.HTTPError as e:
            raise CliError("unavailable", f"cannot reach the API at {self.base_url}: {e}") from e
        if r.status_code >= 400:
            raise self.error_from(r)
        if not r.content:
            return None
        ctype = r.headers.get("content-type", "")
        return r.json() if "json" in ctype else r.content

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> Any:
        return self.request("POST", path, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        return self.request("DELETE", path, **kw)

    @contextlib.contextmanager
    def stream(self, method: str, path: str, **kwargs: Any) -> Iterator[Any]:
        """A streamed response (for SSE and downloads); errors raise CliError like ``request``."""
        try:
            with self.http.stream(method, path, **kwargs) as r:
                if r.status_code >= 400:
                    r.read()
                    raise self.error_from(r)
                yield r
        except self._httpx.HTTPError as e:
            raise CliError("unavailable", f"cannot reach the API at {self.base_url}: {e}") from e

    def paginate(self, path: str, params: Mapping[str, Any] | None = None, *, limit: int | None = None
                 ) -> list[dict[str, Any]]:
        """Every item of a cursor-paginated list (``data``, ``has_more``, ``next_cursor`` -> ``after=``),
        at most ``limit`` items."""
        items: list[dict[str, Any]] = []
        q = {k: v for k, v in dict(params or {}).items() if v is not None}
        while True:
            page = self.get(path, params=q)
            if isinstance(page, list):  # a plain list endpoint
                items.extend(page)
                break
            items.extend(page.get("data", []))
            if limit is not None and len(items) >= limit:
                return items[:limit]
            cursor = page.get("next_cursor")
            if not page.get("has_more") or not cursor:
                break
            q["after"] = cursor
        return items[:limit] if limit is not None else items


def make_client(api_url: str | None, api_key: str | None, *, need_key: bool = True) -> ApiClient:
    """The API client from the options or ``TRACEDRAFT_API_URL`` / ``TRACEDRAFT_API_KEY``.

    Raises CliError ``usage`` when no key is known (every route but the health checks needs one).
    """
    url = api_url or os.environ.get(API_URL_ENV) or DEFAULT_API_URL
    key = api_key or os.environ.get(API_KEY_ENV)
    if need_key and not key:
        raise CliError("usage", f"no API key: pass --api-key or set {API_KEY_ENV}", where="--api-key")
    return ApiClient(url, key)


ApiUrlOpt = typer.Option(None, "--api-url", envvar=API_URL_ENV, show_envvar=True,
                         help=f"Base URL of the tracedraft API (default {DEFAULT_API_URL}).")
ApiKeyOpt = typer.Option(None, "--api-key", envvar=API_KEY_ENV, show_envvar=True,
                         help="API key (td_...). Never printed.")
JsonOpt = typer.Option(False, "--json", help="Print JSON for scripts instead of tables.")


# --- the break-glass database path ------------------------------------------------------------------------


@contextlib.contextmanager
def db_session(db_url: str | None) -> Iterator[Any]:
    """A session on ``db_url`` (default: ``TRACEDRAFT_DATABASE_URL`` through the settings).

    The database must already be migrated (``tracedraft db upgrade``), except the embedded SQLite
    default, which the settings migrate on first use. The engine is disposed at the end.
    """
    from service.db.session import make_engine, session_factory
    from service.settings import get_settings

    settings = get_settings()
    url = db_url or settings.database_url
    engine = make_engine(url)
    try:
        if db_url is None and settings.auto_migrate:
            from service.db.session import _upgrade_tolerating_races

            _upgrade_tolerating_races(engine)
        with session_factory(engine)() as session:
            yield session
    finally:
        engine.dispose()


def artifact_store() -> Any:
    """The artifact store of the settings (``TRACEDRAFT_ARTIFACT_URI``, ``..._STORAGE_OPTIONS``)."""
    from service.storage import ArtifactStore

    return ArtifactStore.from_settings()


def db_org(session: Any, org: str | None) -> Any:
    """The organization named by ``--org`` (id or name). Raises CliError ``usage`` when not given."""
    from service.auth import get_org

    if not org:
        raise CliError("usage", "direct database access needs --org (organization id or name)", where="--org")
    return get_org(session, org)


def local_actor() -> str:
    """Who a break-glass (``--db-url``) alias move is attributed to: ``cli:<user>@<host>``."""
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except Exception:  # no passwd entry in some containers
        user = str(os.getuid())
    return f"cli:{user}@{socket.gethostname()}"
