"""The drafter a training run starts from: ``new_drafter``, a new DSpark drafter for a target, seeded and,
by the recipe's ``drafter_init``, initialised from the target's layers (docs/dspark.md 1.1). The train
stage, the evaluate stage's ``untrained`` incumbent, ``python -m drafters.train`` and the benchmarks all
start here."""

from __future__ import annotations

from typing import Any

import torch


def new_drafter(config: Any, seed: int, target: Any, device: torch.device, init: str = "auto") -> Any:
    """A new ``DSparkDrafter`` of ``config`` (a ``DSparkConfig``) for ``target``, its weights initialised
    from ``seed`` and then, by ``init`` (``TrainConfig.drafter_init``), its backbone from the target's layers
    (``drafters.dspark.target_init``: "target" raises ConfigError shape_mismatch when the shapes differ,
    "auto" falls back to the random start then, "random" keeps it). ``drafter.initialised_from`` names the
    target layers used (None: random). fp32 on CPU (the frozen embedding and LM head copied to fp32
    whatever the target's dtype), trainable weights in bf16 on GPU (AdamW keeps fp32 master copies,
    ``drafters.train.optim``)."""
    from drafters.dspark.config import ConfigError
    from drafters.dspark.model import DSparkDrafter
    from drafters.dspark.target_init import init_from_target

    torch.manual_seed(seed)  # the drafter's initial weights follow the seed (train() broadcasts rank 0's)
    embed, head = target.embed_weight, target.lm_head_weight
    if device.type == "cpu":
        embed, head = embed.float(), head.float()  # the drafter trains in fp32 on CPU, whatever the target's dtype
    drafter = DSparkDrafter(config, embed, head).to(device)
    drafter.initialised_from = None
    if init != "random":
        try:  # checks every shape before it writes: a mismatch leaves the random start whole
            drafter.initialised_from = init_from_target(drafter, target)
        except ConfigError:
            if init == "target":
                raise
    if device.type == "cuda":
        for p in drafter.parameters():
            if p.requires_grad:
                p.data = p.data.to(torch.bfloat16)
    return drafter
