"""Admin verbs on the database: ``orgs create|list``, ``keys create|list|revoke``, ``gc [--dry-run]``.

These act directly on the database (``--db-url``, default ``TRACEDRAFT_DATABASE_URL``): they are how the
first organization and admin key come to exist, before any API key does.
"""

from __future__ import annotations

from typing import Any

import typer

from service.cli._common import (
    JsonOpt,
    artifact_store,
    confirm,
    console,
    db_org,
    db_session,
    err_console,
    handled,
    print_json,
    short_ts,
    table,
)

orgs_app = typer.Typer(help="Organizations (tenants).", no_args_is_help=True)
keys_app = typer.Typer(help="API keys: create (shown once), list (prefix only), revoke.", no_args_is_help=True)

DbUrlOpt = typer.Option(None, "--db-url", help="SQLAlchemy URL of the database (default: TRACEDRAFT_DATABASE_URL).")


def _org_dict(o: Any) -> dict[str, Any]:
    return {"id": o.id, "name": o.name, "created_at": o.created_at}


def _key_dict(k: Any) -> dict[str, Any]:
    return {"id": k.id, "org_id": k.org_id, "name": k.name, "prefix": k.prefix, "role": str(k.role),
            "created_at": k.created_at, "last_used_at": k.last_used_at, "revoked_at": k.revoked_at}


def _print_new_key(plaintext: str, key: Any) -> None:
    console.print(table("API key created", ["id", "prefix", "role", "name"],
                        [[key.id, key.prefix, str(key.role), key.name]]))
    err_console.print("[bold]Store this key now; it is shown only once:[/bold]")
    print(plaintext, flush=True)  # plain stdout, so `KEY=$(tracedraft keys create ... | tail -1)` works


@orgs_app.command("create")
def orgs_create(
    name: str = typer.Argument(..., help="Organization name (unique)."),
    admin_key: bool = typer.Option(False, "--admin-key", help="Also create an admin API key and print it once."),
    db_url: str | None = DbUrlOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Create an organization (optionally with its first admin key). An existing name exits 4.

    Example: tracedraft orgs create acme --admin-key
    """
    from service.auth import create_api_key, create_org

    with handled(as_json), db_session(db_url) as session:
        org = create_org(session, name)
        plaintext, key = create_api_key(session, org, name="admin", role="admin") if admin_key else (None, None)
        out = _org_dict(org)
        if key is not None:
            out["api_key"] = {**_key_dict(key), "key": plaintext}
    if as_json:
        print_json(out)
        return
    console.print(table("Organization created", ["id", "name"], [[org.id, org.name]]))
    if key is not None:
        _print_new_key(plaintext, key)


@orgs_app.command("list")
def orgs_list(db_url: str | None = DbUrlOpt, as_json: bool = JsonOpt) -> None:
    """List organizations with their number of active keys.

    Example: tracedraft orgs list --db-url postgresql+psycopg://tracedraft@db/tracedraft
    """
    import sqlalchemy as sa

    from service.db.models import ApiKey, Organization

    with handled(as_json), db_session(db_url) as session:
        active = (sa.select(ApiKey.org_id, sa.func.count().label("n")).where(ApiKey.revoked_at.is_(None))
                  .group_by(ApiKey.org_id).subquery())
        rows = session.execute(sa.select(Organization, active.c.n).outerjoin(active, active.c.org_id == Organization.id)
                               .order_by(Organization.created_at, Organization.id)).all()
        items = [{**_org_dict(o), "active_keys": n or 0} for o, n in rows]
    if as_json:
        print_json(items)
    else:
        console.print(table("Organizations", ["id", "name", "active keys", "created"],
                            [[o["id"], o["name"], o["active_keys"], short_ts(o["created_at"])] for o in items]))


@keys_app.command("create")
def keys_create(
    org: str = typer.Option(..., "--org", help="Organization id or name."),
    role: str = typer.Option("member", "--role", help="member (datasets, jobs, drafters) or admin (also "
                             "promote/rollback)."),
    name: str = typer.Option("", "--name", help="A label for the key (who or what uses it)."),
    db_url: str | None = DbUrlOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Create an API key and print it once (only its hash is stored).

    Example: tracedraft keys create --org acme --role admin --name ci
    """
    from service.auth import create_api_key

    with handled(as_json), db_session(db_url) as session:
        plaintext, key = create_api_key(session, db_org(session, org), name=name, role=role)
    if as_json:
        print_json({**_key_dict(key), "key": plaintext})
    else:
        _print_new_key(plaintext, key)


@keys_app.command("list")
def keys_list(
    org: str = typer.Option(..., "--org", help="Organization id or name."),
    include_revoked: bool = typer.Option(False, "--all", help="Include revoked keys."),
    db_url: str | None = DbUrlOpt,
    as_json: bool = JsonOpt,
) -> None:
    """List an organization's keys (visible prefix only, never the key).

    Example: tracedraft keys list --org acme --all
    """
    from service.auth import list_api_keys

    with handled(as_json), db_session(db_url) as session:
        items = [_key_dict(k) for k in list_api_keys(session, db_org(session, org), include_revoked=include_revoked)]
    if as_json:
        print_json(items)
    else:
        console.print(table("API keys", ["id", "prefix", "role", "name", "created", "last used", "revoked"],
                            [[k["id"], k["prefix"], k["role"], k["name"], short_ts(k["created_at"]),
                              short_ts(k["last_used_at"]), short_ts(k["revoked_at"])] for k in items]))


@keys_app.command("revoke")
def keys_revoke(
    key: str = typer.Argument(..., help="Key id (key_...) or its visible prefix (td_...)."),
    org: str | None = typer.Option(None, "--org", help="Only within this organization."),
    db_url: str | None = DbUrlOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Revoke an API key (idempotent; requests with it answer 401 from now on).

    Example: tracedraft keys revoke td_AbCdEfGh1
    """
    from service.auth import revoke_api_key

    with handled(as_json), db_session(db_url) as session:
        o = db_org(session, org) if org else None
        row = revoke_api_key(session, key, o)
        out = _key_dict(row)
    if as_json:
        print_json(out)
    else:
        console.print(f"revoked {out['id']} ({out['prefix']}...) at {short_ts(out['revoked_at'])}")


def gc(
    dry_run: bool = typer.Option(False, "--dry-run", help="Only report what would be deleted."),
    retention_hours: float | None = typer.Option(None, "--retention-hours", min=0, help="Keep unreferenced "
                                                    "files younger than this (default TRACEDRAFT_GC_RETENTION_HOURS)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before deleting."),
    db_url: str | None = DbUrlOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Delete artifact-store files no live row references (datasets, versions, resumable jobs), older than
    the retention; --dry-run lists what would go and why. Asks before deleting unless --yes or --dry-run.

    Example: tracedraft gc --dry-run --json
    """
    from service import registry
    from service.settings import get_settings

    hours = get_settings().gc_retention_hours if retention_hours is None else retention_hours
    with handled(as_json), db_session(db_url) as session:
        store = artifact_store()
        if not dry_run:
            preview = registry.gc(session, store, hours, dry_run=True)
            if not preview.deleted:
                report = preview
                report.dry_run = False
            else:
                if not as_json:
                    console.print(f"{len(preview.deleted)} unreferenced files ({preview.bytes_freed} bytes) "
                                  f"older than {hours:g} h in {store.root_uri}")
                confirm("Delete them?", yes)
                report = registry.gc(session, store, hours, dry_run=False)
        else:
            report = registry.gc(session, store, hours, dry_run=True)
    out = {**report.to_dict(), "retention_hours": hours, "store": store.root_uri}
    if as_json:
        print_json(out)
        return
    verb = "would delete" if dry_run else "deleted"
    console.print(f"gc: {verb} {len(report.deleted)} files ({report.bytes_freed} bytes); kept "
                  f"{report.kept_referenced} referenced, {report.kept_recent} recent")
    for c in report.candidates[:50]:
        console.print(f"  {c.key}  ({c.size} bytes): {c.reason}", highlight=False)
    if len(report.candidates) > 50:
        console.print(f"  ... and {len(report.candidates) - 50} more (--json lists all)")
