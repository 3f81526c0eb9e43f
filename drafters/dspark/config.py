"""DSpark drafter configuration (docs/dspark.md 1, 4.3; docs/serving.md 2).

The drafter copies every layer dimension from its target (docs/dspark.md 1.1: "the draft config is a deep copy of
the target's HF config with overrides") and adds the DSpark knobs. `to_deepspec_dict` writes the flat
Qwen3-style ``config.json`` that SGLang, vLLM, llama.cpp and DeepSpec load (docs/serving.md 2);
`from_deepspec_dict` reads it back.
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings
from dataclasses import dataclass, field
from typing import Any, get_args

from drafters.errors import TracedraftError
from drafters.recipe import MarkovHeadType

MARKOV_HEAD_TYPES = get_args(MarkovHeadType)
SUPPORTED_ROPE_TYPES = ("default", "linear", "llama3")
ARCHITECTURE = "Qwen3DSparkModel"

# Config keys that describe our drafter in config.json (besides the target's dims).
_DSPARK_KEYS = (
    "num_hidden_layers", "num_target_layers", "block_size", "target_layer_ids", "mask_token_id",
    "markov_rank", "markov_head_type", "enable_confidence_head", "confidence_head_with_markov",
)


class ConfigError(TracedraftError):
    """An invalid DSpark drafter configuration; ``where`` names the field."""


def default_target_layer_ids(num_layers: int, k: int = 5) -> list[int]:
    """The DFlash rule for which target layers feed the drafter (docs/dspark.md 1.3).

    k = 1 -> [L // 2]; otherwise ids_i = round(1 + i * (L - 4) / (k - 1)), i = 0..k-1, i.e. evenly spaced
    from layer 1 to layer L - 3 (layer-output convention: id l = HF ``hidden_states[l + 1]``).
    Rounding is Python's round() (half to even), as the reference DFlash/SpecForge helper: engines and
    released drafters agree on ties, e.g. L = 30 (SmolLM2) -> [1, 8, 14, 20, 27].

    Raises ConfigError(code="bad_layer_count") when the target is too shallow for k distinct ids.
    """
    if k < 1:
        raise ConfigError("bad_layer_count", f"need at least one target layer, got k={k}", "target_layer_ids")
    if k == 1:
        if num_layers < 2:
            raise ConfigError("bad_layer_count", f"target with {num_layers} layers is too shallow",
                              "num_target_layers")
        return [num_layers // 2]
    if num_layers - 3 < 1 or (num_layers - 3) < k:
        raise ConfigError(
            "bad_layer_count",
            f"cannot pick {k} distinct layers in [1, {num_layers - 3}] of a {num_layers}-layer target; "
            "pass target_layer_ids explicitly",
            "target_layer_ids",
        )
    return [round(1 + i * (num_layers - 4) / (k - 1)) for i in range(k)]


def _tok_len(tokenizer: Any) -> int:
    return len(tokenizer)


def choose_mask_token_id(vocab_size: int, tokenizer: Any = None) -> int:
    """Pick the MASK token id of the block stream (docs/dspark.md "Decisions": must be a valid target id).

    - ``vocab_size > len(tokenizer)``: the first spare (padded, never produced) row, ``len(tokenizer)``
      (Qwen3: 151669 of 151936).
    - otherwise: a special token that never occurs in chat text: ``<empty_output>`` when present (SmolLM2,
      id 16; llama.cpp serves drafts built so), else the highest-id added special token that is not BOS, EOS,
      PAD or UNK and whose text does not appear in the tokenizer's chat template.
    - no tokenizer: ``vocab_size - 1`` (the last row) with a warning; pass ``mask_token_id`` explicitly when
      that row is a real token that occurs in your data.

    Raises ConfigError(code="no_mask_token") when no candidate exists.
    """
    if tokenizer is None:
        warnings.warn(f"no tokenizer given; using the last vocabulary row {vocab_size - 1} as mask token",
                      stacklevel=2)
        return vocab_size - 1
    n = _tok_len(tokenizer)
    if vocab_size > n:
        return n
    vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
    if "<empty_output>" in vocab and vocab["<empty_output>"] < vocab_size:
        return int(vocab["<empty_output>"])
    excluded = set()
    for attr in ("bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id"):
        v = getattr(tokenizer, attr, None)
        if isinstance(v, int):
            excluded.add(v)
    template = getattr(tokenizer, "chat_template", None) or ""
    if not isinstance(template, str):  # dict of named templates
        template = " ".join(str(v) for v in dict(template).values())
    added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
    cands = []
    for tid, tok in added.items():
        content = getattr(tok, "content", str(tok))
        special = getattr(tok, "special", True)
        if special and tid not in excluded and content not in template and tid < vocab_size:
            cands.append(int(tid))
    if not cands:
        raise ConfigError(
            "no_mask_token",
            "the target has no spare vocabulary row and no unused special token; pass mask_token_id",
            "mask_token_id",
        )
    return max(cands)


def _rope_from_hf(cfg: Any) -> tuple[float, dict | None]:
    """(rope_theta, rope_scaling or None) from a transformers 4.x (rope_theta/rope_scaling) or 5.x
    (rope_parameters) config."""
    params = getattr(cfg, "rope_parameters", None)
    scaling = getattr(cfg, "rope_scaling", None)
    theta = getattr(cfg, "rope_theta", None)
    if isinstance(params, dict) and params:
        theta = params.get("rope_theta", theta)
        scaling = {k: v for k, v in params.items() if k != "rope_theta"}
    if theta is None:
        theta = 10000.0
    if scaling:
        scaling = {k: v for k, v in dict(scaling).items() if k != "rope_theta"}
        rtype = scaling.get("rope_type", scaling.get("type", "default"))
        if rtype == "default":
            scaling = None
        else:
            scaling["rope_type"] = rtype
            scaling.pop("type", None)
    return float(theta), (scaling or None)


@dataclass
class DSparkConfig:
    """Target dims + DSpark knobs (docs/dspark.md 4.1 defaults).

    ``target_layer_ids`` use the layer-output convention (id l = HF ``hidden_states[l + 1]``, -1 = the
    embedding output); ``None`` means the DFlash default with 5 layers. ``mask_token_id`` None is resolved
    by `from_target` (choose_mask_token_id). ``loss_decay_gamma`` is beta of the position weights
    exp(-(k-1)/beta) (docs/dspark.md 1.7), separate from ``block_size``.
    """

    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    num_target_layers: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict | None = None
    max_position_embeddings: int = 32768
    num_hidden_layers: int = 5
    block_size: int = 7
    target_layer_ids: list[int] | None = None
    mask_token_id: int | None = None
    markov_rank: int = 256
    markov_head_type: str = "vanilla"
    enable_confidence_head: bool = True
    confidence_head_with_markov: bool = True
    loss_decay_gamma: float = 4.0
    ce_loss_alpha: float = 0.1
    l1_loss_alpha: float = 0.9
    confidence_head_alpha: float = 1.0
    sliding_window: int | None = None
    num_anchors: int = 512
    hidden_act: str = "silu"
    extra: dict = field(default_factory=dict)  # other target config keys carried into config.json

    def __post_init__(self) -> None:
        if self.target_layer_ids is None:
            self.target_layer_ids = default_target_layer_ids(self.num_target_layers, 5)
        self.target_layer_ids = [int(x) for x in self.target_layer_ids]
        self.validate()

    # ------------------------------------------------------------------ checks
    def validate(self) -> None:
        """Raise ConfigError naming the field for any value an engine or our model cannot use."""
        def bad(fieldname: str, msg: str, code: str = "invalid_config") -> None:
            raise ConfigError(code, msg, fieldname)

        for f in ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
                  "head_dim", "vocab_size", "num_target_layers", "num_hidden_layers", "block_size",
                  "max_position_embeddings"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                bad(f, f"{f} must be a positive integer, got {v!r}")
        if self.num_attention_heads % self.num_key_value_heads:
            bad("num_key_value_heads", f"num_attention_heads={self.num_attention_heads} is not a multiple "
                f"of num_key_value_heads={self.num_key_value_heads} (GQA)")
        if self.head_dim % 2:
            bad("head_dim", f"head_dim must be even for RoPE, got {self.head_dim}")
        if not isinstance(self.markov_rank, int) or self.markov_rank <= 0:
            bad("markov_rank", f"markov_rank must be > 0 (engines require the Markov head), got "
                f"{self.markov_rank!r}")
        if self.markov_head_type not in MARKOV_HEAD_TYPES:
            bad("markov_head_type", f"markov_head_type must be one of {MARKOV_HEAD_TYPES}, got "
                f"{self.markov_head_type!r}")
        if self.mask_token_id is not None and not (0 <= int(self.mask_token_id) < self.vocab_size):
            bad("mask_token_id", f"mask_token_id {self.mask_token_id} must be a valid target id in "
                f"[0, {self.vocab_size})")
        ids = self.target_layer_ids
        if not ids:
            bad("target_layer_ids", "target_layer_ids must not be empty")
        if any(b <= a for a, b in itertools.pairwise(ids)):
            bad("target_layer_ids", f"target_layer_ids must be strictly increasing, got {ids}")
        L = self.num_target_layers
        for i in ids:
            if i < -1 or i >= L:
                bad("target_layer_ids", f"layer id {i} is outside [-1, {L - 1}] for a {L}-layer target")
        if ids[-1] == L - 1:
            bad("target_layer_ids", f"layer id {L - 1} is the target's last layer, whose HF hidden state is "
                "post-norm; exclude it (docs/dspark.md 1.2)")
        if self.loss_decay_gamma <= 0:
            bad("loss_decay_gamma", f"loss_decay_gamma must be > 0, got {self.loss_decay_gamma}")
        for f in ("ce_loss_alpha", "l1_loss_alpha", "confidence_head_alpha"):
            if getattr(self, f) < 0:
                bad(f, f"{f} must be >= 0")
        if self.sliding_window is not None and (not isinstance(self.sliding_window, int)
                                                or self.sliding_window <= 0):
            bad("sliding_window", f"sliding_window must be a positive int or None, got {self.sliding_window!r}")
        if self.hidden_act != "silu":
            bad("hidden_act", f"only silu MLPs are supported (Qwen3 layer), got {self.hidden_act!r}")
        if self.rope_scaling is not None:
            rtype = self.rope_scaling.get("rope_type", self.rope_scaling.get("type", "default"))
            if rtype not in SUPPORTED_ROPE_TYPES:
                bad("rope_scaling", f"rope type {rtype!r} is not supported (supported: {SUPPORTED_ROPE_TYPES})")
            if rtype in ("linear", "llama3") and "factor" not in self.rope_scaling:
                bad("rope_scaling", f"rope type {rtype!r} needs a 'factor'")

    @property
    def num_aux_layers(self) -> int:
        """m, the number of target layers concatenated into the context features."""
        return len(self.target_layer_ids)

    @property
    def target_hidden_size(self) -> int:
        """Width of target_aux: m * d."""
        return self.num_aux_layers * self.hidden_size

    def replace(self, **changes: Any) -> DSparkConfig:
        """A validated copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_target(cls, target_hf_config: Any, tokenizer: Any = None, **overrides: Any) -> DSparkConfig:
        """Derive the drafter config from a transformers config of the target (Llama, Qwen3, ...).

        ``head_dim`` falls back to hidden_size // num_attention_heads when absent; RoPE comes from
        ``rope_parameters`` (transformers 5) or ``rope_theta``/``rope_scaling`` (4.x). ``mask_token_id``
        defaults to choose_mask_token_id(vocab_size, tokenizer). ``overrides`` set any DSparkConfig field,
        e.g. num_hidden_layers=1. Raises ConfigError on unknown overrides or invalid values.
        """
        cfg = target_hf_config
        if hasattr(cfg, "get_text_config"):
            cfg = cfg.get_text_config()
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(overrides) - names
        if unknown:
            raise ConfigError("unknown_field", f"unknown DSparkConfig field(s): {sorted(unknown)}",
                              min(unknown))
        hidden = int(cfg.hidden_size)
        heads = int(cfg.num_attention_heads)
        head_dim = getattr(cfg, "head_dim", None) or hidden // heads
        theta, scaling = _rope_from_hf(cfg)
        act = getattr(cfg, "hidden_act", "silu")
        kw: dict[str, Any] = {
            "hidden_size": hidden,
            "intermediate_size": int(cfg.intermediate_size),
            "num_attention_heads": heads,
            "num_key_value_heads": int(getattr(cfg, "num_key_value_heads", None) or heads),
            "head_dim": int(head_dim),
            "vocab_size": int(cfg.vocab_size),
            "num_target_layers": int(cfg.num_hidden_layers),
            "rms_norm_eps": float(getattr(cfg, "rms_norm_eps", 1e-6)),
            "rope_theta": theta,
            "rope_scaling": scaling,
            "max_position_embeddings": int(getattr(cfg, "max_position_embeddings", 32768)),
            "hidden_act": "silu" if act in ("silu", "swish") else act,
        }
        kw.update(overrides)
        if kw.get("mask_token_id") is None:
            kw["mask_token_id"] = choose_mask_token_id(kw["vocab_size"], tokenizer)
        return cls(**kw)

    # ------------------------------------------------------------------ serialisation
    def to_deepspec_dict(self) -> dict[str, Any]:
        """The flat Qwen3-style config.json of docs/serving.md 2 / docs/dspark.md 4.3.

        Never writes ``speculators_model_type`` (SGLang would switch slot conventions).
        """
        sw = self.sliding_window
        d: dict[str, Any] = dict(self.extra)
        d.update({
            "architectures": [ARCHITECTURE],
            "model_type": "qwen3",
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "hidden_act": self.hidden_act,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_theta": self.rope_theta,
            "rope_scaling": dict(self.rope_scaling) if self.rope_scaling else None,
            "max_position_embeddings": self.max_position_embeddings,
            "vocab_size": self.vocab_size,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "num_hidden_layers": self.num_hidden_layers,
            "num_target_layers": self.num_target_layers,
            "block_size": self.block_size,
            "layer_types": [("sliding_attention" if sw else "full_attention")] * self.num_hidden_layers,
            "use_sliding_window": bool(sw),
            "sliding_window": sw,
            "tie_word_embeddings": False,
            "mask_token_id": int(self.mask_token_id) if self.mask_token_id is not None else None,
            "target_layer_ids": list(self.target_layer_ids),
            "num_anchors": self.num_anchors,
            "enable_confidence_head": self.enable_confidence_head,
            "confidence_head_with_markov": self.confidence_head_with_markov,
            "markov_rank": self.markov_rank,
            "markov_head_type": self.markov_head_type,
            "loss_decay_gamma": self.loss_decay_gamma,
            "ce_loss_alpha": self.ce_loss_alpha,
            "l1_loss_alpha": self.l1_loss_alpha,
            "confidence_head_alpha": self.confidence_head_alpha,
        })
        d.pop("speculators_model_type", None)
        return d

    @classmethod
    def from_deepspec_dict(cls, d: dict[str, Any]) -> DSparkConfig:
        """Read a DeepSpec-native config.json dict (ours or a released DeepSpec checkpoint's).

        Raises ConfigError(code="missing_field", where=<key>) for a missing required key and the usual
        validation errors otherwise.
        """
        required = ("hidden_size", "intermediate_size", "num_attention_heads", "vocab_size",
                    "num_hidden_layers", "num_target_layers", "block_size", "target_layer_ids",
                    "mask_token_id", "markov_rank")
        for k in required:
            if d.get(k) is None:
                raise ConfigError("missing_field", f"config.json lacks required key {k!r}", k)

        class _NS:  # reuse the RoPE parser
            pass

        ns = _NS()
        for k in ("rope_theta", "rope_scaling", "rope_parameters"):
            if k in d:
                setattr(ns, k, d[k])
        theta, scaling = _rope_from_hf(ns)
        heads = int(d["num_attention_heads"])
        sw = d.get("sliding_window") if d.get("use_sliding_window") or any(
            t == "sliding_attention" for t in d.get("layer_types") or []) else None
        known = {
            "architectures", "model_type", "hidden_size", "intermediate_size", "num_attention_heads",
            "num_key_value_heads", "head_dim", "hidden_act", "rms_norm_eps", "rope_theta", "rope_scaling",
            "rope_parameters", "max_position_embeddings", "vocab_size", "attention_bias", "attention_dropout",
            "num_hidden_layers", "num_target_layers", "block_size", "layer_types", "use_sliding_window",
            "sliding_window", "tie_word_embeddings", "mask_token_id", "target_layer_ids", "num_anchors",
            "enable_confidence_head", "confidence_head_with_markov", "markov_rank", "markov_head_type",
            "loss_decay_gamma", "ce_loss_alpha", "l1_loss_alpha", "confidence_head_alpha",
            "torch_dtype", "dtype",  # a property of the saved tensors, not of the drafter's shape
        }
        return cls(
            hidden_size=int(d["hidden_size"]),
            intermediate_size=int(d["intermediate_size"]),
            num_attention_heads=heads,
            num_key_value_heads=int(d.get("num_key_value_heads") or heads),
            head_dim=int(d.get("head_dim") or int(d["hidden_size"]) // heads),
            vocab_size=int(d["vocab_size"]),
            num_target_layers=int(d["num_target_layers"]),
            rms_norm_eps=float(d.get("rms_norm_eps", 1e-6)),
            rope_theta=theta,
            rope_scaling=scaling,
            max_position_embeddings=int(d.get("max_position_embeddings", 32768)),
            num_hidden_layers=int(d["num_hidden_layers"]),
            block_size=int(d["block_size"]),
            target_layer_ids=list(d["target_layer_ids"]),
            mask_token_id=int(d["mask_token_id"]),
            markov_rank=d["markov_rank"],
            markov_head_type=d.get("markov_head_type", "vanilla"),
            enable_confidence_head=bool(d.get("enable_confidence_head", True)),
            confidence_head_with_markov=bool(d.get("confidence_head_with_markov", True)),
            loss_decay_gamma=float(d.get("loss_decay_gamma", 4.0)),
            ce_loss_alpha=float(d.get("ce_loss_alpha", 0.1)),
            l1_loss_alpha=float(d.get("l1_loss_alpha", 0.9)),
            confidence_head_alpha=float(d.get("confidence_head_alpha", 1.0)),
            sliding_window=int(sw) if sw else None,
            num_anchors=int(d.get("num_anchors", 512)),
            hidden_act=d.get("hidden_act", "silu"),
            extra={k: v for k, v in d.items() if k not in known and k != "speculators_model_type"},
        )
