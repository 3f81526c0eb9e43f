"""Training configuration (``TrainConfig``), its errors, and the learning-rate schedule."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

from drafters.errors import TracedraftError

PARALLEL_MODES = ("auto", "ddp", "fsdp")

# Segment label values (drafters.render.Segment, stable per the module contract); used to resolve names
# in TrainConfig.segment_weights without importing the renderer.
SEGMENT_VALUES = {
    "MARKUP": 0, "SYSTEM": 1, "USER": 2, "TOOL_RESULT": 3, "TEXT": 4, "REASONING": 5, "TOOL_NAME": 6,
    "TOOL_ARGS": 7, "TOOL_STRUCTURE": 8,
}


class TrainError(TracedraftError):
    """Training cannot start or continue; ``where`` names the config field, file or checkpoint."""


@dataclass
class TrainConfig:
    """Hyper-parameters and run options (defaults: DSPARK.md 4.1/4.2 and 8 where they apply).

    Schedule: ``max_steps`` optimizer steps, or ``epochs`` over the training set when max_steps is None.
    ``time_budget_s`` stops early (with a checkpoint) when the wall clock runs out; the LR schedule still
    spans max_steps. ``tokens_per_batch``: padded tokens (B * T_max) per micro-batch per rank; one optimizer
    step sees ``world_size * grad_accum`` micro-batches. ``num_anchors``: blocks per sequence (512 in
    DeepSpec). ``segment_weights``: anchor sampling weight by the Segment (name or value) of the anchor's
    first predicted token; 0 excludes. ``feature_cache``: "auto" (cache on disk when the estimate fits
    ``feature_cache_max_bytes``), "on" (cache or raise), "off" (online target forward every micro-batch).
    ``checkpoint_every`` / ``validate_every``: steps (0 = only at the end); ``keep_last``: step checkpoints
    kept. ``init_from``: a checkpoint directory whose drafter weights start the run (warm start, fresh
    optimizer). ``lora``: None for full fine-tuning (the default, DSPARK.md 8.5) or
    ``{"r": 16, "alpha": 32, "dropout": 0.0, "train_norms": True}`` for peft LoRA adapters
    (drafters.dspark.lora: backbone linears + fc adapted, Markov/confidence heads fully trained); exports are
    merged, the unmerged state travels in the training state for resume. ``parallel``: how a multi-process
    run (torch.distributed initialised, e.g. under torchrun) holds the drafter: "ddp" keeps a full
    drafter and full AdamW state on every rank and all-reduces gradients; "fsdp" shards the trainable weights,
    their gradients and the AdamW state over the ranks with PyTorch FSDP2 (``fully_shard``), see ``train``;
    "auto" (default) = "fsdp" when the replicated training state would not fit (``choose_parallel``), else
    "ddp".
    Both give the same updates and write the same checkpoint format, so a run may resume under the other
    mode. A single process (no process group) trains unsharded whatever this says. ``loss_matmul_dtype``:
    dtype of the loss's V-sized matmuls (``dspark_loss(matmul_dtype=)``): "float32", "bfloat16" (DeepSpec's
    precision; 2-4x faster on GPUs and CPUs with native bf16), or "auto" = bfloat16 when the drafter's LM
    head is bf16 (GPU training), else float32. Softmax and the loss terms are fp32 in every case.
    ``compute_dtype``: precision of the drafter's own matrix products (backbone, fc, heads) when its weights
    are fp32: "bfloat16" runs each micro-batch's forward under ``torch.autocast`` in bf16 (weights, gradients
    and AdamW stay fp32: mixed precision, DeepSpec's "precision bf16" of DSPARK.md 4.1; the backbone's
    forward+backward about 2x faster on a CPU with native bf16, benchmarks/bench_dspark.py), "float32" or
    "auto" (the drafter's own dtype: bf16 weights on GPU need no autocast) run it as is. Validation always
    runs in the drafter's own dtype.
    """

    max_steps: int | None = None
    epochs: float = 1.0
    time_budget_s: float | None = None
    lr: float = 6e-4
    warmup_ratio: float = 0.04
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    max_grad_norm: float = 1.0
    grad_accum: int = 1
    tokens_per_batch: int = 4096
    max_seq_len: int | None = None
    num_anchors: int = 512
    seed: int = 42
    checkpoint_every: int = 0
    keep_last: int = 2
    validate_every: int = 0
    val_max_seqs: int | None = None
    segment_weights: dict[str | int, float] = field(
        default_factory=lambda: {"TOOL_NAME": 2.0, "TOOL_ARGS": 2.0}
    )
    feature_cache: str = "auto"
    feature_cache_max_bytes: int = 4 << 30
    feature_cache_dir: str | None = None
    anchor_chunk: int = 64
    init_from: str | None = None
    lora: dict | None = None
    log_every: int = 1
    parallel: str = "auto"
    loss_matmul_dtype: str = "auto"
    compute_dtype: str = "auto"

    def validate(self) -> None:
        """Raise TrainError(code="invalid_train_config", where=<field>) for unusable values."""
        def bad(f: str, msg: str) -> None:
            raise TrainError("invalid_train_config", msg, f)

        if self.max_steps is not None and self.max_steps < 0:
            bad("max_steps", f"max_steps must be >= 0, got {self.max_steps}")
        if self.max_steps is None and not self.epochs > 0:
            bad("epochs", f"epochs must be > 0 when max_steps is unset, got {self.epochs}")
        if not self.lr > 0:
            bad("lr", f"lr must be > 0, got {self.lr}")
        if not 0 <= self.warmup_ratio < 1:
            bad("warmup_ratio", f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        for f in ("grad_accum", "tokens_per_batch", "num_anchors", "keep_last", "anchor_chunk", "log_every"):
            if int(getattr(self, f)) < 1:
                bad(f, f"{f} must be >= 1, got {getattr(self, f)}")
        for f in ("checkpoint_every", "validate_every"):
            if int(getattr(self, f)) < 0:
                bad(f, f"{f} must be >= 0, got {getattr(self, f)}")
        if self.loss_matmul_dtype not in ("auto", "float32", "bfloat16"):
            bad("loss_matmul_dtype", f"loss_matmul_dtype must be auto, float32 or bfloat16, got "
                f"{self.loss_matmul_dtype!r}")
        if self.compute_dtype not in ("auto", "float32", "bfloat16"):
            bad("compute_dtype", f"compute_dtype must be auto, float32 or bfloat16, got {self.compute_dtype!r}")
        if self.parallel not in PARALLEL_MODES:
            bad("parallel", f"parallel must be one of {'|'.join(PARALLEL_MODES)}, got {self.parallel!r}")
        if self.feature_cache not in ("auto", "on", "off"):
            bad("feature_cache", f"feature_cache must be auto|on|off, got {self.feature_cache!r}")
        if self.lora is not None:
            extra = set(self.lora) - {"r", "alpha", "dropout", "train_norms"}
            if not isinstance(self.lora, dict) or extra:
                bad("lora", f"lora must be a dict with keys r, alpha, dropout, train_norms; got extra {extra}")
        for k, w in self.segment_weights.items():
            if isinstance(k, str) and k.upper() not in SEGMENT_VALUES:
                bad("segment_weights", f"unknown segment {k!r}; known: {sorted(SEGMENT_VALUES)}")
            if not (w >= 0 and math.isfinite(w)):
                bad("segment_weights", f"segment weight for {k!r} must be finite and >= 0, got {w}")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["betas"] = list(self.betas)
        d["segment_weights"] = {str(k): v for k, v in self.segment_weights.items()}
        return d

    def schedule_fingerprint(self) -> str:
        """Hash of the fields an exact resume depends on (changing them makes the run a different run)."""
        keys = ("max_steps", "epochs", "lr", "warmup_ratio", "weight_decay", "betas", "max_grad_norm",
                "grad_accum", "tokens_per_batch", "max_seq_len", "num_anchors", "seed", "segment_weights", "lora")
        d = self.to_dict()
        return hashlib.sha256(json.dumps({k: d[k] for k in keys}, sort_keys=True).encode()).hexdigest()[:16]


def lr_factor(step: int, total: int, warmup_ratio: float) -> float:
    """LR multiplier of optimizer step ``step`` (0-based): (step+1)/warmup during warmup, then cosine to 0
    over the remaining steps (DSPARK.md 4.2, DeepSpec ``optim.py``)."""
    warmup = int(warmup_ratio * total)
    if step < warmup:
        return (step + 1) / warmup
    rest = max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, (step - warmup) / rest)))
