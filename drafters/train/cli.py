"""Fine-tune a DSpark drafter against a frozen target (docs/dspark.md 2-4, 8).

The command line: ``python -m drafters.train``, also under ``torchrun`` (see ``main``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import typing
from pathlib import Path
from typing import Any, Literal

import torch
import torch.distributed as dist

from drafters.train.config import PARALLEL_MODES, TrainConfig
from drafters.train.loop import train
from drafters.train.parallel import init_distributed
from drafters.train.progress import TrainProgress, TrainResult
from drafters.train.resolve import Machine
from drafters.train.start import new_drafter


def _flag_type(annotation: Any) -> type | None:
    """int, float or str for a TrainConfig field that becomes a flag (a number, a string, one of several
    strings, or None), else None (betas, segment_weights and lora come by --config-json)."""
    if typing.get_origin(annotation) is Literal:
        return str
    options = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    if len(options) != 1:
        return None
    return options[0] if options[0] in (int, float, str) else None


def parser() -> argparse.ArgumentParser:
    """The command line's arguments: data, target, drafter shape, and one flag per scalar TrainConfig field."""
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
    hints = typing.get_type_hints(TrainConfig)  # Annotated bounds dropped: TrainConfig.validate checks them
    for f in dataclasses.fields(TrainConfig):
        flag_type = _flag_type(hints[f.name])
        if flag_type is not None and f.name != "init_from":
            extra: dict[str, Any] = {"choices": PARALLEL_MODES} if f.name == "parallel" else {}
            ap.add_argument("--" + f.name.replace("_", "-"), type=flag_type, default=None, **extra)
    return ap


def train_config(args: argparse.Namespace) -> TrainConfig:
    """--config-json, overridden by the TrainConfig flags given, and --init-from; validated before anything
    is loaded. Raises TrainError("invalid_train_config", where=<field>) (``TrainConfig.from_dict``)."""
    values: dict[str, Any] = json.loads(Path(args.config_json).read_text()) if args.config_json else {}
    values.update({f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)
                   if getattr(args, f.name, None) is not None})
    values["init_from"] = args.init_from or values.get("init_from")
    return TrainConfig.from_dict(values)


def build_drafter(args: argparse.Namespace, cfg: TrainConfig, target: Any, device: torch.device) -> Any:
    """A new drafter for ``target`` (the shape of --init-from's config.json when warm starting, else
    --drafter-json with the shape flags over it), initialised from ``cfg.seed`` (``new_drafter``)."""
    from drafters.dspark.config import DSparkConfig

    if cfg.init_from:
        config = DSparkConfig.from_deepspec_dict(json.loads((Path(cfg.init_from) / "config.json").read_text()))
    else:
        shape: dict[str, Any] = json.loads(Path(args.drafter_json).read_text()) if args.drafter_json else {}
        machine = Machine("cuda" if device.type == "cuda" else "cpu")
        shape["num_hidden_layers"] = (args.num_layers or shape.get("num_hidden_layers")
                                      or machine.defaults.num_draft_layers)
        if args.target_layer_ids:
            shape["target_layer_ids"] = [int(x) for x in args.target_layer_ids.split(",")]
        for k in ("block_size", "markov_rank", "mask_token_id"):
            if getattr(args, k) is not None:
                shape[k] = getattr(args, k)
        config = DSparkConfig.from_target(target.config, target.tokenizer, **shape)
    return new_drafter(config, cfg.seed, target, device, cfg.drafter_init)


def show_progress(report: TrainProgress, *, jsonl: bool, rank: int) -> None:
    """A progress report: a JSON line on stdout (rank 0, --progress-jsonl), else a short line on stderr."""
    if jsonl:
        if rank == 0:
            print(json.dumps({"progress": report.to_dict()}, default=str), flush=True)
    elif report.phase == "train":
        print(f"step {report.step}/{report.total_steps} loss {report.loss:.4f} lr {report.lr:.2e} "
              f"{report.tokens_per_s or 0:.0f} tok/s eta {report.eta_s or 0:.0f}s", file=sys.stderr, flush=True)
    elif report.phase == "validate":
        print(f"validate step {report.step}: expected tau {report.val_expected_tau:.3f}", file=sys.stderr,
              flush=True)
    elif report.phase == "schedule":
        print(report.message, file=sys.stderr, flush=True)


def show_result(result: TrainResult, *, as_json: bool, jsonl: bool) -> None:
    if as_json or jsonl:
        print(json.dumps({"result": result.to_dict()} if jsonl else result.to_dict(), default=str), flush=True)
    else:
        print(f"done: {result.steps} steps ({result.stop_reason}), best expected tau {result.best_expected_tau}, "
              f"best {result.best_dir}, last {result.last_dir}")


def main(argv: list[str] | None = None) -> int:
    """``python -m drafters.train --target T --train seqs.safetensors --val val.safetensors --out DIR``;
    under ``torchrun --nproc-per-node N`` the same command trains data-parallel (``--parallel fsdp``:
    sharded with FSDP2, see ``train``). Returns the exit status: 0, or 130 when stopped (SIGTERM)."""
    args = parser().parse_args(argv)
    cfg = train_config(args)  # a bad config fails here, before the target loads
    rank, world, device = init_distributed()
    from drafters.shards import load_sequences
    from drafters.target import load_target

    try:
        target = load_target(args.target, device=device, cache_dir=args.cache_dir, dtype=args.target_dtype)
        if device.type == "cpu":
            target.feature_dtype = torch.float32  # the fp32 drafter trains on fp32 features (bf16 target or not)
        drafter = build_drafter(args, cfg, target, device)
        train_seqs = load_sequences(Path(args.train))
        val_seqs = load_sequences(Path(args.val)) if args.val else []
        result = train(target, drafter, train_seqs, val_seqs, cfg, Path(args.out),
                       progress=lambda p: show_progress(p, jsonl=args.progress_jsonl, rank=rank),
                       resume=not args.no_resume, handle_sigterm=True)
        if rank == 0:
            show_result(result, as_json=args.json, jsonl=args.progress_jsonl)
    finally:
        # on every path, while the interpreter is whole: gloo's threads still holding work (and tensors)
        # at interpreter finalization abort the process (SIGABRT) and hide the real exit status
        if world > 1 and dist.is_initialized():
            dist.destroy_process_group()
    return 130 if result.cancelled else 0
