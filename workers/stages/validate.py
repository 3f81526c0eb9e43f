"""The validate stage: detect, parse, scrub, deduplicate and split the dataset (service.datasets)."""

from __future__ import annotations

from typing import Any

from workers.context import StageContext
from workers.stages.common import (
    publish,
    target_spec,
)


def validate(ctx: StageContext) -> dict[str, Any]:
    """Detect, parse, scrub, deduplicate and split the dataset; store the canonical JSONL and the report."""
    from drafters.errors import TracedraftError
    from service import datasets

    data = dict(ctx.spec.get("data") or {})
    ctx.progress(0.0, message="parsing the dataset")
    with ctx.sessions() as session:
        dataset = datasets.validate_dataset(
            session, ctx.store, ctx.dataset_id, ctx.workdir,
            heldout_fraction=float(data.get("heldout_fraction") or ctx.settings.default_heldout_fraction),
            format=data.get("format"), on_error=data.get("on_error", "skip"), scrub=data.get("scrub", True),
            target_model=target_spec(ctx).get("model"),
        )
        report, counts, error, formats = dataset.report or {}, dict(dataset.counts), dataset.error, dataset.format
    seen: set[str] = set()
    for w in report.get("warnings", []):  # one event per warning code, with how often it occurred
        if w["code"] not in seen:
            seen.add(w["code"])
            n = report.get("problem_counts", {}).get(w["code"], 1)
            ctx.event("warning", "message", f"[{w['code']}] {w['message']}" + (f" (and {n - 1} more)" if n > 1 else ""),
                      {"code": w["code"], "count": n})
    if error:
        raise TracedraftError(error["code"], error["message"], where=error.get("param"))
    ctx.progress(1.0, message=f"{counts['conversations']} conversations ({counts['train_conversations']} train / "
                              f"{counts['heldout_conversations']} held out)")
    return {"counts": counts, "formats": (formats or "").split(","), "report": report,
            "canonical": publish(ctx, ctx.workdir / "canonical", "canonical")}
