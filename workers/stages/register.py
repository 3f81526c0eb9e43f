"""The register stage: publish the candidate as an immutable drafter version (service.registry)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workers.context import StageContext
from workers.stages.common import (
    fetch,
    job_verdict,
    target_spec,
)


def register(ctx: StageContext) -> dict[str, Any]:
    """Publish the candidate checkpoint and report as an immutable drafter version (exactly once per job)."""
    from service import registry
    from service.db.models import Dataset

    tspec = target_spec(ctx)
    trained, evaluated, prepared = ctx.results["training"], ctx.results["evaluating"], ctx.results["preparing"]
    with ctx.sessions() as session:
        dataset = session.get(Dataset, ctx.dataset_id)
        dataset_sha = dataset.sha256 if dataset else None
    cfg = trained["drafter_config"]
    target_model = tspec["model"]
    lineage = {
        "job_id": ctx.job_id, "dataset_sha256": [dataset_sha] if dataset_sha else [],
        "base_version": trained.get("base_drafter"), "target_model": target_model,
        "target_revision": tspec.get("revision"), "chat_template_sha256": prepared.get("template_sha256"),
        "tokenizer_sha256": tspec.get("tokenizer_sha256"),
        "target_layer_ids": cfg.get("target_layer_ids"), "block_size": cfg.get("block_size"),
        "code_version": _code_version(),
        # the resolved training recipe (seed, steps, learning rate, ...): what `drafters diff` leads with
        "recipe": trained.get("train_config"),
    }
    best = fetch(ctx, trained["best"], ctx.workdir / "best")
    report_dir = fetch(ctx, evaluated["report_files"], ctx.workdir / "report")
    name = drafter_name(ctx)
    expected = _render_page(ctx, name, evaluated, report_dir)
    with ctx.sessions() as session:
        version = registry.register_version(
            session, ctx.store, ctx.org_id, name, target_model, ctx.job_id, best,
            config=cfg, lineage=lineage, report=evaluated["report"], gate=evaluated["gate"],
            report_dir=report_dir,
            auto_promote=bool((ctx.spec.get("promotion") or {}).get("auto_promote")),
        )
        out = {"drafter": name, "version": version.version, "version_id": version.id,
               "checkpoint_uri": version.checkpoint_uri, "files": dict(version.files),
               "report_uri": version.report_uri}
    if version.version != expected:  # a registration of the same drafter by another job came in between
        ctx.event("warning", "message", f"[report_version_mismatch] the report page names version {expected}; "
                  f"the registry numbered this one {version.version}", {"code": "report_version_mismatch"})
    return out


def _render_page(ctx: StageContext, name: str, evaluated: dict[str, Any], report_dir: Path) -> int:
    """Re-render the report page with the version number registration will give (the job's own when a
    retried stage registered it already, else the next after the drafter's latest); returns that number."""
    import sqlalchemy as sa

    from drafters.evaluate.html_report import write_html
    from service.db.models import Drafter, DrafterVersion

    with ctx.sessions() as session:
        mine = session.scalar(sa.select(DrafterVersion.version).where(DrafterVersion.job_id == ctx.job_id))
        last = session.scalar(sa.select(sa.func.max(DrafterVersion.version)).join(Drafter).where(
            Drafter.org_id == ctx.org_id, Drafter.name == name))
    expected = mine or (last or 0) + 1
    write_html(evaluated["report"], report_dir, job_verdict(ctx, name, evaluated.get("gate"), expected))
    return expected


def drafter_name(ctx: StageContext) -> str:
    """The registry name of the job's drafter: the spec's ``drafter_name``, else ``default_drafter_name``."""
    return ctx.spec.get("drafter_name") or default_drafter_name(target_spec(ctx)["model"])


def default_drafter_name(target_model: str) -> str:
    """The registry name of a job's drafter when the spec names none: ``<target>-agent`` (the target's last
    path component, without ``.gguf``), the suffix not doubled for a target already named ``...-agent``."""
    base = Path(target_model).name.removesuffix(".gguf")
    return base if base.endswith("-agent") else f"{base}-agent"


def _code_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tracedraft")
    except PackageNotFoundError:
        return "unknown"
