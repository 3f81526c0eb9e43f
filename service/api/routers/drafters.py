"""``/v1/drafters``: drafters and versions (cursor-paginated), a version's lineage, report, report.html and
checkpoint files (hash-verified downloads), aliases with history, promotion and rollback (admin keys)."""

from __future__ import annotations

import html
import json
import logging
import posixpath
import urllib.parse
from collections.abc import Iterator
from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import APIRouter, Path, Query
from fastapi.responses import HTMLResponse, StreamingResponse

from service import registry
from service.api.deps import AdminCaller, CurrentCaller, DbSession, Store
from service.api.errors import ApiError, not_found
from service.api.routers import MAX_PAGE
from service.api.schemas import (
    NAME_PATTERN,
    AliasEventOut,
    AliasList,
    AliasOut,
    DrafterOut,
    DrafterVersionOut,
    Page,
    PromoteOut,
    PromoteRequest,
    RollbackOut,
    RollbackRequest,
    error_responses,
)
from service.db.models import Alias, AliasEvent, Drafter, DrafterVersion
from service.storage import ArtifactError, ArtifactStore

log = logging.getLogger("tracedraft.api")
router = APIRouter(prefix="/v1/drafters", tags=["drafters"])

DrafterName = Annotated[str, Path(max_length=100, description="Drafter name")]
VersionNumber = Annotated[int, Path(ge=1, le=2**31 - 1, description="Version number")]
AliasName = Annotated[str, Path(pattern=NAME_PATTERN, description="Alias name, e.g. champion")]

# The stored report page embeds its plots as data: URIs; nothing else may load or run.
REPORT_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; frame-ancestors 'none'"


def _versions_aliases(db: Any, drafter: Drafter) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for alias, version in registry.list_aliases(db, drafter).items():
        out.setdefault(version, []).append(alias)
    return out


def version_out(v: DrafterVersion, aliases: list[str], *, with_report: bool) -> DrafterVersionOut:
    return DrafterVersionOut(
        drafter=v.drafter.name, version=v.version, ref=v.ref, id=v.id, job_id=v.job_id,
        checkpoint_uri=v.checkpoint_uri, files=dict(v.files or {}), size_bytes=v.size_bytes,
        config=dict(v.config or {}), lineage=dict(v.lineage or {}), gate=v.gate, aliases=sorted(aliases),
        score=registry.version_score(v.report, v.gate), report=v.report if with_report else None,
        created_by=v.created_by, created_at=v.created_at,
    )


def _event_out(e: AliasEvent) -> AliasEventOut:
    return AliasEventOut(alias=e.alias, from_version=e.from_version, to_version=e.to_version, action=e.action,
                         actor=e.actor, reason=e.reason, forced=e.forced, ts=e.ts)


@router.get("", response_model=Page[DrafterOut], responses=error_responses(401, 422), summary="List drafters",
            description="By name. Pass `next_cursor` as `after=` for the next page.")
def list_drafters(
    caller: CurrentCaller,
    db: DbSession,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 20,
    after: Annotated[str | None, Query(max_length=200, description="next_cursor of the previous page")] = None,
) -> Page[DrafterOut]:
    q = sa.select(Drafter).where(Drafter.org_id == caller.org_id)
    if after:
        q = q.where(Drafter.name > after)
    drafters = list(db.scalars(q.order_by(Drafter.name).limit(limit + 1)))
    has_more = len(drafters) > limit
    drafters = drafters[:limit]
    latest = dict(db.execute(
        sa.select(DrafterVersion.drafter_id, sa.func.max(DrafterVersion.version))
        .where(DrafterVersion.drafter_id.in_([d.id for d in drafters])).group_by(DrafterVersion.drafter_id)
    ).all()) if drafters else {}
    data = [DrafterOut(name=d.name, target_model=d.target_model, description=d.description,
                       aliases=registry.list_aliases(db, d), latest_version=latest.get(d.id),
                       created_at=d.created_at, updated_at=d.updated_at) for d in drafters]
    return Page[DrafterOut](data=data, has_more=has_more,
                            next_cursor=drafters[-1].name if has_more and drafters else None)


@router.get("/{name}/versions", response_model=Page[DrafterVersionOut], responses=error_responses(401, 404, 422),
            summary="List a drafter's versions (newest first; reports omitted)",
            description="Newest first. Pass `next_cursor` (a version number) as `after=` for the next page.")
def list_versions(
    name: DrafterName,
    caller: CurrentCaller,
    db: DbSession,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 20,
    after: Annotated[str | None, Query(pattern=r"^[1-9][0-9]{0,9}$",
                                       description="next_cursor of the previous page")] = None,
) -> Page[DrafterVersionOut]:
    drafter = registry.get_drafter(db, caller.org_id, name)
    aliases = _versions_aliases(db, drafter)
    q = sa.select(DrafterVersion).where(DrafterVersion.drafter_id == drafter.id)
    if after and int(after) <= 2**31 - 1:  # a larger cursor is past every version (and past int4's range)
        q = q.where(DrafterVersion.version < int(after))
    versions = list(db.scalars(q.order_by(DrafterVersion.version.desc()).limit(limit + 1)))
    has_more = len(versions) > limit
    versions = versions[:limit]
    return Page[DrafterVersionOut](
        data=[version_out(v, aliases.get(v.version, []), with_report=False) for v in versions],
        has_more=has_more, next_cursor=str(versions[-1].version) if has_more and versions else None)


@router.get("/{name}/versions/{version}", response_model=DrafterVersionOut,
            responses=error_responses(401, 404, 422), summary="A drafter version with lineage and report")
def get_version(name: DrafterName, version: VersionNumber, caller: CurrentCaller, db: DbSession) -> DrafterVersionOut:
    drafter = registry.get_drafter(db, caller.org_id, name)
    v = registry.get_version(db, drafter, version)
    return version_out(v, _versions_aliases(db, drafter).get(v.version, []), with_report=True)


def render_report_html(v: DrafterVersion) -> str:
    """A minimal one-page HTML view of a version's JSON report (when no rendered report was stored).
    Every value is HTML-escaped."""
    esc = html.escape
    gate = v.gate or {}
    rows = []
    for key, value in sorted((v.report or {}).items()):
        if isinstance(value, (str, int, float, bool)) or value is None:
            rows.append(f"<tr><th>{esc(str(key))}</th><td>{esc(json.dumps(value))}</td></tr>")
    verdict = "passed" if gate.get("passed") else ("failed" if gate else "not evaluated")
    reasons = "".join(f"<li>{esc(str(r))}</li>" for r in gate.get("reasons", []) or [])
    body = json.dumps(v.report or {}, indent=2, sort_keys=True, default=str)
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{esc(v.ref)} evaluation report</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;text-align:left}"
        "pre{background:#f4f4f4;padding:1em;overflow:auto}</style></head><body>"
        f"<h1>{esc(v.ref)}</h1><p>Target: {esc(str(v.lineage.get('target_model') or v.drafter.target_model))}"
        f" &middot; job {esc(str(v.job_id or '-'))} &middot; created {esc(v.created_at.isoformat())}</p>"
        f"<h2>Promotion gate: {esc(verdict)}</h2><ul>{reasons}</ul>"
        f"<h2>Summary</h2><table>{''.join(rows)}</table>"
        f"<h2>Full report (JSON)</h2><pre>{esc(body)}</pre></body></html>"
    )


@router.get(
    "/{name}/versions/{version}/report.html", response_class=HTMLResponse,
    responses={200: {"content": {"text/html": {"schema": {"type": "string"}}}, "description": "The report page"},
               **error_responses(401, 404, 409, 422)},
    summary="The version's evaluation report as HTML (hash-verified)",
)
def get_version_report_html(name: DrafterName, version: VersionNumber, caller: CurrentCaller, db: DbSession,
                            store: Store) -> HTMLResponse:
    drafter = registry.get_drafter(db, caller.org_id, name)
    v = registry.get_version(db, drafter, version)
    files = dict(v.report_files or {})
    page_name = "report.html" if "report.html" in files else next((f for f in sorted(files) if f.endswith(".html")), None)
    if v.report_uri and page_name:
        content = store.get_bytes(f"{v.report_uri.rstrip('/')}/{page_name}", files[page_name]).decode("utf-8", "replace")
    else:
        content = render_report_html(v)
    return HTMLResponse(content, headers={"Content-Security-Policy": REPORT_CSP, "X-Content-Type-Options": "nosniff"})


FILE_HEADERS = {
    "X-Content-SHA256": {"description": "sha256 (hex) of the file as registered; verify it after download",
                         "schema": {"type": "string"}},
    "Content-Length": {"description": "Size in bytes", "schema": {"type": "integer"}},
}


def _stream_verified(store: ArtifactStore, uri: str, sha256: str, size: int) -> Iterator[bytes]:
    """The file's bytes, hashed again while they are sent: a file altered between the check and the send
    ends the response early (the client sees fewer bytes than Content-Length, and a wrong sha256)."""
    with store.open_read(uri, sha256, size) as reader:
        try:
            yield from reader
        except ArtifactError:
            log.error("artifact %s changed while it was being sent; response aborted", uri)
            raise


@router.get(
    "/{name}/versions/{version}/files/{path:path}",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
                     "description": "The file's bytes (sha256-verified before sending)", "headers": FILE_HEADERS},
               **error_responses(401, 404, 409, 422, 503)},
    summary="Download one checkpoint file of a version (hash-verified)",
    description="`path` must be one of the names in the version's `files` map (e.g. `model.safetensors`); "
    "any other name answers 404. The stored file is re-hashed against the sha256 recorded at registration "
    "before it is sent (409 `checksum_mismatch` when it was altered) and again while it is sent; the "
    "`X-Content-SHA256` header carries the recorded hash for the client's own check.",
)
def get_version_file(name: DrafterName, version: VersionNumber,
                     path: Annotated[str, Path(max_length=1000, description="A file name of the version's `files`")],
                     caller: CurrentCaller, db: DbSession, store: Store) -> StreamingResponse:
    drafter = registry.get_drafter(db, caller.org_id, name)
    v = registry.get_version(db, drafter, version)
    files = dict(v.files or {})
    # Only a name recorded at registration is ever used to build the store key; the request's text is just
    # looked up in that map.
    recorded = next((k for k in files if k == path), None)
    if recorded is None or not isinstance(files[recorded], str):
        raise not_found("file", path[:200], "path")
    digest = files[recorded]
    uri = f"{v.checkpoint_uri.rstrip('/')}/{recorded}"
    checkpoint_uri = v.checkpoint_uri
    db.close()  # hashing a large file must not hold a database connection
    try:
        size = 0
        with store.open_read(uri, digest) as reader:  # full check first: a bad file is a clean 409
            for chunk in reader:
                size += len(chunk)
    except ArtifactError as e:
        code = "checksum_mismatch" if e.code == "artifact_corrupt" else e.code
        log.warning("download of %s/%s refused: %s", checkpoint_uri, recorded, e.message)
        raise ApiError(409 if code != "artifact_io" else 503, code,
                       {"checksum_mismatch": f"stored file {recorded!r} failed its sha256 check (altered or "
                                             "partially written); not sent",
                        "artifact_missing": f"stored file {recorded!r} of this version is missing"}.get(
                           code, "the artifact store is unavailable; retry later"), "path",
                       {"Retry-After": "5"} if code == "artifact_io" else None) from None
    filename = urllib.parse.quote(posixpath.basename(recorded), safe="")
    headers = {"Content-Length": str(size), "X-Content-SHA256": digest, "X-Content-Type-Options": "nosniff",
               "Content-Disposition": f"attachment; filename*=UTF-8''{filename}", "Cache-Control": "no-store"}
    return StreamingResponse(_stream_verified(store, uri, digest, size), media_type="application/octet-stream",
                             headers=headers)


@router.get("/{name}/aliases", response_model=AliasList, responses=error_responses(401, 404, 422),
            summary="A drafter's aliases with their history")
def list_aliases(name: DrafterName, caller: CurrentCaller, db: DbSession) -> AliasList:
    drafter = registry.get_drafter(db, caller.org_id, name)
    history = [_event_out(e) for e in registry.alias_history(db, caller.org_id, name)]
    rows = db.scalars(sa.select(Alias).where(Alias.drafter_id == drafter.id).order_by(Alias.name))
    data = [AliasOut(alias=a.name, version=a.version, updated_at=a.updated_at,
                     history=[h for h in history if h.alias == a.name]) for a in rows]
    return AliasList(drafter=drafter.name, data=data, history=history)


@router.post(
    "/{name}/aliases/{alias}", response_model=PromoteOut,
    responses=error_responses(400, 401, 403, 404, 409, 422),
    summary="Point an alias at a version (admin keys only)",
    description="Re-verifies the version's checksums and its compatibility (target, tokenizer, chat "
    "template) with the alias's current holder; `champion` also needs a passed promotion gate (409 "
    "`gate_not_passed`). `force` with a `reason` overrides a failed gate or an incompatibility. Every move is "
    "recorded in the alias history with the key that made it (forced moves marked, with what was forced "
    "past). `dry_run` checks the key and the version and lists what would need `force`, moving nothing.",
)
def promote(name: DrafterName, alias: AliasName, body: PromoteRequest, caller: AdminCaller, db: DbSession,
            store: Store) -> PromoteOut:
    move = registry.promote(db, store, caller.org_id, name, body.version, alias, actor=caller.actor,
                            reason=body.reason, force=body.force, dry_run=body.dry_run)
    return PromoteOut(drafter=name, alias=alias, from_version=move.from_version, to_version=move.to_version,
                      moved=move.moved, overridden=list(move.overridden), dry_run=body.dry_run)


@router.post(
    "/{name}/aliases/{alias}/rollback", response_model=RollbackOut,
    responses=error_responses(400, 401, 403, 404, 409, 422),
    summary="Move an alias back (admin keys only)",
    description="Without `to_version`, the alias goes back to its previous holder (from the history; "
    "repeated rollbacks walk further back); 409 `nothing_to_rollback` when there is none or the alias does "
    "not exist. The target version's checksums are re-verified; a `to_version` that never held the alias is "
    "checked for compatibility like a promotion (`force` with the `reason` overrides). Recorded in the alias "
    "history as a `rollback` with the key that made it.",
)
def rollback(name: DrafterName, alias: AliasName, body: RollbackRequest, caller: AdminCaller, db: DbSession,
             store: Store) -> RollbackOut:
    move = registry.rollback(db, store, caller.org_id, name, alias, body.to_version, actor=caller.actor,
                             reason=body.reason, force=body.force, dry_run=body.dry_run)
    return RollbackOut(drafter=name, alias=alias, from_version=move.from_version, to_version=move.to_version,
                       moved=move.moved, overridden=list(move.overridden), dry_run=body.dry_run)
