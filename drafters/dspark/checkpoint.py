"""DSpark checkpoints: the DeepSpec-native layout that SGLang, vLLM and llama.cpp load (docs/serving.md 2),
its validator, and importers for the vLLM speculators and SGLang SpecForge layouts (docs/dspark.md 7).

Layout: a directory with ``config.json`` (flat Qwen3-style, ``architectures: ["Qwen3DSparkModel"]``) and
``model.safetensors`` (no ``model.`` prefix; ``embed_tokens.weight`` / ``lm_head.weight`` optional).
Never pickle: weights are safetensors only; the validator rejects any pickle-format file in the directory.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file
from torch import Tensor

from drafters.checksums import sha256_file
from drafters.dspark.config import (
    ARCHITECTURE,
    MARKOV_HEAD_TYPES,
    ConfigError,
    DSparkConfig,
)
from drafters.dspark.model import DSparkDrafter
from drafters.errors import TracedraftError

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
OPTIONAL_TENSORS = ("embed_tokens.weight", "lm_head.weight")
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".npy", ".joblib")
ALLOWED_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}
REQUIRED_CONFIG_KEYS = (
    "architectures", "model_type", "hidden_size", "intermediate_size", "num_attention_heads",
    "num_key_value_heads", "head_dim", "rms_norm_eps", "max_position_embeddings", "vocab_size",
    "num_hidden_layers", "num_target_layers", "block_size", "layer_types", "tie_word_embeddings",
    "mask_token_id", "target_layer_ids", "enable_confidence_head", "confidence_head_with_markov",
    "markov_rank", "markov_head_type", "hidden_act",
)


class CheckpointError(TracedraftError):
    """A checkpoint that engines would misload or that we cannot map; ``where`` names the tensor, config
    field or file at fault."""


@dataclass
class CheckpointInfo:
    """What `validate_checkpoint` found.

    path: the directory; config: the parsed DSparkConfig; files: {file name: sha256 hex} of every file in
    the directory; tensors: {name: (shape tuple, safetensors dtype str)}; has_embeddings: whether
    embed_tokens/lm_head are included; num_parameters: total elements of the trainable tensors.
    """

    path: Path
    config: DSparkConfig
    files: dict[str, str]
    tensors: dict[str, tuple[tuple[int, ...], str]] = field(default_factory=dict)
    has_embeddings: bool = False
    num_parameters: int = 0


def expected_tensor_shapes(cfg: DSparkConfig) -> dict[str, tuple[int, ...]]:
    """Required tensor names -> shapes of docs/serving.md 2 for a config (embed/lm_head excluded)."""
    H, V, r, hd = cfg.hidden_size, cfg.vocab_size, cfg.markov_rank, cfg.head_dim
    nh, nkv, I = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.intermediate_size
    out: dict[str, tuple[int, ...]] = {
        "fc.weight": (H, cfg.num_aux_layers * H),
        "hidden_norm.weight": (H,),
        "norm.weight": (H,),
        "markov_head.markov_w1.weight": (V, r),
        "markov_head.markov_w2.weight": (V, r),
    }
    for i in range(cfg.num_hidden_layers):
        p = f"layers.{i}."
        out.update({
            p + "self_attn.q_proj.weight": (nh * hd, H),
            p + "self_attn.k_proj.weight": (nkv * hd, H),
            p + "self_attn.v_proj.weight": (nkv * hd, H),
            p + "self_attn.o_proj.weight": (H, nh * hd),
            p + "self_attn.q_norm.weight": (hd,),
            p + "self_attn.k_norm.weight": (hd,),
            p + "mlp.gate_proj.weight": (I, H),
            p + "mlp.up_proj.weight": (I, H),
            p + "mlp.down_proj.weight": (H, I),
            p + "input_layernorm.weight": (H,),
            p + "post_attention_layernorm.weight": (H,),
        })
    if cfg.markov_head_type == "gated":
        out["markov_head.gate_proj.weight"] = (r, H + r)
        out["markov_head.gate_proj.bias"] = (r,)
    elif cfg.markov_head_type == "rnn":
        out["markov_head.joint_proj.weight"] = (3 * r, 2 * r + H)
        out["markov_head.joint_proj.bias"] = (3 * r,)
    if cfg.enable_confidence_head:
        out["confidence_head.proj.weight"] = (1, H + (r if cfg.confidence_head_with_markov else 0))
        out["confidence_head.proj.bias"] = (1,)
    return out


# ----------------------------------------------------------------------------------------------- save


def _write_dir(out_dir: Path, config_dict: dict[str, Any], tensors: dict[str, Tensor]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp_w = out_dir / (WEIGHTS_NAME + ".tmp")
    tmp_c = out_dir / (CONFIG_NAME + ".tmp")
    # clone: safetensors refuses tensors that share storage (tied target embed/head)
    save_file({k: v.detach().to("cpu").contiguous().clone() for k, v in tensors.items()}, str(tmp_w),
              metadata={"format": "pt"})
    tmp_c.write_text(json.dumps(config_dict, indent=2) + "\n")
    os.replace(tmp_w, out_dir / WEIGHTS_NAME)
    os.replace(tmp_c, out_dir / CONFIG_NAME)


def save_checkpoint(drafter: DSparkDrafter, out_dir: str | Path, include_embeddings: bool = False
                    ) -> dict[str, str]:
    """Export the drafter in the DeepSpec-native layout (docs/serving.md 2) and validate the result.

    Writes ``config.json`` and ``model.safetensors`` (tensor names = state_dict names, no prefix; frozen
    ``embed_tokens``/``lm_head`` only when ``include_embeddings``), nothing else. A LoRA-wrapped drafter
    must be merged first (`drafters.dspark.lora.merge_lora`).
    Returns {file name: sha256} of every file in ``out_dir``. Raises CheckpointError if the export does
    not validate (a bug: it would be served wrong).
    """
    out_dir = Path(out_dir)
    sd = drafter.state_dict()
    bad = [k for k in sd if "lora_" in k or "base_layer" in k]
    if bad:
        raise CheckpointError("unmerged_lora", "merge the LoRA adapters before export", bad[0])
    tensors = {k: v for k, v in sd.items() if include_embeddings or k not in OPTIONAL_TENSORS}
    cfg = drafter.config.to_deepspec_dict()
    cfg["torch_dtype"] = str(drafter.fc.weight.dtype).removeprefix("torch.")  # engines' "auto" dtype reads it
    _write_dir(out_dir, cfg, tensors)
    return validate_checkpoint(out_dir).files


# ----------------------------------------------------------------------------------------------- validate


def _fail(code: str, msg: str, where: str) -> CheckpointError:
    return CheckpointError(code, msg, where)


def _check_config_dict(d: dict[str, Any], target_config: Any = None) -> DSparkConfig:
    arch = d.get("architectures")
    if arch != [ARCHITECTURE]:
        raise _fail("bad_architecture", f"architectures must be [{ARCHITECTURE!r}], got {arch!r}",
                    "architectures")
    if d.get("model_type") != "qwen3":
        raise _fail("bad_model_type", f"model_type must be 'qwen3', got {d.get('model_type')!r}", "model_type")
    if "speculators_model_type" in d:
        raise _fail("speculators_key", "speculators_model_type must not be set in a DeepSpec-native "
                    "config (SGLang would switch slot conventions)", "speculators_model_type")
    for k in REQUIRED_CONFIG_KEYS:
        if k not in d:
            raise _fail("missing_field", f"config.json lacks required key {k!r}", k)
    if "rope_theta" not in d and "rope_parameters" not in d:
        raise _fail("missing_field", "config.json lacks 'rope_theta'", "rope_theta")
    if d["tie_word_embeddings"] is not False:
        raise _fail("bad_value", "tie_word_embeddings must be false", "tie_word_embeddings")
    if not isinstance(d["markov_rank"], int) or d["markov_rank"] <= 0:
        raise _fail("bad_value", f"markov_rank must be > 0, got {d['markov_rank']!r}", "markov_rank")
    if d["markov_head_type"] not in MARKOV_HEAD_TYPES:
        raise _fail("bad_value", f"markov_head_type must be one of {MARKOV_HEAD_TYPES}", "markov_head_type")
    mt, V = d["mask_token_id"], d["vocab_size"]
    if not isinstance(mt, int) or not 0 <= mt < V:
        raise _fail("bad_value", f"mask_token_id {mt!r} must be in [0, vocab_size={V})", "mask_token_id")
    lt = d["layer_types"]
    if not isinstance(lt, list) or len(lt) != d["num_hidden_layers"]:
        raise _fail("bad_value", f"layer_types must list num_hidden_layers={d['num_hidden_layers']} entries",
                    "layer_types")
    if any(t not in ("full_attention", "sliding_attention") for t in lt) or len(set(lt)) > 1:
        raise _fail("bad_value", f"layer_types must be all full_attention or all sliding_attention, got {lt}",
                    "layer_types")
    if d.get("hidden_act") != "silu":
        raise _fail("bad_value", f"hidden_act must be 'silu', got {d.get('hidden_act')!r}", "hidden_act")
    try:
        cfg = DSparkConfig.from_deepspec_dict(d)
    except ConfigError as e:
        raise _fail(e.code, e.message, e.where or "config.json") from None
    if target_config is not None:
        tc = target_config.get_text_config() if hasattr(target_config, "get_text_config") else target_config
        for ours, theirs in (("num_target_layers", "num_hidden_layers"), ("hidden_size", "hidden_size"),
                             ("vocab_size", "vocab_size")):
            tv = getattr(tc, theirs, None)
            if tv is not None and getattr(cfg, ours) != tv:
                raise _fail("target_mismatch", f"{ours}={getattr(cfg, ours)} but the target has "
                            f"{theirs}={tv}", ours)
    return cfg


def validate_checkpoint(path: str | Path, target_config: Any = None, check_finite: bool = True
                        ) -> CheckpointInfo:
    """Check a DeepSpec-native checkpoint directory the way an engine would read it (docs/serving.md 2).

    Checks: no pickle files; config.json keys and values (architectures, model_type, no
    speculators_model_type, required keys, mask_token_id < vocab_size, markov_rank > 0, target_layer_ids
    strictly increasing in [-1, L-2] of an L-layer target, tie_word_embeddings false, layer_types); with
    ``target_config`` (HF config) also layer count, hidden size and vocab against the target; every tensor
    name (missing and unknown ones: SGLang silently skips unknown names), shape, dtype (F32/BF16/F16, one
    dtype for all) and, if ``check_finite``, no NaN/inf.
    Returns CheckpointInfo with the sha256 of every file. Raises CheckpointError(code, message, where=
    tensor, field or file name).
    """
    path = Path(path)
    if not path.is_dir():
        raise _fail("not_found", f"checkpoint directory {path} does not exist", str(path))
    for f in sorted(path.iterdir()):
        if f.is_file() and (f.suffix.lower() in PICKLE_SUFFIXES):
            raise _fail("pickle_file", f"{f.name} is a pickle-format file; checkpoints hold safetensors only",
                        f.name)
    cpath, wpath = path / CONFIG_NAME, path / WEIGHTS_NAME
    if not cpath.is_file():
        raise _fail("missing_file", "config.json is missing", CONFIG_NAME)
    if not wpath.is_file():
        raise _fail("missing_file", "model.safetensors is missing", WEIGHTS_NAME)
    try:
        d = json.loads(cpath.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise _fail("bad_config", f"config.json is not valid JSON: {e}", CONFIG_NAME) from None
    if not isinstance(d, dict):
        raise _fail("bad_config", "config.json must hold an object", CONFIG_NAME)
    cfg = _check_config_dict(d, target_config)
    expected = expected_tensor_shapes(cfg)
    optional = {"embed_tokens.weight": (cfg.vocab_size, cfg.hidden_size),
                "lm_head.weight": (cfg.vocab_size, cfg.hidden_size)}
    tensors: dict[str, tuple[tuple[int, ...], str]] = {}
    try:
        with safe_open(str(wpath), framework="pt") as f:
            names = list(f.keys())
            for n in names:
                sl = f.get_slice(n)
                tensors[n] = (tuple(sl.get_shape()), sl.get_dtype())
            for n in sorted(names):
                if n.startswith("model."):
                    raise _fail("prefixed_name", f"tensor {n!r} has a 'model.' prefix engines do not expect", n)
                if n not in expected and n not in optional:
                    raise _fail("unknown_tensor", f"unknown tensor {n!r} (an engine would silently skip it)", n)
            for n, shape in expected.items():
                if n not in tensors:
                    raise _fail("missing_tensor", f"required tensor {n!r} is missing", n)
            dtypes = set()
            for n, (shape, dt) in sorted(tensors.items()):
                want = expected.get(n) or optional[n]
                if shape != tuple(want):
                    raise _fail("bad_shape", f"tensor {n!r} has shape {list(shape)}, expected {list(want)}", n)
                if dt not in ALLOWED_DTYPES:
                    raise _fail("bad_dtype", f"tensor {n!r} has dtype {dt}, expected one of "
                                f"{sorted(ALLOWED_DTYPES)}", n)
                if n in expected:
                    dtypes.add(dt)
            if len(dtypes) > 1:
                first = {dt: n for n, (_, dt) in tensors.items() if n in expected}
                raise _fail("mixed_dtype", f"tensors mix dtypes {sorted(dtypes)}", min(first.values()))
            if check_finite:
                for n in names:
                    t = f.get_tensor(n)
                    if not torch.isfinite(t).all():
                        raise _fail("non_finite", f"tensor {n!r} holds NaN or inf", n)
    except CheckpointError:
        raise
    except (OSError, ValueError, RuntimeError, SafetensorError) as e:  # corrupt header, truncated file
        raise _fail("bad_weights", f"cannot read model.safetensors: {e}", WEIGHTS_NAME) from None
    files = {f.name: sha256_file(f) for f in sorted(path.iterdir()) if f.is_file()}
    return CheckpointInfo(
        path=path, config=cfg, files=files, tensors=tensors,
        has_embeddings=all(n in tensors for n in OPTIONAL_TENSORS),
        num_parameters=sum(int(torch.Size(s).numel()) for n, (s, _) in tensors.items() if n in expected),
    )


# ----------------------------------------------------------------------------------------------- load


def load_checkpoint(path: str | Path, embed_weight: Tensor | None = None, lm_head_weight: Tensor | None = None,
                    *, target_config: Any = None, device: str | torch.device = "cpu",
                    dtype: torch.dtype | None = None) -> DSparkDrafter:
    """Validate and load a DeepSpec-native checkpoint (warm start: weights only).

    embed_weight / lm_head_weight: [V, d] from the target (preferred; docs/dspark.md 8.1). When None, the
    checkpoint's copies are used, and CheckpointError(code="missing_embeddings") is raised if it has none.
    When both exist and differ, the target's are used with a warning. Parameters keep the checkpoint's dtype
    unless ``dtype`` is given; tensors are loaded bit-exactly.
    """
    info = validate_checkpoint(path, target_config)
    sd = load_file(str(Path(path) / WEIGHTS_NAME), device="cpu")
    ck_dtype = next(sd[n].dtype for n in expected_tensor_shapes(info.config))
    dtype = dtype or ck_dtype
    weights = {}
    for name, given in (("embed_tokens.weight", embed_weight), ("lm_head.weight", lm_head_weight)):
        ck = sd.pop(name, None)
        if given is None:
            if ck is None:
                raise CheckpointError("missing_embeddings", f"the checkpoint has no {name}; pass the target's",
                                      name)
            given = ck
        elif ck is not None and (ck.shape != given.shape or not torch.equal(ck.to(given.dtype), given.cpu())):
            warnings.warn(f"{name} of the checkpoint differs from the target's; using the target's", stacklevel=2)
        weights[name] = given
    drafter = DSparkDrafter(info.config, weights["embed_tokens.weight"], weights["lm_head.weight"])
    drafter.to(dtype=dtype)
    missing, unexpected = drafter.load_state_dict(sd, strict=False)
    missing = [m for m in missing if m not in OPTIONAL_TENSORS]
    if missing or unexpected:  # the validator should have caught this
        raise CheckpointError("state_dict_mismatch", f"missing {missing}, unexpected {unexpected}",
                              (missing or unexpected)[0])
    return drafter.to(device)


# ----------------------------------------------------------------------------------------------- import

_DROP_TENSORS = ("verifier_lm_head.weight", "verifier_norm.weight", "t2d", "d2t")
_STRIP_PREFIXES = ("_orig_mod.", "module.", "model.")
_DSPARK_CONFIG_KEYS = ("mask_token_id", "target_layer_ids", "markov_rank", "markov_head_type",
                       "enable_confidence_head", "confidence_head_with_markov", "block_size", "num_target_layers",
                       "num_anchors", "loss_decay_gamma", "ce_loss_alpha", "l1_loss_alpha",
                       "confidence_head_alpha")
_QWEN3_DIM_KEYS = ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "head_dim",
                   "rms_norm_eps", "rope_theta", "rope_scaling", "rope_parameters", "max_position_embeddings",
                   "vocab_size", "hidden_act", "num_hidden_layers", "layer_types", "sliding_window",
                   "use_sliding_window")


def detect_layout(config: dict[str, Any]) -> str:
    """Which DSpark checkpoint layout a config.json describes: "deepspec" (ours / DeepSpec releases),
    "speculators" (vLLM speculators, ``speculators_model_type: dspark``) or "specforge" (SGLang SpecForge,
    DSpark keys in ``dflash_config``). Raises CheckpointError(code="unsupported_layout") with the reason."""
    arch = config.get("architectures") or []
    smt = config.get("speculators_model_type")
    if smt is not None:
        if smt != "dspark":
            raise CheckpointError("unsupported_layout", f"speculators model type {smt!r} is not a DSpark drafter "
                                  "(only 'dspark' maps to the DeepSpec layout)", "speculators_model_type")
        return "speculators"
    if ARCHITECTURE in arch:
        return "deepspec"
    dfc = config.get("dflash_config")
    if isinstance(dfc, dict) and ("DSparkDraftModel" in arch or dfc.get("projector_type") == "dspark"
                                  or dfc.get("markov_rank")):
        return "specforge"
    if isinstance(dfc, dict):
        raise CheckpointError("unsupported_layout", "a DFlash drafter without Markov head (markov_rank 0) is not "
                              "a DSpark drafter; engines require markov_rank > 0", "dflash_config")
    raise CheckpointError("unsupported_layout", f"unrecognised drafter layout (architectures={arch!r}); "
                          "known: Qwen3DSparkModel, speculators 'dspark', SpecForge DSparkDraftModel",
                          "architectures")


def _read_src_tensors(src: Path) -> dict[str, Tensor]:
    files = sorted(src.glob("*.safetensors"))
    if not files:
        pickles = [f.name for f in src.iterdir() if f.suffix.lower() in PICKLE_SUFFIXES]
        raise CheckpointError("unsupported_layout", "no safetensors weights" + (
            f"; pickle weights ({pickles[0]}) are never loaded, convert them to safetensors first" if pickles
            else ""), pickles[0] if pickles else WEIGHTS_NAME)
    out: dict[str, Tensor] = {}
    for f in files:
        out.update(load_file(str(f)))
    return out


def _strip(name: str) -> str:
    changed = True
    while changed:
        changed = False
        for p in _STRIP_PREFIXES:
            if name.startswith(p):
                name, changed = name[len(p):], True
    return name


def _num_target_layers(d: dict[str, Any], target_config: Any) -> int:
    if target_config is not None:
        tc = target_config.get_text_config() if hasattr(target_config, "get_text_config") else target_config
        return int(tc.num_hidden_layers)
    if d.get("num_target_layers"):
        return int(d["num_target_layers"])
    raise CheckpointError("missing_field", "the checkpoint does not say how many layers its target has; pass "
                          "target_config", "num_target_layers")


def _speculators_to_deepspec(d: dict[str, Any], target_config: Any) -> dict[str, Any]:
    """speculators DSpark config -> DeepSpec-native dict (docs/dspark.md 7)."""
    if d.get("sample_from_anchor") is False:
        raise CheckpointError("unsupported_layout", "sample_from_anchor is false: slot k predicts p+k (slot 0 "
                              "untrained, block_size-1 drafts); the DeepSpec layout is anchor-first and engines "
                              "would misalign every draft", "sample_from_anchor")
    tlc = d.get("transformer_layer_config")
    if not isinstance(tlc, dict):
        raise CheckpointError("missing_field", "speculators config lacks transformer_layer_config",
                              "transformer_layer_config")
    # speculators serialises it with to_diff_dict(): keys equal to Qwen3Config defaults are absent
    import transformers

    tlc = transformers.Qwen3Config(**{k: v for k, v in tlc.items() if k != "model_type"}).to_dict()
    V = tlc.get("vocab_size")
    if d.get("draft_vocab_size") not in (None, V):
        raise CheckpointError("unsupported_layout", f"pruned draft vocabulary ({d['draft_vocab_size']} of {V}): "
                              "the DeepSpec layout needs full-vocabulary heads", "draft_vocab_size")
    H = tlc.get("hidden_size")
    if d.get("target_hidden_size") not in (None, H):
        raise CheckpointError("unsupported_layout", f"target_hidden_size {d['target_hidden_size']} differs from "
                              f"the draft hidden size {H}", "target_hidden_size")
    L = _num_target_layers(d, target_config)
    aux = d.get("aux_hidden_state_layer_ids")
    if aux is None:  # speculators' default [2, L//2, L-3], in its hidden_states indexing
        aux = [2, L // 2, L - 3]
    out = {k: tlc[k] for k in _QWEN3_DIM_KEYS if k in tlc}
    lt = tlc.get("layer_types") or []
    if any(t == "sliding_attention" for t in lt) and (
            not all(t == "sliding_attention" for t in lt) or d.get("sliding_window_non_causal") is False):
        raise CheckpointError("unsupported_layout", "mixed or causal-in-block sliding-window layers are not "
                                  "supported", "layer_types")
    out.update({
        "architectures": [ARCHITECTURE], "model_type": "qwen3", "tie_word_embeddings": False,
        "num_target_layers": L, "target_layer_ids": [int(i) - 1 for i in aux],  # speculators id = ours + 1
        "block_size": d.get("block_size", 8), "mask_token_id": d.get("mask_token_id"),
        "markov_rank": d.get("markov_rank", 0), "markov_head_type": d.get("markov_head_type", "vanilla"),
        "enable_confidence_head": bool(d.get("enable_confidence_head", False)),
        "confidence_head_with_markov": bool(d.get("confidence_head_with_markov", False)),
    })
    if d.get("num_anchors"):
        out["num_anchors"] = d["num_anchors"]
    out.setdefault("hidden_act", "silu")
    out.setdefault("head_dim", H // tlc["num_attention_heads"])
    out.setdefault("layer_types", ["full_attention"] * int(out["num_hidden_layers"]))
    return out


def _specforge_to_deepspec(d: dict[str, Any], target_config: Any) -> dict[str, Any]:
    """SpecForge DSpark config (DSpark keys inside dflash_config) -> DeepSpec-native dict. SpecForge uses the
    same layer-output convention for target_layer_ids as DeepSpec (docs/dspark.md 1.3)."""
    dfc = d["dflash_config"]
    out = {k: d[k] for k in _QWEN3_DIM_KEYS if k in d}
    for k in _DSPARK_CONFIG_KEYS:
        if k in dfc:
            out[k] = dfc[k]
        elif k in d:
            out[k] = d[k]
    if not out.get("markov_rank"):
        raise CheckpointError("unsupported_layout", "dflash_config has no markov_rank > 0: not a DSpark drafter",
                              "markov_rank")
    out["num_target_layers"] = out.get("num_target_layers") or _num_target_layers(d, target_config)
    out.update({"architectures": [ARCHITECTURE], "model_type": "qwen3", "tie_word_embeddings": False})
    out.setdefault("hidden_act", "silu")
    out.setdefault("head_dim", out["hidden_size"] // out["num_attention_heads"])
    out.setdefault("layer_types", ["full_attention"] * int(out["num_hidden_layers"]))
    out.setdefault("markov_head_type", "vanilla")
    out.setdefault("enable_confidence_head", True)
    out.setdefault("confidence_head_with_markov", True)
    return out


def import_checkpoint(src: str | Path, out_dir: str | Path, *, target_config: Any = None,
                      include_embeddings: bool = False) -> CheckpointInfo:
    """Convert a DeepSpec, vLLM speculators or SpecForge DSpark checkpoint to our DeepSpec-native layout in
    ``out_dir`` (weights only: a warm start, docs/dspark.md 8) and validate it.

    Tensor names lose ``model.`` / ``_orig_mod.`` / ``module.`` prefixes; speculators' frozen
    ``verifier_lm_head``/``verifier_norm`` and its ``t2d``/``d2t`` vocabulary maps (identity for a full
    vocabulary) are dropped; ``embed_tokens``/``lm_head`` are kept only with ``include_embeddings``.
    speculators layer ids are shifted by one (their id = ours + 1). ``target_config`` (the target's HF
    config) supplies the target layer count when the source does not record it and is checked against.
    Raises CheckpointError: code "unsupported_layout" with the reason for layouts we cannot map (other
    speculator types, sample_from_anchor false, pruned draft vocabularies, no Markov head, pickle-only
    weights), or the validator's error naming the tensor/field that does not fit.
    """
    src, out_dir = Path(src), Path(out_dir)
    try:
        d = json.loads((src / CONFIG_NAME).read_text())
    except FileNotFoundError:
        raise CheckpointError("missing_file", f"{src} has no config.json", CONFIG_NAME) from None
    layout = detect_layout(d)
    if layout == "deepspec":
        cfg = {k: v for k, v in d.items()}
        if "num_target_layers" not in cfg:
            cfg["num_target_layers"] = _num_target_layers(cfg, target_config)
    elif layout == "speculators":
        cfg = _speculators_to_deepspec(d, target_config)
    else:
        cfg = _specforge_to_deepspec(d, target_config)
    tensors = {}
    for name, t in _read_src_tensors(src).items():
        n = _strip(name)
        if n in _DROP_TENSORS or (n in OPTIONAL_TENSORS and not include_embeddings):
            continue
        tensors[n] = t
    # normalise the config through our dataclass so the written config.json has every key engines read
    try:
        norm = DSparkConfig.from_deepspec_dict(cfg).to_deepspec_dict()
    except ConfigError as e:
        raise CheckpointError(e.code, f"{layout} checkpoint: {e.message}", e.where) from None
    _write_dir(out_dir, norm, tensors)
    try:
        return validate_checkpoint(out_dir, target_config)
    except CheckpointError as e:
        for f in (CONFIG_NAME, WEIGHTS_NAME):
            (out_dir / f).unlink(missing_ok=True)
        raise CheckpointError(e.code, f"{layout} checkpoint does not map: {e.message}", e.where) from None
