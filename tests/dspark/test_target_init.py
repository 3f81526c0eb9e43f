"""A new drafter's backbone started from the target's own layers (drafters/dspark/target_init.py)."""

from __future__ import annotations

import pytest
import torch

from drafters.dspark.config import ConfigError, DSparkConfig
from drafters.dspark.target_init import source_layers
from drafters.target import Target
from drafters.train.start import new_drafter
from tests.dspark._tiny import V, target_features, tiny_target


def _drafter(model, init: str, **overrides):
    kw = {"num_hidden_layers": 2, "block_size": 4, "markov_rank": 16, "target_layer_ids": [0, 1],
          "mask_token_id": V - 1}
    kw.update(overrides)
    cfg = DSparkConfig.from_target(model.config, **kw)
    return new_drafter(cfg, 0, Target(model, name="tiny"), torch.device("cpu"), init)


def test_source_layers_follow_the_deepest_selected_output():
    assert source_layers(30, [1, 8, 14, 20, 27], 1) == [28]  # SmolLM2: layer 28 reads layer 27's output
    assert source_layers(30, [1, 8, 14, 20, 27], 2) == [28, 29]
    assert source_layers(30, [1, 8, 14, 20, 27], 5) == [25, 26, 27, 28, 29]  # too few after it: the last five
    with pytest.raises(ConfigError) as e:
        source_layers(4, [0, 1], 5)
    assert e.value.code == "bad_layer_count"


def test_the_drafter_reads_the_context_as_the_target_layer_does():
    """Qwen3 (q_norm/k_norm like the drafter): the projected context is the source layer's normed input,
    and the draft layer's context keys and values are that target layer's own, before RoPE."""
    model = tiny_target("qwen3")
    drafter = _drafter(model, "target")
    assert drafter.initialised_from == [2, 3]
    ids = torch.randint(0, V - 1, (1, 12))
    aux, _ = target_features(model, ids, [0, 1])
    with torch.no_grad():
        hs = model(ids, output_hidden_states=True).hidden_states
        src = model.model.layers[2]
        want = src.input_layernorm(hs[2])  # layer 2's input is layer id 1's output
        ctx = drafter.project_context(aux)
        torch.testing.assert_close(ctx, want)
        nkv, hd = src.self_attn.config.num_key_value_heads, src.self_attn.head_dim
        k_target = src.self_attn.k_norm(src.self_attn.k_proj(want).view(1, 12, nkv, hd))
        attn = drafter.layers[0].self_attn
        k_draft = attn.k_norm(attn.k_proj(ctx).view(1, 12, nkv, hd))
        torch.testing.assert_close(k_draft, k_target)
        torch.testing.assert_close(attn.v_proj(ctx), src.self_attn.v_proj(want))
    layer3 = model.model.layers[3]
    assert torch.equal(drafter.layers[1].mlp.down_proj.weight, layer3.mlp.down_proj.weight)
    assert torch.equal(drafter.norm.weight, model.model.norm.weight)


def test_llama_target_and_the_random_start():
    model = tiny_target("llama")
    drafter = _drafter(model, "auto")
    assert drafter.initialised_from == [2, 3]
    assert torch.equal(drafter.layers[0].self_attn.q_proj.weight, model.model.layers[2].self_attn.q_proj.weight)
    assert torch.equal(drafter.layers[0].self_attn.q_norm.weight, torch.ones(16))  # Llama has none: left at 1
    random = _drafter(model, "random")
    assert random.initialised_from is None
    assert not torch.equal(random.layers[0].self_attn.q_proj.weight, model.model.layers[2].self_attn.q_proj.weight)
    assert abs(random.layers[0].mlp.up_proj.weight.std().item() - 0.02) < 0.003  # normal(0, 0.02)


def test_shapes_that_differ_fall_back_under_auto_and_raise_under_target():
    model = tiny_target("llama")
    drafter = _drafter(model, "auto", intermediate_size=96)  # the target's MLP is 128 wide
    assert drafter.initialised_from is None
    assert abs(drafter.layers[0].mlp.up_proj.weight.std().item() - 0.02) < 0.003  # nothing half-copied
    assert torch.equal(drafter.layers[0].input_layernorm.weight, torch.ones(64))
    with pytest.raises(ConfigError) as e:
        _drafter(model, "target", intermediate_size=96)
    assert e.value.code == "shape_mismatch" and e.value.where == "layers.2.mlp.gate_proj"
