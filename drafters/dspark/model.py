"""The DSpark drafter (docs/dspark.md 1): parallel DFlash-style backbone with KV injection, anchor-first blocks,
Markov head (sequential stage) and confidence head.

Submodule names equal the DeepSpec-native tensor names of docs/serving.md 2 (embed_tokens, fc, hidden_norm,
layers.{i}.self_attn.{q,k,v,o}_proj / q_norm / k_norm, layers.{i}.mlp.{gate,up,down}_proj,
layers.{i}.{input,post_attention}_layernorm, norm, lm_head, markov_head.markov_w1 / markov_w2 /
gate_proj / joint_proj, confidence_head.proj), so ``state_dict()`` is the checkpoint without renaming.

Two forward paths share every weight and every equation:
- training (``forward``): many anchors of one sequence at once, block-sparse attention (docs/dspark.md 1.2);
- inference (``infer_block``): one block after a context-only K/V cache (docs/dspark.md 5.1 step 2), used by
  `drafters.dspark.proposer.DSparkProposer`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from drafters.dspark.config import ConfigError, DSparkConfig

# ----------------------------------------------------------------------------------------------- basics


class RMSNorm(nn.Module):
    """RMSNorm computed in fp32 (Qwen3/Llama): x * rsqrt(mean(x^2) + eps) * weight."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        dtype = x.dtype
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(dtype)


def rope_inv_freq(config: DSparkConfig) -> Tensor:
    """Inverse RoPE frequencies [head_dim/2] fp32 for rope types default, linear and llama3 (the formulas of
    transformers' ``modeling_rope_utils``; the target's rope_theta)."""
    hd = config.head_dim
    inv = 1.0 / (config.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    sc = config.rope_scaling or {}
    rtype = sc.get("rope_type", sc.get("type", "default"))
    if rtype == "linear":
        inv = inv / float(sc["factor"])
    elif rtype == "llama3":
        factor = float(sc["factor"])
        low = float(sc.get("low_freq_factor", 1.0))
        high = float(sc.get("high_freq_factor", 4.0))
        old_ctx = float(sc.get("original_max_position_embeddings", 8192))
        low_wl, high_wl = old_ctx / low, old_ctx / high
        wavelen = 2 * math.pi / inv
        inv_l = torch.where(wavelen > low_wl, inv / factor, inv)
        smooth = (old_ctx / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
        medium = (wavelen >= high_wl) & (wavelen <= low_wl)
        inv = torch.where(medium, smoothed, inv_l)
    elif rtype != "default":
        raise ConfigError("unsupported_rope", f"rope type {rtype!r} is not supported", "rope_scaling")
    return inv.float()


def _rotate_half(x: Tensor) -> Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x [B, heads, S, hd]; cos/sin [B, S, hd] fp32 (HF non-interleaved convention)."""
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    return (x.float() * cos + _rotate_half(x.float()) * sin).to(x.dtype)


# ----------------------------------------------------------------------------------------------- layers


class DSparkAttention(nn.Module):
    """Qwen3 attention with per-head q_norm/k_norm, GQA, RoPE; keys/values come from the injected context
    and from the block itself (docs/dspark.md 1.2 step 3)."""

    def __init__(self, c: DSparkConfig):
        super().__init__()
        self.nh, self.nkv, self.hd = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        self.q_proj = nn.Linear(c.hidden_size, self.nh * self.hd, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, self.nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, self.nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.nh * self.hd, c.hidden_size, bias=False)
        self.q_norm = RMSNorm(self.hd, c.rms_norm_eps)
        self.k_norm = RMSNorm(self.hd, c.rms_norm_eps)

    def q(self, x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        """x [B,S,d] -> Q [B,nh,S,hd] (normed, rotated)."""
        B, S, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(B, S, self.nh, self.hd)).transpose(1, 2)
        return apply_rope(q, cos, sin)

    def kv(self, x: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
        """x [B,S,d] -> K, V [B,nkv,S,hd] (K normed and rotated)."""
        B, S, _ = x.shape
        k = self.k_norm(self.k_proj(x).view(B, S, self.nkv, self.hd)).transpose(1, 2)
        v = self.v_proj(x).view(B, S, self.nkv, self.hd).transpose(1, 2)
        return apply_rope(k, cos, sin), v


class DSparkMLP(nn.Module):
    """SwiGLU MLP: down(silu(gate(x)) * up(x))."""

    def __init__(self, c: DSparkConfig):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DSparkDecoderLayer(nn.Module):
    """Pre-norm Qwen3 decoder layer without causal mask; input_layernorm applies to the block stream only,
    never to the injected context H_ctx (docs/dspark.md 1.2)."""

    def __init__(self, c: DSparkConfig):
        super().__init__()
        self.self_attn = DSparkAttention(c)
        self.mlp = DSparkMLP(c)
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)

    def finish(self, h: Tensor, attn_out: Tensor) -> Tensor:
        """attn_out [B,nh,S,hd] -> residual + MLP."""
        B, _, S, _ = attn_out.shape
        h = h + self.self_attn.o_proj(attn_out.transpose(1, 2).reshape(B, S, -1))
        return h + self.mlp(self.post_attention_layernorm(h))


# ----------------------------------------------------------------------------------------------- heads


class MarkovHead(nn.Module):
    """Sequential stage (docs/dspark.md 1.5, paper Eq. 4-6). Bias B_k added to the base logits U_k.

    vanilla: B_k = W2(W1[x_{k-1}]); gated: B_k = W2(sigmoid(gate_proj([h_k; W1[x_{k-1}]])) * W1[x_{k-1}]);
    rnn: z_k = [s_{k-1}; W1[x_{k-1}]; h_k], (a, c, o) = joint_proj(z_k), s_k = s(a) s_{k-1} + (1 - s(a))
    tanh(c), B_k = W2(tanh(o)), s_0 = 0.
    """

    def __init__(self, c: DSparkConfig):
        super().__init__()
        self.kind = c.markov_head_type
        self.rank = c.markov_rank
        self.markov_w1 = nn.Embedding(c.vocab_size, c.markov_rank)
        self.markov_w2 = nn.Linear(c.markov_rank, c.vocab_size, bias=False)
        if self.kind == "gated":
            self.gate_proj = nn.Linear(c.hidden_size + c.markov_rank, c.markov_rank, bias=True)
        elif self.kind == "rnn":
            self.joint_proj = nn.Linear(2 * c.markov_rank + c.hidden_size, 3 * c.markov_rank, bias=True)

    def pre(self, prev: Tensor, h: Tensor, state: Tensor | None,
            e: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """The r-dim vector W2 is applied to, and the new RNN state (paper Eq. 4-6 before W2). prev [...],
        h [..., d] -> ([..., r], state [..., r] or None); e [..., r] is W1[prev] when already looked up."""
        e = (self.markov_w1(prev) if e is None else e).to(h.dtype)
        if self.kind == "vanilla":
            return e, None
        if self.kind == "gated":
            return torch.sigmoid(self.gate_proj(torch.cat([h, e], -1))) * e, None
        if state is None:
            state = torch.zeros_like(e)
        a, cand, o = self.joint_proj(torch.cat([state, e, h], -1)).chunk(3, dim=-1)
        g = torch.sigmoid(a)
        new_state = g * state + (1 - g) * torch.tanh(cand)
        return torch.tanh(o), new_state  # bias uses o from z_k (which holds s_{k-1}), docs/dspark.md 1.5

    def step(self, prev: Tensor, h: Tensor, state: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """One slot of the sequential sampler. prev LongTensor [...], h [..., d] -> (bias [..., V], state)."""
        z, state = self.pre(prev, h, state)
        return self.markov_w2(z), state

    def pre_teacher_forced(self, prev: Tensor, h: Tensor, prev_emb: Tensor | None = None) -> Tensor:
        """Teacher-forced r-dim inputs of W2 for all slots. prev [..., g], h [..., g, d] -> [..., g, r].
        ``prev_emb`` [..., g, r]: W1[prev] if already looked up (the loss shares one lookup with the
        confidence head: each lookup's backward builds a dense [V, r] gradient)."""
        if self.kind != "rnn":
            return self.pre(prev, h, None, prev_emb)[0]
        outs, state = [], None
        for k in range(prev.shape[-1]):  # unrolled over the gamma slots (cheap: r-dim)
            e = None if prev_emb is None else prev_emb[..., k, :]
            z, state = self.pre(prev[..., k], h[..., k, :], state, e)
            outs.append(z)
        return torch.stack(outs, dim=-2)

    def forward(self, prev: Tensor, h: Tensor) -> Tensor:
        """Teacher-forced bias. prev LongTensor [..., g], h [..., g, d] -> [..., g, V]."""
        return self.markov_w2(self.pre_teacher_forced(prev, h))


class ConfidenceHead(nn.Module):
    """c_k = proj([h_k; W1[x_{k-1}]]) (logit; sigmoid gives the conditional acceptance probability),
    docs/dspark.md 1.6. Without the Markov input: proj(h_k)."""

    def __init__(self, c: DSparkConfig):
        super().__init__()
        self.with_markov = c.confidence_head_with_markov
        self.proj = nn.Linear(c.hidden_size + (c.markov_rank if self.with_markov else 0), 1, bias=True)

    def forward(self, h: Tensor, prev_emb: Tensor | None) -> Tensor:
        x = torch.cat([h, prev_emb.to(h.dtype)], -1) if self.with_markov else h
        return self.proj(x).squeeze(-1)


# ----------------------------------------------------------------------------------------------- drafter


class DSparkDrafter(nn.Module):
    """DSpark drafter (docs/dspark.md 1).

    Args:
        config: DSparkConfig (mask_token_id must be set).
        embed_weight: [V, d] the target's input embedding; lm_head_weight: [V, d] its LM head. Both are held
            as frozen parameters (requires_grad False) that share storage with the given tensors (no copy
            until a dtype/device move), as DeepSpec's separate untied copies.

    Training forward: see `forward`. Memory of the training attention: anchors are processed in chunks of
    ``attn_anchor_chunk`` (default 64); per chunk SDPA gets a boolean mask [B, 1, C*g, T + C*g] and keys =
    the T projected context positions followed by the chunk's C*g block positions (blocks never see other
    blocks, so dropping other chunks' keys is exact). Peak extra memory per layer is O(B * C*g * (T + C*g))
    for the mask (and for the scores when SDPA falls back to its math kernel), instead of
    O(B * N*g * (T + N*g)) for one call over all N anchors.
    """

    def __init__(self, config: DSparkConfig, embed_weight: Tensor, lm_head_weight: Tensor,
                 attn_anchor_chunk: int = 64):
        super().__init__()
        c = config
        if c.mask_token_id is None:
            raise ConfigError("missing_field", "mask_token_id must be set before building the drafter",
                              "mask_token_id")
        V, d = c.vocab_size, c.hidden_size
        for name, w in (("embed_tokens", embed_weight), ("lm_head", lm_head_weight)):
            if w is None or tuple(w.shape) != (V, d):
                raise ConfigError("shape_mismatch", f"{name} weight must be [{V}, {d}], got "
                                  f"{None if w is None else tuple(w.shape)}", name)
        self.config = c
        self.attn_anchor_chunk = attn_anchor_chunk
        # built on the meta device, then pointed at the target's tensors: no V x d allocation
        self.embed_tokens = nn.Embedding(V, d, device="meta")
        self.embed_tokens.weight = nn.Parameter(embed_weight.detach(), requires_grad=False)
        self.fc = nn.Linear(c.target_hidden_size, d, bias=False)
        self.hidden_norm = RMSNorm(d, c.rms_norm_eps)
        self.layers = nn.ModuleList(DSparkDecoderLayer(c) for _ in range(c.num_hidden_layers))
        self.norm = RMSNorm(d, c.rms_norm_eps)
        self.lm_head = nn.Linear(d, V, bias=False, device="meta")
        self.lm_head.weight = nn.Parameter(lm_head_weight.detach(), requires_grad=False)
        self.markov_head = MarkovHead(c)
        self.confidence_head = ConfidenceHead(c) if c.enable_confidence_head else None
        self.register_buffer("inv_freq", rope_inv_freq(c), persistent=False)
        self._init_weights()

    def _init_weights(self, std: float = 0.02) -> None:
        for name, mod in self.named_modules():
            if name in ("embed_tokens", "lm_head"):
                continue
            if isinstance(mod, nn.Linear):
                nn.init.normal_(mod.weight, std=std)
                if mod.bias is not None:
                    nn.init.zeros_(mod.bias)
            elif isinstance(mod, nn.Embedding):
                nn.init.normal_(mod.weight, std=std)

    # -------------------------------------------------------------------- helpers
    @property
    def block_size(self) -> int:
        return self.config.block_size

    def trainable_parameters(self) -> list[nn.Parameter]:
        """Everything except the frozen embed_tokens / lm_head (docs/dspark.md 8)."""
        return [p for n, p in self.named_parameters() if p.requires_grad]

    def rope(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        """positions LongTensor [B, S] -> (cos, sin) [B, S, hd] fp32."""
        freqs = positions.float().unsqueeze(-1) * self.inv_freq.to(positions.device)
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos(), emb.sin()

    def project_context(self, target_aux: Tensor) -> Tensor:
        """H_ctx = hidden_norm(fc(X)); X [B, T, m*d] -> [B, T, d] (docs/dspark.md 1.2 step 1)."""
        if target_aux.shape[-1] != self.config.target_hidden_size:
            raise ConfigError("shape_mismatch", f"target_aux has width {target_aux.shape[-1]}, expected "
                              f"m*d = {self.config.target_hidden_size}", "target_aux")
        return self.hidden_norm(self.fc(target_aux.to(self.fc.weight.dtype)))

    def block_input_ids(self, input_ids: Tensor, anchors: Tensor, keep: Tensor) -> Tensor:
        """[anchor, MASK x (g-1)] per block; dummy blocks are all MASK (docs/dspark.md 2.4). -> [B, N, g]."""
        B, N = anchors.shape
        g = self.config.block_size
        blk = torch.full((B, N, g), self.config.mask_token_id, dtype=torch.long, device=input_ids.device)
        anchor_tok = torch.gather(input_ids, 1, anchors.clamp(0, input_ids.shape[1] - 1))
        blk[:, :, 0] = torch.where(keep, anchor_tok, blk[:, :, 0])
        return blk

    def logits(self, h: Tensor) -> Tensor:
        """Base logits U = lm_head(h) in fp32. h [..., d] -> [..., V]."""
        return F.linear(h.float(), self.lm_head.weight.float())

    def markov_bias(self, prev_tokens: Tensor, h: Tensor) -> Tensor:
        """Teacher-forced Markov bias B. prev_tokens [B,N,g] (anchor then ground truth), h [B,N,g,d]
        -> [B,N,g,V]; corrected logits Z = logits(h) + B (docs/dspark.md 1.5)."""
        return self.markov_head(prev_tokens, h).float()

    def corrected_logits(self, h: Tensor, prev_tokens: Tensor) -> Tensor:
        """Z = U + B in fp32, teacher-forced. -> [B,N,g,V]."""
        return self.logits(h) + self.markov_bias(prev_tokens, h)

    def confidence_logits(self, h: Tensor, prev_tokens: Tensor, prev_emb: Tensor | None = None) -> Tensor:
        """Confidence logits c [B,N,g] (sigmoid -> per-slot conditional acceptance), docs/dspark.md 1.6.
        ``prev_emb`` [B,N,g,r]: W1[prev_tokens] if already looked up. Raises ConfigError when the confidence
        head is disabled."""
        if self.confidence_head is None:
            raise ConfigError("no_confidence_head", "the confidence head is disabled",
                              "enable_confidence_head")
        e = None
        if self.confidence_head.with_markov:
            e = self.markov_head.markov_w1(prev_tokens) if prev_emb is None else prev_emb
        return self.confidence_head(h, e).float()

    # -------------------------------------------------------------------- training forward
    def training_mask(self, anchors: Tensor, keep: Tensor, T: int) -> Tensor:
        """Boolean attention mask [B, 1, N*g, T + N*g] of docs/dspark.md 1.2 (True = may attend).

        A query of block n sees context key t iff t < anchor_n (and t >= anchor_n - W with a sliding window
        W) and sees all g slots of its own block, nothing of other blocks. Dummy blocks (keep False) are
        allowed only their own slots so the softmax stays finite; their attention output is then zeroed, which
        is the "sees nothing" of flex attention.
        """
        B, N = anchors.shape
        g = self.config.block_size
        dev = anchors.device
        t = torch.arange(T, device=dev)
        a = anchors.unsqueeze(-1)  # [B,N,1]
        ctx = (t < a) & keep.unsqueeze(-1)
        if self.config.sliding_window:
            ctx = ctx & (t >= a - self.config.sliding_window)
        ctx = ctx.unsqueeze(2).expand(B, N, g, T).reshape(B, N * g, T)
        blk_id = torch.arange(N, device=dev).repeat_interleave(g)
        own = (blk_id.unsqueeze(1) == blk_id.unsqueeze(0)).unsqueeze(0).expand(B, -1, -1)
        return torch.cat([ctx, own], dim=-1).unsqueeze(1)

    def forward(self, input_ids: Tensor, target_aux: Tensor, anchors: Tensor, keep: Tensor) -> Tensor:
        """Training forward over N anchor blocks of each sequence.

        Args:
            input_ids: LongTensor [B, T] (transcript tokens; only the anchors' tokens are read).
            target_aux: [B, T, m*d] the target's selected-layer outputs (docs/dspark.md 1.2 step 1).
            anchors: LongTensor [B, N] anchor positions p (slot j predicts p + j + 1).
            keep: BoolTensor [B, N]; False = dummy block.
        Returns:
            h: [B, N, g, d] backbone states after the final norm (dummy blocks: defined but meaningless).
        Positions: context t uses t; block slot j of anchor p uses p + j.
        """
        B, T = input_ids.shape
        N = anchors.shape[1]
        g = self.config.block_size
        dev = input_ids.device
        keep = keep.bool()
        anchors = anchors.long()
        ctx = self.project_context(target_aux)  # [B,T,d]
        blk_ids = self.block_input_ids(input_ids, anchors, keep)  # [B,N,g]
        h = self.embed_tokens(blk_ids).reshape(B, N * g, -1).to(ctx.dtype)
        ctx_pos = torch.arange(T, device=dev).unsqueeze(0).expand(B, T)
        blk_pos = (anchors.unsqueeze(-1) + torch.arange(g, device=dev)).reshape(B, N * g)
        ccos, csin = self.rope(ctx_pos)
        bcos, bsin = self.rope(blk_pos)
        C = max(1, min(N, self.attn_anchor_chunk or N))
        chunks = [(s, min(N, s + C)) for s in range(0, N, C)]
        masks = [self.training_mask(anchors[:, s:e], keep[:, s:e], T) for s, e in chunks]
        keep_q = keep.repeat_interleave(g, dim=1)[:, None, :, None]  # [B,1,N*g,1]
        for layer in self.layers:
            hn = layer.input_layernorm(h)
            attn = layer.self_attn
            q = attn.q(hn, bcos, bsin)
            kc, vc = attn.kv(ctx, ccos, csin)
            kb, vb = attn.kv(hn, bcos, bsin)
            outs = []
            for (s, e), m in zip(chunks, masks):
                qs, ks = slice(s * g, e * g), slice(s * g, e * g)
                k = torch.cat([kc, kb[:, :, ks]], dim=2)
                v = torch.cat([vc, vb[:, :, ks]], dim=2)
                outs.append(F.scaled_dot_product_attention(q[:, :, qs], k, v, attn_mask=m,
                                                           enable_gqa=attn.nh != attn.nkv))
            o = outs[0] if len(outs) == 1 else torch.cat(outs, dim=2)
            o = o * keep_q.to(o.dtype)  # dummy blocks attend to nothing (docs/dspark.md 2.4)
            h = layer.finish(h, o)
        return self.norm(h).reshape(B, N, g, -1)

    # -------------------------------------------------------------------- inference
    def infer_block(self, anchor: int, start: int, new_features: Tensor | None,
                    cache: list[tuple[Tensor, Tensor]] | None) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        """One draft block after a context-only K/V cache (docs/dspark.md 5.1 step 2).

        Args:
            anchor: the last committed token (the target's bonus/corrected token) at position ``start``.
            start: its absolute position; the context holds exactly positions 0..start-1.
            new_features: [t, m*d] target features of context positions start-t..start-1 not yet cached,
                or None.
            cache: per layer (K, V) [1, nkv, start-t, hd] of the cached context (None = empty).
        Returns:
            (h [g, d] after the final norm, the cache extended by the new context; the block's own K/V is
            never stored, i.e. the cache is "cropped back" to ``start``).
        Raises ConfigError(code="context_mismatch") when cached + new context length != start.
        """
        g = self.config.block_size
        dev = self.fc.weight.device
        n_cached = 0 if not cache else cache[0][0].shape[2]
        t_new = 0 if new_features is None else new_features.shape[0]
        if n_cached + t_new != start:
            raise ConfigError("context_mismatch", f"context holds {n_cached}+{t_new} positions but the anchor "
                              f"is at {start}", "start")
        blk = torch.full((1, g), self.config.mask_token_id, dtype=torch.long, device=dev)
        blk[0, 0] = anchor
        h = self.embed_tokens(blk).to(self.fc.weight.dtype)
        bcos, bsin = self.rope(torch.arange(start, start + g, device=dev).unsqueeze(0))
        if t_new:
            ctx = self.project_context(new_features.unsqueeze(0).to(dev))
            ccos, csin = self.rope(torch.arange(n_cached, start, device=dev).unsqueeze(0))
        new_cache = []
        mask = None
        W = self.config.sliding_window
        if W and start > W:
            m = torch.ones(1, 1, g, start + g, dtype=torch.bool, device=dev)
            m[..., : start - W] = False
            mask = m
        for i, layer in enumerate(self.layers):
            attn = layer.self_attn
            hn = layer.input_layernorm(h)
            q = attn.q(hn, bcos, bsin)
            kb, vb = attn.kv(hn, bcos, bsin)
            kc = cache[i][0] if cache else kb[:, :, :0]
            vc = cache[i][1] if cache else vb[:, :, :0]
            if t_new:
                kn, vn = attn.kv(ctx, ccos, csin)
                kc, vc = torch.cat([kc, kn], 2), torch.cat([vc, vn], 2)
            new_cache.append((kc, vc))
            o = F.scaled_dot_product_attention(q, torch.cat([kc, kb], 2), torch.cat([vc, vb], 2),
                                               attn_mask=mask, enable_gqa=attn.nh != attn.nkv)
            h = layer.finish(h, o)
        return self.norm(h)[0], new_cache
