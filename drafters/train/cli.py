"""Fine-tune a DSpark drafter against a frozen target (DSPARK.md 2-4, 8): the command line
(``python -m drafters.train``, also under ``torchrun``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from drafters.train.config import PARALLEL_MODES, TrainConfig
from drafters.train.loop import TrainProgress, train
from drafters.train.parallel import _init_distributed


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
