"""DeepSpec-native export/validate/import round trip and the validator's rejections."""

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from drafters.dspark.checkpoint import (
    CheckpointError,
    expected_tensor_shapes,
    load_checkpoint,
    save_checkpoint,
    sha256_file,
    validate_checkpoint,
)
from tests.dspark._tiny import tiny_drafter


def _weights(t):
    return t.get_input_embeddings().weight, t.get_output_embeddings().weight


@pytest.mark.parametrize("head,dtype,emb", [("vanilla", torch.float32, False), ("gated", torch.bfloat16, True),
                                            ("rnn", torch.float32, True)])
def test_roundtrip_bit_exact(tmp_path, head, dtype, emb):
    d, t = tiny_drafter("qwen3", markov_head_type=head)
    d = d.to(dtype)
    files = save_checkpoint(d, tmp_path, include_embeddings=emb)
    assert set(files) == {"config.json", "model.safetensors"}
    assert files["model.safetensors"] == sha256_file(tmp_path / "model.safetensors")
    names = set(load_file(str(tmp_path / "model.safetensors")))
    assert names == set(expected_tensor_shapes(d.config)) | ({"embed_tokens.weight", "lm_head.weight"} if emb else set())
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["architectures"] == ["Qwen3DSparkModel"] and cfg["markov_head_type"] == head
    info = validate_checkpoint(tmp_path, target_config=t.config)
    assert info.config == d.config and info.has_embeddings == emb
    e, l = _weights(t)
    d2 = load_checkpoint(tmp_path, None if emb else e, None if emb else l, target_config=t.config)
    sd1, sd2 = d.state_dict(), d2.state_dict()
    assert set(sd1) == set(sd2)
    for k in sd1:
        assert sd1[k].dtype == sd2[k].dtype and torch.equal(sd1[k], sd2[k]), k
    # re-export gives identical bytes
    assert save_checkpoint(d2, tmp_path / "again", include_embeddings=emb) == files


def test_missing_embeddings_refused(tmp_path):
    d, _ = tiny_drafter()
    save_checkpoint(d, tmp_path)
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(tmp_path)
    assert e.value.code == "missing_embeddings" and e.value.where == "embed_tokens.weight"


def _saved(tmp_path, **kw):
    d, t = tiny_drafter(**kw)
    save_checkpoint(d, tmp_path)
    return d, t


def _edit_tensors(path, fn):
    sd = load_file(str(path / "model.safetensors"))
    fn(sd)
    save_file(sd, str(path / "model.safetensors"))


def _edit_config(path, fn):
    c = json.loads((path / "config.json").read_text())
    fn(c)
    (path / "config.json").write_text(json.dumps(c))


TENSOR_CASES = {
    "missing": (lambda sd: sd.pop("layers.1.mlp.up_proj.weight"), "missing_tensor", "layers.1.mlp.up_proj.weight"),
    "unknown": (lambda sd: sd.__setitem__("markov_head.extra.weight", torch.zeros(2)), "unknown_tensor",
                "markov_head.extra.weight"),
    "prefixed": (lambda sd: sd.__setitem__("model.fc.weight", sd.pop("fc.weight")), "prefixed_name",
                 "model.fc.weight"),
    "shape": (lambda sd: sd.__setitem__("fc.weight", torch.zeros(64, 64)), "bad_shape", "fc.weight"),
    "dtype": (lambda sd: sd.__setitem__("norm.weight", torch.zeros(64, dtype=torch.int32)), "bad_dtype",
              "norm.weight"),
    "mixed": (lambda sd: sd.__setitem__("norm.weight", sd["norm.weight"].half()), "mixed_dtype", None),
    "nan": (lambda sd: sd["hidden_norm.weight"].__setitem__(3, float("nan")), "non_finite", "hidden_norm.weight"),
    "conf_shape": (lambda sd: sd.__setitem__("confidence_head.proj.weight", torch.zeros(1, 64)), "bad_shape",
                   "confidence_head.proj.weight"),
}


@pytest.mark.parametrize("case", list(TENSOR_CASES))
def test_validator_rejects_tensor_cases(tmp_path, case):
    _saved(tmp_path)
    fn, code, where = TENSOR_CASES[case]
    _edit_tensors(tmp_path, fn)
    with pytest.raises(CheckpointError) as e:
        validate_checkpoint(tmp_path)
    assert e.value.code == code
    if where:
        assert e.value.where == where and where in str(e.value)
    else:
        assert e.value.where in expected_tensor_shapes(tiny_drafter()[0].config)


CONFIG_CASES = {
    "mask_oob": (lambda c: c.__setitem__("mask_token_id", 256), "mask_token_id"),
    "rank0": (lambda c: c.__setitem__("markov_rank", 0), "markov_rank"),
    "ids_order": (lambda c: c.__setitem__("target_layer_ids", [1, 0]), "target_layer_ids"),
    "ids_last": (lambda c: c.__setitem__("target_layer_ids", [0, 3]), "target_layer_ids"),
    "ids_oob": (lambda c: c.__setitem__("target_layer_ids", [0, 9]), "target_layer_ids"),
    "arch": (lambda c: c.__setitem__("architectures", ["DSparkSpeculator"]), "architectures"),
    "model_type": (lambda c: c.__setitem__("model_type", "llama"), "model_type"),
    "speculators": (lambda c: c.__setitem__("speculators_model_type", "dspark"), "speculators_model_type"),
    "missing_block": (lambda c: c.pop("block_size"), "block_size"),
    "missing_ids": (lambda c: c.pop("target_layer_ids"), "target_layer_ids"),
    "tied": (lambda c: c.__setitem__("tie_word_embeddings", True), "tie_word_embeddings"),
    "head_type": (lambda c: c.__setitem__("markov_head_type", "lstm"), "markov_head_type"),
    "layer_types": (lambda c: c.__setitem__("layer_types", ["full_attention"]), "layer_types"),
}


@pytest.mark.parametrize("case", list(CONFIG_CASES))
def test_validator_rejects_config_cases(tmp_path, case):
    _saved(tmp_path)
    fn, where = CONFIG_CASES[case]
    _edit_config(tmp_path, fn)
    with pytest.raises(CheckpointError) as e:
        validate_checkpoint(tmp_path)
    assert e.value.where == where and where in str(e.value)


def test_validator_rejects_shape_after_config_change(tmp_path):
    _saved(tmp_path)
    _edit_config(tmp_path, lambda c: c.__setitem__("markov_rank", 8))
    with pytest.raises(CheckpointError) as e:
        validate_checkpoint(tmp_path)
    assert e.value.code == "bad_shape" and e.value.where == "confidence_head.proj.weight"  # first in name order


def test_validator_rejects_pickle_and_missing_files(tmp_path):
    _saved(tmp_path)
    (tmp_path / "training_state.rank0.pt").write_bytes(b"\x80\x04K\x01.")
    with pytest.raises(CheckpointError) as e:
        validate_checkpoint(tmp_path)
    assert e.value.code == "pickle_file" and e.value.where == "training_state.rank0.pt"
    (tmp_path / "training_state.rank0.pt").unlink()
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(CheckpointError) as e:
        validate_checkpoint(tmp_path)
    assert e.value.where == "model.safetensors"
    _saved(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError) as e:
        validate_checkpoint(tmp_path)
    assert e.value.where == "config.json"


def test_validator_checks_target(tmp_path):
    _, t = _saved(tmp_path)
    validate_checkpoint(tmp_path, target_config=t.config)
    other = tiny_drafter("llama", num_hidden_layers=1)[1].config
    other.num_hidden_layers = 6
    with pytest.raises(CheckpointError) as e:
        validate_checkpoint(tmp_path, target_config=other)
    assert e.value.code == "target_mismatch" and e.value.where == "num_target_layers"
