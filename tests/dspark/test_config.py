"""DSparkConfig: target derivation, DFlash layer-id rule, mask token choice, validation, serialisation."""

from types import SimpleNamespace

import pytest
import torch
import transformers

from drafters.dspark.config import ConfigError, DSparkConfig, choose_mask_token_id, default_target_layer_ids
from drafters.dspark.model import rope_inv_freq


@pytest.mark.parametrize("L,ids", [
    (28, [1, 7, 13, 19, 25]), (36, [1, 9, 17, 25, 33]), (40, [1, 10, 19, 28, 37]),
    (48, [1, 12, 23, 34, 45]), (64, [1, 16, 31, 46, 61]),
])
def test_default_layer_ids_dspark_examples(L, ids):
    assert default_target_layer_ids(L, 5) == ids


def test_default_layer_ids_k1_and_too_shallow():
    assert default_target_layer_ids(30, 1) == [15]
    assert default_target_layer_ids(30, 3) == [1, 14, 27]
    with pytest.raises(ConfigError) as e:
        default_target_layer_ids(4, 5)
    assert e.value.where == "target_layer_ids"


class FakeTok:
    def __init__(self, n, vocab, added=None, template="", **ids):
        self._n, self._vocab, self.added_tokens_decoder, self.chat_template = n, vocab, added or {}, template
        for k, v in ids.items():
            setattr(self, k, v)

    def __len__(self):
        return self._n

    def get_vocab(self):
        return self._vocab


def test_mask_token_spare_row_qwen3_like():
    assert choose_mask_token_id(151936, FakeTok(151669, {})) == 151669


def test_mask_token_smollm2_like_empty_output():
    vocab = {"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2, "<empty_output>": 16}
    assert choose_mask_token_id(49152, FakeTok(49152, vocab)) == 16


def test_mask_token_fallback_highest_unused_special():
    A = lambda c: SimpleNamespace(content=c, special=True)
    added = {0: A("<s>"), 1: A("<|im_start|>"), 2: A("<|im_end|>"), 5: A("<unused_a>"), 7: A("<unused_b>"),
             9: A("<pad>")}
    tok = FakeTok(100, {}, added, template="{{'<|im_start|>' + m + '<|im_end|>'}}", bos_token_id=0,
                  pad_token_id=9)
    assert choose_mask_token_id(100, tok) == 7
    with pytest.raises(ConfigError) as e:
        choose_mask_token_id(100, FakeTok(100, {}, {1: A("<|im_start|>")}, template="<|im_start|>"))
    assert e.value.code == "no_mask_token" and e.value.where == "mask_token_id"


def test_from_target_llama_and_qwen3_dims():
    lc = transformers.LlamaConfig(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                  num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
                                  rope_theta=100000.0)
    c = DSparkConfig.from_target(lc, mask_token_id=16, num_hidden_layers=1)
    assert (c.hidden_size, c.head_dim, c.num_key_value_heads, c.intermediate_size) == (576, 64, 3, 1536)
    assert c.num_target_layers == 30 and c.target_layer_ids == [1, 8, 14, 20, 27]
    assert c.rope_theta == 100000.0 and c.rope_scaling is None and c.num_hidden_layers == 1
    assert c.block_size == 7 and c.markov_rank == 256 and c.loss_decay_gamma == 4.0
    qc = transformers.Qwen3Config(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
                                  num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                                  vocab_size=151936, rope_theta=1e6)
    q = DSparkConfig.from_target(qc, FakeTok(151669, {}))
    assert q.mask_token_id == 151669 and q.target_layer_ids == [1, 9, 17, 25, 33] and q.head_dim == 128
    assert q.target_hidden_size == 5 * 2560


def test_from_target_without_head_dim_uses_hidden_over_heads():
    ns = SimpleNamespace(hidden_size=64, intermediate_size=128, num_hidden_layers=8, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=100, rms_norm_eps=1e-5, rope_theta=5e5,
                         max_position_embeddings=1024)
    c = DSparkConfig.from_target(ns, mask_token_id=3)
    assert c.head_dim == 16 and c.rope_theta == 5e5 and c.rms_norm_eps == 1e-5


def test_llama3_rope_matches_transformers():
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    lc = transformers.LlamaConfig(hidden_size=64, num_attention_heads=4, max_position_embeddings=16384,
                                  rope_theta=500000.0,
                                  rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                "high_freq_factor": 4.0,
                                                "original_max_position_embeddings": 8192})
    c = DSparkConfig.from_target(lc, mask_token_id=0, target_layer_ids=[0, 5])
    assert c.rope_scaling["rope_type"] == "llama3"
    torch.testing.assert_close(rope_inv_freq(c), LlamaRotaryEmbedding(lc).inv_freq, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("field,value", [
    ("mask_token_id", 100), ("markov_rank", 0), ("markov_head_type", "lstm"),
    ("target_layer_ids", [3, 2]), ("target_layer_ids", [1, 7]), ("target_layer_ids", [1, 9]),
    ("target_layer_ids", [-2, 1]), ("num_key_value_heads", 3), ("sliding_window", 0),
    ("rope_scaling", {"rope_type": "yarn", "factor": 4.0}),
])
def test_validation_names_field(field, value):
    base = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
                "head_dim": 16, "vocab_size": 100, "num_target_layers": 8, "mask_token_id": 5}
    base[field] = value
    with pytest.raises(ConfigError) as e:
        DSparkConfig(**base)
    assert e.value.where == field


def test_unknown_override_rejected():
    with pytest.raises(ConfigError) as e:
        DSparkConfig.from_target(transformers.LlamaConfig(num_hidden_layers=8), mask_token_id=1, blocksize=3)
    assert e.value.code == "unknown_field"


def test_deepspec_dict_roundtrip_and_keys():
    c = DSparkConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=16, vocab_size=100, num_target_layers=8, mask_token_id=5, markov_head_type="gated",
                     sliding_window=16, rope_scaling={"rope_type": "linear", "factor": 2.0})
    d = c.to_deepspec_dict()
    assert d["architectures"] == ["Qwen3DSparkModel"] and d["model_type"] == "qwen3"
    assert d["tie_word_embeddings"] is False and "speculators_model_type" not in d
    assert d["layer_types"] == ["sliding_attention"] * 5 and d["target_layer_ids"] == [1, 2, 3, 4, 5]
    assert DSparkConfig.from_deepspec_dict(d) == c
    del d["block_size"]
    with pytest.raises(ConfigError) as e:
        DSparkConfig.from_deepspec_dict(d)
    assert e.value.where == "block_size"
