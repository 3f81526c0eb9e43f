"""The embedded main job: ``tracedraft run`` does upload, validate, prepare, train, evaluate and register
in one process, on the embedded default (SQLite file, local artifact directory, inline pipeline).

It uses exactly the code paths of the stack: the dataset and job rows are created as the API would, the
stages run as the same Celery tasks (``service.queue.dispatch`` in inline mode, on a worker thread), and the
progress shown is read back from the job's event stream, as ``tracedraft jobs events --follow`` reads it.
Ctrl-C requests a cancel (the training stage checkpoints and stops) and prints how to resume.
"""

from __future__ import annotations

import os
import signal
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from drafters.errors import TracedraftError
from service import auth, datasets, jobs
from service.api.schemas import PromotionPolicy
from service.db import session as db
from service.db.models import Job, Organization
from service.settings import Settings, get_settings
from service.storage import ArtifactStore

LOCAL_ORG = "local"
STAGES = ("validating", "preparing", "regenerating", "training", "evaluating", "registering")
POLL_S = 0.3
LINE_EVERY_S = 30.0


def local_org(session) -> Organization:
    """The embedded mode's one organization (created on first use)."""
    try:
        return auth.get_org(session, LOCAL_ORG)
    except TracedraftError:
        return auth.create_org(session, LOCAL_ORG)


def build_spec(
    *,
    target: str,
    chat_template: Path | None,
    base_drafter: str | None,
    max_steps: int | None,
    time_budget_min: float | None,
    engine: str,
    max_calls: int | None,
    max_new_tokens: int | None,
    num_draft_layers: int | None,
    drafter_name: str | None,
    trace_format: str | None,
    regenerate: str = "auto",
    trust_remote_code: bool = False,
) -> dict[str, Any]:
    """The job spec a `tracedraft run` invocation stands for (the same shape ``POST /v1/jobs`` takes)."""
    template_text = None
    if chat_template is not None:
        path = Path(chat_template).expanduser()
        if not path.is_file():
            raise TracedraftError("chat_template_not_found", f"chat template file {path} does not exist",
                                  where="--chat-template")
        template_text = path.read_bytes().decode("utf-8")  # bytes exact: no newline translation
    return {
        "target": {"model": target, "chat_template": template_text,
                   "chat_template_name": chat_template.name if chat_template else None,
                   "trust_remote_code": trust_remote_code},
        "data": {"format": trace_format, "on_error": "skip", "scrub": True, "regenerate": regenerate},
        "base_drafter": base_drafter,
        "drafter_name": drafter_name,
        "recipe": {"max_steps": max_steps if max_steps else "auto",
                   "time_budget_s": time_budget_min * 60 if time_budget_min else None,
                   "num_draft_layers": num_draft_layers or "auto"},
        "evaluation": {"engine": engine, "max_calls": max_calls or "auto",
                       "max_new_tokens": max_new_tokens or "auto", "temperature": 0.0, "seed": 0},
        # the API's defaults, so a local run is judged as a submitted job is (min_support included)
        "promotion": PromotionPolicy().model_dump(mode="json"),
    }


def submit(settings: Settings, paths: list[Path], spec: dict[str, Any], mapping: Path | None = None) -> str:
    """Store the raw files (and the declared ``mapping`` file, checked first: DatasetError ``bad_mapping``),
    create the dataset and the job; returns the job id."""
    folders = [str(p) for p in paths if Path(p).expanduser().is_dir()]
    if folders:  # a dataset is its files, each stored and named on its own: a folder's files are given one by one
        raise TracedraftError("not_a_file", f"{folders[0]} is a directory: give its trace files "
                              f"({folders[0].rstrip('/')}/*); `tracedraft datasets validate` reads a directory whole",
                              where=folders[0])
    missing = [str(p) for p in paths if not Path(p).expanduser().is_file()]
    if missing:
        raise TracedraftError("file_not_found", f"no such trace file: {', '.join(missing)}", where=missing[0])
    if mapping is not None and not Path(mapping).expanduser().is_file():
        raise TracedraftError("file_not_found", f"no such mapping file: {mapping}", where="--mapping")
    store = ArtifactStore.from_settings(settings)
    with db.session_scope(settings.database_url) as session:
        org = local_org(session)
        dataset = datasets.create_dataset_from_paths(session, store, org.id, paths, mapping=mapping, commit=False)
        job = jobs.create_job(session, org, dataset, spec, commit=False)
        session.flush()
        return job.id


def resume(settings: Settings, job_id: str) -> str:
    """Put a cancelled or failed job back in the queue at the stage where it stopped."""
    with db.session_scope(settings.database_url) as session:
        job = session.get(Job, job_id)
        if job is None:
            raise TracedraftError("not_found", f"no job {job_id}", where="--resume")
        try:
            jobs.resume_job(session, job_id, f"resumed from the command line at stage {job.stage}",
                            settings.job_lease_s, commit=False)
        except jobs.JobError as e:  # the flag names the input; the API names the job's status
            raise TracedraftError(e.code, e.message, where="--resume") from e
        return job.stage


class StageBars:
    """One rich progress bar per stage, fed from the job's events (stage, progress, metrics)."""

    def __init__(self, progress: Progress):
        self.progress = progress
        self.tasks: dict[str, TaskID] = {}

    def _task(self, stage: str) -> TaskID:
        if stage not in self.tasks:
            self.tasks[stage] = self.progress.add_task(stage, total=1.0, info="", eta="")
        return self.tasks[stage]

    def update(self, event: Any) -> None:
        data = event.data or {}
        stage = data.get("stage")
        if stage not in STAGES:
            return
        task = self._task(stage)
        if "stage_progress" in data:
            self.progress.update(task, completed=float(data["stage_progress"]))
        eta = data.get("eta_seconds")
        if eta is not None:
            self.progress.update(task, eta=f"ETA {_fmt_s(float(eta))}")
        if event.type == "metrics" and data.get("phase") == "cache" and data.get("message"):
            self.progress.update(task, info=escape(str(data["message"])[:70]))  # target features being cached
        elif event.type == "metrics":
            info = []
            if "step" in data:
                info.append(f"step {data['step']}")
            for key, label in (("loss", "loss"), ("tokens_per_s", "tok/s"), ("val_expected_tau", "val tau")):
                if isinstance(data.get(key), (int, float)):
                    info.append(f"{label} {data[key]:.3g}")
            if info:
                self.progress.update(task, info=" ".join(info))
        elif event.message and event.type in ("progress", "stage", "message"):
            self.progress.update(task, info=escape(event.message[:70]))

    def finish(self, stage: str) -> None:
        if stage in self.tasks:
            self.progress.update(self.tasks[stage], completed=1.0, eta="")


def _fmt_s(s: float) -> str:
    s = max(0, int(s))
    return f"{s // 60}:{s % 60:02d}"


#: Characters of a stage's latest progress message on a plain (non-terminal) line.
LATEST_CHARS = 120


def plain_line(progress: float, state: str, eta: str, latest: str) -> str:
    """One progress line for a log (no terminal): time, the job's share done, ``state`` ("running / training"),
    the ETA and the stage's latest message, shortened at a word with " ..." (never cut mid-word)."""
    line = f"{time.strftime('%H:%M:%S')} job {progress:4.0%}  {state}  {eta}"
    short = textwrap.shorten(latest, LATEST_CHARS, placeholder=" ...") if latest else ""
    return line + (f"  {short}" if short else "")


def run_job(
    settings: Settings,
    job_id: str,
    stage: str,
    console: Console,
) -> Job:
    """Run the job's pipeline from ``stage`` on a worker thread and show its events until it ends.

    Ctrl-C requests a cancel and waits for the stage to checkpoint and stop; a second Ctrl-C ends the
    process at once (after printing the resume command; the job is resumable from its last checkpoint).
    When the output is not a terminal (a log, a pipe), bars cannot redraw, so a plain progress line is
    printed on every stage change and every ``LINE_EVERY_S`` seconds instead. Returns the final job row.
    """
    from service import queue

    failure: list[BaseException] = []

    def work() -> None:
        try:
            queue.dispatch(stage, job_id, settings=settings)
        except BaseException as exc:  # noqa: BLE001 - shown to the user below
            failure.append(exc)

    thread = threading.Thread(target=work, name=f"pipeline-{job_id}", daemon=True)
    if threading.current_thread() is threading.main_thread():
        # Ctrl-C must reach the loop below as KeyboardInterrupt even when this process was started with
        # SIGINT ignored (a background job of a non-interactive shell inherits SIG_IGN, and Python then
        # installs no handler of its own).
        signal.signal(signal.SIGINT, signal.default_int_handler)
    columns = [TextColumn("{task.description:<11}"), BarColumn(bar_width=24), TextColumn("{task.percentage:>3.0f}%"),
               TimeElapsedColumn(), TextColumn("{task.fields[eta]}"), TextColumn("{task.fields[info]}")]
    after = 0
    cancelling = False
    plain_lines = not console.is_terminal
    last_line, last_stage = 0.0, None
    latest = ""  # the stage's latest progress message, for the plain lines (the bars show it as info)
    with Progress(*columns, console=console, disable=plain_lines, transient=False) as progress:
        bars = StageBars(progress)
        overall = progress.add_task("job", total=1.0, info="", eta="")
        thread.start()
        while True:
            try:
                alive = thread.is_alive()
                with db.session_scope(settings.database_url) as session:
                    row = session.get(Job, job_id)
                    eta = "" if row.eta_seconds is None else f"ETA {_fmt_s(row.eta_seconds)}"
                    progress.update(overall, completed=row.progress, info=f"{row.status} / {row.stage}", eta=eta)
                    state = (row.status, row.stage)  # the final line too: the status changes, the stage may not
                    events = jobs.list_events(session, job_id, after_seq=after, limit=500)
                    for ev in events:
                        after = ev.seq
                        bars.update(ev)
                        if ev.type == "stage" and (ev.data or {}).get("previous_stage"):
                            bars.finish(ev.data["previous_stage"])
                            latest = ""
                        elif ev.type == "progress" and ev.message:
                            latest = ev.message
                        if ev.level in ("warning", "error"):
                            progress.console.print(f"[{'yellow' if ev.level == 'warning' else 'red'}]"
                                                   f"{ev.level}:[/] {escape(ev.message)}", soft_wrap=True)
                    if plain_lines and (state != last_stage or time.monotonic() - last_line > LINE_EVERY_S):
                        last_line, last_stage = time.monotonic(), state
                        console.print(plain_line(row.progress, f"{row.status} / {row.stage}", eta, latest),
                                      soft_wrap=True, highlight=False, markup=False)
                if not alive and not events:
                    break
                time.sleep(POLL_S)
            except KeyboardInterrupt:
                if cancelling:
                    # The pipeline thread is inside torch: let no interpreter shutdown run into it.
                    console.print(f"aborted. Resume with: tracedraft run --resume {job_id}", soft_wrap=True)
                    console.file.flush()
                    os._exit(130)
                cancelling = True
                progress.console.print("[yellow]Cancelling: the current stage checkpoints and stops "
                                       "(Ctrl-C again to abort at once)...")
                with db.session_scope(settings.database_url) as session:
                    jobs.request_cancel(session, job_id)
    if failure:
        raise failure[0]
    with db.session_scope(settings.database_url) as session:
        job = session.get(Job, job_id)
        session.expunge(job)
    return job


def job_warnings(settings: Settings, job_id: str) -> list[dict[str, Any]]:
    """The job's warning events, oldest first: [{"code", "message"}] (``service.jobs.job_warnings``)."""
    with db.session_scope(settings.database_url) as session:
        return jobs.job_warnings(session, job_id)


def report_summary(job: Job, warnings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The figures `tracedraft run` prints, taken from the job's stage results (the report's own numbers),
    and the job's ``warnings`` (`job_warnings`) when given."""
    result = job.result or {}
    evaluated = result.get("evaluating") or {}
    report = evaluated.get("report") or {}
    registered = result.get("registering") or {}
    trained = result.get("training") or {}
    proposers = {
        name: {"tau": p.get("tau"), "rounds": p.get("rounds"), "tokens": p.get("tokens"),
               "tau_by_segment": {seg: v.get("tau") for seg, v in (p.get("by_segment") or {}).items()},
               "tokens_per_s": (p.get("timing") or {}).get("tokens_per_s"),
               "speedup_vs_plain": p.get("speedup_vs_plain"), "what_if": bool(p.get("what_if"))}
        for name, p in (report.get("proposers") or {}).items()
    }
    heldout = report.get("heldout") or {}
    paired = {key: {"candidate": c.get("candidate"), "incumbent": c.get("incumbent"), "calls": c.get("calls"),
                    "mean_diff": c.get("mean_diff"), "ci95": c.get("ci95"),
                    "by_segment": {seg: {k: v.get(k) for k in ("calls", "mean_diff", "ci95")}
                                   for seg, v in (c.get("by_segment") or {}).items()}}
              for key, c in (report.get("comparisons") or {}).items()}
    return {
        "job_id": job.id,
        "status": job.status,
        "heldout_calls": heldout.get("calls"),
        "generated_tokens": heldout.get("plain_generated_tokens"),
        "convention": report.get("convention"),
        "proposers": proposers,
        "plain_tokens_per_s": (report.get("plain") or {}).get("tokens_per_s"),
        "speed": report.get("speed"),
        "deploy": (report.get("speed") or {}).get("deploy"),
        "selection": report.get("selection"),
        "comparisons": paired,
        "lossless": report.get("lossless"),
        "gate": evaluated.get("gate"),
        "regeneration": (result.get("regenerating") or {}).get("report"),
        "training": {k: trained.get(k) for k in ("steps", "stop_reason", "initial_expected_tau",
                                                 "best_expected_tau")},
        "registry": {"drafter": registered.get("drafter"), "version": registered.get("version"),
                     "version_id": registered.get("version_id"),
                     "checkpoint_uri": registered.get("checkpoint_uri"),
                     "report_uri": registered.get("report_uri")},
        "report_dir": _report_dir(registered, evaluated),
        "warnings": warnings or [],
        "error": job.error,
    }


def _report_dir(registered: dict[str, Any], evaluated: dict[str, Any]) -> str | None:
    """Where the user finds the report: beside the registered checkpoint in a local artifact store (the job's
    work directory, where evaluation wrote it first, is removed when the job succeeds), else the work copy
    while it still exists."""
    uri = registered.get("report_uri")
    if isinstance(uri, str) and uri.startswith("file://"):
        return uri.removeprefix("file://")
    local = evaluated.get("report_dir")
    return local if local and Path(local).is_dir() else None


def default_settings() -> Settings:
    """The process settings, forced to the inline pipeline without the worker-side job policy: ``run`` is the
    embedded mode by definition, and every stage of this process (the tasks dispatch each other) must see the
    same settings."""
    # Our own progress bars replace the libraries' (weights loading, shard writing).
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    current = get_settings()
    if current.pipeline != "inline" or current.enforce_job_policy:
        from service.queue import reload_app
        from service.settings import reload_settings

        os.environ["TRACEDRAFT_PIPELINE"] = "inline"
        # The command line's user is the operator: the targets and base drafters they name are trusted.
        os.environ["TRACEDRAFT_ENFORCE_JOB_POLICY"] = "false"
        reload_settings()
        reload_app()
    settings = get_settings()
    Path(settings.home).mkdir(parents=True, exist_ok=True)
    db.upgrade(settings.database_url)
    return settings
