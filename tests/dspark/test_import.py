"""Importers: DeepSpec (with embeddings, prefixed names), vLLM speculators and SpecForge layouts, refusals."""

import json

import pytest
import torch
from safetensors.torch import save_file

from drafters.dspark.checkpoint import CheckpointError, detect_layout, import_checkpoint, load_checkpoint
from tests.dspark._tiny import tiny_drafter


def _write(path, cfg, tensors):
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(cfg))
    save_file({k: v.contiguous().clone() for k, v in tensors.items()}, str(path / "model.safetensors"))


def _qwen3_dims(c):
    return {"model_type": "qwen3", "hidden_size": c.hidden_size, "intermediate_size": c.intermediate_size,
            "num_attention_heads": c.num_attention_heads, "num_key_value_heads": c.num_key_value_heads,
            "head_dim": c.head_dim, "rms_norm_eps": c.rms_norm_eps, "rope_theta": c.rope_theta,
            "max_position_embeddings": c.max_position_embeddings, "vocab_size": c.vocab_size,
            "num_hidden_layers": c.num_hidden_layers}


def _speculators(d, **over):
    c = d.config
    cfg = {"speculators_model_type": "dspark", "architectures": ["DSparkSpeculator"],
           "transformer_layer_config": _qwen3_dims(c), "draft_vocab_size": c.vocab_size,
           "block_size": c.block_size, "aux_hidden_state_layer_ids": [i + 1 for i in c.target_layer_ids],
           "mask_token_id": c.mask_token_id, "markov_rank": c.markov_rank, "markov_head_type": c.markov_head_type,
           "enable_confidence_head": True, "confidence_head_with_markov": True, "sample_from_anchor": True,
           "speculators_config": {"algorithm": "dspark"}}
    cfg.update(over)
    sd = {k: v for k, v in d.state_dict().items() if k != "embed_tokens.weight"}
    sd["verifier_lm_head.weight"] = sd["lm_head.weight"]
    sd["verifier_norm.weight"] = torch.ones(c.hidden_size)
    sd["t2d"] = torch.ones(c.vocab_size, dtype=torch.bool)
    sd["d2t"] = torch.zeros(c.vocab_size, dtype=torch.long)
    return cfg, sd


def _assert_same(d, d2):
    assert d2.config.target_layer_ids == d.config.target_layer_ids
    assert d2.config.block_size == d.config.block_size and d2.config.mask_token_id == d.config.mask_token_id
    sd, sd2 = d.state_dict(), d2.state_dict()
    assert set(sd) == set(sd2)
    for k in sd:
        assert torch.equal(sd[k], sd2[k]), k


def _emb(t):
    return t.get_input_embeddings().weight, t.get_output_embeddings().weight


def test_import_speculators_shifts_layer_ids(tmp_path):
    d, t = tiny_drafter("qwen3", markov_head_type="gated")
    cfg, sd = _speculators(d)
    _write(tmp_path / "src", cfg, sd)
    assert detect_layout(cfg) == "speculators"
    info = import_checkpoint(tmp_path / "src", tmp_path / "out", target_config=t.config)
    assert info.config.target_layer_ids == [0, 1] and info.config.num_target_layers == 4
    assert not info.has_embeddings
    _assert_same(d, load_checkpoint(tmp_path / "out", *_emb(t)))


def test_import_specforge(tmp_path):
    d, _ = tiny_drafter("qwen3", markov_head_type="rnn")
    c = d.config
    cfg = _qwen3_dims(c) | {"architectures": ["DSparkDraftModel"], "block_size": c.block_size,
                            "num_target_layers": 4, "tie_word_embeddings": False,
                            "dflash_config": {"mask_token_id": c.mask_token_id,
                                              "target_layer_ids": c.target_layer_ids,
                                              "projector_type": "dspark", "markov_rank": c.markov_rank,
                                              "markov_head_type": "rnn", "enable_confidence_head": True,
                                              "confidence_head_with_markov": True}}
    _write(tmp_path / "src", cfg, {"model." + k: v for k, v in d.state_dict().items()})
    info = import_checkpoint(tmp_path / "src", tmp_path / "out", include_embeddings=True)
    assert info.has_embeddings and info.config.markov_head_type == "rnn"
    _assert_same(d, load_checkpoint(tmp_path / "out"))


def test_import_deepspec_release_with_prefix(tmp_path):
    d, t = tiny_drafter("llama")
    _write(tmp_path / "src", d.config.to_deepspec_dict(),
           {"_orig_mod." + k: v for k, v in d.state_dict().items()})
    info = import_checkpoint(tmp_path / "src", tmp_path / "out", target_config=t.config)
    assert info.files.keys() == {"config.json", "model.safetensors"}
    _assert_same(d, load_checkpoint(tmp_path / "out", *_emb(t)))


@pytest.mark.parametrize("over,where", [
    ({"sample_from_anchor": False}, "sample_from_anchor"),
    ({"draft_vocab_size": 128}, "draft_vocab_size"),
    ({"speculators_model_type": "eagle3"}, "speculators_model_type"),
    ({"markov_rank": 0}, "markov_rank"),
])
def test_import_speculators_refusals(tmp_path, over, where):
    d, t = tiny_drafter()
    cfg, sd = _speculators(d, **over)
    _write(tmp_path / "src", cfg, sd)
    with pytest.raises(CheckpointError) as e:
        import_checkpoint(tmp_path / "src", tmp_path / "out", target_config=t.config)
    assert e.value.where == where
    assert not (tmp_path / "out" / "model.safetensors").exists()


def test_import_refuses_unknown_layouts_and_tensors(tmp_path):
    d, t = tiny_drafter()
    _write(tmp_path / "a", {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, {})
    with pytest.raises(CheckpointError) as e:
        import_checkpoint(tmp_path / "a", tmp_path / "out")
    assert e.value.code == "unsupported_layout" and e.value.where == "architectures"
    cfg, sd = _speculators(d)
    sd["markov_head.mystery.weight"] = torch.zeros(3)
    _write(tmp_path / "b", cfg, sd)
    with pytest.raises(CheckpointError) as e:
        import_checkpoint(tmp_path / "b", tmp_path / "out", target_config=t.config)
    assert e.value.where == "markov_head.mystery.weight" and "speculators" in str(e.value)
    cfg, _ = _speculators(d)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "c" / "pytorch_model.bin").write_bytes(b"\x80\x04.")
    with pytest.raises(CheckpointError) as e:
        import_checkpoint(tmp_path / "c", tmp_path / "out", target_config=t.config)
    assert e.value.where == "pytorch_model.bin"
    cfg, sd = _speculators(d)
    _write(tmp_path / "d", cfg, sd)
    with pytest.raises(CheckpointError) as e:  # no layer count without the target
        import_checkpoint(tmp_path / "d", tmp_path / "out")
    assert e.value.where == "num_target_layers"
