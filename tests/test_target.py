"""drafters.target: hook features vs output_hidden_states, KV-cached steps, loading and its errors."""

from __future__ import annotations

import json
import time

import pytest
import torch
import transformers

from drafters.errors import TracedraftError
from drafters.target import Target, TargetLoadError, crop_cache, load_target
from drafters.target_cache import build_once


def tiny_target(seed: int = 0, layers: int = 4) -> Target:
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=layers, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=256, max_position_embeddings=512,
    )
    return Target(transformers.LlamaForCausalLM(cfg), tokenizer=None, name="tiny")


def test_attributes_and_frozen():
    t = tiny_target()
    assert (t.num_layers, t.hidden_size, t.vocab_size) == (4, 64, 256)
    assert t.dtype == torch.float32 and t.device.type == "cpu"
    assert t.embed_weight.shape == t.lm_head_weight.shape == (256, 64)
    assert not any(p.requires_grad for p in t.model.parameters())
    assert not t.model.training
    assert t.info()["num_layers"] == 4


@pytest.mark.parametrize("layer_ids", [[0, 2], [-1, 1], [1]])
def test_features_match_output_hidden_states(layer_ids):
    t = tiny_target()
    ids = torch.randint(0, 256, (2, 11), generator=torch.Generator().manual_seed(1))
    before = [len(layer._forward_hooks) for layer in t._layers]
    aux, last = t.features(ids, layer_ids)
    assert [len(layer._forward_hooks) for layer in t._layers] == before  # our hooks are removed
    with torch.no_grad():
        hs = t.model(ids, output_hidden_states=True).hidden_states
    assert aux.shape == (2, 11, 64 * len(layer_ids))
    ref = torch.cat([hs[l + 1] for l in layer_ids], dim=-1)  # layer-output convention, docs/dspark.md 1.2
    torch.testing.assert_close(aux, ref, rtol=0, atol=0)
    torch.testing.assert_close(last, hs[-1], rtol=0, atol=0)  # post-norm final state


def test_bad_layer_ids():
    t = tiny_target()
    ids = torch.zeros(1, 3, dtype=torch.long)
    for bad in ([3], [2, 1], [-2], []):
        with pytest.raises(TracedraftError) as e:
            t.features(ids, bad)
        assert e.value.code == "bad_layer_ids"


def test_step_matches_full_forward_and_crop():
    t = tiny_target()
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, 256, (1, 15), generator=g)
    with torch.no_grad():
        full = t.model(ids, output_hidden_states=True)
    s1 = t.step(ids[:, :9], None, [0, 2])
    assert s1.logits.dtype == torch.float32 and s1.logits.shape == (1, 9, 256)
    s2 = t.step(ids[:, 9:], s1.past_key_values, [0, 2])
    logits = torch.cat([s1.logits, s2.logits], dim=1)
    torch.testing.assert_close(logits, full.logits.float(), rtol=1e-5, atol=1e-5)
    aux = torch.cat([s1.aux, s2.aux], dim=1)
    ref = torch.cat([full.hidden_states[1], full.hidden_states[3]], dim=-1)
    torch.testing.assert_close(aux, ref, rtol=1e-5, atol=1e-5)
    # Roll back a "rejected" suffix and re-verify different tokens: equals a fresh full forward.
    cache = s2.past_key_values
    crop_cache(cache, 11)
    assert cache.get_seq_length() == 11
    alt = torch.tensor([[7, 8, 9]])
    s3 = t.step(alt, cache, None)
    assert s3.aux is None
    with torch.no_grad():
        ref2 = t.model(torch.cat([ids[:, :11], alt], dim=1)).logits[:, 11:].float()
    torch.testing.assert_close(s3.logits, ref2, rtol=1e-5, atol=1e-5)


def test_load_local_dir_and_errors(tmp_path):
    t = tiny_target()
    d = tmp_path / "tinydir"
    t.model.save_pretrained(d)
    loaded = load_target(str(d))
    assert loaded.num_layers == 4 and loaded.name == "tinydir" and loaded.dtype == torch.float32
    assert len(loaded.source_sha256) == 64
    torch.testing.assert_close(loaded.embed_weight, t.embed_weight)
    with pytest.raises(TargetLoadError) as e:
        load_target("no-such-org/no-such-model-xyz", cache_dir=tmp_path)
    assert e.value.code == "target_not_found"
    assert "HF cache" in e.value.message and "local directory" in e.value.message
    with pytest.raises(TargetLoadError) as e:
        load_target(str(tmp_path / "missing.gguf"), cache_dir=tmp_path)
    assert e.value.code == "target_not_found"
    (tmp_path / "empty").mkdir()
    with pytest.raises(TargetLoadError) as e:
        load_target(str(tmp_path / "empty"))
    assert e.value.code == "target_not_found" and "config.json" in e.value.message
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file")
    with pytest.raises(TargetLoadError) as e:
        load_target(str(bad), cache_dir=tmp_path)
    assert e.value.code == "target_load_failed"
    assert not list((tmp_path / "targets").glob(".*tmp*"))  # no half-written cache left


def test_build_once_writes_the_marker_last_and_builds_once(tmp_path):
    dest = tmp_path / "targets" / "abc"
    built = []

    def build(tmp):
        built.append(tmp)
        assert tmp.is_dir() and tmp != dest and not dest.exists()  # written beside dest, not in place
        (tmp / "weights.bin").write_text("w")
        return {"source": "x", "source_sha256": "abc"}

    assert build_once(dest, build) == dest and build_once(dest, build) == dest
    assert len(built) == 1  # the second call found the marker
    meta = json.loads((dest / "tracedraft_target.json").read_text())
    assert (meta["source"], meta["source_sha256"]) == ("x", "abc")
    assert meta["converted_at"].endswith("Z") and meta["conversion_seconds"] >= 0
    assert (dest / "weights.bin").read_text() == "w"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["abc"]  # no temporary directory left


def test_build_once_leaves_nothing_when_the_build_fails(tmp_path):
    dest = tmp_path / "targets" / "abc"

    def build(tmp):
        (tmp / "half.bin").write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        build_once(dest, build)
    assert list(dest.parent.iterdir()) == []


def test_build_once_keeps_the_copy_another_process_finished_first(tmp_path):
    dest = tmp_path / "targets" / "abc"

    def build(tmp):
        dest.mkdir()  # the other process renames its complete copy in while this one builds
        (dest / "tracedraft_target.json").write_text('{"by": "other"}')
        return {"by": "this"}

    assert build_once(dest, build) == dest
    assert json.loads((dest / "tracedraft_target.json").read_text()) == {"by": "other"}
    assert sorted(p.name for p in dest.parent.iterdir()) == ["abc"]


@pytest.mark.slow
def test_smollm2_gguf_conversion_and_generate(tmp_path):
    t0 = time.perf_counter()
    t = load_target("smollm2-135m-instruct", cache_dir=tmp_path)
    first = time.perf_counter() - t0
    assert (t.num_layers, t.hidden_size, t.vocab_size) == (30, 576, 49152)
    assert len(t.source_sha256) == 64 and t.revision.startswith("gguf:")
    conv = tmp_path / "targets" / t.source_sha256
    files = {p.name for p in conv.iterdir()}
    assert "model.safetensors" in files and "tracedraft_target.json" in files
    assert not any(f.endswith((".bin", ".pt", ".pkl")) for f in files)
    meta = json.loads((conv / "tracedraft_target.json").read_text())
    print(f"SmolLM2 GGUF conversion {meta['conversion_seconds']} s, first load total {first:.1f} s")
    t1 = time.perf_counter()
    t2 = load_target("smollm2-135m-instruct", cache_dir=tmp_path)  # from the cache now
    print(f"cached load {time.perf_counter() - t1:.1f} s")
    torch.testing.assert_close(t2.embed_weight, t.embed_weight)
    tok = t.tokenizer
    msgs = [{"role": "user", "content": "What is the capital of France?"}]
    ids = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    ids = ids["input_ids"]
    out = t.model.generate(ids, max_new_tokens=16, do_sample=False)
    text = tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
    print("generated:", text)
    assert "Paris" in text
    # Greedy through step() with the KV cache gives the same tokens as generate().
    s = t.step(ids, None, [1, 8])
    toks = []
    for _ in range(8):
        nxt = s.logits[0, -1].argmax().view(1, 1)
        toks.append(int(nxt))
        s = t.step(nxt, s.past_key_values, [1, 8])
    assert toks == out[0, ids.shape[1]: ids.shape[1] + 8].tolist()


def test_a_tokenizer_shipping_its_own_code_needs_trust_remote_code(tmp_path, tiny_target_dir):
    """A target whose repository ships its tokenizer as Python code (Kimi-K2's tiktoken tokenizer) loads only
    with trust_remote_code, and without it the error says so with a code (it used to load as "no
    tokenizer" and fail later at rendering)."""
    import shutil

    from drafters.target import load_tokenizer

    d = tmp_path / "remote-code-target"
    shutil.copytree(tiny_target_dir, d)
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg["tokenizer_class"] = "OwnTokenizerFast"
    cfg["auto_map"] = {"AutoTokenizer": [None, "tokenization_own.OwnTokenizerFast"]}
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    (d / "tokenization_own.py").write_text(
        "from transformers import PreTrainedTokenizerFast\n\n\n"
        "class OwnTokenizerFast(PreTrainedTokenizerFast):\n    ran_repository_code = True\n")
    for load in (lambda **kw: load_tokenizer(str(d), **kw), lambda **kw: load_target(str(d), **kw)):
        with pytest.raises(TargetLoadError) as e:
            load()
        assert e.value.code == "target_needs_remote_code" and "trust_remote_code" in e.value.message
    tok = load_tokenizer(str(d), trust_remote_code=True)
    assert type(tok).__name__ == "OwnTokenizerFast" and tok.ran_repository_code
    target = load_target(str(d), trust_remote_code=True)
    assert type(target.tokenizer).__name__ == "OwnTokenizerFast" and target.num_layers == 8
