"""What the stages share: "auto" for this machine, the job's target and renderer, and the hand-over of a
stage's outputs to the next one (work directory inline, artifact store across machines)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from workers.context import StageContext

log = logging.getLogger(__name__)


def auto(value: Any, key: str) -> Any:
    """Resolve an "auto" (or missing) setting for this machine (``drafters.train.resolve.MachineDefaults``:
    CPU demo vs GPU worker)."""
    if value not in (None, "auto"):
        return value
    from drafters.train.resolve import Machine

    return getattr(Machine.detect().defaults, key)


def device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def target_spec(ctx: StageContext) -> dict[str, Any]:
    return dict(ctx.spec.get("target") or {})


def load_job_target(ctx: StageContext, *, for_training: bool = False):
    """The frozen target. For training on a CPU with native bf16 (AVX512-BF16/AMX) the target runs in bf16,
    several times faster, and hands fp32 features to the fp32 drafter; evaluation keeps fp32 on CPU so the
    greedy lossless check compares exact arithmetic (the recipe's ``target_dtype`` overrides)."""
    import torch

    from drafters.recipe import StageRecipe
    from drafters.target import load_target
    from drafters.train.resolve import Machine

    recipe = StageRecipe.from_spec(ctx.spec.get("recipe"))
    dtype = Machine.detect().training_target_dtype(recipe.target_dtype) if for_training else None
    tspec = target_spec(ctx)
    with reporting_target_builds(ctx):
        target = load_target(tspec["model"], device=device(), cache_dir=ctx.settings.cache_dir, dtype=dtype,
                             trust_remote_code=bool(tspec.get("trust_remote_code")))
    if device() == "cpu":
        target.feature_dtype = torch.float32
    return target


def reporting_target_builds(ctx: StageContext):
    """A context in which a first use of the target that converts or merges it (``drafters.target_cache``:
    a minute or more on a CPU) reports each step, and every few seconds, as stage progress with an ETA."""
    from drafters.target_cache import reporting_builds

    return reporting_builds(lambda message, eta: ctx.progress(0.0, eta, message=message))


class StagePace:
    """Progress of a stage made of units of work that can each take minutes (held-out replays on a CPU):
    ``done(n, total)`` after each unit, ``report()`` also from a clock (``drafters.periodic.every``), so the
    stage is never silent; the ETA is the seconds per unit so far times the units left, less the time the
    unit running has already run (never less than the units after it)."""

    def __init__(self, ctx: StageContext, what: str):
        self.ctx, self.what = ctx, what
        self.started = self.at = time.monotonic()
        self.count, self.total = 0, 0

    def done(self, count: int, total: int) -> None:
        self.count, self.total, self.at = count, total, time.monotonic()
        self.report()

    def report(self) -> None:
        now = time.monotonic()
        per = (self.at - self.started) / self.count if self.count else None
        left = self.total - self.count
        # the unit running counts down; once it overruns, the units after it are still left
        eta = max(per * max(0, left - 1), per * left - (now - self.at)) if per is not None else None
        of = f" {self.count}/{self.total}" if self.total else ""
        self.ctx.progress(self.count / max(1, self.total), eta,
                          message=f"{self.what}{of} ({now - self.started:.0f} s so far)")


def torch_distributed() -> bool:
    """Whether this process belongs to a torch.distributed process group (never, for a Celery worker)."""
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def distributed(ctx: StageContext) -> bool:
    """Whether the next stage may run on another machine (Celery workers); inline runs share one disk."""
    return ctx.settings.pipeline == "celery"


def publish(ctx: StageContext, local: Path, name: str) -> dict[str, Any]:
    """Upload a stage output directory to ``jobs/<job>/<name>/`` when the next stage may run on another
    machine; inline, the work directory is the hand-over and nothing is copied."""
    if not distributed(ctx):
        return {"uri": None, "files": {}, "local": str(local)}
    uri, files = ctx.store.put_dir(f"jobs/{ctx.job_id}/{name}", local)
    return {"uri": uri, "files": files}


def fetch(ctx: StageContext, ref: dict[str, Any], local: Path) -> Path:
    """Make ``local`` hold a published directory, every file hash-verified (intact local files are kept)."""
    if ref.get("uri") is None:
        return Path(ref["local"])
    return ctx.store.get_dir(ref["uri"], local, ref["files"])


class CheckpointSync:
    """Mirror the training run's checkpoints to the artifact store, so a training task re-delivered to
    another machine resumes from the last checkpoint instead of step 0.

    After each progress report it uploads a new ``latest`` step directory (and a new ``best/``), writes a
    ``checkpoint`` event naming them, then deletes the copies they replace: the store holds one latest and
    one best checkpoint of a run (what a resume needs), never every step. ``restore`` pulls the newest one
    back into an empty run directory.
    """

    def __init__(self, ctx: StageContext, run_dir: Path):
        self.ctx, self.run_dir = ctx, run_dir
        self.pushed: dict[str, str] = {}
        self.uris: dict[str, str] = {}  # "latest" / "best" -> the store URI of the newest copy

    def _changed(self, name: str) -> str | None:
        path = self.run_dir / name
        text = path.read_text() if path.is_file() else None
        return text if text and text != self.pushed.get(name) else None

    def push(self) -> None:
        if not distributed(self.ctx):
            return
        latest, best = self._changed("latest.json"), self._changed("best.json")
        if not latest and not best:
            return
        data: dict[str, Any] = {}
        if latest:
            step_dir = json.loads(latest)["dir"]
            data["latest"] = {"marker": latest, **publish(self.ctx, self.run_dir / step_dir, f"checkpoints/{step_dir}"),
                              "dir": step_dir}
        if best and (self.run_dir / "best").is_dir():
            # A new prefix per best step: files are never overwritten under a recorded checksum.
            name = f"checkpoints/best-{json.loads(best).get('step', 0):06d}"
            data["best"] = {"marker": best, **publish(self.ctx, self.run_dir / "best", name)}
        self.ctx.event("info", "metrics", "checkpoint saved", {"checkpoint": data})
        self.pushed.update({k: v for k, v in (("latest.json", latest), ("best.json", best)) if v})
        self._drop_superseded({kind: ref["uri"] for kind, ref in data.items()})

    def _drop_superseded(self, new: dict[str, str]) -> None:
        """Delete the store copies ``new`` ({"latest"|"best": uri}) replace, once the event naming the new
        ones is written (a restore then never meets a deleted one). A failed delete is logged, not raised:
        ``tracedraft gc`` collects what is left."""
        for kind, uri in new.items():
            old, self.uris[kind] = self.uris.get(kind), uri
            if old and old != uri:
                try:
                    self.ctx.store.delete(old, recursive=True)
                except Exception as exc:  # noqa: BLE001 - the store's hiccup must not stop training
                    log.warning("job %s: could not delete superseded checkpoint %s (%s)", self.ctx.job_id, old, exc)

    def restore(self) -> None:
        if not distributed(self.ctx) or (self.run_dir / "latest.json").is_file():
            return  # this machine has the run: resume from it
        from service import jobs

        found: dict[str, Any] = {}
        with self.ctx.sessions() as session:
            after = 0
            while events := jobs.list_events(session, self.ctx.job_id, after_seq=after, limit=500):
                after = events[-1].seq
                for ev in events:
                    found.update(((ev.data or {}).get("checkpoint")) or {})
        if "latest" not in found:
            return
        latest = found["latest"]
        fetch(self.ctx, latest, self.run_dir / latest["dir"])
        if "best" in found:
            fetch(self.ctx, found["best"], self.run_dir / "best")
            (self.run_dir / "best.json").write_text(found["best"]["marker"])
        (self.run_dir / "latest.json").write_text(latest["marker"])  # last: the resume point
        self.pushed = {"latest.json": latest["marker"], **({"best.json": found["best"]["marker"]} if "best" in found else {})}
        self.uris = {kind: found[kind]["uri"] for kind in ("latest", "best") if kind in found}
        self.ctx.event("info", "message", f"resuming from checkpoint {latest['dir']} fetched from the artifact store")


def job_renderer(ctx: StageContext):
    """The renderer of the job's target and chat template (as the prepare stage built it)."""
    from drafters.render import Renderer
    from drafters.target import load_tokenizer

    tspec = target_spec(ctx)
    with reporting_target_builds(ctx):
        tokenizer = load_tokenizer(tspec["model"], cache_dir=ctx.settings.cache_dir,
                                   trust_remote_code=bool(tspec.get("trust_remote_code")))
    return Renderer(tokenizer, chat_template=tspec.get("chat_template"),
                    template_kwargs=tspec.get("template_kwargs") or {},
                    max_seq_len=auto(tspec.get("max_seq_len"), "max_seq_len"))


def job_verdict(ctx: StageContext, drafter: str, gate: dict[str, Any] | None, version: int | None = None):
    """What the report page leads with (``drafters.evaluate.verdict.Verdict``): the drafter's registry name
    and ``version`` (None before registration), this job, the gate's decision and the job's warnings so far."""
    from drafters.evaluate.verdict import Verdict
    from service import jobs

    with ctx.sessions() as session:
        warnings = jobs.job_warnings(session, ctx.job_id)
    return Verdict(drafter, version, ctx.job_id, gate, tuple(warnings))


def training_rows(ctx: StageContext, prepared: Path) -> Path:
    """The directory holding ``train.safetensors`` and ``val.safetensors``: the regenerated rows when the
    regeneration stage ran, else the rendered recorded answers."""
    regen = ctx.results.get("regenerating") or {}
    if regen.get("regenerated"):
        return fetch(ctx, regen["regenerated_dir"], ctx.workdir / "regenerated")
    return prepared

def base_drafter_dir(ctx: StageContext) -> Path | None:
    """Resolve the job's base drafter to a local directory: a registry reference, or a local directory where
    the job policy is off (the embedded run; workers refuse paths: ``service.policy``)."""
    ref = ctx.spec.get("base_drafter")
    if not ref:
        return None
    if Path(str(ref)).expanduser().is_dir():
        return Path(str(ref)).expanduser()
    from service import registry

    with ctx.sessions() as session:
        version = registry.resolve_ref(session, ctx.org_id, str(ref))
        uri, files = version.checkpoint_uri, dict(version.files)
    dest = ctx.workdir / "base_drafter"
    if not dest.exists():
        ctx.store.get_dir(uri, dest, files)
    return dest
