"""The drafter as the optimizer trains it: its starting weights (warm start, LoRA, resume), the parallel
form it takes (replicated or FSDP-sharded), fp32 master weights, AdamW, the precision its micro-batches
compute in, and one optimizer update (reduce, clip, step; docs/dspark.md 4.1-4.2)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from drafters.train.config import TrainConfig, TrainError
from drafters.train.parallel import ProcessGroup, choose_parallel, gather_full, shard_fsdp, unshard_for_good
from drafters.train.state import (
    Checkpoint,
    has_lora,
    load_drafter_weights,
    named_trainable,
    restore_drafter_weights,
    restore_optimizer,
)


@dataclass
class Precision:
    """How a training micro-batch computes: ``matmul_dtype`` of the loss's V-sized matmuls
    (``dspark_loss(matmul_dtype=)``) and ``autocast``, a factory of the context its forward runs in."""

    matmul_dtype: torch.dtype
    autocast: Callable[[], Any]

    @classmethod
    def of(cls, cfg: TrainConfig, drafter: Any, device: torch.device) -> Precision:
        """``cfg.loss_matmul_dtype`` and ``cfg.compute_dtype`` resolved for this drafter: the loss matmuls in
        bf16 when asked, or for "auto" when its LM head is bf16; ``torch.autocast`` in bf16 when
        ``compute_dtype`` is "bfloat16" and its trainable weights are fp32, else a no-op. Call it on the
        drafter as given, before LoRA or FSDP change its parameters' dtypes."""
        if cfg.loss_matmul_dtype == "auto":
            bf16_head = drafter.lm_head.weight.dtype == torch.bfloat16
            matmul = torch.bfloat16 if bf16_head else torch.float32
        else:
            matmul = getattr(torch, cfg.loss_matmul_dtype)
        fp32 = any(p.dtype == torch.float32 for p in drafter.trainable_parameters())
        if cfg.compute_dtype == "bfloat16" and fp32:
            return cls(matmul, lambda: torch.autocast(device.type, dtype=torch.bfloat16))
        return cls(matmul, contextlib.nullcontext)


@dataclass
class Model:
    """The drafter under training. ``unit``: the FSDP2 root module around the loss (``LossUnit``) when
    sharded, else None. ``names`` / ``params``: trainable parameters in optimizer order (FSDP: fp32 DTensor
    shards). ``master``: what AdamW updates, fp32 copies of ``params`` when those are bf16 (``mixed``), else
    ``params`` themselves. ``parallel``: "single" | "ddp" | "fsdp". ``orig_dtypes``: the dtypes FSDP
    upcast from, restored by ``hand_back``."""

    drafter: Any
    unit: Any
    names: list[str]
    params: list[torch.nn.Parameter]
    master: list[torch.Tensor]
    optimizer: torch.optim.Optimizer
    mixed: bool
    parallel: str
    precision: Precision
    orig_dtypes: dict[str, torch.dtype] = field(default_factory=dict)

    @property
    def separate_master(self) -> bool:
        """Whether AdamW updates fp32 copies that are copied back into bf16 ``params`` after each step."""
        return self.master is not self.params

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def hand_back(self) -> None:
        """Leave the drafter a plain module with full weights in their original dtypes (a no-op unless
        FSDP sharded it). Collective."""
        if self.unit is not None:
            unshard_for_good(self.drafter, self.orig_dtypes)
            self.unit = None


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
