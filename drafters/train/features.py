"""The on-disk target feature cache (safetensors shards + manifest) and its size estimate."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from drafters.train.data import _collate, _pack, _Seq


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
