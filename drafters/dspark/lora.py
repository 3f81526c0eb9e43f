"""LoRA fine-tuning of a DSpark drafter through peft (docs/dspark.md 8 item 5; no reference implementation has it).

Adapters go on the backbone linears (q/k/v/o, gate/up/down of every draft layer) and on ``fc``; the Markov
head (W1, W2 and the gated/RNN projections) and the confidence head are trained fully because they hold
domain-specific token-transition statistics; the RMSNorm weights are trained fully too (a few thousand
values). embed_tokens/lm_head stay frozen. Adapters are merged before export so the checkpoint stays the
plain Qwen3DSparkModel layout engines load.
"""

from __future__ import annotations

import torch
from peft import LoraConfig, inject_adapter_in_model
from peft.tuners.lora import LoraLayer

from drafters.dspark.model import DSparkDrafter, RMSNorm

# full-match regex over module names: backbone linears and fc, never markov_head.gate_proj
LORA_TARGETS = r"(layers\.\d+\.(self_attn\.(q|k|v|o)_proj|mlp\.(gate|up|down)_proj)|fc)"
FULLY_TRAINED = ("markov_head.", "confidence_head.")


def apply_lora(drafter: DSparkDrafter, r: int = 16, alpha: int = 32, dropout: float = 0.0,
               train_norms: bool = True) -> DSparkDrafter:
    """Inject LoRA adapters (rank r, scale alpha/r, dropout on the adapter input) in place and set the
    trainable set: adapters + Markov head + confidence head (+ RMSNorm weights when ``train_norms``).
    Returns the same drafter object (its forward, heads and losses work unchanged)."""
    cfg = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=LORA_TARGETS, bias="none")
    inject_adapter_in_model(cfg, drafter)
    for name, p in drafter.named_parameters():
        p.requires_grad = "lora_" in name or name.startswith(FULLY_TRAINED)
    if train_norms:
        for name, mod in drafter.named_modules():
            if isinstance(mod, RMSNorm):
                mod.weight.requires_grad = True
    drafter.embed_tokens.weight.requires_grad = False
    drafter.lm_head.weight.requires_grad = False
    return drafter


def has_lora(drafter: DSparkDrafter) -> bool:
    """Whether LoRA adapters are injected."""
    return any(isinstance(m, LoraLayer) for m in drafter.modules())


@torch.no_grad()
def merge_lora(drafter: DSparkDrafter) -> DSparkDrafter:
    """A NEW plain DSparkDrafter whose linears hold W + (alpha/r) B A; the LoRA drafter is left untouched so
    training can continue after a checkpoint export. The frozen embed/lm_head tensors are shared, not copied.
    Without adapters, returns a plain copy as well."""
    sd = drafter.state_dict()
    merged: dict[str, torch.Tensor] = {}
    lora_modules = {n: m for n, m in drafter.named_modules() if isinstance(m, LoraLayer)}
    for k, v in sd.items():
        if "lora_" in k:
            continue
        merged[k.replace(".base_layer.", ".")] = v
    for name, mod in lora_modules.items():
        base_key = f"{name}.weight"
        delta = sum(mod.get_delta_weight(a) for a in mod.active_adapters if a in mod.lora_A)
        merged[base_key] = (merged[base_key].float() + delta.float()).to(merged[base_key].dtype)
    out = DSparkDrafter(drafter.config, drafter.embed_tokens.weight, drafter.lm_head.weight,
                        attn_anchor_chunk=drafter.attn_anchor_chunk)
    out.to(device=merged["fc.weight"].device, dtype=merged["fc.weight"].dtype)
    out.load_state_dict(merged, strict=True)
    return out
