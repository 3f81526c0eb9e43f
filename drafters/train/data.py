"""Training data: sequences as tensors, length-bucketed packing into micro-batches, the epoch plan,
collation, anchor sampling with per-segment weights, and the micro-batches of one optimizer step.

The data position is one global micro-batch counter: step s, accumulation a, rank r reads micro-batch
``s * W * grad_accum + a * W + r`` of the plan (W = world size), and anchors are drawn from generators seeded
by (seed, epoch, sequence index). Nothing random is carried between steps, so a resumed run reads exactly
what the uninterrupted one would have.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from drafters.dspark.anchors import anchor_candidates, sample_anchors
from drafters.dspark.losses import slot_validity
from drafters.recipe import SEGMENT_VALUES
from drafters.segments import SUPERVISED, Segment
from drafters.train.config import TrainConfig, TrainError


def seed_mix(*parts: int) -> int:
    """A 63-bit seed from integers (stable across processes and Python versions, unlike hash())."""
    h = hashlib.blake2b(",".join(str(int(p)) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & ((1 << 63) - 1)


def segment_weight_table(weights: dict[str | int, float]) -> torch.Tensor:
    """Per-segment-value weight table [len(Segment)] fp32 (unlisted segments weigh 1)."""
    table = torch.ones(len(Segment), dtype=torch.float32)
    for k, w in weights.items():
        v = SEGMENT_VALUES[k.upper()] if isinstance(k, str) and not k.isdigit() else int(k)
        table[v] = float(w)
    return table


@dataclass
class Seq:
    """A training/validation sequence as tensors (truncated to max_seq_len)."""

    ids: torch.Tensor  # long [T]
    mask: torch.Tensor  # long [T] 0/1
    seg: torch.Tensor  # long [T]
    key: str  # feature-cache key ("t12", "v3")


def to_seqs(seqs: Sequence[Any], max_len: int, prefix: str) -> list[Seq]:
    """RenderedSequence-like records (input_ids, loss_mask, segments) as ``Seq``s truncated to ``max_len``,
    keyed ``<prefix><index>``. Raises TrainError("bad_sequence", where="<prefix>_seqs[i]") when a loss mask
    or segment list is shorter than its ids."""
    out = []
    for i, s in enumerate(seqs):
        n = min(len(s.input_ids), max_len)
        seg = list(s.segments)[:n] if getattr(s, "segments", None) else [int(Segment.TEXT)] * n
        if len(s.loss_mask) < n or len(seg) < n:
            raise TrainError("bad_sequence", f"sequence {i} has loss_mask/segments shorter than input_ids",
                             f"{prefix}_seqs[{i}]")
        out.append(Seq(torch.tensor(list(s.input_ids)[:n], dtype=torch.long),
                        torch.tensor(list(s.loss_mask)[:n], dtype=torch.long),
                        torch.tensor(seg, dtype=torch.long), f"{prefix}{i}"))
    return out


def with_history(seq: Seq) -> Seq:
    """``seq`` with its loss mask also on the earlier assistant turns of its context: every token of a
    ``SUPERVISED`` segment (tool calls, arguments, text, reasoning as recorded), so blocks anchor there too
    (``TrainConfig.history_anchors``, docs/dspark.md 2.4). Markup and the other roles stay unsupervised."""
    history = torch.isin(seq.seg, torch.tensor(sorted(int(s) for s in SUPERVISED)))
    return Seq(seq.ids, seq.mask | history.long(), seq.seg, seq.key)


def pack(order: list[int], lengths: list[int], budget: int, bucket: int = 64) -> list[list[int]]:
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


class EpochPlan:
    """The deterministic sequence of micro-batches over epochs (a pure function of seed and data)."""

    def __init__(self, lengths: list[int], budget: int, seed: int):
        self.lengths, self.budget, self.seed = lengths, budget, seed
        self._epochs: list[list[list[int]]] = []

    def epoch(self, e: int) -> list[list[int]]:
        while len(self._epochs) <= e:
            k = len(self._epochs)
            g = torch.Generator().manual_seed(seed_mix(self.seed, k, 1))
            order = torch.randperm(len(self.lengths), generator=g).tolist()
            batches = pack(order, self.lengths, self.budget)
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


def collate(items: list[Seq]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
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


def batch_anchors(mask: torch.Tensor, seg: torch.Tensor, num: int, seeds: list[int], table: torch.Tensor | None):
    """Anchors [B,N] and keep [B,N]; the weight of anchor p is that of the segment of token p+1."""
    anchors, keeps = [], []
    for b in range(mask.shape[0]):
        w = None
        if table is not None:
            w = torch.ones(mask.shape[1])
            w[:-1] = table[seg[b, 1:].clamp(0, len(table) - 1)]
        a, k = sample_anchors(mask[b], num, torch.Generator().manual_seed(seeds[b]), w)
        anchors.append(a)
        keeps.append(k)
    return torch.stack(anchors), torch.stack(keeps)


@dataclass
class MicroBatch:
    """One rank's micro-batch of an optimizer step (CPU tensors; B sequences, T_max tokens, N anchors)."""

    seqs: list[Seq]
    ids: torch.Tensor  # long [B, T], right-padded with 0
    mask: torch.Tensor  # long [B, T] loss mask (0 on pads)
    anchors: torch.Tensor  # long [B, N]
    keep: torch.Tensor  # bool [B, N]
    weight_sum: torch.Tensor  # fp32 [] sum of the position weights of its valid slots (docs/dspark.md 2.2)
    epoch: int

    @property
    def tokens(self) -> int:
        """Real (unpadded) tokens."""
        return sum(len(s.ids) for s in self.seqs)


@dataclass
class TrainData:
    """The training and validation sequences a run uses (only those with a supervised token pair to anchor
    on), the epoch plan over the training set, and the fixed validation micro-batches."""

    train: list[Seq]
    val: list[Seq]
    plan: EpochPlan
    val_batches: list[list[int]]
    segment_table: torch.Tensor | None  # [16] anchor weight per segment value; None when all weigh 1

    def step_cap(self, cfg: TrainConfig, per_step: int) -> int | None:
        """The most optimizer steps of the run: ``cfg.max_steps``, else ``cfg.epochs`` of the plan's
        micro-batches divided by the micro-batches per step (at least 1); None when neither is set (a time
        budget alone then sets the length)."""
        if cfg.max_steps is not None:
            return int(cfg.max_steps)
        if cfg.epochs is None:
            return None
        return max(1, int(cfg.epochs * len(self.plan.epoch(0)) // per_step))


def used_sequences(data: TrainData, cap: int | None, per_step: int) -> list[int]:
    """Indices (sorted) of the training sequences the first ``cap`` optimizer steps of ``per_step``
    micro-batches read from ``data.plan``: all of them when ``cap`` is None (a time budget alone sets the
    length) or the run covers every sequence. What the feature cache holds (``open_features``)."""
    if cap is None:
        return list(range(len(data.train)))
    left, used, e = cap * per_step, set(), 0
    while left > 0 and len(used) < len(data.train):
        for indices in data.plan.epoch(e)[:left]:
            used.update(indices)
        left -= len(data.plan.epoch(e))
        e += 1
    return sorted(used)


def load_data(train_seqs: Sequence[Any], val_seqs: Sequence[Any], cfg: TrainConfig) -> TrainData:
    """Sequences truncated to min(max_seq_len, tokens_per_batch) and filtered to those with an anchor
    candidate. Raises TrainError("no_training_data", where="train_seqs") when no training sequence has one,
    "bad_sequence" (``to_seqs``)."""
    max_len = min(cfg.max_seq_len or cfg.tokens_per_batch, cfg.tokens_per_batch)
    train_all = to_seqs(train_seqs, max_len, "t")
    if cfg.history_anchors:
        train_all = [with_history(s) for s in train_all]
    train = [s for s in train_all if bool(anchor_candidates(s.mask).any())]
    if not train:
        raise TrainError("no_training_data", f"none of the {len(train_all)} training sequences has a supervised "
                         "token pair to anchor on (loss_mask[p] = loss_mask[p+1] = 1)", "train_seqs")
    val = to_seqs(val_seqs[: cfg.val_max_seqs] if cfg.val_max_seqs else val_seqs, max_len, "v")
    val = [s for s in val if bool(anchor_candidates(s.mask).any())]
    table = segment_weight_table(cfg.segment_weights)
    return TrainData(
        train=train, val=val, plan=EpochPlan([len(s.ids) for s in train], cfg.tokens_per_batch, cfg.seed),
        val_batches=pack(list(range(len(val))), [len(s.ids) for s in val], cfg.tokens_per_batch),
        segment_table=None if bool((table == 1).all()) else table)


def step_micro_batches(data: TrainData, cfg: TrainConfig, step: int, rank: int, world: int,
                       slot_weights: torch.Tensor) -> list[MicroBatch]:
    """This rank's ``cfg.grad_accum`` micro-batches of optimizer step ``step`` (0-based): micro-batch
    ``step * world * grad_accum + a * world + rank`` of the plan for a = 0..grad_accum-1, anchors sampled
    with the segment weights. ``slot_weights``: fp32 [block_size] position weights of the loss."""
    out = []
    for a in range(cfg.grad_accum):
        epoch, indices = data.plan.locate(step * world * cfg.grad_accum + a * world + rank)
        seqs = [data.train[i] for i in indices]
        ids, mask, seg = collate(seqs)
        seeds = [seed_mix(cfg.seed, epoch, i) for i in indices]
        anchors, keep = batch_anchors(mask, seg, cfg.num_anchors, seeds, data.segment_table)
        valid = slot_validity(mask, anchors, keep, len(slot_weights)).float()
        out.append(MicroBatch(seqs, ids, mask, anchors, keep, (valid * slot_weights).sum(), epoch))
    return out


def val_micro_batch(data: TrainData, cfg: TrainConfig, indices: list[int]) -> MicroBatch:
    """A validation micro-batch: fixed anchors per sequence (seeded by its index, no segment weighting), so
    every validation of a run scores the same blocks. ``weight_sum`` is left 0 (the loss computes its own)."""
    seqs = [data.val[i] for i in indices]
    ids, mask, seg = collate(seqs)
    seeds = [seed_mix(cfg.seed, -1, int(s.key[1:])) for s in seqs]
    anchors, keep = batch_anchors(mask, seg, cfg.num_anchors, seeds, None)
    return MicroBatch(seqs, ids, mask, anchors, keep, torch.zeros(()), -1)
