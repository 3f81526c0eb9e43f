"""The register stage: publish the candidate as an immutable drafter version (service.registry)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workers.context import StageContext
from workers.stages.common import (
    fetch,
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
    }
    best = fetch(ctx, trained["best"], ctx.workdir / "best")
    report_dir = fetch(ctx, evaluated["report_files"], ctx.workdir / "report")
    name = ctx.spec.get("drafter_name") or f"{Path(target_model).name.removesuffix('.gguf')}-agent"
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
    return out


def _code_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tracedraft")
    except PackageNotFoundError:
        return "unknown"
