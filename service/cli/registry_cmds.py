"""Registry verbs: ``drafters list|versions|show|diff|export`` (users, through the API) and the admin verbs
``promote``, ``rollback``, ``alias history`` (through the API with an admin key, or directly on the
database with ``--db-url`` for break-glass use; each verb is written once, against
``registry_admin.RegistryAdmin``). Publishing a GGUF is ``service.gguf_export``'s work.

A VERSION argument is a number (``3``), ``v3``, ``latest`` or an alias name (``champion``).
"""

# ruff: noqa: B008  (typer declares arguments in defaults)
from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from drafters.errors import TracedraftError
from service import registry
from service.cli._common import (
    EXIT_CONFLICT,
    EXIT_ERROR,
    EXIT_NOT_FOUND,
    ApiKeyOpt,
    ApiUrlOpt,
    CliError,
    JsonOpt,
    artifact_store,
    confirm,
    console,
    db_org,
    db_session,
    err_console,
    fail,
    handled,
    local_actor,
    make_client,
    print_json,
    short_ts,
    table,
)
from service.cli.registry_admin import open_registry_admin
from service.cli.registry_api import api_aliases, api_resolve, api_version, download_files
from service.cli.registry_views import (
    cell_text,
    compat_problems,
    diff_views,
    parse_version,
    print_diff,
    print_gate,
)
from service.gguf_export import GGUF_OUTTYPES, LLAMACPP_VERSION, publish_gguf

drafters_app = typer.Typer(help="Browse registered drafters, compare and export versions.", no_args_is_help=True)
alias_app = typer.Typer(help="Alias audit trail (who moved which alias, when, why).", no_args_is_help=True)

EXPORT_FORMATS = ("deepspec", "gguf-ready", "gguf")
DbUrlOpt = typer.Option(None, "--db-url", help="Break-glass: act directly on this database (SQLAlchemy URL) "
                        "instead of through the API; needs --org.")
OrgOpt = typer.Option(None, "--org", help="Organization id or name (with --db-url).")


# --- drafters (user verbs) ---------------------------------------------------------------------------------


@drafters_app.command("list")
def drafters_list(
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """List your organization's drafters with their aliases and latest version.

    Example: tracedraft drafters list
    """
    with handled(as_json), make_client(api_url, api_key) as client:
        items = client.paginate("/v1/drafters")
    if as_json:
        print_json(items)
        return
    console.print(table("Drafters", ["name", "target", "aliases", "latest", "updated"], [
        [d.get("name"), d.get("target_model"),
         ", ".join(f"{k}=v{v}" for k, v in (d.get("aliases") or {}).items()),
         d.get("latest_version"), short_ts(d.get("updated_at"))] for d in items]))


def _version_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    """One row per version: its headline score (``registry.version_score``: the API's ``score``, or computed
    from the report when a view has none), gate, job, size and age."""
    rows = []
    for v in items:
        gate = v.get("gate") or {}
        score = v.get("score") or registry.version_score(v.get("report"), gate)
        tau, speed = score.get("tau"), score.get("speedup_vs_plain")
        rows.append([v.get("version"), ", ".join(v.get("aliases") or []),
                     "" if not gate else ("passed" if gate.get("passed") else "not passed"),
                     "" if tau is None else f"{tau:.2f}", "" if speed is None else f"x{speed:.2f}",
                     v.get("job_id"), v.get("size_bytes"), short_ts(v.get("created_at"))])
    return rows


VERSION_COLUMNS = ["version", "aliases", "gate", "tau", "speed-up", "job", "bytes", "created"]


@drafters_app.command("versions")
def drafters_versions(
    name: str = typer.Argument(..., help="Drafter name."),
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """List the versions of a drafter (immutable), oldest first, with their aliases and gate decisions.

    Example: tracedraft drafters versions qwen3-4b-agent
    """
    with handled(as_json), make_client(api_url, api_key) as client:
        items = client.paginate(f"/v1/drafters/{name}/versions")
    items = sorted(items, key=lambda v: v.get("version", 0))
    if as_json:
        print_json(items)
    else:
        console.print(table(f"Versions of {name}", VERSION_COLUMNS, _version_rows(items)))


@drafters_app.command("show")
def drafters_show(
    name: str = typer.Argument(..., help="Drafter name."),
    version: str | None = typer.Argument(None, help="Version (3, v3, latest, or an alias); "
                                            "default: the drafter's aliases and versions."),
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Show a drafter (aliases, versions) or one version (lineage, gate, files, report headline).

    Example: tracedraft drafters show qwen3-4b-agent champion
    """
    with handled(as_json), make_client(api_url, api_key) as client:
        if version is None:
            aliases = api_aliases(client, name)
            versions = sorted(client.paginate(f"/v1/drafters/{name}/versions"), key=lambda v: v.get("version", 0))
            out: dict[str, Any] = {"drafter": name, "aliases": aliases.get("data", []), "versions": versions}
        else:
            out = api_version(client, name, api_resolve(client, name, version))
    if as_json:
        print_json(out)
        return
    if version is None:
        console.print(table(f"Aliases of {name}", ["alias", "version", "updated"],
                            [[a.get("alias"), a.get("version"), short_ts(a.get("updated_at"))]
                             for a in out["aliases"]]))
        console.print(table(f"Versions of {name}", VERSION_COLUMNS, _version_rows(out["versions"])))
        return
    console.print(f"[bold]{out.get('ref') or name + '@v' + str(out['version'])}[/bold]  ({out.get('id')})")
    console.print(f"checkpoint: {out.get('checkpoint_uri')}  ({out.get('size_bytes')} bytes)")
    console.print(f"aliases: {', '.join(out.get('aliases') or []) or '-'}   job: {out.get('job_id')}   "
                  f"created by {out.get('created_by')} at {short_ts(out.get('created_at'))}")
    score = out.get("score") or registry.version_score(out.get("report"), out.get("gate"))
    tau, speed = score.get("tau"), score.get("speedup_vs_plain")
    console.print(f"tau: {'-' if tau is None else f'{tau:.2f}'}   speed-up: "
                  f"{'not measured' if speed is None else f'x{speed:.2f}'}")
    lineage = (out.get("lineage") or {}).items()
    console.print(table("Lineage", ["key", "value"], [[k, cell_text(v)] for k, v in lineage]))
    print_gate(out)
    console.print(table("Files", ["file", "sha256"], [[k, v] for k, v in (out.get("files") or {}).items()]))


@drafters_app.command("diff")
def drafters_diff(
    name: str = typer.Argument(..., help="Drafter name."),
    v1: str = typer.Argument(..., help="From version (3, v3, latest, or an alias)."),
    v2: str = typer.Argument(..., help="To version."),
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """What changed between two versions: config, lineage, gate, report metrics, files.

    Example: tracedraft drafters diff qwen3-4b-agent champion v7
    """
    with handled(as_json), make_client(api_url, api_key) as client:
        a = api_version(client, name, api_resolve(client, name, v1))
        b = api_version(client, name, api_resolve(client, name, v2))
        d = diff_views(a, b)
    if as_json:
        print_json(d)
    else:
        print_diff(d)


GGUF_README = """# {ref}: ready for llama.cpp

This directory is the DeepSpec-native DSpark checkpoint (`config.json` + `model.safetensors`) of
{ref}, verified file by file against the registry's sha256 (see `SHA256SUMS`).

Convert it to GGUF with llama.cpp's converter (it reads this layout unchanged and shifts the target layer
ids by one itself), giving it the target model's directory:

    python convert_hf_to_gguf.py {dir} --target-model-dir <TARGET_MODEL_DIR> --outfile draft.gguf

then serve the target with the drafter:

    llama-server -m <TARGET>.gguf --spec-type draft-dspark -md draft.gguf --spec-draft-n-max {block_size}

`--spec-draft-n-max` must equal the checkpoint's block size ({block_size}); measure with one slot (`-np 1`).
"""


#: Exit codes of the gguf export's own errors (others follow ``exit_code_for``): a target or export that does
#: not exist is "not found", a checkpoint llama.cpp cannot serve or an export that differs is "refused".
GGUF_EXIT = {"target_not_found": EXIT_NOT_FOUND, "not_published": EXIT_NOT_FOUND,
             "gguf_export_unsupported": EXIT_CONFLICT, "gguf_export_bad_input": EXIT_CONFLICT,
             "export_conflict": EXIT_CONFLICT, "llamacpp_not_installed": EXIT_ERROR,
             "gguf_export_failed": EXIT_ERROR, "gguf_export_mismatch": EXIT_ERROR}


@drafters_app.command("export")
def drafters_export(
    name: str = typer.Argument(..., help="Drafter name."),
    version: str = typer.Argument(..., help="Version (3, v3, latest, or an alias such as champion)."),
    out_dir: Path | None = typer.Argument(None, help="Directory to write into (created). Required for deepspec, "
                                          "gguf-ready and a gguf download; optional when publishing a gguf "
                                          "(a copy of the GGUF goes there)."),
    fmt: str = typer.Option("deepspec", "--format", help="deepspec (the checkpoint as SGLang loads it), "
                            "gguf-ready (the same plus the llama.cpp conversion command) or gguf (llama.cpp's "
                            "draft GGUF: published by an operator with --org, downloaded otherwise)."),
    org: str | None = typer.Option(None, "--org", help="gguf: convert and publish as an operator, directly on "
                                   "the database and artifact store, for this organization (id or name)."),
    db_url: str | None = typer.Option(None, "--db-url", help="gguf publishing: the database (SQLAlchemy URL; "
                                      "default TRACEDRAFT_DATABASE_URL); the store is TRACEDRAFT_ARTIFACT_URI."),
    target: str | None = typer.Option(None, "--target", help="gguf publishing: where to find the version's "
                                      "target (a model directory, a .gguf, a cached HF id); default the "
                                      "target recorded with the version. Must be that same model."),
    outtype: str = typer.Option("f32", "--outtype", help=f"gguf: tensor type, one of {', '.join(GGUF_OUTTYPES)}."),
    llamacpp_version: str = typer.Option(LLAMACPP_VERSION, "--llamacpp-version",
                                         help="gguf publishing: the installed llama.cpp whose converter runs "
                                              "(`tracedraft engines install llamacpp`)."),
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Export a version: deepspec and gguf-ready download its checkpoint through the API, every file
    verified by sha256 (by the server and again here), nothing partial left on error; gguf is the draft
    GGUF llama.cpp serves.

    --format gguf --org ORG (operator, on the database and artifact store):
    converts the checkpoint with llama.cpp's converter against the version's target, checks the GGUF,
    and publishes it beside the checkpoint as exports/draft-<outtype>.gguf, sha256 in the version's files.
    Run again, it reuses the published file (no second conversion).

    --format gguf without --org: downloads the published GGUF through the API, verified like every file.

    Example: tracedraft drafters export qwen3-4b-agent champion ./draft --format deepspec

    Example: tracedraft drafters export qwen3-4b-agent champion --format gguf --org acme --json

    Example: tracedraft drafters export qwen3-4b-agent champion ./draft --format gguf
    """
    if fmt not in EXPORT_FORMATS:
        raise typer.BadParameter(f"must be one of {', '.join(EXPORT_FORMATS)}", param_hint="--format")
    if outtype not in GGUF_OUTTYPES:
        raise typer.BadParameter(f"must be one of {', '.join(GGUF_OUTTYPES)}", param_hint="--outtype")
    if fmt == "gguf":
        _export_gguf(name, version, out_dir, org, db_url, target, outtype, llamacpp_version, api_url, api_key,
                     as_json)
        return
    if org is not None or db_url is not None or target is not None:
        raise typer.BadParameter("--org, --db-url and --target apply to --format gguf only")
    if out_dir is None:
        raise typer.BadParameter(f"--format {fmt} needs OUT_DIR", param_hint="OUT_DIR")
    with handled(as_json):
        with make_client(api_url, api_key) as client:
            view = api_version(client, name, api_resolve(client, name, version))
            view.setdefault("drafter", name)
            files = download_files(client, view, out_dir, _checkpoint_only(view.get("files") or {}))
        (out_dir / "SHA256SUMS").write_text("".join(f"{d}  {f}\n" for f, d in sorted(files.items())))
        if fmt == "gguf-ready":
            block = (view.get("config") or {}).get("block_size") or (view.get("lineage") or {}).get("block_size")
            (out_dir / "README.md").write_text(GGUF_README.format(
                ref=view.get("ref") or f"{name}@v{view['version']}", dir=out_dir, block_size=block or 7))
    result = {"drafter": name, "version": view["version"], "format": fmt, "dir": str(out_dir),
              "files": files}
    if as_json:
        print_json(result)
    else:
        console.print(f"exported {name}@v{view['version']} ({len(files)} files, sha256 verified) to {out_dir}")
        if fmt == "gguf-ready":
            console.print(f"conversion command: see {out_dir / 'README.md'}")


def _checkpoint_only(files: dict[str, str]) -> dict[str, str]:
    """A version's checkpoint files (what loads as a drafter), without its derived ``exports/...``."""
    return {k: v for k, v in files.items() if not k.startswith("exports/")}


def _export_name(outtype: str) -> str:
    """The name a GGUF export has in a version's files (``service.registry_exports.export_file_name``)."""
    from service.registry_exports import export_file_name

    return export_file_name("gguf", outtype)


def _export_gguf(name: str, version: str, out_dir: Path | None, org: str | None, db_url: str | None,
                 target: str | None, outtype: str, llamacpp_version: str, api_url: str | None,
                 api_key: str | None, as_json: bool) -> None:
    """``drafters export --format gguf``: publish (with --org/--db-url) or download (through the API)."""
    try:
        if org is not None or db_url is not None:
            result = _publish_gguf(name, version, out_dir, org, db_url, target, outtype, llamacpp_version,
                                   quiet=as_json)
        else:
            if target is not None:
                raise CliError("usage", "--target applies when publishing (with --org)", where="--target")
            if out_dir is None:
                raise CliError("usage", "a gguf download needs OUT_DIR (or publish it with --org)", where="OUT_DIR")
            result = _download_gguf(name, version, out_dir, outtype, api_url, api_key)
    except TracedraftError as e:
        fail(e, GGUF_EXIT.get(e.code))
    except KeyboardInterrupt:
        err_console.print("[red]aborted[/red]")
        raise typer.Exit(130) from None
    if as_json:
        print_json(result)
        return
    ref = f"{name}@v{result['version']}"
    if "published" in result:
        verb = "published" if result["published"] else "already published (reused, not converted again)"
        console.print(f"{ref}: {result['name']} {verb}; sha256 {result['sha256']}, {result['size']} bytes")
        console.print(f"stored at {result['uri']}")
    if result.get("path"):
        console.print(f"GGUF written to {result['path']} (sha256 verified)")


def _download_gguf(name: str, version: str, out_dir: Path, outtype: str, api_url: str | None,
                   api_key: str | None) -> dict[str, Any]:
    """Fetch a published GGUF through the API's files route into ``out_dir`` (verified like every file)."""
    fname = _export_name(outtype)
    with make_client(api_url, api_key) as client:
        view = api_version(client, name, api_resolve(client, name, version))
        view.setdefault("drafter", name)
        digest = (view.get("files") or {}).get(fname)
        if digest is None:
            raise CliError("not_published", f"{name}@v{view['version']} has no published {fname}; an operator "
                           f"publishes it with: tracedraft drafters export {name} {view['version']} --format "
                           f"gguf --outtype {outtype} --org ORG", where=fname)
        download_files(client, view, out_dir, {fname: digest}, flat=True)
    final = out_dir / Path(fname).name
    record = ((view.get("lineage") or {}).get("exports") or {}).get(fname) or {}
    return {"drafter": name, "version": view["version"], "format": "gguf", "name": fname, "sha256": digest,
            "size": final.stat().st_size, "path": str(final), "record": record}


def _db_resolve(session: Any, org: Any, name: str, version: str) -> Any:
    """A VERSION argument (3, v3, latest, an alias) to the version row of ``org``'s drafter ``name``."""
    from service import registry

    n = parse_version(version)
    return registry.resolve_ref(session, org, f"{name}:{n}" if n is not None else f"{name}@{version}")


def _publish_gguf(name: str, version: str, out_dir: Path | None, org: str | None, db_url: str | None,
                  target: str | None, outtype: str, llamacpp_version: str, *, quiet: bool) -> dict[str, Any]:
    """The operator path of ``drafters export --format gguf`` (see the command's help), on the database and
    artifact store through ``service.gguf_export.publish_gguf``."""
    import time

    from service.settings import get_settings

    t0 = time.monotonic()
    store = artifact_store()
    with db_session(db_url) as session:
        o = db_org(session, org)
        v = _db_resolve(session, o, name, version)
        done = publish_gguf(session, store, o, v, outtype=outtype, target=target,
                            llamacpp_version=llamacpp_version, target_cache_dir=get_settings().cache_dir,
                            out_dir=out_dir, actor=local_actor(), progress=None if quiet else err_console.print)
    return {"drafter": name, "version": done.version, "format": "gguf", **done.export.to_dict(),
            "path": None if done.path is None else str(done.path), "seconds": round(time.monotonic() - t0, 1)}


# --- admin: promote, rollback, alias history ---------------------------------------------------------------


def _show_promotion(name: str, alias: str, cand: dict[str, Any], holder: dict[str, Any] | None,
                    needs_force: list[str], as_json: bool) -> dict[str, Any]:
    """Print (or collect, for --json) the gate decision, the compatibility check, the diff and what would
    need --force (``needs_force``: the server's dry run)."""
    info: dict[str, Any] = {"drafter": name, "alias": alias, "version": cand["version"],
                            "gate": cand.get("gate"), "score": cand.get("score"),
                            "current": holder["version"] if holder else None, "needs_force": needs_force}
    if holder is not None and holder["version"] != cand["version"]:
        info["diff"] = diff_views(holder, cand)
        info["incompatible"] = compat_problems(cand, holder)
    if not as_json:
        console.print(f"promote [bold]{name} v{cand['version']}[/bold] to [bold]{alias}[/bold] "
                      f"(now: {'v' + str(holder['version']) if holder else 'unset'})")
        print_gate(cand)
        if info.get("diff"):
            print_diff(info["diff"], limit=30)
        for p in info.get("incompatible") or []:
            err_console.print(f"[yellow]incompatible:[/yellow] {escape(p)}", highlight=False)
        if any(p.startswith("gate not passed") for p in needs_force):
            err_console.print(f"[yellow]{alias} needs a passed gate:[/yellow] v{cand['version']}'s did not "
                              "pass; --force with a --reason overrides (recorded)", highlight=False)
    return info


def _print_move(result: dict[str, Any], name: str, alias: str) -> None:
    """One line saying where an alias moved (``from_version`` None, a first promotion, shows as ``v-``)."""
    if result.get("moved"):
        console.print(f"[green]{alias}[/green] of {name}: v{result.get('from_version') or '-'} -> "
                      f"v{result['to_version']}")
    else:
        console.print(f"{alias} of {name} already points to v{result['to_version']}; nothing changed")


def _confirm_rollback(name: str, alias: str, current_version: Any, to_n: int | None, yes: bool,
                      quiet: bool) -> None:
    """Say which move a rollback makes (unless ``quiet``) and ask for confirmation (unless ``yes``;
    a refusal exits 4, see ``confirm``)."""
    label = f"v{to_n}" if to_n else "its previous holder"
    if not quiet:
        console.print(f"rollback {alias} of {name} from v{current_version} to {label}")
    confirm(f"Move {alias} of {name} back to {label}?", yes)


@alias_app.callback()
def _alias_root() -> None:
    """Alias audit trail."""


def promote(
    name: str = typer.Argument(..., help="Drafter name."),
    version: str = typer.Argument(..., help="Version to promote (3 or v3)."),
    alias: str = typer.Option("champion", "--alias", help="Alias to move."),
    reason: str = typer.Option(..., "--reason", help="Why (kept in the alias history)."),
    force: bool = typer.Option(False, "--force", help="Override a promotion gate that did not pass (champion) "
                               "or a target/tokenizer/chat-template mismatch; recorded with the reason "
                               "(never the checksum check)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    db_url: str | None = DbUrlOpt,
    org: str | None = OrgOpt,
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Point an alias (default champion) at a version: checks the key first, shows the gate decision and the
    diff against the current holder (recipe, data and score first), asks for confirmation, re-verifies
    every checksum. Champion needs a passed gate, and any alias a compatible version, unless --force with
    a --reason (recorded in the alias history). Needs an admin API key (or --db-url). Refusals exit 4.

    Example: tracedraft promote qwen3-4b-agent 7 --alias champion --reason "tau +12% on support traffic"
    """
    with handled(as_json):
        n = parse_version(version)
        if n is None:
            raise CliError("invalid_value", f"VERSION must be a number such as 3 or v3, got {version!r}",
                           where="VERSION")
        with open_registry_admin(db_url, org, api_url, api_key) as admin:
            # The key, the drafter and the version are checked before anything is shown (a member key is
            # refused here, not after the gate and the diff), and the dry run says what needs --force.
            plan = admin.promote(name, n, alias, reason=reason, force=force, dry_run=True)
            cand = admin.version(name, n)
            current = plan.get("from_version")
            holder = admin.version(name, current) if current is not None else None
            info = _show_promotion(name, alias, cand, holder, plan.get("overridden") or [], as_json)
            if plan.get("overridden") and not force:
                raise registry.refusal(n, alias, plan["overridden"])  # refused before asking
            confirm(f"Move {alias} of {name} to v{n}?", yes or as_json)
            result = admin.promote(name, n, alias, reason=reason, force=force)
    if as_json:
        print_json({**info, **result})
        return
    _print_move(result, name, alias)
    for p in result.get("overridden") or []:
        console.print(f"[yellow]forced past:[/yellow] {escape(p)}", highlight=False)


def rollback(
    name: str = typer.Argument(..., help="Drafter name."),
    alias: str = typer.Option("champion", "--alias", help="Alias to move back."),
    to: str | None = typer.Option(None, "--to", help="Version to go back to (default: the previous holder)."),
    reason: str = typer.Option("rollback from the CLI", "--reason", help="Why (kept in the alias history)."),
    force: bool = typer.Option(False, "--force", help="Allow a --to version that never held the alias and "
                               "is incompatible."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    db_url: str | None = DbUrlOpt,
    org: str | None = OrgOpt,
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Move an alias back to its previous holder (repeated rollbacks walk further back) or to --to.
    Checksums are re-verified. Needs an admin API key (or --db-url). Nothing to roll back exits 4.

    Example: tracedraft rollback qwen3-4b-agent --alias champion --reason "p99 regression"
    """
    with handled(as_json):
        to_n = None
        if to is not None:
            to_n = parse_version(to)
            if to_n is None:
                raise CliError("invalid_value", f"--to must be a number such as 3 or v3, got {to!r}", where="--to")
        with open_registry_admin(db_url, org, api_url, api_key) as admin:
            # the key and the move checked (a dry run) before anything is shown
            plan = admin.rollback(name, alias, to_n, reason=reason, force=force, dry_run=True)
            _confirm_rollback(name, alias, plan["from_version"], plan["to_version"], yes or as_json, as_json)
            result = admin.rollback(name, alias, to_n, reason=reason, force=force)
    if as_json:
        print_json(result)
        return
    _print_move(result, name, alias)


@alias_app.command("history")
def alias_history(
    name: str = typer.Argument(..., help="Drafter name."),
    alias: str | None = typer.Option(None, "--alias", help="Only this alias (default: all)."),
    db_url: str | None = DbUrlOpt,
    org: str | None = OrgOpt,
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Every alias move of a drafter, oldest first: who, when, from which version to which, why.

    Example: tracedraft alias history qwen3-4b-agent --alias champion
    """
    with handled(as_json), open_registry_admin(db_url, org, api_url, api_key) as admin:
        events = admin.alias_history(name, alias)
    if as_json:
        print_json(events)
        return
    console.print(table(f"Alias history of {name}", ["when", "alias", "action", "from", "to", "actor", "forced",
                                                     "reason"],
                        [[short_ts(e.get("ts")), e.get("alias"), e.get("action"),
                          "" if e.get("from_version") is None else f"v{e['from_version']}", f"v{e['to_version']}",
                          e.get("actor"), "yes" if e.get("forced") else "", e.get("reason")] for e in events]))
