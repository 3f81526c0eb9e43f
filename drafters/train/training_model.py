"""The drafter under training as the loop and its checkpoints see it: ``Model`` (the drafter, its trainable
parameters in optimizer order, fp32 master weights, AdamW, the parallel mode) and ``Precision`` (how a
micro-batch computes). Built by ``drafters.train.optim.build_model``; saved and restored by
``drafters.train.state``, which therefore import it from here, not from each other."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from drafters.train.config import TrainConfig
from drafters.train.parallel import unshard_for_good


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
