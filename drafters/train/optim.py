"""The drafter as the optimizer trains it: its starting weights (warm start, LoRA, resume), the parallel
form it takes (replicated or FSDP-sharded), fp32 master weights, AdamW, the precision its micro-batches
compute in (``drafters.train.training_model``), and one optimizer update (reduce, clip, step; docs/dspark.md
4.1-4.2)."""

from __future__ import annotations

from typing import Any

import torch

from drafters.train.config import TrainConfig, TrainError
from drafters.train.parallel import ProcessGroup, choose_parallel, gather_full, shard_fsdp
from drafters.train.state import (
    Checkpoint,
    has_lora,
    load_drafter_weights,
    named_trainable,
    restore_drafter_weights,
    restore_optimizer,
)
from drafters.train.training_model import Model, Precision


def prepare_drafter(drafter: Any, cfg: TrainConfig, checkpoint: Checkpoint | None) -> None:
    """Set the drafter's starting weights in place: ``cfg.init_from`` (warm start; not when resuming), LoRA
    adapters when ``cfg.lora`` asks for them, then the checkpoint's weights when resuming. Raises
    TrainError from ``load_drafter_weights``."""
    if cfg.init_from and checkpoint is None:
        load_drafter_weights(drafter, cfg.init_from)
    if cfg.lora is not None and not has_lora(drafter):
        from drafters.dspark.lora import apply_lora

        apply_lora(drafter, **cfg.lora)
    if checkpoint is not None:
        restore_drafter_weights(drafter, checkpoint)


def parallel_mode(cfg: TrainConfig, group: ProcessGroup, drafter: Any, device: torch.device) -> str:
    """How this run holds the drafter: "single" without a process group ("fsdp" has nothing to shard over),
    else ``cfg.parallel`` with "auto" resolved by ``choose_parallel`` from the free device memory."""
    if not group.on:
        return "single"
    if cfg.parallel != "auto":
        return cfg.parallel
    free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else None
    return choose_parallel(sum(p.numel() for _, p in named_trainable(drafter)), free)


def build_model(drafter: Any, cfg: TrainConfig, group: ProcessGroup, device: torch.device,
                precision: Precision, checkpoint: Checkpoint | None) -> Model:
    """Shard (FSDP) or keep the drafter, set up fp32 master weights and AdamW, and load the checkpoint's
    optimizer state when resuming. Raises TrainError("fsdp_param_order", where="parallel") if sharding
    reordered the trainable parameters (the optimizer state is stored by position), "invalid_train_config"
    from ``shard_fsdp``. Collective."""
    named = named_trainable(drafter)
    mixed = any(p.dtype != torch.float32 for _, p in named)
    parallel = parallel_mode(cfg, group, drafter, device)
    unit, orig_dtypes = None, {}
    if parallel == "fsdp":
        masters = checkpoint.tensors.master if checkpoint is not None and mixed else None
        unit, orig_dtypes = shard_fsdp(drafter, device, group.world, cfg.anchor_chunk, masters,
                                       precision.matmul_dtype)
        before = [n for n, _ in named]
        named = named_trainable(drafter)
        if [n for n, _ in named] != before:
            raise TrainError("fsdp_param_order", "sharding changed the order of the trainable parameters",
                             "parallel")
        params = [p for _, p in named]
        master = params  # fp32 DTensor shards: the master weights themselves
    else:
        params = [p for _, p in named]
        master = [p.detach().float().clone().requires_grad_(True) for p in params] if mixed else params
    optimizer = torch.optim.AdamW(master, lr=cfg.lr, betas=tuple(cfg.betas), weight_decay=cfg.weight_decay)
    model = Model(drafter, unit, [n for n, _ in named], params, master, optimizer, mixed, parallel, precision,
                  orig_dtypes)
    if checkpoint is not None:
        restore_optimizer(model, checkpoint.tensors)
    return model


def optimizer_update(model: Model, cfg: TrainConfig, group: ProcessGroup, lr: float, apply: bool) -> float:
    """Step 4 of an optimizer step (package docstring): sum gradients over ranks (FSDP did in backward),
    clip to ``cfg.max_grad_norm`` (the global norm over all shards), and, when ``apply`` (the step had a
    valid slot somewhere), AdamW at learning rate ``lr`` on the fp32 masters, copied back to bf16 weights.
    Returns the gradient norm before clipping. Collective."""
    for p in model.params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    if model.unit is None:
        group.sum_grads(model.params)
    if model.separate_master:
        for m, p in zip(model.master, model.params, strict=True):
            m.grad = p.grad.float()
    grad_norm = float(gather_full(torch.nn.utils.clip_grad_norm_(model.master, cfg.max_grad_norm)))
    for param_group in model.optimizer.param_groups:
        param_group["lr"] = lr
    if apply:
        model.optimizer.step()
        if model.separate_master:
            with torch.no_grad():
                for m, p in zip(model.master, model.params, strict=True):
                    p.copy_(m.to(p.dtype))
    return grad_norm
