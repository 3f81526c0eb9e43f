"""``tracedraft run``: the whole main job on the embedded default (docs/architecture.md section 2).

Registered on the app by ``service.cli``; its options are part of the README and the tests.
"""

# ruff: noqa: B008  (typer declares arguments in defaults)
from __future__ import annotations

import json
import os
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from drafters.errors import TracedraftError
from service.cli._common import console, err_console, fail


def run(
    traces: list[Path] = typer.Argument(None, help="Trace files (any supported format, detected per file)."),
    target: str | None = typer.Option(None, "--target", help="Target model: 'smollm2-135m-instruct', a .gguf "
                                      "file, a local HF directory, or a HF id in the local cache (required "
                                      "unless --resume)."),
    chat_template: Path | None = typer.Option(None, "--chat-template", help="Jinja chat template file "
                                                 "(default: the tokenizer's own)."),
    base_drafter: str | None = typer.Option(None, "--base-drafter", help="Warm start from a registry "
                                               "reference (name@champion, name@v3) or a checkpoint directory."),
    max_steps: int | None = typer.Option(None, "--max-steps", min=1, help="Training steps (default: auto)."),
    time_budget: float | None = typer.Option(None, "--time-budget", min=0.1,
                                                help="Training time budget in minutes."),
    max_calls: int | None = typer.Option(None, "--max-calls", min=1,
                                            help="Held-out calls replayed in evaluation (default: auto)."),
    max_new_tokens: int | None = typer.Option(None, "--max-new-tokens", min=1,
                                                 help="Tokens generated per held-out call (default: auto)."),
    draft_layers: int | None = typer.Option(None, "--draft-layers", min=1,
                                               help="Drafter layers (default: 1 on CPU, 5 on GPU)."),
    engine: str = typer.Option("hf", "--engine", help="Where accepted length is measured: hf (in-process "
                               "speculative decoding, default) or llamacpp (llama-server; `tracedraft engines "
                               "install llamacpp` first)."),
    name: str | None = typer.Option(None, "--name", help="Drafter name in the registry."),
    trace_format: str | None = typer.Option(None, "--format", help="Force a trace format (default: detect)."),
    mapping: Path | None = typer.Option(None, "--mapping", help="Declared mapping file (YAML/JSON) to read a "
                                        "trace format that has no module with (drafters/traces/mapping.py)."),
    regenerate: str = typer.Option("auto", "--regenerate", help="Regenerate the training answers with the "
                                   "target first: auto (when the traces were written by another model), "
                                   "always, never."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Let the target's repository "
                                           "run its own Python code (Kimi-K2's tokenizer needs it); only for "
                                           "a model whose code you trust."),
    resume_job: str | None = typer.Option(None, "--resume", help="Resume a cancelled or failed job by id."),
    as_json: bool = typer.Option(False, "--json", help="Print the final report as JSON on stdout (progress lines "
                                 "and warnings go to stderr)."),
) -> None:
    """Run the whole job on the embedded default: ingest, prepare, train, evaluate, register.

    Example: tracedraft run examples/traces/*.json* examples/traces/*.yaml --target smollm2-135m-instruct
    --chat-template examples/chat_templates/chatml_tools.jinja --time-budget 4
    """
    from service import embedded

    try:
        settings = embedded.default_settings()
        if resume_job:
            job_id, stage = resume_job, embedded.resume(settings, resume_job)
        else:
            if not traces:
                raise TracedraftError("no_input", "give at least one trace file (or --resume JOB_ID)",
                                      where="TRACES")
            if not target:
                raise TracedraftError("no_target", "--target is required (unless --resume)", where="--target")
            if engine not in ("hf", "llamacpp"):
                raise TracedraftError("unknown_engine", f"unknown engine {engine!r}: use hf or llamacpp (sglang "
                                      "runs on GPU workers through `tracedraft jobs submit`)", where="--engine")
            if mapping is not None and trace_format:
                raise TracedraftError("format_and_mapping", "give --format or --mapping, not both: the mapping "
                                      "says how to read the files", where="--mapping")
            if regenerate not in ("auto", "always", "never"):
                raise TracedraftError("bad_option", f"--regenerate must be auto, always or never, not "
                                      f"{regenerate!r}", where="--regenerate")
            spec = embedded.build_spec(
                target=target, chat_template=chat_template, base_drafter=base_drafter, max_steps=max_steps,
                time_budget_min=time_budget, engine=engine, max_calls=max_calls, max_new_tokens=max_new_tokens,
                num_draft_layers=draft_layers, drafter_name=name, trace_format=trace_format,
                regenerate=regenerate, trust_remote_code=trust_remote_code,
            )
            job_id, stage = embedded.submit(settings, traces, spec, mapping=mapping), "validate"
        if not as_json:
            console.print(f"job [bold]{job_id}[/bold]  (database {settings.database_url})", soft_wrap=True)
        # --json: the summary alone on stdout; progress lines and warnings still reach the user, on stderr
        out = err_console if as_json else console
        if not out.is_terminal:  # no library progress bars (carriage returns) in a log: our lines say it
            os.environ.setdefault("TQDM_DISABLE", "1")  # read by every tqdm bar as it starts (GGUF conversion)
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        job = embedded.run_job(settings, job_id, stage, out)
    except TracedraftError as exc:
        fail(exc, 1)  # run keeps its documented codes: 1 for any failed job or bad input
    except KeyboardInterrupt:
        err_console.print("[red]aborted[/red]")
        raise typer.Exit(130)
    summary = embedded.report_summary(job, embedded.job_warnings(settings, job.id))
    if as_json:
        print(json.dumps(summary, indent=1, default=str))
    else:
        print_summary(summary)
    if job.status == "cancelled":
        console.print(f"Stopped. Resume with: [bold]tracedraft run --resume {job.id}[/bold]")
        raise typer.Exit(130)
    if job.status != "succeeded":
        raise typer.Exit(1)


def print_summary(s: dict) -> None:
    """The run's report as tables: tau per proposer and per segment, speed, registry entry."""
    if s.get("error"):
        e = s["error"]
        err_console.print(f"[red]job {s['status']}[/red] " + escape(f"[{e.get('code')}] {e.get('message')}"
                          + (f" (at {e['param']})" if e.get("param") else "")))
        return
    if not s.get("proposers"):
        console.print(f"job {s['job_id']}: {s['status']}")
        return
    console.print(f"\nHeld-out test calls: {s['heldout_calls']}   generated tokens: {s['generated_tokens']}")
    print_speed(s)
    if s.get("convention"):
        console.print(f"[dim]{s['convention']}[/dim]")
    segments = sorted({seg for p in s["proposers"].values() for seg in p["tau_by_segment"]})
    table = Table(title="Accepted length (tau) on held-out calls")
    for col in ["proposer", "tau", *[f"tau {seg}" for seg in segments], "tokens/s", "vs plain"]:
        table.add_column(col, justify="left" if col == "proposer" else "right")
    for name, p in s["proposers"].items():
        # a what-if proposer runs both of its proposers each round here: its wall clock is no serving speed
        speed = ("-", "-") if p.get("what_if") else (_f(p["tokens_per_s"]), _f(p["speedup_vs_plain"], "x"))
        table.add_row(name + (" (what-if)" if p.get("what_if") else ""), _f(p["tau"]),
                      *[_f(p["tau_by_segment"].get(seg)) for seg in segments], *speed)
    table.add_row("plain decoding", "", *[""] * len(segments), _f(s.get("plain_tokens_per_s")), "1.00x")
    console.print(table)
    if any(p.get("what_if") for p in s["proposers"].values()):
        console.print("[dim]what-if: no engine serves this proposer; its tau is real (the target verified "
                      "its drafts), its speed is not measured[/dim]")
    print_comparisons(s, segments)
    r = s.get("regeneration")
    if r:
        tc = r.get("tool_calls") or {}
        console.print(f"regeneration ({r['engine']}): {r['calls']} calls, {r['reused']} reused, {r['tokens']} new "
                      f"tokens in {r['seconds']:.0f} s; answers with tool calls {tc.get('answers_with_tool_calls')}"
                      f"/{tc.get('answers')}, tool calls failing to parse or validate "
                      f"{tc.get('tool_calls', 0) - tc.get('tool_calls_valid', 0)}/{tc.get('tool_calls')}")
    t = s.get("training") or {}
    if t.get("steps") is not None:
        console.print(f"training: {t['steps']} steps ({t.get('stop_reason')}); validation expected tau "
                      f"{_f(t.get('initial_expected_tau'))} -> {_f(t.get('best_expected_tau'))}")
    gate = s.get("gate") or {}
    if gate:
        # the gate judges tau against the incumbent, not speed: said, so a pass beside a slow drafter reads right
        against = (gate.get("details") or {}).get("incumbent")
        what = f"gate (tau against {against}; speed is judged by deploy)" if against else "gate"
        console.print(f"{escape(what)}: {'[green]passed' if gate.get('passed') else '[yellow]not passed'}[/] "
                      + escape("; ".join(gate.get("reasons", []))))
    reg = s.get("registry") or {}
    console.print(f"registered: {reg.get('drafter')} v{reg.get('version')} ({reg.get('version_id')})")
    console.print(f"checkpoint: {reg.get('checkpoint_uri')}")
    if reg.get("report_uri"):
        console.print(f"report:     {reg['report_uri']}/report.html (and report.json)")


def print_speed(s: dict) -> None:
    """Speed first: each proposer's measured speed-up over plain decoding with the cost model that explains it
    (speed-up = tau / (r + c), docs/dspark.md 5.5), then what to deploy and where that was chosen."""
    speed = s.get("speed") or {}
    rows = speed.get("proposers") or {}
    if not rows:
        return
    table = Table(title=f"Speed on the test calls ({speed.get('engine')} engine, {speed.get('hardware')})")
    for col in ("proposer", "speed-up", "tokens/s", "tau", "r", "c", "tau / (r + c)"):
        table.add_column(col, justify="left" if col == "proposer" else "right")
    order = sorted(rows, key=lambda n: -(rows[n].get("speedup_vs_plain") or 0.0))
    for name in order:
        r = rows[name]
        cm = r.get("cost") or {}
        if r.get("what_if"):
            table.add_row(f"{name} (what-if)", "-", "-", _f(r.get("tau")), "", "", "")
            continue
        table.add_row(name, _f(r.get("speedup_vs_plain"), "x"), _f(r.get("tokens_per_s")), _f(r.get("tau")),
                      _f(cm.get("r")), _f(cm.get("c")), _f(cm.get("formula_speedup"), "x"))
    table.add_row("plain decoding", "1.00x", _f(s.get("plain_tokens_per_s")), "1.00", "1.00", "0.00", "1.00x")
    console.print(table)
    console.print("[dim]speed-up: end to end, prefill included; tau / (r + c): the decoding phase, r and c in "
                  "plain decoding steps (a verification round and a drafting round)[/dim]")
    low = [n for n in order if not rows[n].get("what_if") and ((rows[n].get("cost") or {}).get("r") or 1.0) < 1.0]
    if low:  # a verification round costs at least one plain step: below it, the steps were timed on a busy machine
        console.print(f"[yellow]r below 1 for {', '.join(low)}: a verification round timed faster than a plain "
                      "decoding step is timing noise (a busy machine); rerun on idle cores before quoting these "
                      "figures[/yellow]")
    d = s.get("deploy") or {}
    if d:
        sel = s.get("selection") or {}
        name = d.get("proposer") or "plain decoding, no proposer faster"
        if d.get("chosen_on") == "development":
            test = d.get("on_test") or {}
            where = (f"chosen on {sel.get('dev_calls')} development calls at {_f(d.get('speedup_vs_plain'), 'x')}; "
                     f"{_f(test.get('speedup_vs_plain'), 'x')} on the test calls")
        else:
            where = (f"{_f(d.get('speedup_vs_plain'), 'x')}, chosen on the test calls themselves: too few "
                     "held-out calls for a development split")
        console.print(f"[bold]deploy on {d.get('engine')}: {name}[/]: {where}"
                      + (f"; cascade threshold {sel.get('cascade_threshold')}" if name == "cascade" else ""))
        if d.get("reason"):  # why this one and not a faster-looking row: the tie rule (drafters/evaluate/speed.py)
            console.print(f"[dim]why: {d['reason']}[/dim]")


def print_comparisons(s: dict, segments: list[str]) -> None:
    """The paired per-call differences of the trained drafter against each other proposer (overall and by
    segment, 95% intervals), then, plainly, every segment where a baseline still has the higher tau."""
    for c in (s.get("comparisons") or {}).values():
        if c.get("mean_diff") is None:
            continue
        parts = [f"overall {_diff(c)}"] + [f"{seg} {_diff(v)}" for seg, v in c["by_segment"].items()
                                           if v.get("mean_diff") is not None]
        console.print(f"{c['candidate']} - {c['incumbent']} per call: " + "; ".join(parts))
    props = s["proposers"]
    cand = props.get("candidate")
    if not cand:
        return
    ahead = []
    for name in ("ngram", "suffix"):
        base = props.get(name)
        if base and (base["tau"] or 0) > (cand["tau"] or 0):
            ahead.append(f"{name} overall ({_f(base['tau'])} vs {_f(cand['tau'])})")
        for seg in segments if base else ():
            theirs, ours = base["tau_by_segment"].get(seg), cand["tau_by_segment"].get(seg)
            if theirs is not None and theirs > (ours or 0):
                ahead.append(f"{name} on {seg} ({_f(theirs)} vs {_f(ours)})")
    if ahead:
        console.print("[yellow]baselines still ahead of the trained drafter:[/] " + ", ".join(ahead))


def _diff(c: dict) -> str:
    lo, hi = c["ci95"]
    return f"{c['mean_diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] ({c['calls']} calls)"


def _f(value, suffix: str = "") -> str:
    return "" if not isinstance(value, (int, float)) else f"{value:.2f}{suffix}"
