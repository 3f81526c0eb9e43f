"""A recipe resolved for the machine it runs on: what every ``"auto"`` becomes on a CPU or a GPU, and the
one function that turns a ``drafters.recipe.StageRecipe`` into the trainer's ``TrainConfig`` and the new
drafter's shape.

On a CPU-only machine "auto" is sized for the README demo (well under 15 minutes on 2 cores, set-up
included); on a GPU it follows docs/dspark.md sections 4.1 and 8.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drafters.recipe import StageRecipe
from drafters.train.config import TrainConfig


@dataclass(frozen=True)
class MachineDefaults:
    """The values "auto" takes on one kind of machine. Training: ``num_draft_layers``, ``max_steps``,
    ``num_anchors``, ``lr``, ``tokens_per_batch``, ``max_train_tokens`` (None: the whole training set),
    ``val_max_seqs``; data preparation: ``max_seq_len``; regeneration: ``regenerate_max_tokens`` (longest
    answer), ``regenerate_slots`` (answers in flight); evaluation: ``max_calls``, ``max_new_tokens``."""

    num_draft_layers: int
    max_seq_len: int
    max_calls: int
    max_new_tokens: int
    max_steps: int
    num_anchors: int
    lr: float
    tokens_per_batch: int
    max_train_tokens: int | None
    val_max_seqs: int
    regenerate_max_tokens: int
    regenerate_slots: int


CPU_DEFAULTS = MachineDefaults(num_draft_layers=1, max_seq_len=512, max_calls=6, max_new_tokens=32,
                               max_steps=100, num_anchors=16, lr=3e-3, tokens_per_batch=1024,
                               max_train_tokens=24_000, val_max_seqs=4, regenerate_max_tokens=160,
                               regenerate_slots=16)
GPU_DEFAULTS = MachineDefaults(num_draft_layers=5, max_seq_len=4096, max_calls=500, max_new_tokens=512,
                               max_steps=3000, num_anchors=512, lr=2e-4, tokens_per_batch=8192,
                               max_train_tokens=None, val_max_seqs=256, regenerate_max_tokens=2048,
                               regenerate_slots=64)

#: recipe.mode "lora": peft adapters on the backbone and fc (docs/dspark.md 8.5 trains fully; LoRA is ours).
LORA_DEFAULTS = {"r": 16, "alpha": 32, "dropout": 0.0, "train_norms": True}

#: Recipe fields handed to TrainConfig as they are unless "auto" (TrainConfig's default then applies).
TUNABLES = ("warmup_ratio", "weight_decay", "max_grad_norm", "grad_accum", "keep_last", "segment_weights",
            "feature_cache", "epochs", "parallel", "loss_matmul_dtype", "compute_dtype", "drafter_init",
            "history_anchors")

#: Recipe fields handed to DSparkConfig.from_target as they are unless "auto" (its rules apply then).
DRAFTER_SHAPE = ("block_size", "markov_rank", "markov_head_type", "target_layer_ids", "mask_token_id", "loss_decay_gamma")


@dataclass(frozen=True)
class Machine:
    """Where training runs: ``device`` "cpu" or "cuda"; ``cpu_bf16``: the CPU runs bf16 matrix products
    natively (``drafters.target.cpu_bf16_fast``)."""

    device: str
    cpu_bf16: bool = False

    @classmethod
    def detect(cls) -> Machine:
        """This process's machine: "cuda" when a GPU is visible, else "cpu" (and whether it has bf16)."""
        import torch

        from drafters.target import cpu_bf16_fast

        if torch.cuda.is_available():
            return cls("cuda")
        return cls("cpu", cpu_bf16_fast())

    @property
    def defaults(self) -> MachineDefaults:
        return GPU_DEFAULTS if self.device == "cuda" else CPU_DEFAULTS

    @property
    def precision(self) -> str:
        """What "auto" loss_matmul_dtype / compute_dtype become: bf16 on a CPU with native bf16 (the fp32
        drafter then trains under bf16 autocast: 1.3-1.5x faster loss, about 2x faster backbone there),
        else "auto" (the trainer's own rule: bf16 when the drafter is bf16, as on a GPU)."""
        return "bfloat16" if self.device == "cpu" and self.cpu_bf16 else "auto"

    def training_target_dtype(self, requested: str) -> str | None:
        """What the recipe's ``target_dtype`` becomes while training: as given unless "auto"; "auto" is
        bfloat16 on a CPU with native bf16 (several times faster; the target hands fp32 features to the fp32
        drafter), else None (the loader's default: fp32 on CPU, bf16 on GPU)."""
        if requested != "auto":
            return requested
        return "bfloat16" if self.device == "cpu" and self.cpu_bf16 else None


@dataclass(frozen=True)
class ResolvedRecipe:
    """A recipe for one machine: ``train`` (the trainer's config), ``drafter`` (DSparkConfig.from_target
    overrides: the shape of a new drafter) and ``max_train_tokens`` (the training set's token budget,
    ``drafters.shards.take_tokens``; None: all of it)."""

    train: TrainConfig
    drafter: dict[str, Any]
    max_train_tokens: int | None


def _given(value: Any, default: Any) -> Any:
    return default if value == "auto" else value


def resolved_seed(recipe: StageRecipe) -> int:
    """The recipe's seed ("auto": 0), for every stage that draws at random (data selection, training)."""
    return int(_given(recipe.seed, 0))


def resolve_recipe(recipe: StageRecipe, machine: Machine, *, init_from: str | None = None) -> ResolvedRecipe:
    """``recipe`` with every "auto" resolved for ``machine`` (``MachineDefaults``, ``Machine.precision``);
    ``init_from``: the base drafter's checkpoint directory of a warm start. Checkpoints come every tenth and
    validations every quarter of the steps (at least 10 steps apart) unless the recipe says. With a time
    budget the budget is the schedule: the trainer fits warm-up and decay into it (``Budget``), capped by
    max_steps / epochs only where the recipe gives them, and the intervals follow the horizon it sets.
    Raises TrainError("invalid_train_config") if the result is not a usable TrainConfig."""
    auto = machine.defaults
    budget = _given(recipe.time_budget_s, None)
    if budget is None:
        max_steps: int | None = int(_given(recipe.max_steps, auto.max_steps))
        checkpoint_every: int | None = max(10, max_steps // 10)
        validate_every: int | None = max(10, max_steps // 4)
    else:  # None: a tenth / a quarter of the horizon the budget sets
        max_steps, checkpoint_every, validate_every = _given(recipe.max_steps, None), None, None
    precision = {"loss_matmul_dtype": machine.precision, "compute_dtype": machine.precision}
    tunables = {k: getattr(recipe, k) for k in TUNABLES if getattr(recipe, k) != "auto"}
    if budget is not None:
        tunables.setdefault("epochs", None)  # no epoch cap unless the recipe gives one
    cfg = TrainConfig(
        max_steps=max_steps,
        time_budget_s=budget,
        lr=float(_given(recipe.lr, auto.lr)),
        num_anchors=int(_given(recipe.num_anchors, auto.num_anchors)),
        seed=resolved_seed(recipe),
        tokens_per_batch=int(_given(recipe.tokens_per_batch, auto.tokens_per_batch)),
        val_max_seqs=_given(recipe.val_max_seqs, auto.val_max_seqs),
        checkpoint_every=_given(recipe.checkpoint_every, checkpoint_every),
        validate_every=_given(recipe.validate_every, validate_every),
        init_from=init_from,
        lora=dict(LORA_DEFAULTS) if recipe.mode == "lora" else None,
        **{**precision, **tunables},
    )
    cfg.validate()
    drafter: dict[str, Any] = {"num_hidden_layers": int(_given(recipe.num_draft_layers, auto.num_draft_layers))}
    drafter.update({k: getattr(recipe, k) for k in DRAFTER_SHAPE if getattr(recipe, k) != "auto"})
    return ResolvedRecipe(cfg, drafter, _given(recipe.max_train_tokens, auto.max_train_tokens))
