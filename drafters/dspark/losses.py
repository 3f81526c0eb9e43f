"""DSpark training losses (docs/dspark.md 2.1-2.3; paper Eq. 10).

L = ce_loss_alpha * L_ce + l1_loss_alpha * L_l1 + confidence_head_alpha * L_conf with, for block n with
anchor p and slot j (label position q = p + j + 1) and weight W[n, j] = M[n, j] * exp(-j / beta):
  L_ce   = sum W * CE(Z, input_ids[q]) / sum W                 (hard target: the transcript token)
  L_l1   = sum W * ||p_d - p_t||_1 / sum W                     (full L1, range 0..2)
  L_conf = sum W * BCE_logits(c, c*) / sum W,  c* = clamp(1 - 0.5 ||p_d - p_t||_1, 0, 1) detached
where Z = lm_head(h) + Markov bias (teacher-forced), p_d = softmax(Z), p_t = softmax(lm_head(last[q - 1]))
with the drafter's frozen LM head. Softmax, CE, L1 and BCE are always fp32 (docs/dspark.md 2.2 "all in fp32
softmax"); the three V-sized matmuls that produce the logits run in ``matmul_dtype``: fp32 by default, bf16
on request, which is what DeepSpec computes (bf16 weights, logits upcast before the softmax) and 2-4x faster
on CPUs with native bf16 and on GPUs.

Compute and memory: the V-sized work (drafter logits, Markov W2, target distribution) runs only on the S
VALID slots (M = 1), packed into rows, CHUNK BY CHUNK (``anchor_chunk`` * g rows at a time); when S x V fp32
would be large (``recompute``) each chunk runs under activation checkpointing, so the peak is a few
[anchor_chunk * g, V] fp32 tensors instead of S of them, at the cost of recomputing the chunk's heads in
backward. The r-dim Markov inputs and the confidence logits are computed for all slots (cheap).
Example, Qwen3-4B with N = 512 anchors and chunk 64: ~4 x 64*7*151936*4 B = 1.1 GB of V-sized tensors
instead of ~8.7 GB. Within a chunk the target distribution is computed once per distinct position (blocks
overlap), saving about a third of that matmul at DeepSpec's anchor density.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from drafters.dspark.model import DSparkDrafter

RECOMPUTE_BYTES = 256 * 2**20


@dataclass
class LossOutput:
    """Result of `dspark_loss`.

    total: scalar with grad (the weighted sum of the three terms); ce, l1, conf: detached scalars (each
    already normalised by sum W); accept_rate_per_slot: [g] mean analytic acceptance c* over valid slots
    (NaN where a slot has none); expected_tau: mean over valid blocks of 1 + sum_k prod_{i<=k} c*_i
    (docs/dspark.md 2.2 ``tau_probabilistic``; NaN when no block is valid); n_valid: number of valid slots;
    weight_sum: sum W (the denominator; all-reduce it across ranks for the global mean); n_blocks: valid blocks.
    """

    total: Tensor
    ce: Tensor
    l1: Tensor
    conf: Tensor
    accept_rate_per_slot: Tensor
    expected_tau: Tensor
    n_valid: int
    weight_sum: Tensor
    n_blocks: int = 0


def position_weights(block_size: int, beta: float = 4.0) -> Tensor:
    """w_k = exp(-(k-1)/beta), k = 1..block_size (docs/dspark.md 1.7). -> fp32 [block_size]."""
    return torch.exp(-torch.arange(block_size, dtype=torch.float32) / beta)


def slot_validity(loss_mask: Tensor, anchors: Tensor, keep: Tensor, block_size: int) -> Tensor:
    """M [B, N, g] bool = keep & (q < T) & loss_mask[q], q = p + j + 1, made prefix-contiguous by a
    cumulative AND over j (docs/dspark.md 2.1)."""
    B, T = loss_mask.shape
    q = anchors.long().unsqueeze(-1) + torch.arange(1, block_size + 1, device=anchors.device)
    ok = torch.gather(loss_mask.bool(), 1, q.clamp(max=T - 1).reshape(B, -1)).reshape(q.shape)
    ok = ok & (q < T) & keep.bool().unsqueeze(-1)
    return torch.cumprod(ok.to(torch.int32), dim=-1).bool()


class _WeightedCeL1(torch.autograd.Function):
    """Fused weighted CE + full L1 on fp32 logits, saving only p_d (fp32) and [p_d > p_t] (bool) per element
    for backward instead of the ~5 V-sized tensors plain autograd keeps, in as few passes over [S, V] as
    eager PyTorch allows (on CPU each pass over SmolLM2's 49152-wide rows costs as much as a small matmul).

    forward(Z [S,V] fp32, labels [S], p_t [S,V], W [S]) -> (sum W*CE, sum W*||p_d - p_t||_1, c* [S] detached)
    Both distributions sum to 1, so ||p - p_t||_1 = 2 sum_v relu(p_v - p_t,v) = 2 - 2 sum_v min(p_v, p_t,v)
    (the second form is computed: one pass fewer). Gradients (p = softmax(Z),
    s = sign(p - p_t) taken as 2[p > p_t] - 1, a valid subgradient where p = p_t):
      d CE / dZ = p - onehot(y);   d ||p - p_t||_1 / dZ = p * (s - sum_v p_v s_v)   (softmax Jacobian).
    """

    @staticmethod
    def forward(ctx, Z: Tensor, labels: Tensor, p_t: Tensor, W: Tensor):
        logp = torch.log_softmax(Z, dim=-1)
        ce = -logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        p = logp.exp_()  # reuses logp's memory
        # ||p - p_t||_1 = 2 - 2 sum_v min(p_v, p_t,v) (both sum to 1): one pass fewer than relu(p - p_t)
        l1 = (2 - 2 * torch.minimum(p, p_t).sum(-1)).clamp_min_(0)
        up = p > p_t
        ctx.save_for_backward(p, up, labels, W)
        cstar = (1 - 0.5 * l1).clamp(0, 1)
        ctx.mark_non_differentiable(cstar)
        return (W * ce).sum(), (W * l1).sum(), cstar

    @staticmethod
    def backward(ctx, g_ce: Tensor, g_l1: Tensor, _g_cstar: Tensor):
        p, up, labels, W = ctx.saved_tensors
        a = (g_ce * W).unsqueeze(-1)
        b = (g_l1 * W).unsqueeze(-1)
        # with u = p * [p > p_t]: sum_v p_v s_v = 2 sum u - 1, and
        # p * (a + b (s - m)) = p * (a - b (1 + m)) + 2 b u
        u = p * up
        m = 2 * u.sum(-1, keepdim=True) - 1
        grad = torch.addcmul(u.mul_(2 * b), p, a - b * (1 + m))
        grad.scatter_add_(-1, labels.unsqueeze(-1), -a)
        return grad, None, None, None


def _frozen_lm_head(drafter: DSparkDrafter, dtype: torch.dtype) -> Tensor:
    """The frozen LM head weight [V, d] in ``dtype``, cast once and cached on the drafter (a bf16 copy of
    SmolLM2's head is a 28M-element copy, as long as a quarter of the loss otherwise). Re-cast when the
    weight changes (its storage or version counter)."""
    w = drafter.lm_head.weight
    if w.dtype == dtype:
        return w.detach()
    key = (dtype, w.data_ptr(), w._version, w.device)
    cached = getattr(drafter, "_lm_head_cast", None)
    if cached is None or cached[0] != key:
        cached = (key, w.detach().to(dtype))
        drafter._lm_head_cast = cached  # a plain attribute: never in state_dict or checkpoints
    return cached[1]


class _DraftAndTargetLogits(torch.autograd.Function):
    """Drafter logits Z = h lm_w^T + pre w2^T and target logits z_t = last lm_w^T from ONE product with the
    shared frozen LM head: [h; last] lm_w^T. One product of S + U rows is ~13% cheaper on CPU than two of S
    and U (the [V, d] head is streamed once; measured at SmolLM2 dims, 112 + 112 rows), and the backward
    still computes the input gradient for the S drafter rows only (autograd through a concatenation would
    multiply the target rows' zero gradient too). The Markov bias is accumulated into the same [S, V]
    buffer (``addmm_``).

    forward(h [S,d], pre [S,r], last [U,d], lm_w [V,d] frozen, w2 [V,r]) -> (Z [S,V], z_t [U,V] no grad);
    all in one floating dtype. Gradients (docs/dspark.md 2.2 with Z as above): dh = dZ lm_w, dpre = dZ w2,
    dw2 = dZ^T pre; none for lm_w (shared and frozen, docs/dspark.md 1.2) or last (target features).
    """

    @staticmethod
    def forward(ctx, h: Tensor, pre: Tensor, last: Tensor, lm_w: Tensor, w2: Tensor):
        S = h.shape[0]
        out = torch.cat([h, last]) @ lm_w.t()
        Z, z_t = out[:S], out[S:]
        Z.addmm_(pre, w2.t())
        ctx.save_for_backward(pre, lm_w, w2)
        ctx.mark_non_differentiable(z_t)
        return Z, z_t

    @staticmethod
    def backward(ctx, dZ: Tensor, _dz_t: Tensor):
        pre, lm_w, w2 = ctx.saved_tensors
        dh = dZ @ lm_w if ctx.needs_input_grad[0] else None
        dpre = dZ @ w2 if ctx.needs_input_grad[1] else None
        dw2 = dZ.t() @ pre if ctx.needs_input_grad[4] else None
        return dh, dpre, None, None, dw2


def _chunk_terms(lm_w: Tensor, w2: Tensor, h: Tensor, pre: Tensor, labels: Tensor, last: Tensor, inv: Tensor,
                 W: Tensor):
    """Weighted CE and L1 numerators and c* of one chunk of S valid slots (packed rows).

    h [S, d] backbone states; pre [S, r] the Markov head's input of W2 (teacher-forced); labels [S];
    last [U, d] target last hidden at the U distinct positions q - 1 of the chunk (overlapping blocks share
    them) and inv [S] the row of each slot in it (inv None: last is already [S, d]); W [S] weights. lm_w
    [V, d] is already in the matmul dtype; Z = lm_head(h) + W2(pre), each matmul in that dtype, summed and
    used in fp32. When every operand already has the matmul dtype and it is not a 16-bit one (the fp32
    recipe) both logits come from one product (``_DraftAndTargetLogits``). Runs with autocast off: the
    matmul dtype is what sets the precision here, whatever the backbone's autocast."""
    with torch.autocast(h.device.type, enabled=False):
        return _chunk_terms_exact(lm_w, w2, h, pre, labels, last, inv, W)


def _chunk_terms_exact(lm_w: Tensor, w2: Tensor, h: Tensor, pre: Tensor, labels: Tensor, last: Tensor,
                       inv: Tensor | None, W: Tensor):
    mm = lm_w.dtype
    if mm == h.dtype == pre.dtype == w2.dtype == last.dtype and mm in (torch.float32, torch.float64):
        Z, z_t = _DraftAndTargetLogits.apply(h, pre, last, lm_w, w2)
        p_t = torch.softmax(z_t, dim=-1)
    else:
        Z = F.linear(h.to(mm), lm_w).float() + F.linear(pre.to(mm), w2.to(mm)).float()
        with torch.no_grad():
            p_t = torch.softmax(F.linear(last.to(mm), lm_w).float(), dim=-1)
    if inv is not None:
        p_t = p_t[inv]
    return _WeightedCeL1.apply(Z, labels, p_t, W.float())


def dspark_loss(drafter: DSparkDrafter, input_ids: Tensor, loss_mask: Tensor, target_aux: Tensor,
                target_last_hidden: Tensor, anchors: Tensor, keep: Tensor, anchor_chunk: int = 64,
                weight_sum: Tensor | None = None, recompute: bool | None = None,
                matmul_dtype: torch.dtype = torch.float32) -> LossOutput:
    """The DSpark loss of docs/dspark.md 2.2 for a batch of sequences.

    Args:
        drafter: the DSparkDrafter (its config holds alphas, beta = loss_decay_gamma, block size).
        input_ids: LongTensor [B, T]; loss_mask: [B, T] 0/1.
        target_aux: [B, T, m*d] target features; target_last_hidden: [B, T, d] the target's post-final-norm
            last hidden states (p_t at label q is recomputed from position q - 1 with the frozen lm_head).
        anchors: LongTensor [B, N]; keep: BoolTensor [B, N] (see anchors.sample_anchors).
        anchor_chunk: anchors per chunk of the V-sized computations (bounds peak memory, see module doc).
        weight_sum: optional denominator to use instead of the local sum W (pass the all-reduced value in
            data-parallel training; docs/dspark.md 2.2 "distributed normalisation").
        recompute: run each chunk under activation checkpointing (saved memory per chunk = its inputs; costs
            one more forward of the heads in backward). None = only when an [S, V] fp32 tensor over all S
            valid slots would exceed RECOMPUTE_BYTES (256 MiB), i.e. when chunking alone would not bound
            memory.
        matmul_dtype: dtype of the V-sized matmuls (drafter logits, Markov W2, target logits); torch.float32
            (exact, the default) or torch.bfloat16 (DeepSpec's precision; the logits are upcast to fp32 before
            every softmax, and gradients reach fp32 parameters in fp32).
    Returns: LossOutput. With no valid slot, total is 0 (still attached to the graph) and diagnostics NaN.
    """
    cfg = drafter.config
    g = cfg.block_size
    B, T = input_ids.shape
    N = anchors.shape[1]
    dev = input_ids.device
    anchors = anchors.long()
    h = drafter(input_ids, target_aux, anchors, keep)  # [B,N,g,d]
    idx = anchors.unsqueeze(-1) + torch.arange(g, device=dev)  # p + j: Markov input & p_t position
    prev = torch.gather(input_ids, 1, idx.clamp(max=T - 1).reshape(B, -1)).reshape(B, N, g)
    labels = torch.gather(input_ids, 1, (idx + 1).clamp(max=T - 1).reshape(B, -1)).reshape(B, N, g)
    M = slot_validity(loss_mask.to(dev), anchors, keep, g)
    W = M.float() * position_weights(g, cfg.loss_decay_gamma).to(dev)
    # r-dim Markov inputs and confidence logits for every slot (cheap, and the RNN head needs whole blocks);
    # the V-sized work below runs on the valid slots only, packed into rows.
    emb = drafter.markov_head.markov_w1(prev)  # [B,N,g,r], one lookup shared by both heads
    pre = drafter.markov_head.pre_teacher_forced(prev, h, emb)  # [B,N,g,r]
    conf_logit = drafter.confidence_logits(h, prev, emb) if drafter.confidence_head is not None else None
    b_i, n_i, j_i = M.nonzero(as_tuple=True)
    S = b_i.numel()
    h_v, pre_v, lab_v, W_v = h[b_i, n_i, j_i], pre[b_i, n_i, j_i], labels[b_i, n_i, j_i], W[b_i, n_i, j_i]
    pos_v = b_i * T + idx[b_i, n_i, j_i]  # flat position q - 1 of each valid slot's target distribution
    last_flat = target_last_hidden.reshape(B * T, -1)
    lm_w = _frozen_lm_head(drafter, matmul_dtype)
    w2 = drafter.markov_head.markov_w2.weight
    if recompute is None:
        recompute = S * cfg.vocab_size * 4 > RECOMPUTE_BYTES
    use_ckpt = recompute and torch.is_grad_enabled() and h.requires_grad
    rows = max(1, anchor_chunk) * g
    ce_num = l1_num = h.new_zeros((), dtype=torch.float32)
    cstars = []
    for s in range(0, S, rows):
        e = min(S, s + rows)
        uniq, inv = torch.unique(pos_v[s:e], return_inverse=True)
        if uniq.numel() > 0.75 * (e - s):  # little overlap: gathering rows of p_t would cost more than it saves
            uniq, inv = pos_v[s:e], None
        args = (lm_w, w2, h_v[s:e], pre_v[s:e], lab_v[s:e], last_flat[uniq], inv, W_v[s:e])
        out = checkpoint(_chunk_terms, *args, use_reentrant=False) if use_ckpt else _chunk_terms(*args)
        ce_num = ce_num + out[0]
        l1_num = l1_num + out[1]
        cstars.append(out[2])
    cstar_v = torch.cat(cstars) if cstars else h.new_zeros(0, dtype=torch.float32)
    conf_num = h.new_zeros((), dtype=torch.float32)
    if conf_logit is not None and S:
        conf_num = (W_v * F.binary_cross_entropy_with_logits(conf_logit[b_i, n_i, j_i], cstar_v,
                                                             reduction="none")).sum()
    with torch.no_grad():  # diagnostics (docs/dspark.md 2.2): per-slot analytic acceptance, expected tau
        cstar = torch.zeros(B, N, g, device=dev)
        cstar[b_i, n_i, j_i] = cstar_v
        Mf = M.float()
        slot_sum = cstar.sum(dim=(0, 1))
        surv = torch.cumprod(cstar, dim=-1) * Mf
        tau_sum = ((1 + surv.sum(-1)) * M[..., 0].float()).sum()
    denom = W.sum() if weight_sum is None else weight_sum.to(dev)
    denom_c = denom.clamp_min(1e-12)
    ce_l, l1_l, conf_l = ce_num / denom_c, l1_num / denom_c, conf_num / denom_c
    total = cfg.ce_loss_alpha * ce_l + cfg.l1_loss_alpha * l1_l
    if drafter.confidence_head is not None:
        total = total + cfg.confidence_head_alpha * conf_l
    if not S:
        total = total + 0.0 * h.sum()  # keep a graph so backward() works on empty batches
    n_blocks = int(M[..., 0].sum())
    slot_count = Mf.sum(dim=(0, 1))
    return LossOutput(
        total=total,
        ce=ce_l.detach(),
        l1=l1_l.detach(),
        conf=conf_l.detach(),
        accept_rate_per_slot=slot_sum / slot_count,
        expected_tau=tau_sum / n_blocks if n_blocks else torch.tensor(float("nan"), device=dev),
        n_valid=int(M.sum()),
        weight_sum=denom.detach(),
        n_blocks=n_blocks,
    )
