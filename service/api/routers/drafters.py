"""``/v1/drafters``: drafters, versions (lineage, report, report.html), aliases with history, promotion."""

from __future__ import annotations

import html
import json
from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import APIRouter, Path
from fastapi.responses import HTMLResponse

from service import registry
from service.api.deps import AdminCaller, CurrentCaller, DbSession, Store
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
    error_responses,
)
from service.db.models import Alias, AliasEvent, Drafter, DrafterVersion

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
        report=v.report if with_report else None, created_by=v.created_by, created_at=v.created_at,
    )


def _event_out(e: AliasEvent) -> AliasEventOut:
    return AliasEventOut(alias=e.alias, from_version=e.from_version, to_version=e.to_version, action=e.action,
                         actor=e.actor, reason=e.reason, forced=e.forced, ts=e.ts)


@router.get("", response_model=Page[DrafterOut], responses=error_responses(401, 422), summary="List drafters")
def list_drafters(caller: CurrentCaller, db: DbSession) -> Page[DrafterOut]:
    drafters = registry.list_drafters(db, caller.org_id)
    latest = dict(db.execute(
        sa.select(DrafterVersion.drafter_id, sa.func.max(DrafterVersion.version))
        .join(Drafter, Drafter.id == DrafterVersion.drafter_id)
        .where(Drafter.org_id == caller.org_id).group_by(DrafterVersion.drafter_id)
    ).all())
    data = [DrafterOut(name=d.name, target_model=d.target_model, description=d.description,
                       aliases=registry.list_aliases(db, d), latest_version=latest.get(d.id),
                       created_at=d.created_at, updated_at=d.updated_at) for d in drafters]
    return Page[DrafterOut](data=data, has_more=False, next_cursor=None)


@router.get("/{name}/versions", response_model=Page[DrafterVersionOut], responses=error_responses(401, 404, 422),
            summary="List a drafter's versions (newest first; reports omitted)")
def list_versions(name: DrafterName, caller: CurrentCaller, db: DbSession) -> Page[DrafterVersionOut]:
    drafter = registry.get_drafter(db, caller.org_id, name)
    aliases = _versions_aliases(db, drafter)
    versions = registry.list_versions(db, drafter)[::-1]
    return Page[DrafterVersionOut](
        data=[version_out(v, aliases.get(v.version, []), with_report=False) for v in versions],
        has_more=False, next_cursor=None)


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
    "template) with the alias's current holder; `force` with a `reason` overrides an incompatibility. "
    "Every move is recorded in the alias history with the key that made it.",
)
def promote(name: DrafterName, alias: AliasName, body: PromoteRequest, caller: AdminCaller, db: DbSession,
            store: Store) -> PromoteOut:
    move = registry.promote(db, store, caller.org_id, name, body.version, alias, actor=caller.actor,
                            reason=body.reason, force=body.force)
    return PromoteOut(drafter=name, alias=alias, from_version=move.from_version, to_version=move.to_version,
                      moved=move.moved, overridden=list(move.overridden))
