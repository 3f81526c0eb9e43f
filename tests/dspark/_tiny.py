"""Tiny random targets and drafters for the DSpark tests (no downloads)."""

from __future__ import annotations

import torch
import transformers

from drafters.dspark.config import DSparkConfig
from drafters.dspark.model import DSparkDrafter

V = 256


def tiny_target(kind: str = "llama", seed: int = 0, **kw):
    """A random 4-layer target (hidden 64, vocab 256), eval mode, fp32."""
    torch.manual_seed(seed)
    common = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "vocab_size": V, "max_position_embeddings": 512}
    common.update(kw)
    if kind == "llama":
        cfg = transformers.LlamaConfig(**common)
        model = transformers.LlamaForCausalLM(cfg)
    else:
        cfg = transformers.Qwen3Config(head_dim=16, **common)
        model = transformers.Qwen3ForCausalLM(cfg)
    return model.eval()


def target_features(model, input_ids: torch.Tensor, layer_ids: list[int]):
    """(aux [B,T,m*d], last [B,T,d]) with the layer-output convention (hidden_states[l+1])."""
    with torch.no_grad():
        out = model(input_ids, output_hidden_states=True)
    hs = out.hidden_states
    aux = torch.cat([hs[i + 1] for i in layer_ids], dim=-1)
    return aux, hs[-1]


def tiny_drafter(kind: str = "llama", seed: int = 0, target=None, **overrides) -> tuple[DSparkDrafter, object]:
    """(drafter, target). Defaults: 2 draft layers, block 4, rank 16, layer ids [0, 1], mask id 255."""
    target = target if target is not None else tiny_target(kind, seed)
    kw = {"num_hidden_layers": 2, "block_size": 4, "markov_rank": 16, "target_layer_ids": [0, 1], "mask_token_id": V - 1}
    kw.update(overrides)
    cfg = DSparkConfig.from_target(target.config, **kw)
    torch.manual_seed(seed + 1)
    d = DSparkDrafter(cfg, target.get_input_embeddings().weight, target.get_output_embeddings().weight)
    return d, target
