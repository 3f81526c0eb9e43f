"""Training configuration (``TrainConfig``), its errors, and the learning-rate schedule.

``TrainConfig`` is checked against the value types of ``drafters.recipe`` (the bounds the job API's recipe
uses), so a config built in code, read from ``--config-json`` or resolved from a recipe fails the same way:
TrainError("invalid_train_config", where=<field>).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import typing
from dataclasses import dataclass, field
from typing import Any, get_args

from pydantic import ConfigDict, TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

from drafters.errors import TracedraftError
from drafters.recipe import (
    DrafterInit,
    FeatureCacheMode,
    Fraction,
    NonNegativeFloat,
    NonNegativeInt,
    ParallelMode,
    PositiveFloat,
    PositiveInt,
    Precision,
    SegmentWeights,
)

PARALLEL_MODES = get_args(ParallelMode)

class TrainError(TracedraftError):
    """Training cannot start or continue; ``where`` names the config field, file or checkpoint."""


class LoraSettings(TypedDict, total=False):
    """``drafters.dspark.lora.apply_lora`` arguments (unset ones take its defaults)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    r: PositiveInt
    alpha: PositiveFloat
    dropout: Fraction
    train_norms: bool


@dataclass
class TrainConfig:
    """Hyper-parameters and run options (defaults: docs/dspark.md 4.1/4.2 and 8 where they apply).

    Schedule: ``max_steps`` optimizer steps, or ``epochs`` over the training set when max_steps is None.
    ``time_budget_s``: seconds the whole run may take (set-up, feature cache, validations and checkpoints
    included, counted across resumes). The schedule then fits the budget: the step time is measured on the
    first steps and the horizon set so that warm-up and cosine decay end when the budget does (``Schedule``,
    ``Budget``), at most max_steps / epochs when they are given (both None: the budget alone decides); if
    the clock runs out anyway the run stops early, with a checkpoint. ``tokens_per_batch``: padded tokens
    (B * T_max) per micro-batch per rank; one optimizer step sees ``world_size * grad_accum`` micro-batches.
    ``num_anchors``: blocks per sequence (512 in DeepSpec). ``segment_weights``: anchor sampling weight by
    the Segment (name or value) of the anchor's first predicted token; 0 excludes. ``history_anchors``: also
    anchor on the earlier assistant turns a row's context holds (tokens of a ``SUPERVISED`` segment outside
    the loss mask, as recorded), not only on its own answer: each row then teaches the drafter the
    tool calls and arguments of every turn before it, against the target's distribution there
    (docs/dspark.md 2.4). ``feature_cache``: "auto" (cache on disk when the estimate fits
    ``feature_cache_max_bytes``), "on" (cache or raise), "off" (online target forward every micro-batch).
    ``checkpoint_every`` / ``validate_every``: steps (0 = only at the end; None = a tenth / a quarter of the
    schedule, at least 10 steps: what a time-budgeted run without max_steps needs); ``keep_last``: step
    checkpoints kept. ``init_from``: a checkpoint directory whose drafter weights start the run (warm start,
    fresh optimizer). ``drafter_init``: how a new drafter's backbone starts without one
    (``drafters.train.start.new_drafter``). ``lora``: None for full fine-tuning (the default, docs/dspark.md 8.5) or
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
    and AdamW stay fp32: mixed precision, DeepSpec's "precision bf16" of docs/dspark.md 4.1; the backbone's
    forward+backward about 2x faster on a CPU with native bf16, benchmarks/bench_dspark.py), "float32" or
    "auto" (the drafter's own dtype: bf16 weights on GPU need no autocast) run it as is. Validation always
    runs in the drafter's own dtype.
    """

    max_steps: NonNegativeInt | None = None
    epochs: PositiveFloat | None = 1.0
    time_budget_s: PositiveFloat | None = None
    lr: PositiveFloat = 6e-4
    warmup_ratio: Fraction = 0.04
    weight_decay: NonNegativeFloat = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    max_grad_norm: PositiveFloat = 1.0
    grad_accum: PositiveInt = 1
    tokens_per_batch: PositiveInt = 4096
    max_seq_len: NonNegativeInt | None = None  # 0 or None: tokens_per_batch
    num_anchors: PositiveInt = 512
    seed: int = 42
    checkpoint_every: NonNegativeInt | None = 0
    keep_last: PositiveInt = 2
    validate_every: NonNegativeInt | None = 0
    val_max_seqs: NonNegativeInt | None = None  # 0 or None: all
    segment_weights: SegmentWeights = field(
        default_factory=lambda: {"TOOL_NAME": 2.0, "TOOL_ARGS": 2.0}
    )
    history_anchors: bool = False
    feature_cache: FeatureCacheMode = "auto"
    feature_cache_max_bytes: NonNegativeInt = 4 << 30
    feature_cache_dir: str | None = None
    anchor_chunk: PositiveInt = 64
    init_from: str | None = None
    drafter_init: DrafterInit = "auto"
    lora: LoraSettings | None = None
    log_every: PositiveInt = 1
    parallel: ParallelMode = "auto"
    loss_matmul_dtype: Precision = "auto"
    compute_dtype: Precision = "auto"

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainConfig:
        """A validated TrainConfig from ``to_dict``-shaped values (a JSON file's). Raises
        TrainError("invalid_train_config", where=<field>) for an unknown field or an unusable value."""
        names = {f.name for f in dataclasses.fields(cls)}
        for key in values:
            if key not in names:
                raise TrainError("invalid_train_config", f"unknown TrainConfig field {key!r}", key)
        cfg = cls(**values)
        if "betas" in values:
            cfg.betas = tuple(values["betas"])  # a JSON list
        if cfg.segment_weights:  # JSON object keys are strings: segment values come back as "7"
            cfg.segment_weights = {int(k) if isinstance(k, str) and k.isdigit() else k: w
                                   for k, w in cfg.segment_weights.items()}
        cfg.validate()
        return cfg

    def validate(self) -> None:
        """Check every field against its type and bounds (``drafters.recipe``'s value types; strictly: no
        string is taken for a number, no float for an int) and the fields against each other. Raises
        TrainError(code="invalid_train_config", where=<field>) for the first unusable value."""
        for name, adapter in _field_adapters().items():
            value = getattr(self, name)
            try:
                adapter.validate_python(tuple(value) if name == "betas" else value, strict=True)
            except ValidationError as exc:
                err = exc.errors()[0]
                path = ".".join(str(x) for x in (name, *err["loc"]))
                raise TrainError("invalid_train_config", f"{path}: {err['msg']}, got {err['input']!r}",
                                 name) from None
        if self.max_steps is None and self.epochs is None and self.time_budget_s is None:
            raise TrainError("invalid_train_config", "the run has no end: give max_steps, epochs or "
                             "time_budget_s", "max_steps")

    def validate_interval(self, total_steps: int) -> int:
        """Steps between validations in a schedule of ``total_steps`` (0: only at the end)."""
        return self.validate_every if self.validate_every is not None else max(10, total_steps // 4)

    def checkpoint_interval(self, total_steps: int) -> int:
        """Steps between checkpoints in a schedule of ``total_steps`` (0: only at the end)."""
        return self.checkpoint_every if self.checkpoint_every is not None else max(10, total_steps // 10)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["betas"] = list(self.betas)
        d["segment_weights"] = {str(k): v for k, v in self.segment_weights.items()}
        return d

    def schedule_fingerprint(self) -> str:
        """Hash of the fields an exact resume depends on (changing them makes the run a different run)."""
        keys = ("max_steps", "epochs", "lr", "warmup_ratio", "weight_decay", "betas", "max_grad_norm",
                "grad_accum", "tokens_per_batch", "max_seq_len", "num_anchors", "seed", "segment_weights", "lora")
        keys += ("history_anchors",) if self.history_anchors else ()  # off: the fingerprints of older runs
        d = self.to_dict()
        return hashlib.sha256(json.dumps({k: d[k] for k in keys}, sort_keys=True).encode()).hexdigest()[:16]


#: A time-budgeted run times at least PROBE_STEPS steps after its first (which pays one-off costs), and at
#: least PROBE_FRACTION of its budget, before it sets its horizon (a few short batches would mislead it).
PROBE_STEPS = 3
PROBE_FRACTION = 0.01


@dataclass
class Schedule:
    """The learning-rate schedule (docs/dspark.md 4.2, DeepSpec ``optim.py``): LR multiplier (step+1)/warmup_steps
    during the warm-up, then cosine decay to 0 at ``total_steps`` (steps 0-based).

    Without a time budget it is fixed (``fixed``: warmup_ratio of max_steps or of the epochs' steps). Under
    a budget ``total_steps`` is None while the run times its first steps (``PROBE_STEPS``,
    ``PROBE_FRACTION``), which follow the cap's schedule (its warm-up is the longest the run can have, so
    they start no faster than the estimated one will) or, without a cap, run at LR 0 (nothing is known of
    the length yet); then ``Budget.fit`` sets it and re-estimates it every tenth of the schedule. The
    warm-up is warmup_ratio of the horizon while it lasts (never shorter than the steps done), and stays as
    it was once it is over. ``cap``: the most steps (max_steps / epochs; None: the budget alone decides).
    ``step_s`` / ``estimated_at``: the seconds per step and the step of the last estimate. A checkpoint
    stores it: a resumed run keeps its horizon and warm-up.
    """

    total_steps: int | None
    warmup_steps: int = 0
    cap: int | None = None
    step_s: float | None = None
    estimated_at: int | None = None

    @classmethod
    def fixed(cls, total_steps: int, warmup_ratio: float) -> Schedule:
        return cls(total_steps, int(warmup_ratio * total_steps), cap=total_steps)

    @property
    def end(self) -> int | None:
        """Where the loop stops: the horizon, the cap while the horizon is unknown, else None."""
        return self.total_steps if self.total_steps is not None else self.cap

    @classmethod
    def budgeted(cls, cap: int | None, warmup_ratio: float) -> Schedule:
        """The schedule of a time-budgeted run before its first estimate."""
        return cls(None, int(warmup_ratio * cap) if cap is not None else 0, cap=cap)

    def factor(self, step: int) -> float:
        """LR multiplier of optimizer step ``step`` (0-based); 0 while neither horizon nor cap is known."""
        total = self.end
        if total is None:
            return 0.0
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        rest = max(1, total - self.warmup_steps)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, (step - self.warmup_steps) / rest)))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def lr_factor(step: int, total: int, warmup_ratio: float) -> float:
    """LR multiplier of optimizer step ``step`` (0-based) in the fixed schedule of ``total`` steps: linear
    warm-up over ``int(warmup_ratio * total)`` steps, then cosine to 0 (``Schedule``)."""
    return Schedule.fixed(total, warmup_ratio).factor(step)


@dataclass
class Budget:
    """A time budget and the costs the run measured, in seconds: ``seconds`` (``TrainConfig.time_budget_s``),
    ``validate_s`` one validation, ``checkpoint_s`` one checkpoint (the latest measured)."""

    seconds: float
    validate_s: float = 0.0
    checkpoint_s: float = 0.0

    def overhead(self, cfg: TrainConfig, step: int, horizon: int) -> float:
        """Seconds of the validations and checkpoints a schedule of ``horizon`` steps still brings after
        ``step``: the periodic ones before the horizon and the final ones."""

        def periodic(every: int) -> int:
            return max(0, (horizon - 1) // every - step // every) if every else 0

        validations = periodic(cfg.validate_interval(horizon)) + 1
        checkpoints = periodic(cfg.checkpoint_interval(horizon)) + 1
        return validations * self.validate_s + checkpoints * self.checkpoint_s

    def fit(self, schedule: Schedule, cfg: TrainConfig, step: int, used_s: float, step_s: float) -> Schedule:
        """``schedule`` re-estimated at ``step`` (steps done) with ``used_s`` of the budget spent and
        ``step_s`` seconds per optimizer step: the longest horizon, at most ``schedule.cap``, whose remaining
        steps ((H - step) * step_s) and ``overhead`` fit in what is left; ``step`` itself when nothing more
        fits (the run ends now). During the warm-up its length becomes ``cfg.warmup_ratio`` of the new
        horizon, at least the steps done (an estimate never sends the ramp back); after it, it is kept."""
        left = self.seconds - used_s
        step_s = max(step_s, 1e-9)
        low = step
        high = step + max(0, int(left / step_s))
        if schedule.cap is not None:
            high = max(step, min(high, schedule.cap))
        while low < high:  # the cost grows with the horizon: the last one that fits
            mid = (low + high + 1) // 2
            if (mid - step) * step_s + self.overhead(cfg, step, mid) <= left:
                low = mid
            else:
                high = mid - 1
        unknown = schedule.total_steps is None and schedule.cap is None  # the timed steps ran at LR 0
        warming_up = unknown or step < schedule.warmup_steps
        warmup = max(int(cfg.warmup_ratio * low), step) if warming_up else schedule.warmup_steps
        return Schedule(low, warmup, schedule.cap, step_s, step)


@functools.cache
def _field_adapters() -> dict[str, TypeAdapter]:
    """A pydantic validator per TrainConfig field, from its annotation (built once, on first use)."""
    hints = typing.get_type_hints(TrainConfig, include_extras=True)
    return {f.name: TypeAdapter(hints[f.name]) for f in dataclasses.fields(TrainConfig)}
