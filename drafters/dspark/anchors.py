"""Anchor sampling for DSpark training (docs/dspark.md 2.4)."""

from __future__ import annotations

import torch
from torch import Tensor

from drafters.errors import TracedraftError


class AnchorError(TracedraftError):
    """Bad input to anchor sampling; ``where`` names the argument."""


def anchor_candidates(loss_mask: Tensor) -> Tensor:
    """BoolTensor [T]: p in [0, T-2] with loss_mask[p] = loss_mask[p+1] = 1 (anchor and its first target
    both inside an assistant span, docs/dspark.md 2.4)."""
    lm = loss_mask.bool()
    cand = torch.zeros_like(lm)
    if lm.numel() >= 2:
        cand[:-1] = lm[:-1] & lm[1:]
    return cand


def sample_anchors(loss_mask: Tensor, num_anchors: int, generator: torch.Generator | None = None,
                   weights: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Sample up to ``num_anchors`` anchor positions without replacement, sorted ascending (docs/dspark.md 2.4).

    Args:
        loss_mask: [T] 0/1 (1 = assistant-generated token).
        num_anchors: N, the number of blocks returned (padded with dummies).
        generator: torch.Generator on CPU; the result is a deterministic function of its state.
        weights: optional [T] non-negative per-position weights (e.g. > 1 on tool-call tokens to oversample
            them). None = uniform over candidates (DeepSpec: random keys, take the smallest). With weights,
            sampling without replacement uses Efraimidis-Spirakis keys log(u) / w (an anchor with weight w
            is w times as likely to be picked first); a candidate with weight 0 is never picked.
    Returns:
        anchors LongTensor [N] (dummies are 0 and come last), keep BoolTensor [N] (False = dummy block).
    Raises AnchorError on bad shapes or negative weights.
    """
    if loss_mask.dim() != 1:
        raise AnchorError("bad_shape", f"loss_mask must be 1-D [T], got {tuple(loss_mask.shape)}", "loss_mask")
    if num_anchors <= 0:
        raise AnchorError("bad_value", f"num_anchors must be > 0, got {num_anchors}", "num_anchors")
    cand = anchor_candidates(loss_mask.cpu())
    T = cand.numel()
    u = torch.rand(T, generator=generator, dtype=torch.float64).clamp_min(1e-300)
    if weights is None:
        keys = u.log()  # uniform: any monotone map of iid uniforms gives a uniform random order
    else:
        w = weights.detach().cpu().to(torch.float64)
        if w.shape != (T,):
            raise AnchorError("bad_shape", f"weights must be [T]={T}, got {tuple(w.shape)}", "weights")
        if (w < 0).any() or not torch.isfinite(w).all():
            raise AnchorError("bad_value", "weights must be finite and >= 0", "weights")
        cand = cand & (w > 0)
        keys = u.log() / w.clamp_min(1e-300)
    keys = torch.where(cand, keys, torch.full_like(keys, -float("inf")))
    n_cand = int(cand.sum())
    k = min(n_cand, num_anchors)
    chosen = torch.topk(keys, k).indices.sort().values if k else torch.zeros(0, dtype=torch.long)
    anchors = torch.zeros(num_anchors, dtype=torch.long)
    keep = torch.zeros(num_anchors, dtype=torch.bool)
    anchors[:k] = chosen
    keep[:k] = True
    return anchors.to(loss_mask.device), keep.to(loss_mask.device)
