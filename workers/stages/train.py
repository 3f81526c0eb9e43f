"""The train stage: fine-tune the DSpark drafter (drafters.train), in this process or under torchrun."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workers.context import StageContext
from workers.stages.common import (
    CheckpointSync,
    base_drafter_dir,
    fetch,
    load_job_target,
    publish,
    target_spec,
    torch_distributed,
    training_rows,
)


def train(ctx: StageContext) -> dict[str, Any]:
    """Fine-tune a DSpark drafter against the frozen target (resumes from the work directory's checkpoints):
    in this process, or under torchrun when the worker has several GPUs (``Settings.train_processes``)."""
    from drafters.recipe import StageRecipe
    from drafters.shards import load_sequences, take_tokens
    from drafters.train.resolve import Machine, resolve_recipe
    from workers.torchrun import train_processes

    recipe = StageRecipe.from_spec(ctx.spec.get("recipe"))
    base = base_drafter_dir(ctx)
    resolved = resolve_recipe(recipe, Machine.detect(), init_from=str(base) if base else None)
    cfg = resolved.train
    prepared = fetch(ctx, ctx.results["preparing"]["prepared"], ctx.workdir / "prepared")
    rows = training_rows(ctx, prepared)
    train_seqs = take_tokens(load_sequences(rows / "train.safetensors"), resolved.max_train_tokens, cfg.seed)
    nproc = train_processes(int(getattr(ctx.settings, "train_processes", 0) or 0))
    if cfg.parallel == "fsdp" and nproc == 1 and not torch_distributed():
        # The stage trains inside this worker process; FSDP needs a process group (torchrun) to shard over.
        ctx.event("warning", "message", "recipe.parallel 'fsdp' shards the drafter only across the processes "
                  "of a torchrun launch (python -m drafters.train --parallel fsdp, or a worker with "
                  "TRACEDRAFT_TRAIN_PROCESSES > 1); this worker trains in one process, so the drafter is not "
                  "sharded", {"code": "parallel_single_process"})

    run_dir = ctx.workdir / "checkpoints"
    sync = CheckpointSync(ctx, run_dir)
    sync.restore()

    def progress(p: dict[str, Any]) -> None:
        # "schedule": the horizon a time budget set (total_steps is 0 before it is known)
        ctx.progress(p["step"] / max(1, p["total_steps"]), p.get("eta_s"),
                     message=p.get("message") if p.get("phase") in ("cache", "validate", "schedule") else None)
        if p.get("phase") in ("validate", "schedule") or p["step"] % 10 == 0:
            ctx.metrics(p, p["message"] if p.get("phase") == "schedule"
                        else f"{p.get('phase')} step {p['step']}/{p['total_steps']}")
        sync.push()

    if nproc > 1:
        result = _train_torchrun(ctx, nproc, cfg, resolved.drafter, recipe.target_dtype, train_seqs,
                                 rows / "val.safetensors", base, run_dir, progress)
        drafter_config = None
    else:
        result, drafter_config = _train_here(ctx, cfg, resolved.drafter, train_seqs,
                                             load_sequences(rows / "val.safetensors"), base, run_dir, progress)
    sync.push()
    if result.get("cancelled"):
        return {"cancelled": True, "steps": result.get("steps"), "last_dir": result.get("last_dir")}
    best = Path(result["best_dir"])
    if drafter_config is None:
        drafter_config = json.loads((best / "config.json").read_text())
    return {"steps": result["steps"], "best_dir": str(best), "last_dir": result["last_dir"],
            "best": publish(ctx, best, "best"),
            "stop_reason": result["stop_reason"], "best_expected_tau": result["best_expected_tau"],
            "initial_expected_tau": result["initial_expected_tau"], "feature_cache": result["feature_cache"],
            "parallel": result["parallel"], "processes": nproc, "schedule": result.get("schedule"),
            "drafter_config": drafter_config, "train_config": cfg.to_dict(),
            "base_drafter": str(ctx.spec.get("base_drafter") or "") or None,
            "history": result["history"][-40:]}


def _train_here(ctx: StageContext, cfg, drafter_shape: dict[str, Any], train_seqs, val_seqs, base: Path | None,
                run_dir: Path, progress):
    """Train in this process (a new drafter of ``drafter_shape``, DSparkConfig.from_target overrides, unless
    warm starting from ``base``). Returns (TrainResult.to_dict(), the drafter's DeepSpec config)."""
    import torch

    from drafters.dspark.checkpoint import validate_checkpoint
    from drafters.dspark.config import DSparkConfig
    from drafters.train import train as run_training
    from drafters.train.start import new_drafter

    target = load_job_target(ctx, for_training=True)
    # A warm start keeps the base drafter's shape (its config) and takes its weights, with a fresh optimizer.
    if base:
        config = validate_checkpoint(base, target.model.config).config
    else:
        config = DSparkConfig.from_target(target.model.config, tokenizer=target.tokenizer, **drafter_shape)
    with torch.random.fork_rng(devices=[]):  # the initial weights follow the recipe's seed: reproducible
        drafter = new_drafter(config, cfg.seed, target, target.device, cfg.drafter_init)  # bf16 weights on GPU
    result = run_training(target, drafter, train_seqs, val_seqs, cfg, run_dir,
                          progress=lambda p: progress(p.to_dict()), should_stop=ctx.cancelled, resume=True)
    return result.to_dict(), drafter.config.to_deepspec_dict()


def _train_torchrun(ctx: StageContext, nproc: int, cfg, drafter_shape: dict[str, Any], target_dtype: str,
                    train_seqs, val_path: Path, base: Path | None, run_dir: Path, progress) -> dict[str, Any]:
    """Train under ``torchrun --nproc-per-node nproc`` (workers/torchrun.py): ``cfg`` and ``drafter_shape``
    travel as JSON files, ``target_dtype`` (the recipe's) as a flag unless "auto". Returns
    TrainResult.to_dict()."""
    from drafters.shards import save_sequences
    from workers.torchrun import run_torchrun

    launch = ctx.workdir / "torchrun"
    launch.mkdir(parents=True, exist_ok=True)
    save_sequences(train_seqs, launch / "train.safetensors")  # the recipe's token budget, as in-process
    (launch / "train_config.json").write_text(json.dumps(cfg.to_dict()))
    (launch / "drafter.json").write_text(json.dumps(drafter_shape))
    args = ["--target", target_spec(ctx)["model"], "--cache-dir", str(ctx.settings.cache_dir),
            "--train", str(launch / "train.safetensors"), "--val", str(val_path), "--out", str(run_dir),
            "--config-json", str(launch / "train_config.json"), "--drafter-json", str(launch / "drafter.json")]
    if target_dtype != "auto":
        args += ["--target-dtype", target_dtype]
    if base:
        args += ["--init-from", str(base)]
    ctx.event("info", "message", f"training under torchrun with {nproc} processes", {"processes": nproc})
    result = run_torchrun(nproc, args, log_path=launch / "torchrun.log", progress=progress,
                          should_stop=ctx.cancelled)
    return result or {"cancelled": True, "steps": None, "last_dir": None}
