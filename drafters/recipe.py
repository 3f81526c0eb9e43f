"""The fine-tuning recipe, defined once: the typed settings a job asks for, and the value types (with their
bounds) that both the recipe and the trainer's ``TrainConfig`` check against.

Torch-free and light: the API imports ``Recipe`` as the ``recipe`` field of a job request, so a value out of
bounds is a 422 at submission; the training stage reads the stored spec back as a ``StageRecipe`` and
resolves it for its machine (``drafters.train.resolve``: what every ``"auto"`` becomes on a CPU or a GPU);
the trainer validates its ``TrainConfig`` with the same types, whichever way it was built (the torchrun
command line takes no recipe). Every setting defaults to ``"auto"``; docs/dspark.md sections 4 and 8 give
the meaning and the reference values of each.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from drafters.errors import TracedraftError
from drafters.segments import Segment

Auto = Literal["auto"]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
Fraction = Annotated[float, Field(ge=0, lt=1)]  # warmup_ratio, LoRA dropout
PositiveIntOrAuto = PositiveInt | Auto
PositiveFloatOrAuto = PositiveFloat | Auto

#: Precision of a class of matrix products (loss matmuls, the drafter's compute): "auto" = the machine's rule.
Precision = Literal["auto", "float32", "bfloat16"]
#: How a multi-process run holds the drafter: replicated ("ddp") or sharded ("fsdp"); "auto" picks by memory.
ParallelMode = Literal["auto", "ddp", "fsdp"]
#: The Markov head's recurrence over the block (docs/dspark.md 1.5).
MarkovHeadType = Literal["vanilla", "gated", "rnn"]

# Segment names -> label values (drafters.segments), to resolve the names in TrainConfig.segment_weights.
SEGMENT_VALUES = {segment.name: int(segment) for segment in Segment}


def _known_segments(weights: dict[str | int, float]) -> dict[str | int, float]:
    names = [k for k in weights if isinstance(k, str) and not k.isdigit()]
    unknown = [k for k in names if k.upper() not in SEGMENT_VALUES]
    if unknown:
        raise ValueError(f"unknown segment {unknown[0]!r}; known: {sorted(SEGMENT_VALUES)}")
    return weights


#: Anchor sampling weight per segment name (any case) or value: finite, >= 0.
SegmentWeights = Annotated[dict[str | int, Annotated[float, Field(ge=0, allow_inf_nan=False)]],
                           AfterValidator(_known_segments)]

#: Target features: cached on disk ("on"), computed per micro-batch ("off"), or cached when they fit ("auto").
FeatureCacheMode = Literal["auto", "on", "off"]

#: A new drafter's backbone: from the target's own layers ("target"), at random ("random"), or from the
#: target when the shapes allow it ("auto"; drafters/dspark/target_init.py).
DrafterInit = Literal["auto", "target", "random"]


class Recipe(BaseModel):
    """Fine-tuning recipe; every field defaults to ``auto`` (docs/dspark.md for the meaning of each)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["auto", "full", "lora"] = Field(
        default="auto", description="'full' fine-tunes every drafter weight (docs/dspark.md 8.5); 'lora' trains peft "
        "LoRA adapters (r 16, alpha 32) on the backbone and fc plus the Markov and confidence heads, merged "
        "before export. 'auto' = 'full'.")
    epochs: PositiveFloatOrAuto = "auto"
    max_steps: PositiveIntOrAuto = "auto"
    time_budget_s: PositiveFloatOrAuto = "auto"
    lr: PositiveFloatOrAuto = "auto"
    warmup_ratio: Fraction | Auto = "auto"
    weight_decay: NonNegativeFloat | Auto = "auto"
    max_grad_norm: PositiveFloatOrAuto = "auto"
    grad_accum: PositiveIntOrAuto = "auto"
    tokens_per_batch: PositiveIntOrAuto = "auto"
    num_anchors: PositiveIntOrAuto = "auto"
    block_size: Annotated[int, Field(ge=1, le=64)] | Auto = "auto"
    num_draft_layers: Annotated[int, Field(ge=1, le=64)] | Auto = "auto"
    target_layer_ids: list[NonNegativeInt] | Auto = "auto"
    markov_rank: PositiveIntOrAuto = "auto"
    markov_head_type: MarkovHeadType | Auto = "auto"
    loss_decay_gamma: PositiveFloatOrAuto = "auto"
    segment_weights: SegmentWeights | Auto = "auto"
    checkpoint_every: PositiveIntOrAuto = "auto"
    validate_every: PositiveIntOrAuto = "auto"
    keep_last: PositiveIntOrAuto = "auto"
    seed: NonNegativeInt | Auto = "auto"
    drafter_init: DrafterInit = Field(
        default="auto",
        description="How a new drafter's backbone starts (a warm start takes the base drafter's weights instead): "
                    "'target' copies the target layers right after the deepest selected one, fc picking that "
                    "layer's output (faster to train: docs/dspark.md 1.1); 'random' draws normal(0, 0.02); "
                    "'auto' = 'target' when the drafter's shapes match the target's layers, else 'random'.")
    history_anchors: bool | Auto = Field(
        default="auto",
        description="Anchor draft blocks also on the earlier assistant turns that each training call's context "
                    "holds (tool calls and arguments as recorded, trained against the target's distribution), "
                    "not only on the call's own answer (docs/dspark.md 2.4). 'auto' = off.")
    loss_matmul_dtype: Precision = Field(
        default="auto",
        description="Precision of the loss's vocabulary-sized matmuls (softmax and loss terms are always fp32): "
                    "'auto' = bfloat16 on GPUs and on CPUs with native bf16, else float32.")
    compute_dtype: Precision = Field(
        default="auto",
        description="Precision of the drafter's own matmuls (backbone, fc, heads); weights, gradients and "
                    "optimizer state stay fp32 on CPU: 'bfloat16' trains under bf16 autocast (mixed precision). "
                    "'auto' = bfloat16 on CPUs with native bf16 (on GPUs the drafter's weights are bf16 already), "
                    "else float32.")
    parallel: ParallelMode = Field(
        default="auto",
        description="Multi-process data parallelism: 'ddp' replicates the drafter on every process, 'fsdp' "
                    "shards its weights and optimizer state (FSDP2). Takes effect only when training runs "
                    "under torchrun (python -m drafters.train); a stage worker trains in one process. "
                    "'auto' = 'fsdp' when the replicated training state would take over 40% of the free GPU "
                    "memory, else 'ddp'.")


class StageRecipe(Recipe):
    """The recipe as the training stage reads a stored job spec: ``Recipe`` plus settings the API does not
    take, which in-process callers (the embedded run, tests, benchmarks) may store in a spec directly.

    ``target_dtype``: the frozen target's precision while training ("auto": bf16 on a CPU with native bf16,
    else the loader's default). ``val_max_seqs``: validation sequences scored during training.
    ``max_train_tokens``: token budget of the training set ("auto" on a GPU: all of it). ``feature_cache``: see
    ``FeatureCacheMode``. ``mask_token_id``: the drafter's mask token ("auto": chosen from the tokenizer).
    """

    target_dtype: Precision = "auto"
    val_max_seqs: PositiveIntOrAuto = "auto"
    max_train_tokens: PositiveIntOrAuto = "auto"
    feature_cache: FeatureCacheMode = "auto"
    mask_token_id: NonNegativeInt | Auto = "auto"

    @classmethod
    def from_spec(cls, recipe: dict[str, Any] | None) -> StageRecipe:
        """The ``recipe`` object of a stored job spec, typed. Null values count as unset (the embedded run
        stores them). Raises TracedraftError("invalid_recipe", where="recipe.<field>") for a value the
        recipe does not allow."""
        try:
            return cls.model_validate({k: v for k, v in (recipe or {}).items() if v is not None})
        except ValidationError as exc:
            err = exc.errors()[0]
            where = f"recipe.{err['loc'][0]}"  # the field (the rest of loc names union members)
            raise TracedraftError("invalid_recipe", f"{where}: {err['msg']}, got {err['input']!r}",
                                  where) from None
