"""User verbs on datasets and jobs, through the REST API (``datasets validate`` also works offline).

- ``datasets upload|validate|list|show`` (``infer-mapping``: service/cli/infer_mapping.py)
- ``jobs submit|list|show|events [--follow]|cancel``
"""

# ruff: noqa: B008  (typer declares arguments in defaults)
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from service.cli._common import (
    EXIT_ERROR,
    ApiKeyOpt,
    ApiUrlOpt,
    CliError,
    JsonOpt,
    confirm,
    console,
    err_console,
    handled,
    make_client,
    print_json,
    short_ts,
    table,
)

datasets_app = typer.Typer(help="Upload, validate and inspect trace datasets.", no_args_is_help=True)
jobs_app = typer.Typer(help="Submit, watch and cancel fine-tuning jobs.", no_args_is_help=True)

TERMINAL = ("succeeded", "failed", "cancelled")


# --- the validation report, for people ---------------------------------------------------------------------


def _file_status(summary: dict) -> str:
    """A file's status; a duplicate names the file(s) that held its conversations first."""
    status = summary.get("status") or "-"
    dup = summary.get("duplicate_of") or []
    return f"{status} of {', '.join(Path(d).name for d in dup)}" if status == "duplicate" and dup else status


def _where(p: dict[str, Any]) -> str:
    loc = p.get("file") or ""
    if p.get("line") is not None:
        loc += f":{p['line']}"
    if p.get("record"):
        loc += f" {p['record']}"
    if p.get("field"):
        loc += f" [{p['field']}]"
    return loc.strip()


def print_report(report: dict[str, Any], title: str = "Validation report") -> None:
    """A ValidationReport.to_dict() as tables: counts, problems by code, each error/warning with file:line,
    scrub counts, formats and models seen."""
    counts = dict(report.get("counts") or {})
    rows = [[k, v] for k, v in counts.items()]
    rows += [[f"chars {k}", v] for k, v in (report.get("chars") or {}).items()]
    console.print(table(title, ["count", "value"], rows))
    if report.get("formats"):
        console.print(table("Formats", ["format", "files"], [[k, v] for k, v in report["formats"].items()]))
    if report.get("models"):
        console.print(table("Models seen", ["model", "assistant messages"],
                            [[k, v] for k, v in report["models"].items()]))
    files = report.get("files") or {}
    if files:
        kinds = ("text", "reasoning", "tool_args", "tool_results")
        console.print(table("Files", ["file", "format", "conversations", "calls", "errors", "status",
                                      "chars text/reasoning/args/results"],
                            [[k, v.get("format") or "-", v.get("conversations"), v.get("calls"), v.get("errors"),
                              _file_status(v), "/".join(str((v.get("chars") or {}).get(c, 0)) for c in kinds)]
                             for k, v in files.items()]))
    by_code = report.get("problem_counts") or {}
    if by_code:
        console.print(table("Problems by code", ["severity:code", "count"], [[k, v] for k, v in by_code.items()]))
    for kind in ("errors", "warnings"):
        probs = report.get(kind) or []
        if probs:
            console.print(table(kind.capitalize(), ["code", "where", "message"],
                                [[p.get("code"), _where(p), p.get("message")] for p in probs]))
    if report.get("problems_truncated"):
        console.print("[dim](only the first problems of each kind are listed; counts are complete)[/dim]")
    scrub = report.get("scrub_counts") or {}
    console.print(table("Scrubbed", ["type", "replacements"], [[k, v] for k, v in scrub.items()])
                  if scrub else "scrubbed: nothing")
    ok = report.get("ok", not report.get("errors"))
    console.print("result: " + ("[green]ok[/green]" if ok else "[yellow]errors (see above)[/yellow]"))


# --- datasets ----------------------------------------------------------------------------------------------


def _named_after_files(files: list[Path], conversations: list) -> bool:
    """Whether the split depends on the files' names: every path is a file (as an upload and ``tracedraft run``
    take them) and some conversation id holds its file's name (formats without ids of their own: ``NAME#3``)."""
    return all(f.is_file() for f in files) and any(
        c.source is not None and Path(c.source.file).name in c.id for c in conversations)


@datasets_app.command("validate")
def datasets_validate(
    files: list[Path] = typer.Argument(..., help="Trace files or directories to check (any supported format)."),
    trace_format: str | None = typer.Option(None, "--format", help="Force a format (default: detect)."),
    mapping: Path | None = typer.Option(None, "--mapping", help="Read the files with a declared mapping file "
                                        "(YAML/JSON: where messages, roles, content and tool calls sit)."),
    on_error: str = typer.Option("skip", "--on-error", help="skip: report bad lines and go on; fail: stop."),
    scrub: bool = typer.Option(True, "--scrub/--no-scrub", help="Scrub secrets and personal data."),
    dedup: bool = typer.Option(True, "--dedup/--no-dedup", help="Drop conversations identical to one already "
                               "read (counted as duplicates_dropped); --no-dedup counts everything the files hold."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any line has an error."),
    as_json: bool = JsonOpt,
) -> None:
    """Validate trace files locally (no API needed): detect the format, parse, scrub, dedupe, and print
    the validation report. Exits 1 when nothing usable was found (or, with --strict, on any error).
    "result: ok" is printed only when every file's content was understood.

    Example: tracedraft datasets validate traces/ --json > report.json
    """
    from drafters.traces.ingest import ingest, ingest_as_uploaded, split_conversations
    from drafters.traces.near_duplicates import split_without_near_duplicates

    if on_error not in ("skip", "fail"):
        raise typer.BadParameter("must be skip or fail", param_hint="--on-error")
    with handled(as_json):
        check_files_exist(files, mapping, Path.exists)  # file_not_found, exit 1: as `tracedraft run` says it
        result = ingest(files, format=trace_format, on_error=on_error, scrub=scrub,  # type: ignore[arg-type]
                        mapping=mapping, dedup=dedup)
        report = result.report.to_dict()
        if _named_after_files(files, result.conversations):  # read again under the names an upload gives them
            result = ingest_as_uploaded(files, format=trace_format, on_error=on_error, scrub=scrub,
                                        mapping=mapping, dedup=dedup)
        # The split a dataset of these files gets (service.datasets: at least one conversation held out, held-out
        # near-duplicates of training ones moved to train).
        train, held = split_conversations(result.conversations, result.heldout_fraction, min_heldout=1)
        train, held, _ = split_without_near_duplicates(train, held)
        splits = report["split"] = {"train": len(train), "heldout": len(held)}
    if as_json:
        print_json(report)
    else:
        print_report(report)
        console.print(f"split: {splits['train']} train / {splits['heldout']} held-out conversations")
    usable = (report.get("counts") or {}).get("conversations", 0) > 0
    if not usable or (strict and report.get("errors")):
        raise typer.Exit(EXIT_ERROR)


def check_files_exist(files: list[Path], mapping: Path | None, exists: Any) -> None:
    """Raise CliError ``file_not_found`` (exit 1, the code and status of ``tracedraft run``'s
    ``embedded.submit``) naming the trace files, or the mapping file, that ``exists`` says are missing."""
    missing = [str(f) for f in files if not exists(f)]
    if missing:
        raise CliError("file_not_found", f"no such trace file: {', '.join(missing)}", where=missing[0])
    if mapping is not None and not exists(mapping):
        raise CliError("file_not_found", f"no such mapping file: {mapping}", where="--mapping")


def _dataset_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [[d.get("id"), d.get("name"), d.get("status"), d.get("format"), d.get("size_bytes"),
             (d.get("counts") or {}).get("conversations"), (d.get("counts") or {}).get("calls"),
             short_ts(d.get("created_at"))] for d in items]


DATASET_COLUMNS = ["id", "name", "status", "format", "bytes", "conversations", "calls", "created"]


def _wait_dataset(client: Any, ds: dict[str, Any], timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while ds.get("status") == "validating" and time.monotonic() < deadline:
        time.sleep(0.5)
        ds = client.get(f"/v1/datasets/{ds['id']}")
    return ds


@datasets_app.command("upload")
def datasets_upload(
    files: list[Path] = typer.Argument(..., help="Trace files (JSON/JSONL, optionally .gz or .zst)."),
    name: str | None = typer.Option(None, "--name", help="Display name of the dataset."),
    trace_format: str | None = typer.Option(None, "--format", help="Force a format (default: detect)."),
    mapping: Path | None = typer.Option(None, "--mapping", help="Declared mapping file (YAML/JSON) to read a "
                                        "format that has no module with; kept with the dataset."),
    on_error: str | None = typer.Option(None, "--on-error", help="skip (default) or fail."),
    wait: bool = typer.Option(False, "--wait", help="Wait until validation finished and print the report."),
    timeout: float = typer.Option(600.0, "--timeout", help="Seconds to wait with --wait."),
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Upload trace files as one dataset (streamed; the raw bytes are kept under their sha256). With
    --mapping, the files are read with that declared mapping (checked by the API at once: bad_mapping).

    Example: tracedraft datasets upload traces/*.jsonl --name support-agent --wait
    Example: tracedraft datasets upload export.jsonl --mapping support-bot.mapping.yaml --wait
    """
    with handled(as_json):
        check_files_exist(files, mapping, Path.is_file)
        form = {k: v for k, v in {"name": name, "format": trace_format, "on_error": on_error}.items() if v}
        with make_client(api_url, api_key) as client:
            # the mapping goes first: the API checks it before it stores any trace file
            parts = [*([("mapping", mapping)] if mapping else []), *[("file", f) for f in files]]
            handles = [open(f, "rb") for _, f in parts]  # noqa: SIM115 - closed below
            try:
                ds = client.post("/v1/datasets", data=form,
                                 files=[(field, (f.name, h, "application/octet-stream"))
                                        for (field, f), h in zip(parts, handles, strict=True)])
            finally:
                for h in handles:
                    h.close()
            if wait:
                ds = _wait_dataset(client, ds, timeout)
    if as_json:
        print_json(ds)
    else:
        console.print(table("Dataset", DATASET_COLUMNS, _dataset_rows([ds])))
        if ds.get("report"):
            print_report(ds["report"])
    if ds.get("status") == "failed":
        err = ds.get("error") or {}
        err_console.print("[red]error[/red] " + escape(f"[{err.get('code', 'validation_failed')}] "
                                                       f"{err.get('message', 'dataset validation failed')}"))
        err_console.print(escape(f"dataset {ds.get('id')} is kept, failed, with its validation report (why each "
                                 f"file was refused: tracedraft datasets show {ds.get('id')}); no job can use "
                                 f"it. Remove it with: tracedraft datasets delete {ds.get('id')}"),
                          highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_ERROR)


@datasets_app.command("delete")
def datasets_delete(
    dataset_id: str = typer.Argument(..., help="Dataset id (ds_...)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Delete a dataset (its row and canonical files; its raw files go with the next gc). Refused while a
    job uses it (exit 4).

    Example: tracedraft datasets delete ds_01J... --yes
    """
    with handled(as_json):
        confirm(f"Delete dataset {dataset_id}?", yes or as_json)
        with make_client(api_url, api_key) as client:
            out = client.delete(f"/v1/datasets/{dataset_id}")
    if as_json:
        print_json(out)
    else:
        console.print(f"deleted dataset {dataset_id}")


@datasets_app.command("list")
def datasets_list(
    limit: int = typer.Option(100, "--limit", min=1, help="At most this many datasets (newest first)."),
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """List your organization's datasets, newest first.

    Example: tracedraft datasets list --json | jq '.[].id'
    """
    with handled(as_json), make_client(api_url, api_key) as client:
        items = client.paginate("/v1/datasets", {"limit": min(limit, 100)}, limit=limit)
    if as_json:
        print_json(items)
    else:
        console.print(table("Datasets", DATASET_COLUMNS, _dataset_rows(items)))


@datasets_app.command("show")
def datasets_show(
    dataset_id: str = typer.Argument(..., help="Dataset id (ds_...)."),
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Show one dataset with its files and validation report.

    Example: tracedraft datasets show ds_01J... --json
    """
    with handled(as_json), make_client(api_url, api_key) as client:
        ds = client.get(f"/v1/datasets/{dataset_id}")
        if ds.get("report") is None and ds.get("status") != "validating":
            try:
                ds["report"] = (client.get(f"/v1/datasets/{dataset_id}/report") or {}).get("report")
            except CliError:
                pass
    if as_json:
        print_json(ds)
        return
    console.print(table("Dataset", DATASET_COLUMNS, _dataset_rows([ds])))
    files = ds.get("files") or []
    if files:
        console.print(table("Files", ["name", "sha256", "bytes", "compression"],
                            [[f.get("name"), f.get("sha256"), f.get("size"), f.get("compression")] for f in files]))
    if ds.get("mapping"):
        m = ds["mapping"]
        console.print(escape(f"read with the declared mapping {m.get('name')} (sha256 {m.get('sha256')})"))
    if ds.get("error"):
        e = ds["error"]
        console.print("[red]error[/red] " + escape(f"[{e.get('code')}] {e.get('message')}"))
    if ds.get("report"):
        print_report(ds["report"])


# --- jobs --------------------------------------------------------------------------------------------------


def _parse_pairs(pairs: list[str] | None, what: str) -> dict[str, Any]:
    """``KEY=VALUE`` options to a dict; values are JSON when they parse (numbers, booleans, lists)."""
    out: dict[str, Any] = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint=what)
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def _job_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [[j.get("id"), j.get("status"), j.get("stage"), f"{100 * float(j.get('progress') or 0):.0f}%",
             j.get("dataset_id"), ((j.get("spec") or {}).get("target") or {}).get("model"),
             (j.get("error") or {}).get("code"), short_ts(j.get("created_at"))] for j in items]


JOB_COLUMNS = ["id", "status", "stage", "progress", "dataset", "target", "error", "created"]


@jobs_app.command("submit")
def jobs_submit(
    dataset: str = typer.Option(..., "--dataset", help="Dataset id (from `datasets upload`)."),
    target: str | None = typer.Option(None, "--target", help="Target model: HF id, local dir or .gguf."),
    chat_template: Path | None = typer.Option(None, "--chat-template", help="Jinja chat template file."),
    base_drafter: str | None = typer.Option(None, "--base-drafter", help="Registry reference to start "
                                               "from (name@champion, name@v3)."),
    name: str | None = typer.Option(None, "--name", help="Registry name to publish under."),
    recipe: list[str] | None = typer.Option(None, "--recipe", help="Recipe field KEY=VALUE (repeatable), "
                                               "e.g. --recipe max_steps=200 --recipe mode=lora."),
    evaluation: list[str] | None = typer.Option(None, "--eval", help="Evaluation field KEY=VALUE "
                                                   "(repeatable), e.g. --eval engine=sglang."),
    auto_promote: bool = typer.Option(False, "--auto-promote", help="Promote to champion if the gate passes."),
    metadata: list[str] | None = typer.Option(None, "--metadata", help="KEY=VALUE label (repeatable)."),
    spec_file: Path | None = typer.Option(None, "--spec", help="JSON file with the job spec; options "
                                             "given on the command line override its fields."),
    idempotency_key: str | None = typer.Option(None, "--idempotency-key", help="Makes retries safe."),
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Submit a fine-tuning job on an uploaded dataset.

    Example: tracedraft jobs submit --dataset ds_01J... --target Qwen/Qwen3-4B --recipe max_steps=2000
    --eval engine=sglang --idempotency-key run-42
    """
    with handled(as_json):
        body: dict[str, Any] = {}
        if spec_file is not None:
            try:
                body = json.loads(spec_file.read_text())
            except (OSError, ValueError) as e:
                raise CliError("invalid_value", f"cannot read the spec file: {e}", where=str(spec_file)) from e
        body["dataset_id"] = dataset
        tgt = dict(body.get("target") or {})
        if target:
            tgt["model"] = target
        if chat_template is not None:
            tgt["chat_template"] = chat_template.read_text()
        if not tgt.get("model"):
            raise CliError("usage", "give --target (or target.model in --spec)", where="--target")
        body["target"] = tgt
        if base_drafter:
            body["base_drafter"] = base_drafter
        if name:
            body["drafter_name"] = name
        if recipe:
            body["recipe"] = {**(body.get("recipe") or {}), **_parse_pairs(recipe, "--recipe")}
        if evaluation:
            body["evaluation"] = {**(body.get("evaluation") or {}), **_parse_pairs(evaluation, "--eval")}
        if auto_promote:
            body["promotion"] = {**(body.get("promotion") or {}), "auto_promote": True}
        if metadata:
            body["metadata"] = {k: str(v) for k, v in
                                {**(body.get("metadata") or {}), **_parse_pairs(metadata, "--metadata")}.items()}
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        with make_client(api_url, api_key) as client:
            job = client.post("/v1/jobs", json=body, headers=headers)
    if as_json:
        print_json(job)
    else:
        console.print(table("Job submitted", JOB_COLUMNS, _job_rows([job])))
        console.print(f"follow it with: tracedraft jobs events {job['id']} --follow")


@jobs_app.command("list")
def jobs_list(
    status: str | None = typer.Option(None, "--status", help="queued|running|succeeded|failed|cancelled."),
    metadata: list[str] | None = typer.Option(None, "--metadata", help="Filter KEY=VALUE (repeatable)."),
    limit: int = typer.Option(50, "--limit", min=1, help="At most this many jobs (newest first)."),
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """List jobs, newest first, optionally filtered by status and metadata.

    Example: tracedraft jobs list --status running --metadata team=search
    """
    params: dict[str, Any] = {"limit": min(limit, 100), "status": status}
    for k, v in _parse_pairs(metadata, "--metadata").items():
        params[f"metadata.{k}"] = str(v)
    with handled(as_json), make_client(api_url, api_key) as client:
        items = client.paginate("/v1/jobs", params, limit=limit)
    if as_json:
        print_json(items)
    else:
        console.print(table("Jobs", JOB_COLUMNS, _job_rows(items)))


@jobs_app.command("show")
def jobs_show(
    job_id: str = typer.Argument(..., help="Job id (job_...)."),
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Show a job: status, stage, progress with ETA, error, and the outputs of each stage.

    Example: tracedraft jobs show job_01J...
    """
    with handled(as_json), make_client(api_url, api_key) as client:
        job = client.get(f"/v1/jobs/{job_id}")
    if as_json:
        print_json(job)
        return
    console.print(table("Job", JOB_COLUMNS, _job_rows([job])))
    if job.get("eta_seconds") is not None:
        console.print(f"eta: {job['eta_seconds']:.0f} s")
    if job.get("error"):
        e = job["error"]
        console.print("[red]error[/red] " + escape(f"[{e.get('code')}] {e.get('message')}"
                                                   + (f" (at {e['param']})" if e.get("param") else "")))
    for stage, out in (job.get("result") or {}).items():
        console.print(f"[bold]{escape(stage)}[/bold]: {escape(stage_summary(out))}", highlight=False)
    if job.get("result"):
        console.print(f"[dim]every output in full: tracedraft jobs show {escape(job_id)} --json[/dim]")


def stage_summary(out: Any, width: int = 60) -> str:
    """A stage's output on one line, whole words only: ``key=value`` for each key, a value longer than
    ``width`` shortened at a word boundary with "...", a nested object or list by its size
    (``report={12 keys}``, ``history=[40 items]``)."""
    if not isinstance(out, dict):
        return _short(json.dumps(out, default=str), width)
    parts = []
    for key, value in out.items():
        if isinstance(value, dict):
            text = f"{{{len(value)} keys}}"
        elif isinstance(value, list):
            text = f"[{len(value)} items]"
        else:
            text = _short(value if isinstance(value, str) else json.dumps(value, default=str), width)
        parts.append(f"{key}={text}")
    return ", ".join(parts)


def _short(text: str, width: int) -> str:
    """``text`` itself, or cut before ``width`` at its last space, "/" or "," and marked with "..."."""
    if len(text) <= width:
        return text
    cut = max(text.rfind(sep, 0, width - 3) for sep in (" ", "/", ","))
    return text[: cut if cut > width // 2 else width - 3].rstrip() + "..."


def _print_event(ev: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(ev, default=str), flush=True)
        return
    colour = {"error": "red", "warning": "yellow"}.get(ev.get("level", ""), "")
    line = f"{ev.get('seq'):>5} {short_ts(ev.get('ts'))} {ev.get('type', ''):<8} {ev.get('message', '')}"
    console.print(f"[{colour}]{escape(line)}[/{colour}]" if colour else line, markup=bool(colour), highlight=False)


def _follow_sse(client: Any, job_id: str, after: int, as_json: bool) -> tuple[int, bool]:
    """Read the server-sent-event stream; returns (last seq, whether it was a real SSE stream)."""
    last = after
    with client.stream("GET", f"/v1/jobs/{job_id}/events", params={"follow": "true", "after": after},
                       timeout=None) as r:
        if "text/event-stream" not in r.headers.get("content-type", ""):
            return last, False
        data: list[str] = []
        for raw in r.iter_lines():
            if raw.startswith("data:"):
                data.append(raw[5:].lstrip())
            elif raw == "" and data:
                try:
                    ev = json.loads("\n".join(data))
                except ValueError:
                    ev = None
                data = []
                if isinstance(ev, dict) and isinstance(ev.get("seq"), int) and ev["seq"] > last:
                    _print_event(ev, as_json)
                    last = ev["seq"]
    return last, True


@jobs_app.command("events")
def jobs_events(
    job_id: str = typer.Argument(..., help="Job id (job_...)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Stream new events until the job finishes; "
                                "the exit code is then 0 for succeeded, 1 for failed or cancelled."),
    after: int = typer.Option(0, "--after", min=0, help="Only events after this sequence number."),
    poll: float = typer.Option(1.0, "--poll", min=0.05, help="Seconds between polls when streaming is "
                               "not available."),
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = typer.Option(False, "--json", help="One JSON object per event (JSON lines)."),
) -> None:
    """Print a job's events (stage changes, progress, metrics, messages), oldest first.

    Example: tracedraft jobs events job_01J... --follow
    """
    with handled(as_json), make_client(api_url, api_key) as client:
        last = after
        while True:
            page = client.get(f"/v1/jobs/{job_id}/events", params={"after": last, "limit": 100})
            for ev in page.get("data", []):
                _print_event(ev, as_json)
                last = max(last, int(ev.get("seq", last)))
            if page.get("has_more"):
                continue
            if not follow:
                return
            job = client.get(f"/v1/jobs/{job_id}")
            if job.get("status") in TERMINAL:
                break
            streamed = False
            try:
                last, streamed = _follow_sse(client, job_id, last, as_json)
            except CliError as e:
                if e.status not in (400, 404, 405, 422):
                    raise
            if not streamed:
                time.sleep(poll)
        # drain what was written between the last page and the terminal status
        page = client.get(f"/v1/jobs/{job_id}/events", params={"after": last, "limit": 100})
        for ev in page.get("data", []):
            _print_event(ev, as_json)
    if job.get("status") != "succeeded":
        raise typer.Exit(EXIT_ERROR)


@jobs_app.command("resume")
def jobs_resume(
    job_id: str = typer.Argument(..., help="Job id (job_...)."),
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Queue a failed or cancelled job again at the stage where it stopped (training resumes from its last
    checkpoint). A succeeded, queued or running job exits 4 (job_finished, job_not_resumable).

    Example: tracedraft jobs resume job_01J...
    """
    with handled(as_json), make_client(api_url, api_key) as client:
        job = client.post(f"/v1/jobs/{job_id}/resume")
    if as_json:
        print_json(job)
    else:
        console.print(f"job {job.get('id')}: resumed (status {job.get('status')}, stage {job.get('stage')})")


@jobs_app.command("cancel")
def jobs_cancel(
    job_id: str = typer.Argument(..., help="Job id (job_...)."),
    api_url: str | None = ApiUrlOpt,
    api_key: str | None = ApiKeyOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Cancel a job: a queued job stops at once, a running one checkpoints and stops. Cancelling a finished
    job exits 4 (job_finished).

    Example: tracedraft jobs cancel job_01J...
    """
    with handled(as_json), make_client(api_url, api_key) as client:
        job = client.post(f"/v1/jobs/{job_id}/cancel")
    if as_json:
        print_json(job)
    else:
        state = "cancelled" if job.get("status") == "cancelled" else "cancel requested"
        console.print(f"job {job.get('id')}: {state} (status {job.get('status')}, stage {job.get('stage')})")
