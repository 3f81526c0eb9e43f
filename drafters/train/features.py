"""Target features for the loop: the on-disk cache (safetensors shards + manifest), its size estimate,
and the choice between it and an online target forward per micro-batch (``TrainConfig.feature_cache``)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from drafters.train.config import TrainConfig, TrainError
from drafters.train.data import Seq, TrainData, collate, pack, used_sequences
from drafters.train.parallel import ProcessGroup


def feature_bytes_per_token(hidden_size: int, num_aux_layers: int, bytes_per_el: int = 4) -> int:
    """Cache bytes per token: ids int32 + loss mask + segment uint8 (6 B) plus (m + 1) hidden vectors
    (m selected layers and the final hidden): 6 + bytes * d * (m + 1) (docs/dspark.md 3.4; fp32 on CPU)."""
    return 6 + bytes_per_el * hidden_size * (num_aux_layers + 1)


class FeatureCache:
    """On-disk target features: safetensors shards + ``manifest.json`` (docs/dspark.md 3.4, our layout).

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
    def fingerprint(target: Any, layer_ids: list[int], seqs: list[Seq]) -> str:
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
    def open_or_build(cls, root: Path, target: Any, layer_ids: list[int], seqs: list[Seq], budget: int,
                      report: Callable[[int, int], None] | None = None,
                      shard_bytes: int = 256 << 20) -> FeatureCache:
        """Reuse ``root`` if its manifest fingerprint matches, else (re)build it (atomically via a tmp dir)."""
        fingerprint = cls.fingerprint(target, layer_ids, seqs)
        manifest_path = root / "manifest.json"
        if manifest_path.is_file():
            manifest = json.loads(manifest_path.read_text())
            if manifest.get("fingerprint") == fingerprint and manifest.get("complete"):
                return cls(root, manifest)
        tmp = root.with_name(root.name + f".tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        writer = _ShardWriter(tmp, shard_bytes)
        done = 0
        if report:
            report(0, len(seqs))
        for indices in pack(list(range(len(seqs))), [len(s.ids) for s in seqs], budget):
            items = [seqs[i] for i in indices]
            ids, _, _ = collate(items)
            aux, last = target.features(ids, layer_ids)
            for b, s in enumerate(items):
                n = len(s.ids)
                # stored in the target's dtype: what it computed (a bf16 target's features handed out as fp32
                # are bf16 values), so the file is exact at half an fp32 copy's size, as estimated
                writer.add(s.key, {f"aux.{s.key}": aux[b, :n].to(target.dtype).cpu().contiguous(),
                                   f"last.{s.key}": last[b, :n].to(target.dtype).cpu().contiguous(),
                                   f"ids.{s.key}": s.ids.to(torch.int32), f"mask.{s.key}": s.mask.to(torch.uint8),
                                   f"seg.{s.key}": s.seg.to(torch.uint8)})
            done += len(items)
            if report:
                report(done, len(seqs))
        writer.flush()
        manifest = {"version": cls.VERSION, "fingerprint": fingerprint, "layer_ids": list(layer_ids),
                    "hidden_size": target.hidden_size, "dtype": str(target.dtype).removeprefix("torch."),
                    "target": {"name": getattr(target, "name", None),
                               "source_sha256": getattr(target, "source_sha256", None)},
                    "num_sequences": len(seqs), "shards": writer.shards, "where": writer.where,
                    "bytes": writer.total, "complete": True}
        (tmp / "manifest.json").write_text(json.dumps(manifest))
        shutil.rmtree(root, ignore_errors=True)
        tmp.rename(root)
        return cls(root, manifest)

    def get(self, items: list[Seq], device: torch.device, dtype: torch.dtype):
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
        for b, (seq_aux, seq_last) in enumerate(zip(auxs, lasts)):
            aux[b, : seq_aux.shape[0]] = seq_aux
            last[b, : seq_last.shape[0]] = seq_last
        return aux.to(device), last.to(device)


class _ShardWriter:
    """Collects each sequence's tensors and writes ``shard-NNNNN.safetensors`` files of about ``shard_bytes``
    into ``root``; ``where`` maps a sequence key to its shard, ``total`` counts the bytes written."""

    def __init__(self, root: Path, shard_bytes: int):
        self.root, self.shard_bytes = root, shard_bytes
        self.where: dict[str, str] = {}
        self.shards: list[str] = []
        self.total = 0
        self._buffer: dict[str, torch.Tensor] = {}
        self._keys: list[str] = []
        self._bytes = 0

    def add(self, key: str, tensors: dict[str, torch.Tensor]) -> None:
        size = sum(x.numel() * x.element_size() for x in tensors.values())
        self._buffer.update(tensors)
        self._keys.append(key)
        self._bytes += size
        self.total += size
        if self._bytes >= self.shard_bytes:
            self.flush()

    def flush(self) -> None:
        if not self._buffer:
            return
        name = f"shard-{len(self.shards):05d}.safetensors"
        save_file(self._buffer, str(self.root / name))
        self.where.update(dict.fromkeys(self._keys, name))
        self.shards.append(name)
        self._buffer, self._keys, self._bytes = {}, [], 0


@dataclass
class FeatureSource:
    """Where the loop's target features come from: ``cache`` when set, else an online forward of ``target``
    per micro-batch. ``info`` is what the run reports (TrainResult.feature_cache): {"mode": "cache" |
    "online", "dir", "bytes", "estimate_bytes", "bytes_per_token", "limit_bytes", "sequences" (cached),
    "train_sequences" (of them, training ones)} as far as they apply."""

    target: Any
    layer_ids: list[int]
    device: torch.device
    cache: FeatureCache | None = None
    info: dict[str, Any] = field(default_factory=lambda: {"mode": "online"})

    def get(self, seqs: list[Seq], ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(aux [B,T,m*d], last [B,T,d]) on the device for the right-padded ``ids`` [B,T] of ``seqs``."""
        if self.cache is not None:
            return self.cache.get(seqs, self.device, self.target.dtype)
        aux, last = self.target.features(ids, self.layer_ids)
        return aux.to(self.device), last.to(self.device)


def open_features(target: Any, layer_ids: list[int], data: TrainData, cfg: TrainConfig, out_dir: Path,
                  group: ProcessGroup, device: torch.device, steps: int | None,
                  report: Callable[[int, int], None] | None = None) -> FeatureSource:
    """The feature source ``cfg.feature_cache`` asks for: "off" online; "auto" the cache when its estimate
    fits ``feature_cache_max_bytes`` (else online); "on" the cache or TrainError("feature_cache_too_large",
    where="feature_cache_max_bytes"). The cache holds the validation sequences and the training sequences
    the first ``steps`` optimizer steps read (``used_sequences``; all when ``steps`` is None), so a short run
    computes features for what it trains on, not for the whole set. Rank 0 builds (or reuses) it in
    ``cfg.feature_cache_dir`` or ``out_dir/feature_cache`` while the other ranks wait; ``report(done,
    total)`` (sequences) follows the build, from (0, total) before the first batch. Collective: every rank
    calls it."""
    source = FeatureSource(target, layer_ids, device)
    if cfg.feature_cache == "off":
        return source
    seqs = [data.train[i] for i in used_sequences(data, steps, group.world * cfg.grad_accum)] + data.val
    element_bytes = 4 if target.dtype == torch.float32 else torch.finfo(target.dtype).bits // 8
    bytes_per_token = feature_bytes_per_token(target.hidden_size, len(layer_ids), element_bytes)
    estimate = bytes_per_token * sum(len(s.ids) for s in seqs)
    source.info.update(estimate_bytes=estimate, bytes_per_token=bytes_per_token,
                       limit_bytes=cfg.feature_cache_max_bytes, sequences=len(seqs),
                       train_sequences=len(seqs) - len(data.val))
    if estimate > cfg.feature_cache_max_bytes:
        if cfg.feature_cache == "on":
            raise TrainError(
                "feature_cache_too_large",
                f"the feature cache would need {estimate / 2**20:.1f} MiB ({bytes_per_token} B/token x "
                f"{estimate // bytes_per_token} tokens) but feature_cache_max_bytes is "
                f"{cfg.feature_cache_max_bytes / 2**20:.1f}"
                " MiB; raise the limit or use feature_cache='off' (online target features)",
                "feature_cache_max_bytes",
            )
        return source
    root = Path(cfg.feature_cache_dir) if cfg.feature_cache_dir else out_dir / "feature_cache"
    if group.rank == 0:
        source.cache = FeatureCache.open_or_build(root, target, layer_ids, seqs, cfg.tokens_per_batch,
                                                  report=report)
    group.barrier()
    if source.cache is None:
        source.cache = FeatureCache(root, json.loads((root / "manifest.json").read_text()))
    source.info.update(mode="cache", dir=str(root), bytes=source.cache.manifest["bytes"])
    return source
