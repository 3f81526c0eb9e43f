"""Fine-tune a DSpark drafter against a frozen target (docs/dspark.md 2-4, 8).

One entry point for every scale: ``train(...)`` in-process (CPU demo, tests, workers) and
``python -m drafters.train ...`` (also under ``torchrun``: WORLD_SIZE > 1 starts data parallelism over
``gloo``/``nccl`` from the same code path). Two data-parallel modes (``TrainConfig.parallel``, CLI
``--parallel``): "ddp" (default) replicates the drafter and its AdamW state on every rank and all-reduces
gradients by hand; "fsdp" shards the drafter's trainable weights, gradients and AdamW state over the ranks
with PyTorch FSDP2 (``fully_shard``; the frozen embed_tokens / lm_head stay replicated), for drafters whose
training state does not fit one GPU. Both modes compute the same update and write the same files.

What one optimizer step does:
1. Take the next ``world_size * grad_accum`` micro-batches of the epoch plan (sequences shuffled with
   ``seed + epoch``, bucketed by length and packed so that B * T_max <= ``tokens_per_batch``); rank r gets
   micro-batches r, r + W, ... so the data position is a single global counter (exact resume, and the same
   global batch whatever W x grad_accum split is used).
2. Sample anchors per sequence (docs/dspark.md 2.4) with per-segment weights on the first predicted token, from a
   generator seeded by (seed, epoch, sequence index): no RNG stream has to be carried across steps.
3. Compute the loss denominator sum W of the WHOLE step first (all micro-batches, all-reduced over ranks), then
   run each micro-batch: target features (online under no_grad, or from the on-disk cache), ``dspark_loss``
   with that global denominator, backward. Gradients are summed over micro-batches and all-reduced (SUM) over
   ranks, which makes the update the exact global weighted mean of docs/dspark.md 2.2 (DeepSpec divides by the
   all-reduced denominator times world size and lets DDP average: the same quantity). Under FSDP each
   micro-batch's backward reduce-scatters (SUM, fp32) into the rank's gradient shard instead: the same sum.
4. Clip (``max_grad_norm``, the global norm over all ranks' shards under FSDP), AdamW on fp32 master copies
   of the trainable parameters (embed/lm_head frozen), copy back if the model is bf16 (under FSDP the fp32
   shards are the masters and MixedPrecisionPolicy gathers them in bf16 for compute); learning rate =
   linear warmup then cosine decay to 0 (docs/dspark.md 4.2). Under a time budget the schedule's length is
   estimated from the measured step time so that warm-up and decay end with the budget (``Schedule``,
   ``Budget`` in ``config``), and kept in the checkpoint.

Checkpoints ``out_dir/step_XXXXXX/`` = the DeepSpec-native export (config.json + model.safetensors) plus
``training_state.safetensors`` (AdamW moments, fp32 master weights, RNG states) and ``training_state.json``
(step, data position, config, history); no pickle anywhere. All of it is written once, by rank 0, as whole
(unsharded) tensors: under FSDP the export is gathered and the optimizer state is gathered one tensor at a
time, and on resume each rank reads the file lazily and keeps its own shard, so a run may resume under the
other parallel mode (with the same world size and grad_accum, which resume checks).
``out_dir/best/`` holds the export with the highest validation expected accepted length (``best.json`` says
which step). Resume (``resume=True``) continues exactly from ``out_dir/latest.json``; warm start
(``TrainConfig.init_from``) only loads drafter weights and starts a fresh optimizer and schedule.

Files: ``config`` (TrainConfig, the LR schedule and its time-budget horizon), ``resolve`` (a job's recipe
for this machine: the CPU and GPU "auto" tables), ``data`` (sequences, packing, the epoch plan, anchors,
segment weights, a step's micro-batches), ``features`` (the target feature cache), ``parallel`` (process
group, DDP all-reduce, FSDP2 sharding), ``optim`` (the drafter's parallel form, master weights, AdamW, one
update), ``state`` (checkpoints, best export, resume), ``progress`` (reports, result, measured pace),
``loop`` (``train``), ``cli`` (the command line).
"""

from drafters.recipe import SEGMENT_VALUES
from drafters.train.cli import main
from drafters.train.config import PARALLEL_MODES, TrainConfig, TrainError, lr_factor
from drafters.train.features import FeatureCache, feature_bytes_per_token
from drafters.train.loop import train
from drafters.train.parallel import REPLICATED_BYTES_PER_PARAM, choose_parallel
from drafters.train.progress import TrainProgress, TrainResult
from drafters.train.state import BEST, BEST_JSON, LATEST, STATE_JSON, STATE_TENSORS, load_drafter_weights

__all__ = [
    "BEST",
    "BEST_JSON",
    "LATEST",
    "PARALLEL_MODES",
    "REPLICATED_BYTES_PER_PARAM",
    "SEGMENT_VALUES",
    "STATE_JSON",
    "STATE_TENSORS",
    "FeatureCache",
    "TrainConfig",
    "TrainError",
    "TrainProgress",
    "TrainResult",
    "choose_parallel",
    "feature_bytes_per_token",
    "load_drafter_weights",
    "lr_factor",
    "main",
    "train",
]
