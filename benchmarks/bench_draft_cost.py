"""The cost model of speculative decoding, measured: r (a verification round) and c (a drafting round), in
plain decoding steps of the same target on the same machine, side by side.

    speed-up = tau / (r + c)        (docs/dspark.md 5.5)

For each target shape (random weights of the real dimensions; nothing is downloaded) and context length:
  - a plain decoding step (1 token after a KV-cached context);
  - a verification round of n tokens (anchor + n - 1 drafts) for each --verify n;
  - both for each --batches B (B requests in one forward, B x n tokens; r relative to the batch-B plain step);
  - a DSpark drafting round (commit of --accepted + 1 tokens' features, then propose a block) for each
    --draft-layers: the shipped proposer (Markov head on --markov-candidates top candidates, LM head on a
    --draft-vocab draft vocabulary), the same on the whole vocabulary, and the reference computation
    (Markov bias on the full vocabulary every slot);
  - a suffix-decoding round (commit + propose over a global index of --suffix-outputs random outputs).
Each figure is the median of --repeats timed calls after --warmup untimed ones (CUDA synchronised), in ms
and as a ratio to the plain step. Large shapes on a CPU: --target-layers N builds N of the target's layers
and extrapolates the plain step and the verification round to the real depth from N and N/2 layers (the
table says so); on a GPU run them at full depth.

    .venv/bin/python benchmarks/bench_draft_cost.py                          # the demo target's shape
    .venv/bin/python benchmarks/bench_draft_cost.py --shapes qwen3-4b,qwen3-8b --target-layers 4 --dtype bfloat16
    .venv/bin/python benchmarks/bench_draft_cost.py --device cuda --shapes qwen3-4b,qwen3-8b --dtype bfloat16
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drafters.baselines.suffix_decoding import SuffixProposer  # noqa: E402
from drafters.dspark.config import DSparkConfig  # noqa: E402
from drafters.dspark.model import DSparkDrafter  # noqa: E402
from drafters.dspark.proposer import DSparkProposer  # noqa: E402
from drafters.speculate import crop_cache  # noqa: E402
from drafters.target import Target  # noqa: E402

#: Real dimensions (the models' config.json): SmolLM2-135M-Instruct (the demo target), Qwen3-4B, Qwen3-8B.
SHAPES = {
    "smollm2-135m": ("llama", dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                   num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
                                   tie_word_embeddings=True, rope_theta=100000.0)),
    "qwen3-4b": ("qwen3", dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
                               num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=151936,
                               tie_word_embeddings=True, rope_theta=1000000.0)),
    "qwen3-8b": ("qwen3", dict(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                               num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=151936,
                               tie_word_embeddings=False, rope_theta=1000000.0)),
}


@dataclass
class Row:
    """One measured operation: ``ms`` its median wall time, ``steps`` ms / the plain step's ms."""

    shape: str
    context: int
    op: str
    ms: float
    steps: float | None = None
    note: str = ""
    batch: int = 1  # requests in the forward: a plain step of B requests, a verification round of B x n tokens


@dataclass
class Result:
    machine: dict
    args: dict
    rows: list[Row] = field(default_factory=list)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="smollm2-135m", help=f"comma-separated, of {sorted(SHAPES)}")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"), help="target and drafter dtype")
    ap.add_argument("--contexts", default="512", help="comma-separated context lengths (tokens)")
    ap.add_argument("--verify", default="8,16,25", help="verification round sizes (tokens per request)")
    ap.add_argument("--batches", default="1", help="comma-separated batch sizes (requests per target forward); "
                    "the drafting and suffix rounds are timed per request, at batch 1")
    ap.add_argument("--draft-layers", default="1,2", help="DSpark drafter depths")
    ap.add_argument("--block-size", type=int, default=7, help="DSpark block size g (drafts per round)")
    ap.add_argument("--markov-candidates", type=int, default=64, help="the shipped proposer's top-K")
    ap.add_argument("--draft-vocab", type=int, default=8192, help="the shipped proposer's draft vocabulary size")
    ap.add_argument("--accepted", type=int, default=3, help="drafts accepted per round in the steady state")
    ap.add_argument("--suffix-outputs", type=int, default=2000, help="random training outputs in suffix's index")
    ap.add_argument("--target-layers", type=int, default=0,
                    help="build this many target layers and extrapolate to the real depth (0: full depth)")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    a = ap.parse_args(argv)
    for s in a.shapes.split(","):
        if s not in SHAPES:
            ap.error(f"unknown shape {s!r}; known: {sorted(SHAPES)}")
    return a


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def interleaved_ms(fns: dict[str, Callable[[], object]], device: torch.device, repeats: int,
                   warmup: int) -> dict[str, float]:
    """Median wall time in ms of each fn over ``repeats`` calls after ``warmup`` untimed ones. The calls
    are interleaved (one of each per cycle), so a machine whose load drifts during the run shifts every
    figure alike and the ratios between them hold."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            _sync(device)
            t0 = time.perf_counter()
            fn()
            _sync(device)
            times[k].append((time.perf_counter() - t0) * 1e3)
    return {k: statistics.median(v) for k, v in times.items()}


def build_target(shape: str, layers: int, device: torch.device, dtype: torch.dtype) -> Target:
    """A random-weight target of ``shape``'s dimensions with ``layers`` decoder layers."""
    kind, dims = SHAPES[shape]
    dims = dict(dims, num_hidden_layers=layers, max_position_embeddings=32768)
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(**dims) if kind == "llama" else transformers.Qwen3Config(**dims)
    with torch.device(device):
        model = (transformers.LlamaForCausalLM if kind == "llama" else transformers.Qwen3ForCausalLM)(cfg)
    return Target(model.to(dtype), name=shape)


def target_ops(target: Target, context: int, sizes: list[int], prefix: str, batch: int = 1) -> dict[str, Callable]:
    """{name: fn} of a plain step (``prefix``1) and a verification round of each size (``prefix``n) of
    ``batch`` requests after a KV-cached context of ``context`` random tokens each; each fn crops the cache
    back, so all share it."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, target.vocab_size, (batch, context), generator=g)
    with torch.inference_mode():
        cache = target.step(ids, None, None, logits_to_keep=1).past_key_values
    ops = {}
    for n in [1, *sizes]:
        x = torch.randint(0, target.vocab_size, (batch, n), generator=g)

        @torch.inference_mode()
        def step(x=x):
            target.step(x, cache, None)
            crop_cache(cache, context)

        ops[f"{prefix}{n}"] = step
    return ops


def draft_op(target: Target, layers: int, context: int, candidates: int, vocab: int,
             a: argparse.Namespace) -> Callable:
    """One steady-state DSpark drafting round as a fn: commit a+1 tokens' features, then propose; the
    draft vocabulary is ``vocab`` ids spread over the vocabulary (0: all of it)."""
    # three feature layers spread below the last one (whose hidden state is post-norm, docs/dspark.md 1.2)
    feature_layers = sorted({(target.num_layers - 1) * i // 4 for i in range(1, 4)})
    cfg = DSparkConfig.from_target(target.config, num_hidden_layers=layers, block_size=a.block_size,
                                   target_layer_ids=feature_layers, mask_token_id=target.vocab_size - 1)
    drafter = DSparkDrafter(cfg, target.embed_weight, target.lm_head_weight).to(target.device, target.dtype)
    ids = torch.linspace(0, target.vocab_size - 1, vocab).long() if vocab else None
    prop = DSparkProposer(drafter, markov_candidates=candidates, draft_vocab=ids)
    width = cfg.target_hidden_size
    feats = torch.randn(context, width, device=target.device, dtype=target.dtype)
    prop.start(torch.zeros(context, dtype=torch.long), feats)
    prop.propose(1, 0.0, None)
    step_feats = torch.randn(a.accepted + 1, width, device=target.device, dtype=target.dtype)
    toks = torch.ones(a.accepted + 1, dtype=torch.long)

    def round_():
        prop.commit(toks, step_feats)
        prop.propose(1, 0.0, None)

    return round_


def suffix_op(context: int, a: argparse.Namespace) -> Callable:
    """One suffix-decoding round (commit + propose, cap 24) over a global index of random outputs, as a fn."""
    g = torch.Generator().manual_seed(2)
    outputs = [torch.randint(0, 512, (64,), generator=g).tolist() for _ in range(a.suffix_outputs)]
    prop = SuffixProposer(outputs, block_size=24)
    prop.start(torch.randint(0, 512, (context,), generator=g))
    anchor = [0]

    def round_():
        p = prop.propose(anchor[0])
        prop.commit(torch.cat([torch.tensor([anchor[0]]), p.tokens[:a.accepted]]))
        anchor[0] = (anchor[0] + 7) % 512

    return round_


def run_shape(shape: str, a: argparse.Namespace, device: torch.device, dtype: torch.dtype) -> list[Row]:
    """Every row of one target shape, all of a context's operations timed interleaved."""
    real_layers = SHAPES[shape][1]["num_hidden_layers"]
    built = a.target_layers or real_layers
    half = max(1, built // 2)
    sizes = [int(s) for s in a.verify.split(",")]
    rows: list[Row] = []
    batches = sorted({1, *(int(b) for b in a.batches.split(","))})  # batch 1: the per-request rounds' unit
    for context in (int(c) for c in a.contexts.split(",")):
        target = build_target(shape, built, device, dtype)
        shallow = build_target(shape, half, device, dtype) if built != real_layers else None
        ops = {}
        for b in batches:
            ops |= target_ops(target, context, sizes, f"t{b}x", b)
            if shallow is not None:
                ops |= target_ops(shallow, context, sizes, f"h{b}x", b)
        kinds = {"shipped": (a.markov_candidates, a.draft_vocab), "whole vocabulary": (a.markov_candidates, 0),
                 "reference": (0, 0)}
        drafts = [(layers, kind) for layers in (int(x) for x in a.draft_layers.split(",")) for kind in kinds]
        ops |= {f"d{layers}/{kind}": draft_op(target, layers, context, *kinds[kind], a) for layers, kind in drafts}
        ops["suffix"] = suffix_op(context, a)
        ms = interleaved_ms(ops, device, a.repeats, a.warmup)
        note = ""
        if built != real_layers:  # t(L) = t(N) + (L - N) * (t(N) - t(N/2)) / (N - N/2)
            per_layer = {k: (ms[k] - ms["h" + k[1:]]) / (built - half) for k in ms if k.startswith("t")}
            for key, cost in per_layer.items():
                ms[key] += (real_layers - built) * cost
            note = f"extrapolated to {real_layers} layers from {built} and {half}"
            if min(per_layer.values()) <= 0:  # the shallower target was not faster: noise swamped a layer's cost
                note += "; UNRELIABLE: a layer's cost came out <= 0 (more --repeats or --target-layers)"
        for b in batches:
            step = ms[f"t{b}x1"]
            rows.append(Row(shape, context, "plain step", step, 1.0, note, b))
            rows += [Row(shape, context, f"verify {n}", ms[f"t{b}x{n}"], ms[f"t{b}x{n}"] / step, note, b)
                     for n in sizes]
        plain = ms["t1x1"]
        labels = {"shipped": f"Markov top-{a.markov_candidates}, vocab {a.draft_vocab}",
                  "whole vocabulary": f"Markov top-{a.markov_candidates}, all ids", "reference": "reference"}
        for layers, kind in drafts:
            v = ms[f"d{layers}/{kind}"]
            rows.append(Row(shape, context, f"dspark {layers}L draft, {labels[kind]}", v, v / plain))
        rows.append(Row(shape, context, "suffix decoding round (cap 24)", ms["suffix"], ms["suffix"] / plain))
    return rows


def print_rows(rows: list[Row]) -> None:
    print(f"\n{'shape':<14}{'ctx':>6}{'batch':>6}  {'operation':<42}{'ms':>10}{'plain steps':>13}  note")
    for r in rows:
        steps = "-" if r.steps is None else f"{r.steps:.3f}"
        print(f"{r.shape:<14}{r.context:>6}{r.batch:>6}  {r.op:<42}{r.ms:>10.3f}{steps:>13}  {r.note}")


def main(argv: list[str] | None = None) -> Result:
    a = parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    dtype = getattr(torch, a.dtype)
    machine = {"processor": platform.processor() or platform.machine(), "torch": torch.__version__,
               "threads": torch.get_num_threads(), "device": a.device,
               "cuda": torch.cuda.get_device_name(device) if device.type == "cuda" else None}
    print(f"machine: {machine}")
    res = Result(machine, vars(a))
    for shape in a.shapes.split(","):
        res.rows += run_shape(shape, a, device, dtype)
        print_rows(res.rows)
    if a.out:
        Path(a.out).write_text(json.dumps({"machine": res.machine, "args": res.args,
                                           "rows": [asdict(r) for r in res.rows]}, indent=2))
    return res


if __name__ == "__main__":
    main()
