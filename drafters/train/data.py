"""Training data: sequences as tensors, length-bucketed packing into micro-batches, the epoch plan,
collation, and anchor sampling with per-segment weights."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from drafters.dspark.anchors import sample_anchors
from drafters.train.config import SEGMENT_VALUES, TrainError


def _seed_mix(*parts: int) -> int:
    """A 63-bit seed from integers (stable across processes and Python versions, unlike hash())."""
    h = hashlib.blake2b(",".join(str(int(p)) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & ((1 << 63) - 1)


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
