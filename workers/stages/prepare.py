"""The prepare stage: render every training conversation and held-out call through the target's chat
template (drafters.render)."""

from __future__ import annotations

import json
from typing import Any

from workers.context import StageContext
from workers.stages.common import fetch, job_renderer, publish


def prepare(ctx: StageContext) -> dict[str, Any]:
    """Render every training conversation and every held-out call through the target's chat template."""
    from drafters.errors import TracedraftError
    from drafters.shards import save_prompts, save_sequences
    from drafters.traces.ingest import read_canonical

    renderer = job_renderer(ctx)
    canonical = fetch(ctx, ctx.results["validating"]["canonical"], ctx.workdir / "canonical")
    train_convs = list(read_canonical(canonical / "train.jsonl"))
    held_convs = list(read_canonical(canonical / "heldout.jsonl"))
    seqs = []
    for i, conv in enumerate(train_convs):
        seqs.extend(renderer.render_conversation(conv))
        if ctx.cancelled():
            return {"cancelled": True}
        ctx.progress(0.8 * (i + 1) / max(1, len(train_convs)))
    # Held-out conversations give the replayed prompts and, rendered as rows, the validation set for
    # the expected accepted length during training.
    val_seqs = [s for conv in held_convs for s in renderer.render_conversation(conv)]
    prompts = _render_prompts(renderer, held_convs)
    # Every training call's context as the engine serves it: what the regeneration stage answers.
    train_prompts = _render_prompts(renderer, train_convs)
    if not seqs:
        raise TracedraftError("no_training_data", "no training sequence survived rendering", where="dataset")
    out = ctx.workdir / "prepared"
    save_sequences(seqs, out / "train.safetensors")
    save_sequences(val_seqs, out / "val.safetensors")
    save_prompts(prompts, out / "heldout_prompts.jsonl")
    save_prompts(train_prompts, out / "train_prompts.jsonl")
    report = renderer.report.to_dict()
    (out / "render_report.json").write_text(json.dumps(report, indent=1))
    ctx.progress(1.0, message=f"{len(seqs)} training rows, {len(prompts)} held-out prompts")
    return {"train_rows": len(seqs), "val_rows": len(val_seqs), "heldout_prompts": len(prompts),
            "template_sha256": renderer.template_sha256, "render_report": report,
            "prepared": publish(ctx, out, "prepared")}


def _render_prompts(renderer, convs) -> list:
    """Every call of ``convs`` rendered for replay or regeneration; a call the template cannot render is
    reported in the render report, not fatal."""
    from drafters.errors import TracedraftError

    prompts = []
    for conv in convs:
        for call in conv.calls():
            try:
                prompts.append(renderer.render_prompt(call))
            except TracedraftError as exc:
                renderer.report.drop(call.id, getattr(exc, "code", "render_failed"), str(exc))
    return prompts
