"""Fine-tune a DSpark drafter against a frozen target (DSPARK.md 2-4, 8).

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
2. Sample anchors per sequence (DSPARK.md 2.4) with per-segment weights on the first predicted token, from a
   generator seeded by (seed, epoch, sequence index): no RNG stream has to be carried across steps.
3. Compute the loss denominator sum W of the WHOLE step first (all micro-batches, all-reduced over ranks), then
   run each micro-batch: target features (online under no_grad, or from the on-disk cache), ``dspark_loss``
   with that global denominator, backward. Gradients are summed over micro-batches and all-reduced (SUM) over
   ranks, which makes the update the exact global weighted mean of DSPARK.md 2.2 (DeepSpec divides by the
   all-reduced denominator times world size and lets DDP average: the same quantity). Under FSDP each
   micro-batch's backward reduce-scatters (SUM, fp32) into the rank's gradient shard instead: the same sum.
4. Clip (``max_grad_norm``, the global norm over all ranks' shards under FSDP), AdamW on fp32 master copies
   of the trainable parameters (embed/lm_head frozen), copy back if the model is bf16 (under FSDP the fp32
   shards are the masters and MixedPrecisionPolicy gathers them in bf16 for compute); learning rate =
   linear warmup then cosine decay to 0 (DSPARK.md 4.2).

Checkpoints ``out_dir/step_XXXXXX/`` = the DeepSpec-native export (config.json + model.safetensors) plus
``training_state.safetensors`` (AdamW moments, fp32 master weights, RNG states) and ``training_state.json``
(step, data position, config, history); no pickle anywhere. All of it is written once, by rank 0, as whole
(unsharded) tensors: under FSDP the export is gathered and the optimizer state is gathered one tensor at a
time, and on resume each rank reads the file lazily and keeps its own shard, so a run may resume under the
other parallel mode (with the same world size and grad_accum, which resume checks).
``out_dir/best/`` holds the export with the highest validation expected accepted length (``best.json`` says
which step). Resume (``resume=True``) continues exactly from ``out_dir/latest.json``; warm start
(``TrainConfig.init_from``) only loads drafter weights and starts a fresh optimizer and schedule.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import math
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from drafters.cpu_memory import reuse_freed_memory
from drafters.dspark.anchors import sample_anchors
from drafters.dspark.losses import dspark_loss, position_weights, slot_validity
from drafters.errors import TracedraftError

STATE_JSON = "training_state.json"
STATE_TENSORS = "training_state.safetensors"
LATEST = "latest.json"
BEST = "best"
BEST_JSON = "best.json"
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


@dataclass
class TrainProgress:
    """One progress report (after every ``log_every`` steps, after validation, during cache building).

    phase: "cache" | "validate" | "train" | "done"; step/total_steps: optimizer steps; loss/ce/l1/conf:
    global weighted means of the last step (DSPARK.md 2.2); lr; grad_norm (before clipping); tokens_per_s:
    real (non-pad) training tokens per second over all ranks, averaged since the run (re)started; eta_s:
    seconds to max_steps at that rate (or to the time budget, whichever is sooner); val_expected_tau: the
    latest validation expected accepted length (bonus token included), best_expected_tau the best so far.
    """

    phase: str
    step: int
    total_steps: int
    epoch: float = 0.0
    loss: float | None = None
    ce: float | None = None
    l1: float | None = None
    conf: float | None = None
    lr: float | None = None
    grad_norm: float | None = None
    tokens_per_s: float | None = None
    eta_s: float | None = None
    elapsed_s: float = 0.0
    val_expected_tau: float | None = None
    best_expected_tau: float | None = None
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class TrainResult:
    """Outcome of ``train``: best_dir (export with the best validation expected tau; the last export when
    there is no validation set), last_dir (latest step checkpoint), steps done, cancelled (stopped by
    should_stop/SIGTERM), stop_reason ("max_steps" | "time_budget" | "cancelled"), history (one dict per
    logged step and per validation), best_expected_tau, initial_expected_tau (step 0 or the resumed
    step), feature_cache (how features were produced: {"mode", "dir", "bytes", "estimate_bytes"}),
    parallel ("single" | "ddp" | "fsdp": how the run actually held the drafter)."""

    best_dir: Path | None
    last_dir: Path | None
    steps: int
    cancelled: bool
    history: list[dict[str, Any]]
    stop_reason: str = "max_steps"
    best_expected_tau: float | None = None
    initial_expected_tau: float | None = None
    feature_cache: dict[str, Any] = field(default_factory=dict)
    parallel: str = "single"

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["best_dir"] = str(self.best_dir) if self.best_dir else None
        d["last_dir"] = str(self.last_dir) if self.last_dir else None
        return d


# =============================================================================================== helpers
def _seed_mix(*parts: int) -> int:
    """A 63-bit seed from integers (stable across processes and Python versions, unlike hash())."""
    h = hashlib.blake2b(",".join(str(int(p)) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & ((1 << 63) - 1)


def lr_factor(step: int, total: int, warmup_ratio: float) -> float:
    """LR multiplier of optimizer step ``step`` (0-based): (step+1)/warmup during warmup, then cosine to 0
    over the remaining steps (DSPARK.md 4.2, DeepSpec ``optim.py``)."""
    warmup = int(warmup_ratio * total)
    if step < warmup:
        return (step + 1) / warmup
    rest = max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, (step - warmup) / rest)))


def _resolve_segment_weights(sw: dict[str | int, float]) -> torch.Tensor:
    """Per-segment-value weight table [16] fp32 (unlisted segments weigh 1)."""
    table = torch.ones(16, dtype=torch.float32)
    for k, w in sw.items():
        v = SEGMENT_VALUES[k.upper()] if isinstance(k, str) and not k.isdigit() else int(k)
        table[v] = float(w)
    return table


@dataclass
class _Seq:
    """A training/validation sequence as tensors (truncated to max_seq_len)."""

    ids: torch.Tensor  # long [T]
    mask: torch.Tensor  # long [T] 0/1
    seg: torch.Tensor  # long [T]
    key: str  # feature-cache key ("t12", "v3")


def _to_seqs(seqs: Sequence[Any], max_len: int, prefix: str) -> list[_Seq]:
    out = []
    for i, s in enumerate(seqs):
        n = min(len(s.input_ids), max_len)
        seg = list(s.segments)[:n] if getattr(s, "segments", None) else [4] * n
        if len(s.loss_mask) < n or len(seg) < n:
            raise TrainError("bad_sequence", f"sequence {i} has loss_mask/segments shorter than input_ids",
                             f"{prefix}_seqs[{i}]")
        out.append(_Seq(torch.tensor(list(s.input_ids)[:n], dtype=torch.long),
                        torch.tensor(list(s.loss_mask)[:n], dtype=torch.long),
                        torch.tensor(seg, dtype=torch.long), f"{prefix}{i}"))
    return out


def _pack(order: list[int], lengths: list[int], budget: int, bucket: int = 64) -> list[list[int]]:
    """Group sequence indices into micro-batches with B * T_max <= budget: windows of ``bucket`` indices
    (in the given order) are sorted by length and cut greedily, so padding stays small."""
    batches: list[list[int]] = []
    for s in range(0, len(order), bucket):
        window = sorted(order[s: s + bucket], key=lambda i: (lengths[i], i))
        cur: list[int] = []
        tmax = 0
        for i in window:
            t = max(tmax, lengths[i])
            if cur and t * (len(cur) + 1) > budget:
                batches.append(cur)
                cur, t = [], lengths[i]
            cur.append(i)
            tmax = t
        if cur:
            batches.append(cur)
    return batches


class _Plan:
    """The deterministic sequence of micro-batches over epochs (a pure function of seed and data)."""

    def __init__(self, lengths: list[int], budget: int, seed: int):
        self.lengths, self.budget, self.seed = lengths, budget, seed
        self._epochs: list[list[list[int]]] = []

    def epoch(self, e: int) -> list[list[int]]:
        while len(self._epochs) <= e:
            k = len(self._epochs)
            g = torch.Generator().manual_seed(_seed_mix(self.seed, k, 1))
            order = torch.randperm(len(self.lengths), generator=g).tolist()
            batches = _pack(order, self.lengths, self.budget)
            perm = torch.randperm(len(batches), generator=g).tolist()  # no long-to-short drift in an epoch
            self._epochs.append([batches[j] for j in perm])
        return self._epochs[e]

    def locate(self, g: int) -> tuple[int, list[int]]:
        """Global micro-batch index -> (epoch, sequence indices)."""
        e = 0
        while g >= len(self.epoch(e)):
            g -= len(self.epoch(e))
            e += 1
        return e, self.epoch(e)[g]


def _collate(items: list[_Seq]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ids [B,T], loss_mask [B,T], segments [B,T] (pad id 0, mask 0: pads are never anchors
    or targets, and causal attention keeps real positions unaffected by trailing pads)."""
    T = max(len(s.ids) for s in items)
    ids = torch.zeros(len(items), T, dtype=torch.long)
    mask = torch.zeros_like(ids)
    seg = torch.zeros_like(ids)
    for b, s in enumerate(items):
        n = len(s.ids)
        ids[b, :n], mask[b, :n], seg[b, :n] = s.ids, s.mask, s.seg
    return ids, mask, seg


def _anchors(mask: torch.Tensor, seg: torch.Tensor, num: int, seeds: list[int], table: torch.Tensor | None):
    """Anchors [B,N] and keep [B,N]; the weight of anchor p is that of the segment of token p+1."""
    anchors, keeps = [], []
    for b in range(mask.shape[0]):
        w = None
        if table is not None:
            w = torch.ones(mask.shape[1])
            w[:-1] = table[seg[b, 1:].clamp(0, 15)]
        a, k = sample_anchors(mask[b], num, torch.Generator().manual_seed(seeds[b]), w)
        anchors.append(a)
        keeps.append(k)
    return torch.stack(anchors), torch.stack(keeps)


# =============================================================================================== features
def feature_bytes_per_token(hidden_size: int, num_aux_layers: int, bytes_per_el: int = 4) -> int:
    """Cache bytes per token: ids int32 + loss mask + segment uint8 (6 B) plus (m + 1) hidden vectors
    (m selected layers and the final hidden): 6 + bytes * d * (m + 1) (DSPARK.md 3.4; fp32 on CPU)."""
    return 6 + bytes_per_el * hidden_size * (num_aux_layers + 1)


class FeatureCache:
    """On-disk target features: safetensors shards + ``manifest.json`` (DSPARK.md 3.4, our layout).

    Per sequence key k: ``aux.k`` [T, m*d], ``last.k`` [T, d] (the target dtype), ``ids.k`` int32 [T],
    ``mask.k`` / ``seg.k`` uint8 [T]. The manifest records the fingerprint (target identity, layer ids,
    dtype, sequences), the shard of each key and the byte size; a directory whose manifest matches is reused.
    """

    VERSION = 1

    def __init__(self, root: Path, manifest: dict[str, Any]):
        self.root = root
        self.manifest = manifest
        self._handles: dict[str, Any] = {}

    @staticmethod
    def fingerprint(target: Any, layer_ids: list[int], seqs: list[_Seq]) -> str:
        h = hashlib.sha256()
        info = {"name": getattr(target, "name", None), "sha": getattr(target, "source_sha256", None),
                "L": target.num_layers, "d": target.hidden_size, "dtype": str(target.dtype),
                "layers": list(layer_ids), "v": FeatureCache.VERSION}
        h.update(json.dumps(info, sort_keys=True).encode())
        if getattr(target, "source_sha256", None) is None:  # in-memory target: hash its weights' values
            for p in list(target.model.parameters())[:4]:
                h.update(p.detach().float().cpu().numpy().tobytes()[:65536])
        for s in seqs:
            h.update(s.key.encode() + s.ids.numpy().astype("int32").tobytes() + s.mask.numpy().tobytes())
        return h.hexdigest()

    @classmethod
    def open_or_build(cls, root: Path, target: Any, layer_ids: list[int], seqs: list[_Seq], budget: int,
                      report: Callable[[int, int], None] | None = None,
                      shard_bytes: int = 256 << 20) -> FeatureCache:
        """Reuse ``root`` if its manifest fingerprint matches, else (re)build it (atomically via a tmp dir)."""
        fp = cls.fingerprint(target, layer_ids, seqs)
        mf = root / "manifest.json"
        if mf.is_file():
            m = json.loads(mf.read_text())
            if m.get("fingerprint") == fp and m.get("complete"):
                return cls(root, m)
        tmp = root.with_name(root.name + f".tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        where: dict[str, str] = {}
        shards: list[str] = []
        buf: dict[str, torch.Tensor] = {}
        buf_bytes = total = 0

        def flush() -> None:
            nonlocal buf, buf_bytes
            if buf:
                name = f"shard-{len(shards):05d}.safetensors"
                save_file(buf, str(tmp / name))
                for k in buf:
                    if k.startswith("aux."):
                        where[k[4:]] = name
                shards.append(name)
                buf, buf_bytes = {}, 0

        lengths = [len(s.ids) for s in seqs]
        batches = _pack(list(range(len(seqs))), lengths, budget)
        done = 0
        for bidx in batches:
            items = [seqs[i] for i in bidx]
            ids, _, _ = _collate(items)
            aux, last = target.features(ids, layer_ids)
            for b, s in enumerate(items):
                n = len(s.ids)
                # stored in the target's dtype: what it computed (a bf16 target's features handed out as fp32
                # are bf16 values), so the file is exact at half an fp32 copy's size, as estimated
                t = {f"aux.{s.key}": aux[b, :n].to(target.dtype).cpu().contiguous(),
                     f"last.{s.key}": last[b, :n].to(target.dtype).cpu().contiguous(),
                     f"ids.{s.key}": s.ids.to(torch.int32), f"mask.{s.key}": s.mask.to(torch.uint8),
                     f"seg.{s.key}": s.seg.to(torch.uint8)}
                nb = sum(x.numel() * x.element_size() for x in t.values())
                buf.update(t)
                buf_bytes += nb
                total += nb
                if buf_bytes >= shard_bytes:
                    flush()
            done += len(items)
            if report:
                report(done, len(seqs))
        flush()
        manifest = {"version": cls.VERSION, "fingerprint": fp, "layer_ids": list(layer_ids),
                    "hidden_size": target.hidden_size, "dtype": str(target.dtype).removeprefix("torch."),
                    "target": {"name": getattr(target, "name", None),
                               "source_sha256": getattr(target, "source_sha256", None)},
                    "num_sequences": len(seqs), "shards": shards, "where": where, "bytes": total,
                    "complete": True}
        (tmp / "manifest.json").write_text(json.dumps(manifest))
        shutil.rmtree(root, ignore_errors=True)
        tmp.rename(root)
        return cls(root, manifest)

    def get(self, items: list[_Seq], device: torch.device, dtype: torch.dtype):
        """Right-padded (aux [B,T,m*d], last [B,T,d]) for ``items`` (zeros on pads)."""
        T = max(len(s.ids) for s in items)
        auxs, lasts = [], []
        for s in items:
            shard = self.manifest["where"][s.key]
            h = self._handles.get(shard)
            if h is None:
                h = self._handles[shard] = safe_open(str(self.root / shard), framework="pt")
            auxs.append(h.get_tensor(f"aux.{s.key}"))
            lasts.append(h.get_tensor(f"last.{s.key}"))
        aux = torch.zeros(len(items), T, auxs[0].shape[-1], dtype=dtype)
        last = torch.zeros(len(items), T, lasts[0].shape[-1], dtype=dtype)
        for b, (a, la) in enumerate(zip(auxs, lasts)):
            aux[b, : a.shape[0]] = a
            last[b, : la.shape[0]] = la
        return aux.to(device), last.to(device)


# =============================================================================================== checkpoints
def _export_drafter(drafter: Any, out: Path) -> None:
    """The DeepSpec-native export (config.json + model.safetensors, SERVING.md 2); LoRA adapters are
    merged into a copy first so engines load a plain drafter."""
    if _has_lora(drafter):
        from drafters.dspark.lora import merge_lora

        drafter = merge_lora(drafter)
    try:
        from drafters.dspark.checkpoint import save_checkpoint
    except ImportError:  # checkpoint module not there yet: same layout written directly
        save_checkpoint = None
    if save_checkpoint is not None:
        save_checkpoint(drafter, out)
        return
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(drafter.config.to_deepspec_dict(), indent=2))
    sd = {k: v.detach().cpu().contiguous() for k, v in drafter.state_dict().items()
          if not k.startswith(("embed_tokens.", "lm_head."))}
    save_file(sd, str(out / "model.safetensors"))


def _has_lora(drafter: Any) -> bool:
    return any("lora_" in n for n, _ in drafter.named_parameters())


def _model_state(drafter: Any) -> dict[str, torch.Tensor]:
    """Unmerged drafter state without the frozen target copies (what a LoRA resume needs)."""
    return {k: v for k, v in drafter.state_dict().items() if not k.startswith(("embed_tokens.", "lm_head."))}


def _trainable(drafter: Any) -> list[tuple[str, torch.nn.Parameter]]:
    return [(n, p) for n, p in drafter.named_parameters() if p.requires_grad]


def load_drafter_weights(drafter: Any, ckpt_dir: str | Path) -> list[str]:
    """Load a checkpoint's trainable weights into ``drafter`` in place (warm start / resume).

    Reads ``model.safetensors`` of a DeepSpec-native export; embed_tokens/lm_head stay the target's.
    Returns the loaded names. Raises TrainError(code="checkpoint_mismatch") naming the tensor whose name or
    shape differs, "checkpoint_not_found" when the directory has no model.safetensors.
    """
    path = Path(ckpt_dir) / "model.safetensors"
    if not path.is_file():
        raise TrainError("checkpoint_not_found", f"no model.safetensors in {ckpt_dir}", str(ckpt_dir))
    sd = load_file(str(path))
    loaded = []
    with torch.no_grad():
        for name, p in _trainable(drafter):
            if name not in sd:
                raise TrainError("checkpoint_mismatch", f"{path} lacks tensor {name}", name)
            if tuple(sd[name].shape) != tuple(p.shape):
                raise TrainError("checkpoint_mismatch", f"tensor {name} has shape {tuple(sd[name].shape)} in "
                                 f"{path}, the drafter expects {tuple(p.shape)}", name)
            p.copy_(sd[name].to(p.dtype))
            loaded.append(name)
    return loaded


# =============================================================================================== distributed
class _Dist:
    def __init__(self) -> None:
        self.on = dist.is_available() and dist.is_initialized()
        self.rank = dist.get_rank() if self.on else 0
        self.world = dist.get_world_size() if self.on else 1

    def sum_(self, t: torch.Tensor) -> torch.Tensor:
        if self.on and self.world > 1:
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t

    def any(self, flag: bool, device: torch.device) -> bool:
        if not (self.on and self.world > 1):
            return flag
        t = torch.tensor([1.0 if flag else 0.0], device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item() > 0)

    def barrier(self) -> None:
        if self.on and self.world > 1:
            dist.barrier()

    def sum_grads(self, params: list[torch.Tensor]) -> None:
        """SUM-all-reduce gradients in one flat buffer (the loss already carries the global denominator)."""
        if not (self.on and self.world > 1):
            return
        grads = [p.grad for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        o = 0
        for g in grads:
            n = g.numel()
            g.copy_(flat[o: o + n].view_as(g))
            o += n


class _LossUnit(torch.nn.Module):
    """The module FSDP2 shards (``parallel="fsdp"``): its forward is the whole DSpark loss of a micro-batch.

    FSDP2 all-gathers a unit's weights in a pre-forward hook and reduce-scatters their gradients from
    backward hooks, so every read of a sharded weight must happen inside the forward of the unit that owns
    it. The drafter's training forward calls layer methods (``q``, ``kv``, ``finish``) rather than layer
    ``forward``s, and ``dspark_loss`` reads the Markov head's W2 weight directly; one unit around the whole
    loss covers all of these uses. Consequence: during a micro-batch's forward/backward all trainable
    weights are gathered (in the compute dtype), while between steps weights (fp32), gradients and AdamW
    moments stay sharded, 1/W per rank. The frozen embed_tokens / lm_head (the target's tensors) are
    ``ignored_params``: replicated, never gathered, never given gradients.

    forward(ids [B,T] long, mask [B,T], aux [B,T,m*d], last [B,T,d], anchors [B,N], keep [B,N],
    denom [] fp32 global weight sum) -> (total, ce, l1, conf) 0-dim tensors; a tuple of tensors because FSDP
    attaches its pre-backward hook to tensor outputs.
    """

    def __init__(self, drafter: Any, anchor_chunk: int, matmul_dtype: torch.dtype = torch.float32):
        super().__init__()
        self.drafter = drafter
        self.anchor_chunk = anchor_chunk
        self.matmul_dtype = matmul_dtype

    def forward(self, ids, mask, aux, last, anchors, keep, denom):
        out = dspark_loss(self.drafter, ids, mask, aux, last, anchors, keep, anchor_chunk=self.anchor_chunk,
                          weight_sum=denom, matmul_dtype=self.matmul_dtype)
        return out.total, out.ce, out.l1, out.conf


#: Bytes per trainable parameter a replicated (DDP) rank holds: fp32 master + fp32 gradient + two AdamW
#: moments (16), plus the bf16 compute copy (2).
REPLICATED_BYTES_PER_PARAM = 18


def choose_parallel(n_trainable: int, free_bytes: int | None, budget: float = 0.4) -> str:
    """"auto" parallel mode (issue 6: FSDP when the drafter does not fit): "fsdp" when the replicated
    training state (``REPLICATED_BYTES_PER_PARAM`` x ``n_trainable`` bytes) would take more than ``budget``
    of the device's free memory (the rest is for the frozen target and activations), else "ddp".
    ``free_bytes`` None (CPU) -> "ddp". Example: a 5-layer Qwen3-4B drafter (~1.2e9 trainable incl. fc and
    heads) needs ~22 GB: "ddp" on an 80 GB H100 with 70 GB free, "fsdp" on a 40 GB A100."""
    if free_bytes is None:
        return "ddp"
    return "fsdp" if n_trainable * REPLICATED_BYTES_PER_PARAM > budget * free_bytes else "ddp"


def _loss_matmul_dtype(cfg: TrainConfig, drafter: Any) -> torch.dtype:
    """``cfg.loss_matmul_dtype`` resolved for this drafter ("auto": bf16 when its LM head is bf16)."""
    if cfg.loss_matmul_dtype == "auto":
        return torch.bfloat16 if drafter.lm_head.weight.dtype == torch.bfloat16 else torch.float32
    return getattr(torch, cfg.loss_matmul_dtype)


def _autocast(cfg: TrainConfig, drafter: Any, device: torch.device) -> Callable[[], Any]:
    """A factory of the context each training micro-batch's forward runs in: ``torch.autocast`` in bf16 when
    ``cfg.compute_dtype`` is "bfloat16" and the drafter's trainable weights are fp32, else a no-op."""
    fp32 = any(p.dtype == torch.float32 for p in drafter.trainable_parameters())
    if cfg.compute_dtype == "bfloat16" and fp32:
        return lambda: torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext


def _shard_fsdp(drafter: Any, device: torch.device, world: int, anchor_chunk: int,
                masters: Callable[[int], torch.Tensor] | None = None,
                matmul_dtype: torch.dtype = torch.float32) -> tuple[_LossUnit, dict[str, torch.dtype]]:
    """Shard ``drafter``'s weights (all but embed_tokens / lm_head) over the default process group with
    FSDP2, in place; returns the root unit and the original dtype of every sharded parameter by name.

    The sharded parameters are fp32 (upcast here): they are the optimizer's master weights. When the
    trainable weights were lower precision (bf16 on GPU), ``MixedPrecisionPolicy(param_dtype=that dtype,
    reduce_dtype=fp32)`` gathers them in that dtype for compute and reduce-scatters gradients in fp32, the
    FSDP form of the replicated path's "bf16 model + fp32 master copies" (DSPARK.md 8). Gradients are summed
    over ranks, not averaged: the loss already divides by the all-reduced weight sum (step 3 of the module
    docstring). ``masters(i)``, when given, returns the fp32 value of trainable parameter i (resume).
    Raises TrainError(code="invalid_train_config", where="parallel") when the trainable weights do not share
    one dtype.
    """
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    frozen = {drafter.embed_tokens.weight, drafter.lm_head.weight}
    frozen_ids = {id(p) for p in frozen}
    trainable = [p for _, p in _trainable(drafter)]
    dtypes = {p.dtype for p in trainable}
    if len(dtypes) != 1:
        raise TrainError("invalid_train_config", f"parallel='fsdp' needs one dtype for the trainable weights, "
                         f"got {sorted(str(d) for d in dtypes)}", "parallel")
    compute = dtypes.pop()
    orig: dict[str, torch.dtype] = {}
    with torch.no_grad():
        for name, p in drafter.named_parameters():
            if id(p) in frozen_ids:
                continue
            orig[name] = p.dtype
            if p.dtype != torch.float32:
                p.data = p.data.float()
        if masters is not None:
            for i, p in enumerate(trainable):
                p.copy_(masters(i).to(p.device))
    mp = MixedPrecisionPolicy(param_dtype=None if compute == torch.float32 else compute,
                              reduce_dtype=torch.float32, cast_forward_inputs=False)  # keep denom in fp32
    unit = _LossUnit(drafter, anchor_chunk, matmul_dtype)
    fully_shard(unit, mesh=init_device_mesh(device.type, (world,)), mp_policy=mp, ignored_params=frozen)
    unit.set_gradient_divide_factor(1.0)
    unit.set_force_sum_reduction_for_comms(True)  # plain SUM (gloo has no PREMUL_SUM)
    # A micro-batch without valid slots on one rank gives no gradient to the heads there (the loss is
    # 0 * sum(h)): reduce zeros for them so every rank's reduce-scatter has the same layout.
    unit.set_reduce_scatter_unused_params(True)
    _drop_fsdp_state_dict_hooks(unit)
    return unit, orig


def _drop_fsdp_state_dict_hooks(unit: _LossUnit) -> None:
    """Remove the state-dict hooks FSDP2 puts on the drafter's submodules.

    FSDP2 (torch 2.13) registers, on every module owning a sharded parameter, a pre-``state_dict`` and a
    pre-``load_state_dict`` hook that re-registers the sharded DTensors on the module. Ours is a different
    protocol: the drafter's own ``state_dict`` (the DeepSpec export, the LoRA state) is read only inside
    ``_Unsharded``, where it must see the gathered full tensors, and after training the drafter is handed
    back plain, where a leftover hook would swap the shards back in. The hooks are registered by the param
    group's lazy init (run here first; it does not register them twice). Private FSDP2 attributes: torch is
    pinned, and a missing attribute raises rather than exporting shards silently.
    """
    groups = unit._get_fsdp_state()._fsdp_param_groups
    for g in groups:
        g.lazy_init()
        for handles in (g._module_to_pre_save_state_dict_hook_handle, g._module_to_pre_load_state_dict_hook_handle):
            for h in handles.values():
                h.remove()


class _Unsharded:
    """``with _Unsharded(unit):`` the drafter holds full (gathered) weights, in the compute dtype, on every
    rank (validation, exports); resharded on exit. A no-op without FSDP. Collective: all ranks enter."""

    def __init__(self, unit: _LossUnit | None):
        self.unit = unit

    def __enter__(self) -> None:
        if self.unit is not None:
            self.unit.unshard()

    def __exit__(self, *exc: object) -> None:
        if self.unit is not None:
            self.unit.reshard()


def _gather(t: torch.Tensor) -> torch.Tensor:
    """The full value of a (possibly FSDP-sharded) tensor. Collective for a DTensor: all ranks call it."""
    from torch.distributed.tensor import DTensor

    return t.full_tensor() if isinstance(t, DTensor) else t


def _like(full: torch.Tensor, param: torch.Tensor) -> torch.Tensor:
    """``full`` (a whole tensor read from a checkpoint) laid out as ``param``: this rank's shard when the
    parameter is an FSDP DTensor (sliced locally, no communication), else unchanged."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    if not isinstance(param, DTensor):
        return full
    return distribute_tensor(full.to(param.device), param.device_mesh, param.placements, src_data_rank=None)


def _unshard_for_good(drafter: Any, orig: dict[str, torch.dtype]) -> None:
    """Replace the drafter's sharded parameters by plain full ones in their original dtypes (the trained
    drafter handed back to the caller, as the replicated path does). Collective."""
    from torch.distributed.tensor import DTensor

    with torch.no_grad():
        for name, p in list(drafter.named_parameters()):
            if not isinstance(p, DTensor):
                continue
            full = p.full_tensor().to(orig.get(name, p.dtype))
            mod_name, _, attr = name.rpartition(".")
            mod = drafter.get_submodule(mod_name) if mod_name else drafter
            setattr(mod, attr, torch.nn.Parameter(full, requires_grad=p.requires_grad))


class _StateTensors:
    """Lazy read of ``training_state.safetensors``: one tensor in memory at a time (every rank of a large
    sharded run reads the same file)."""

    def __init__(self, path: Path):
        self._f = safe_open(str(path), framework="pt")
        self._keys = set(self._f.keys())

    def __contains__(self, k: str) -> bool:
        return k in self._keys

    def __getitem__(self, k: str) -> torch.Tensor:
        if k not in self._keys:
            raise KeyError(k)
        return self._f.get_tensor(k)

    def master(self, i: int) -> torch.Tensor:
        """The fp32 master copy of trainable parameter i."""
        return self[f"master.{i}"]


# =============================================================================================== training
def train(
    target: Any,
    drafter: Any,
    train_seqs: Sequence[Any],
    val_seqs: Sequence[Any],
    cfg: TrainConfig,
    out_dir: str | Path,
    *,
    progress: Callable[[TrainProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    resume: bool = True,
    handle_sigterm: bool = False,
) -> TrainResult:
    """Train ``drafter`` on ``train_seqs`` (RenderedSequence-like: input_ids, loss_mask, segments) against
    the frozen ``target`` (drafters.target.Target); see the module docstring for one step's maths.

    Validation on ``val_seqs`` (fixed anchors) reports the expected accepted length 1 + sum_k prod c*_i
    (c* = 1 - TV, DSPARK.md 2.2) at step 0, every ``validate_every`` steps and at the end; the best is kept
    in ``out_dir/best``. ``should_stop`` is polled between steps (and SIGTERM when ``handle_sigterm``; the
    previous handler is restored on return): the run checkpoints and returns ``cancelled=True``. With
    ``resume=True`` an existing ``out_dir/latest.json`` continues that run exactly.
    Data parallel when torch.distributed is initialised (every rank calls train with the same arguments;
    rank 0 writes files and builds the feature cache while the others wait). ``cfg.parallel`` = "ddp":
    the drafter and its AdamW state are replicated on every rank. "fsdp": the drafter's weights other than
    embed_tokens / lm_head are sharded in place with FSDP2 (see ``_LossUnit``): fp32 master shards,
    gradients and AdamW moments take 1/W of their replicated size per rank, weights are gathered for each
    micro-batch's forward/backward, for validation and for exports. On return the drafter is a plain
    module again with the full trained weights in their original dtypes (on an exception under FSDP it is
    left sharded). Raises TrainError (bad config, no usable sequences, resume mismatch, feature cache over
    its limit). On CPU the whole run keeps freed memory for reuse (``drafters.cpu_memory``: process-wide
    glibc settings, restored on return).
    """
    with reuse_freed_memory(enabled=drafter.fc.weight.device.type == "cpu"):
        return _train(target, drafter, train_seqs, val_seqs, cfg, out_dir, progress=progress,
                      should_stop=should_stop, resume=resume, handle_sigterm=handle_sigterm)


def _train(target: Any, drafter: Any, train_seqs: Sequence[Any], val_seqs: Sequence[Any], cfg: TrainConfig,
           out_dir: str | Path, *, progress: Callable[[TrainProgress], None] | None, should_stop:
           Callable[[], bool] | None, resume: bool, handle_sigterm: bool) -> TrainResult:
    cfg.validate()
    out_dir = Path(out_dir)
    dd = _Dist()
    device = drafter.fc.weight.device
    mm_dtype = _loss_matmul_dtype(cfg, drafter)  # before FSDP wraps the drafter
    autocast = _autocast(cfg, drafter, device)
    gamma = drafter.config.block_size
    layer_ids = list(drafter.config.target_layer_ids)
    target.check_layer_ids(layer_ids)
    if drafter.config.hidden_size != target.hidden_size:
        raise TrainError("target_mismatch", f"drafter hidden size {drafter.config.hidden_size} != target's "
                         f"{target.hidden_size}", "hidden_size")
    max_len = min(cfg.max_seq_len or cfg.tokens_per_batch, cfg.tokens_per_batch)
    tr_all = _to_seqs(train_seqs, max_len, "t")
    from drafters.dspark.anchors import anchor_candidates

    tr = [s for s in tr_all if bool(anchor_candidates(s.mask).any())]
    if not tr:
        raise TrainError("no_training_data", f"none of the {len(tr_all)} training sequences has a supervised "
                         "token pair to anchor on (loss_mask[p] = loss_mask[p+1] = 1)", "train_seqs")
    va = _to_seqs(val_seqs[: cfg.val_max_seqs] if cfg.val_max_seqs else val_seqs, max_len, "v")
    va = [s for s in va if bool(anchor_candidates(s.mask).any())]
    seg_table = _resolve_segment_weights(cfg.segment_weights)
    seg_table_or_none = None if bool((seg_table == 1).all()) else seg_table
    per_step = dd.world * cfg.grad_accum
    plan = _Plan([len(s.ids) for s in tr], cfg.tokens_per_batch, cfg.seed)
    if cfg.max_steps is not None:
        total = int(cfg.max_steps)
    else:
        total = max(1, int(cfg.epochs * len(plan.epoch(0)) // per_step))
    t_start = time.perf_counter()
    history: list[dict[str, Any]] = []

    def emit(p: TrainProgress) -> None:
        p.elapsed_s = round(time.perf_counter() - t_start, 3)
        if progress is not None and dd.rank == 0:
            progress(p)

    # ---------------------------------------------------------------- features
    fc_info: dict[str, Any] = {"mode": "online"}
    cache: FeatureCache | None = None
    if cfg.feature_cache != "off":
        el = 4 if target.dtype == torch.float32 else torch.finfo(target.dtype).bits // 8
        bpt = feature_bytes_per_token(target.hidden_size, len(layer_ids), el)
        est = bpt * sum(len(s.ids) for s in tr + va)
        fc_info.update(estimate_bytes=est, bytes_per_token=bpt, limit_bytes=cfg.feature_cache_max_bytes)
        if est > cfg.feature_cache_max_bytes:
            if cfg.feature_cache == "on":
                raise TrainError(
                    "feature_cache_too_large",
                    f"the feature cache would need {est / 2**20:.1f} MiB ({bpt} B/token x "
                    f"{est // bpt} tokens) but feature_cache_max_bytes is {cfg.feature_cache_max_bytes / 2**20:.1f}"
                    " MiB; raise the limit or use feature_cache='off' (online target features)",
                    "feature_cache_max_bytes",
                )
        else:
            root = Path(cfg.feature_cache_dir) if cfg.feature_cache_dir else out_dir / "feature_cache"
            if dd.rank == 0:
                cache = FeatureCache.open_or_build(
                    root, target, layer_ids, tr + va, cfg.tokens_per_batch,
                    report=lambda d, n: emit(TrainProgress("cache", 0, total, message=f"features {d}/{n}")))
            dd.barrier()
            if cache is None:
                cache = FeatureCache(root, json.loads((root / "manifest.json").read_text()))
            fc_info.update(mode="cache", dir=str(root), bytes=cache.manifest["bytes"])

    def feats(items: list[_Seq], ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if cache is not None:
            return cache.get(items, device, target.dtype)
        aux, last = target.features(ids, layer_ids)
        return aux.to(device), last.to(device)

    # ---------------------------------------------------------------- optimizer
    resuming = resume and (out_dir / LATEST).is_file()
    if cfg.init_from and not resuming:
        load_drafter_weights(drafter, cfg.init_from)
    if cfg.lora is not None and not _has_lora(drafter):
        from drafters.dspark.lora import apply_lora

        apply_lora(drafter, **cfg.lora)
    named = _trainable(drafter)
    params = [p for _, p in named]
    mixed = any(p.dtype != torch.float32 for p in params)
    step = 0
    best_tau: float | None = None
    best_step: int | None = None
    last_dir: Path | None = None
    tens: _StateTensors | None = None
    if resuming:  # model weights first (into the full drafter, before any sharding), optimizer state below
        latest = json.loads((out_dir / LATEST).read_text())
        ck = out_dir / latest["dir"]
        st = json.loads((ck / STATE_JSON).read_text())
        if st["fingerprint"] != cfg.schedule_fingerprint() or st["per_step"] != per_step:
            raise TrainError("resume_mismatch", f"{ck} was written by a run with a different schedule/data "
                             "config or global batch; use a new out_dir or resume=False", str(ck))
        tens = _StateTensors(ck / STATE_TENSORS)
        if _has_lora(drafter):  # the export is merged; the unmerged state is in the training state
            with torch.no_grad():
                for k, v in _model_state(drafter).items():
                    v.copy_(tens[f"model.{k}"])
        else:
            load_drafter_weights(drafter, ck)
    if dd.on:
        # Every rank starts from rank 0's weights, as DDP's constructor does: ranks that built (or LoRA-wrapped)
        # their drafters from different RNG states would otherwise train different models forever.
        frozen = {id(drafter.embed_tokens.weight), id(drafter.lm_head.weight)}
        with torch.no_grad():
            for p in drafter.parameters():
                if id(p) not in frozen:
                    dist.broadcast(p.data, src=0)
    # "fsdp" shards only when there is a process group to shard over; one process trains unsharded.
    parallel = "single"
    if dd.on:
        parallel = cfg.parallel
        if parallel == "auto":
            free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else None
            parallel = choose_parallel(sum(p.numel() for _, p in _trainable(drafter)), free)
    unit: _LossUnit | None = None
    orig_dtypes: dict[str, torch.dtype] = {}
    if parallel == "fsdp":
        masters = tens.master if tens is not None and mixed else None
        unit, orig_dtypes = _shard_fsdp(drafter, device, dd.world, cfg.anchor_chunk, masters, mm_dtype)
        names = [n for n, _ in named]
        named = _trainable(drafter)
        params = [p for _, p in named]  # fp32 DTensor shards: the master weights themselves
        master = params
        if [n for n, _ in named] != names:  # optimizer state is stored by position: the order must hold
            raise TrainError("fsdp_param_order", "sharding changed the order of the trainable parameters",
                             "parallel")
    else:
        master = [p.detach().float().clone().requires_grad_(True) for p in params] if mixed else params
    separate_master = master is not params
    opt = torch.optim.AdamW(master, lr=cfg.lr, betas=tuple(cfg.betas), weight_decay=cfg.weight_decay)

    if resuming:
        assert tens is not None
        if separate_master:
            with torch.no_grad():
                for i, m in enumerate(master):
                    m.copy_(tens[f"master.{i}"])
        osd = {"state": {}, "param_groups": opt.state_dict()["param_groups"]}
        for i, m in enumerate(master):
            if f"opt.{i}.exp_avg" in tens:
                osd["state"][i] = {"step": tens[f"opt.{i}.step"], "exp_avg": _like(tens[f"opt.{i}.exp_avg"], m),
                                   "exp_avg_sq": _like(tens[f"opt.{i}.exp_avg_sq"], m)}
        opt.load_state_dict(osd)
        torch.set_rng_state(tens["rng.torch"])
        tens = None  # close the file: keep_last may delete its directory
        step = int(st["step"])
        history = list(st.get("history", []))
        best_tau, best_step = st.get("best_expected_tau"), st.get("best_step")
        bj = out_dir / BEST_JSON
        if bj.is_file():  # a validation after the last checkpoint may have written a better best/
            b = json.loads(bj.read_text())
            if b.get("expected_tau") is not None and (best_tau is None or b["expected_tau"] > best_tau):
                best_tau, best_step = b["expected_tau"], b["step"]
        last_dir = ck
    dd.barrier()

    # ---------------------------------------------------------------- checkpointing
    def save(step_: int) -> Path:
        """Write ``step_XXXXXX/`` (rank 0 writes; under FSDP every rank takes part in the gathers)."""
        d = out_dir / f"step_{step_:06d}"
        tmp = out_dir / f".step_{step_:06d}.tmp"
        tens: dict[str, torch.Tensor] = {"rng.torch": torch.get_rng_state()}
        with _Unsharded(unit):  # the export is the full drafter (compute dtype), written once
            if dd.rank == 0:
                shutil.rmtree(tmp, ignore_errors=True)
                _export_drafter(drafter, tmp)
                if _has_lora(drafter):  # clone: the gathered tensors are freed when resharding
                    tens.update({f"model.{k}": v.detach().cpu().clone(memory_format=torch.contiguous_format)
                                 for k, v in _model_state(drafter).items()})
        if dd.rank == 0 or unit is not None:
            # Master weights and AdamW moments as whole tensors (gathered one at a time under FSDP): the
            # same file whatever the parallel mode (resume may switch it) or world size.
            osd = opt.state_dict()["state"]
            for i, m in enumerate(master):
                if mixed:
                    v = _gather(m.detach())
                    if dd.rank == 0:
                        tens[f"master.{i}"] = v.float().cpu().contiguous()
                if i in osd:
                    for k in ("step", "exp_avg", "exp_avg_sq"):
                        v = osd[i][k]
                        v = _gather(v.detach()) if torch.is_tensor(v) else torch.tensor(float(v))
                        if dd.rank == 0:
                            tens[f"opt.{i}.{k}"] = v.cpu().contiguous()
        if dd.rank == 0:
            save_file(tens, str(tmp / STATE_TENSORS))
            st = {"step": step_, "total_steps": total, "per_step": per_step, "world_size": dd.world,
                  "parallel": parallel,
                  "micro_batches_done": step_ * per_step, "fingerprint": cfg.schedule_fingerprint(),
                  "config": cfg.to_dict(), "param_names": [n for n, _ in named], "mixed_precision": mixed,
                  "best_expected_tau": best_tau, "best_step": best_step, "history": history,
                  "target": target.info() if hasattr(target, "info") else None, "feature_cache": fc_info}
            (tmp / STATE_JSON).write_text(json.dumps(st, indent=1))
            shutil.rmtree(d, ignore_errors=True)
            tmp.rename(d)
            tmp_latest = out_dir / (LATEST + ".tmp")
            tmp_latest.write_text(json.dumps({"step": step_, "dir": d.name}))
            tmp_latest.replace(out_dir / LATEST)
            old = sorted(p for p in out_dir.glob("step_*") if p.is_dir())
            for p in old[: max(0, len(old) - cfg.keep_last)]:
                shutil.rmtree(p, ignore_errors=True)
        dd.barrier()
        return d

    def save_best(step_: int, tau: float | None) -> None:
        with _Unsharded(unit):
            if dd.rank == 0:
                tmp = out_dir / ".best.tmp"
                shutil.rmtree(tmp, ignore_errors=True)
                _export_drafter(drafter, tmp)
        if dd.rank == 0:
            (tmp / BEST_JSON).write_text(json.dumps({"step": step_, "expected_tau": tau}))
            shutil.rmtree(out_dir / BEST, ignore_errors=True)
            tmp.rename(out_dir / BEST)
            (out_dir / BEST_JSON).write_text(json.dumps({"step": step_, "expected_tau": tau, "dir": BEST}))
        dd.barrier()

    # ---------------------------------------------------------------- validation
    val_batches = _pack(list(range(len(va))), [len(s.ids) for s in va], cfg.tokens_per_batch)

    @torch.no_grad()
    def validate() -> dict[str, Any] | None:
        if not va:
            return None
        acc = torch.zeros(4 + gamma, dtype=torch.float64)  # tau_sum, blocks, loss_num, weight, slot sums
        slot_n = torch.zeros(gamma, dtype=torch.float64)
        for bidx in val_batches[dd.rank:: dd.world]:
            items = [va[i] for i in bidx]
            ids, mask, seg = _collate(items)
            anchors, keep = _anchors(mask, seg, cfg.num_anchors,
                                     [_seed_mix(cfg.seed, -1, int(s.key[1:])) for s in items], None)
            aux, last = feats(items, ids)
            out = dspark_loss(drafter, ids.to(device), mask.to(device), aux, last, anchors.to(device),
                              keep.to(device), anchor_chunk=cfg.anchor_chunk, matmul_dtype=mm_dtype)
            if out.n_blocks:
                acc[0] += float(out.expected_tau) * out.n_blocks
                acc[1] += out.n_blocks
                acc[2] += float(out.total.detach()) * float(out.weight_sum)
                acc[3] += float(out.weight_sum)
                M = slot_validity(mask, anchors, keep, gamma).double().sum(dim=(0, 1))
                acc[4:] += torch.nan_to_num(out.accept_rate_per_slot.double().cpu()) * M
                slot_n += M
        acc = dd.sum_(acc.to(device)).cpu()
        slot_n = dd.sum_(slot_n.to(device)).cpu()
        if acc[1] == 0:
            return None
        return {"expected_tau": float(acc[0] / acc[1]), "loss": float(acc[2] / acc[3]),
                "accept_rate_per_slot": (acc[4:] / slot_n.clamp_min(1)).tolist(), "blocks": int(acc[1])}

    def run_validation(step_: int) -> float | None:
        nonlocal best_tau, best_step
        drafter.eval()
        with _Unsharded(unit):  # full weights on every rank: ranks may run different numbers of batches
            v = validate()
        drafter.train()
        if v is None:
            return None
        history.append({"step": step_, "phase": "validate", **v})
        improved = best_tau is None or v["expected_tau"] > best_tau
        if improved:
            best_tau, best_step = v["expected_tau"], step_
            save_best(step_, best_tau)
        emit(TrainProgress("validate", step_, total, val_expected_tau=v["expected_tau"],
                           best_expected_tau=best_tau, loss=v["loss"]))
        return v["expected_tau"]

    # ---------------------------------------------------------------- cancellation
    stop_flag = threading.Event()
    old_handler = None
    if handle_sigterm and threading.current_thread() is threading.main_thread():
        old_handler = signal.signal(signal.SIGTERM, lambda *_: stop_flag.set())

    def stopping() -> bool:
        local = stop_flag.is_set() or bool(should_stop and should_stop())
        return dd.any(local, device)

    # ---------------------------------------------------------------- loop
    drafter.train()
    initial_tau = None
    if not any(h.get("phase") == "validate" and h["step"] == step for h in history):
        initial_tau = run_validation(step)
    else:
        initial_tau = next(h["expected_tau"] for h in history if h.get("phase") == "validate"
                           and h["step"] == step)
    stop_reason = "max_steps"
    cancelled = False
    tokens_seen = 0
    t_loop = time.perf_counter()
    steps_here = 0
    pw = position_weights(gamma, drafter.config.loss_decay_gamma)
    try:
        while step < total:
            if stopping():
                cancelled, stop_reason = True, "cancelled"
                break
            if cfg.time_budget_s is not None and dd.any(time.perf_counter() - t_start > cfg.time_budget_s, device):
                stop_reason = "time_budget"
                break
            # 1-2: this rank's micro-batches and anchors
            micro = []
            for a in range(cfg.grad_accum):
                g = step * per_step + a * dd.world + dd.rank
                epoch, bidx = plan.locate(g)
                items = [tr[i] for i in bidx]
                ids, mask, seg = _collate(items)
                anchors, keep = _anchors(mask, seg, cfg.num_anchors,
                                         [_seed_mix(cfg.seed, epoch, i) for i in bidx], seg_table_or_none)
                wsum = (slot_validity(mask, anchors, keep, gamma).float() * pw).sum()
                micro.append((items, ids, mask, anchors, keep, wsum, epoch))
            # 3: global denominator of the step, then forward/backward per micro-batch
            denom = dd.sum_(torch.stack([m[5] for m in micro]).sum().to(device).double()).float()
            for p in params:
                p.grad = None
            sums = torch.zeros(5, dtype=torch.float64, device=device)  # loss, ce, l1, conf, tokens
            if float(denom) > 0:
                for items, ids, mask, anchors, keep, _, _ in micro:
                    aux, last = feats(items, ids)
                    args = (ids.to(device), mask.to(device), aux, last, anchors.to(device), keep.to(device))
                    with autocast():
                        if unit is not None:  # FSDP: gather, forward, backward, reduce-scatter (SUM) per micro-batch
                            total_, ce_, l1_, conf_ = unit(*args, denom)
                        else:
                            out = dspark_loss(drafter, *args, anchor_chunk=cfg.anchor_chunk, weight_sum=denom,
                                              matmul_dtype=mm_dtype)
                            total_, ce_, l1_, conf_ = out.total, out.ce, out.l1, out.conf
                    total_.backward()
                    sums += torch.tensor([float(total_.detach()), float(ce_), float(l1_), float(conf_), 0.0],
                                         dtype=torch.float64, device=device)
            sums[4] = float(sum(len(s.ids) for m in micro for s in m[0]))  # real (unpadded) tokens
            sums = dd.sum_(sums)
            # 4: reduce, clip, step
            for p in params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
            if unit is None:  # FSDP already summed (and sharded) the gradients in backward
                dd.sum_grads(params)
            if separate_master:
                for m, p in zip(master, params):
                    m.grad = p.grad.float()
            # the global norm over all ranks' shards under FSDP (a replicated DTensor)
            gnorm = float(_gather(torch.nn.utils.clip_grad_norm_(master, cfg.max_grad_norm)))
            lr = cfg.lr * lr_factor(step, total, cfg.warmup_ratio)
            for grp in opt.param_groups:
                grp["lr"] = lr
            if float(denom) > 0:
                opt.step()
                if separate_master:
                    with torch.no_grad():
                        for m, p in zip(master, params):
                            p.copy_(m.to(p.dtype))
            step += 1
            steps_here += 1
            tokens_seen += int(sums[4])
            el = time.perf_counter() - t_loop
            tps = tokens_seen / el if el > 0 else None
            eta = el / steps_here * (total - step)
            if cfg.time_budget_s is not None:
                eta = min(eta, max(0.0, cfg.time_budget_s - (time.perf_counter() - t_start)))
            rec = {"step": step, "phase": "train", "loss": float(sums[0]), "ce": float(sums[1]),
                   "l1": float(sums[2]), "conf": float(sums[3]), "lr": lr, "grad_norm": gnorm,
                   "tokens": int(sums[4]), "epoch": micro[-1][6]}
            history.append(rec)
            if step % cfg.log_every == 0 or step == total:
                emit(TrainProgress("train", step, total, epoch=float(micro[-1][6]), loss=rec["loss"], ce=rec["ce"],
                                   l1=rec["l1"], conf=rec["conf"], lr=lr, grad_norm=gnorm, tokens_per_s=tps,
                                   eta_s=eta, val_expected_tau=_last_tau(history), best_expected_tau=best_tau))
            if cfg.validate_every and step % cfg.validate_every == 0 and step < total:
                run_validation(step)
            if cfg.checkpoint_every and step % cfg.checkpoint_every == 0 and step < total:
                last_dir = save(step)
        if not cancelled and (not history or history[-1].get("phase") != "validate" or
                              history[-1]["step"] != step):
            run_validation(step)
        if last_dir is None or last_dir.name != f"step_{step:06d}" or not last_dir.is_dir():
            last_dir = save(step)
    finally:
        if old_handler is not None:
            signal.signal(signal.SIGTERM, old_handler)
    if best_tau is None:  # no validation data: the last export is the best we know
        save_best(step, None)
    if unit is not None:  # hand the caller a plain trained drafter, as the replicated path does
        _unshard_for_good(drafter, orig_dtypes)
        unit = None
    emit(TrainProgress("done", step, total, val_expected_tau=_last_tau(history), best_expected_tau=best_tau,
                       message=stop_reason))
    return TrainResult(best_dir=out_dir / BEST, last_dir=last_dir, steps=step, cancelled=cancelled,
                       history=history, stop_reason=stop_reason, best_expected_tau=best_tau,
                       initial_expected_tau=initial_tau, feature_cache=fc_info, parallel=parallel)


def _last_tau(history: list[dict[str, Any]]) -> float | None:
    for h in reversed(history):
        if h.get("phase") == "validate":
            return h["expected_tau"]
    return None


# =============================================================================================== CLI
def _init_distributed() -> tuple[int, int, torch.device]:
    """Start the process group when launched by torchrun (WORLD_SIZE > 1): nccl on CUDA, gloo on CPU."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return (dist.get_rank() if world > 1 else 0), world, device


def main(argv: list[str] | None = None) -> int:
    """``python -m drafters.train --target T --train seqs.safetensors --val val.safetensors --out DIR``;
    under ``torchrun --nproc-per-node N`` the same command trains data-parallel (``--parallel fsdp``:
    sharded with FSDP2, see ``train``)."""
    ap = argparse.ArgumentParser(prog="python -m drafters.train", description=__doc__.split("\n")[0])
    ap.add_argument("--target", required=True, help="HF id (local cache), model dir, .gguf, or smollm2-135m-instruct")
    ap.add_argument("--train", required=True, help="prepared sequences (drafters.shards.save_sequences)")
    ap.add_argument("--val", help="prepared validation sequences")
    ap.add_argument("--out", required=True)
    ap.add_argument("--init-from", help="warm start from a DeepSpec-native checkpoint dir")
    ap.add_argument("--num-layers", type=int, default=None, help="draft layers (default 5 on GPU, 1 on CPU)")
    ap.add_argument("--target-layer-ids", default=None, help="comma-separated target layer ids (default: DFlash rule)")
    ap.add_argument("--block-size", type=int, default=None)
    ap.add_argument("--markov-rank", type=int, default=None)
    ap.add_argument("--mask-token-id", type=int, default=None)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--no-resume", action="store_true")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--drafter-json", help="DSparkConfig.from_target overrides as JSON (num_hidden_layers, "
                    "block_size, markov_head_type, ...); the flags above override it")
    ap.add_argument("--config-json", help="a TrainConfig as JSON (TrainConfig.to_dict); flags below override it")
    ap.add_argument("--target-dtype", choices=("float32", "bfloat16"), default=None,
                    help="target precision (default bf16 on GPU, fp32 on CPU)")
    ap.add_argument("--progress-jsonl", action="store_true",
                    help="rank 0 prints each progress report as a JSON line on stdout (how a worker follows it)")
    for f in dataclasses.fields(TrainConfig):
        if f.type in ("int | None", "int", "float", "float | None", "str", "str | None") and f.name != "init_from":
            typ = {"int": int, "float": float, "str": str}[f.type.split(" ")[0]]
            extra: dict[str, Any] = {"choices": PARALLEL_MODES} if f.name == "parallel" else {}
            ap.add_argument("--" + f.name.replace("_", "-"), type=typ, default=None, **extra)
    a = ap.parse_args(argv)
    rank, world, device = _init_distributed()
    from drafters.dspark.config import DSparkConfig
    from drafters.dspark.model import DSparkDrafter
    from drafters.shards import load_sequences
    from drafters.target import load_target

    target = load_target(a.target, device=device, cache_dir=a.cache_dir, dtype=a.target_dtype)
    if device.type == "cpu":
        target.feature_dtype = torch.float32  # the fp32 drafter trains on fp32 features (bf16 target or not)
    kw: dict[str, Any] = json.loads(Path(a.config_json).read_text()) if a.config_json else {}
    if "betas" in kw:
        kw["betas"] = tuple(kw["betas"])
    kw.update({f.name: getattr(a, f.name) for f in dataclasses.fields(TrainConfig)
               if getattr(a, f.name, None) is not None})
    kw["init_from"] = a.init_from or kw.get("init_from")
    cfg = TrainConfig(**kw)
    a.init_from = cfg.init_from
    if a.init_from:
        dcfg = DSparkConfig.from_deepspec_dict(json.loads((Path(a.init_from) / "config.json").read_text()))
    else:
        over: dict[str, Any] = json.loads(Path(a.drafter_json).read_text()) if a.drafter_json else {}
        over["num_hidden_layers"] = a.num_layers or over.get("num_hidden_layers") or (5 if device.type == "cuda" else 1)
        if a.target_layer_ids:
            over["target_layer_ids"] = [int(x) for x in a.target_layer_ids.split(",")]
        for k in ("block_size", "markov_rank", "mask_token_id"):
            if getattr(a, k) is not None:
                over[k] = getattr(a, k)
        dcfg = DSparkConfig.from_target(target.config, target.tokenizer, **over)
    torch.manual_seed(cfg.seed)  # the drafter's initial weights follow the seed (train() broadcasts rank 0's)
    emb, head = target.embed_weight, target.lm_head_weight
    if device.type == "cpu":
        emb, head = emb.float(), head.float()  # the drafter trains in fp32 on CPU, whatever the target's dtype
    drafter = DSparkDrafter(dcfg, emb, head).to(device)
    if device.type == "cuda":
        for p in drafter.parameters():
            if p.requires_grad:
                p.data = p.data.to(torch.bfloat16)
    tr = load_sequences(Path(a.train))
    va = load_sequences(Path(a.val)) if a.val else []

    def show(p: TrainProgress) -> None:
        if a.progress_jsonl:
            if rank == 0:
                print(json.dumps({"progress": p.to_dict()}, default=str), flush=True)
        elif p.phase == "train":
            print(f"step {p.step}/{p.total_steps} loss {p.loss:.4f} lr {p.lr:.2e} {p.tokens_per_s or 0:.0f} tok/s "
                  f"eta {p.eta_s or 0:.0f}s", file=sys.stderr, flush=True)
        elif p.phase == "validate":
            print(f"validate step {p.step}: expected tau {p.val_expected_tau:.3f}", file=sys.stderr, flush=True)

    res = train(target, drafter, tr, va, cfg, Path(a.out), progress=show, resume=not a.no_resume,
                handle_sigterm=True)
    if rank == 0:
        if a.json or a.progress_jsonl:
            print(json.dumps({"result": res.to_dict()} if a.progress_jsonl else res.to_dict(), default=str),
                  flush=True)
        else:
            print(f"done: {res.steps} steps ({res.stop_reason}), best expected tau {res.best_expected_tau}, "
                  f"best {res.best_dir}, last {res.last_dir}")
    if world > 1:
        dist.destroy_process_group()
    return 130 if res.cancelled else 0


if __name__ == "__main__":
    sys.exit(main())
