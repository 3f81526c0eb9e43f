"""DSpark training cost relative to the target forward, at SmolLM2-135M dimensions on CPU.

Measures, per training sequence (default 512 tokens, block 7, 16 and 64 anchors):
  - target forward: the base model with hidden states (what feature extraction needs) and the full
    CausalLM forward (base + LM head over all positions);
  - drafter forward+backward of the whole DSpark loss (backbone + Markov/confidence heads + full-vocab
    CE/L1/BCE, docs/dspark.md 2.2), and the backbone alone;
for 1 and 5 draft layers. Goals: drafter fwd+bwd / target forward <= 0.3 (1 layer), <= 0.6 (5).
Random weights (built from a LlamaConfig): timing does not depend on the values.

Precision (``--precision``): ``auto`` (default) measures what the training stage runs on this machine
(workers.stages: on a CPU with native bf16, AVX512-BF16/AMX, a bf16 target, bf16 loss matmuls and the fp32
drafter under bf16 autocast, TrainConfig.compute_dtype; on any other CPU fp32 for all three, since emulated
bf16 is several times slower than fp32 there), and the goal verdict is read in that precision. ``fp32``,
``bf16`` or ``both`` force it (``both``: the target in both precisions, the drafter step in both, and
verdicts against each target).

Memory: like the training loop on CPU (drafters.train), every case runs with freed memory kept for reuse
(drafters.cpu_memory.reuse_freed_memory: no page faults on the step's big tensors after the first steps);
``--no-reuse-memory`` measures glibc's defaults instead.

Why the anchor count matters: per valid slot the loss needs V*(3d + 3r) multiply-adds (drafter logits
forward and input-gradient, target logits, Markov W2 forward and both gradients); at SmolLM2 dims that is
~123M, more than the target's ~106M per token, so at 64 anchors x 7 slots per 512 tokens the loss heads
alone cost about as much as the target forward whatever the implementation. The CPU recipe samples 16.

Usage: .venv/bin/python benchmarks/bench_dspark.py [--tokens 512] [--anchors 16 64] [--layers 1 5] [--block 7]
           [--reps 5] [--precision auto|fp32|bf16|both] [--threads N] [--no-reuse-memory]
The goals (GOALS) are read off the CPU-time table with --threads 1 (CPU time of one thread is compute time, which
a shared machine distorts least).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import torch
import transformers

from drafters.cpu_memory import reuse_freed_memory
from drafters.dspark.anchors import sample_anchors
from drafters.dspark.config import DSparkConfig
from drafters.dspark.losses import dspark_loss
from drafters.dspark.model import DSparkDrafter
from drafters.target import cpu_bf16_fast


def smollm2_135m_config() -> transformers.LlamaConfig:
    """SmolLM2-135M dims: hidden 576, 30 layers, 9 heads / 3 KV heads, head_dim 64, MLP 1536, vocab 49152."""
    return transformers.LlamaConfig(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                    num_attention_heads=9, num_key_value_heads=3, head_dim=64,
                                    vocab_size=49152, max_position_embeddings=8192, rope_theta=100000.0,
                                    rms_norm_eps=1e-5, tie_word_embeddings=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--anchors", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--block", type=int, default=7)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--layers", type=int, nargs="+", default=[1, 5])
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch default)")
    ap.add_argument("--precision", choices=["auto", "fp32", "bf16", "both"], default="auto",
                    help="auto: what the training stage uses on this CPU (see the module doc)")
    ap.add_argument("--no-reuse-memory", action="store_true",
                    help="glibc's default malloc settings instead of the training loop's (see the module doc)")
    args = ap.parse_args()
    with reuse_freed_memory(enabled=not args.no_reuse_memory) as reuse:
        run(args, reuse)


def autocast(dt: torch.dtype):
    """The drafter's compute precision in the training stage: bf16 autocast for the bf16 recipe."""
    return torch.autocast("cpu", dtype=torch.bfloat16) if dt == torch.bfloat16 else contextlib.nullcontext()


def run(args: argparse.Namespace, reuse: bool) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)
    native_bf16 = cpu_bf16_fast()
    precision = args.precision if args.precision != "auto" else "bf16" if native_bf16 else "fp32"
    dtypes = {"fp32": [torch.float32], "bf16": [torch.bfloat16], "both": [torch.float32, torch.bfloat16]}[precision]
    torch.manual_seed(0)
    tcfg = smollm2_135m_config()
    target = transformers.LlamaForCausalLM(tcfg).eval()  # fp32: also the source of the drafter's features
    targets = {dt: target if dt == torch.float32 else transformers.LlamaForCausalLM(tcfg).to(dt).eval()
               for dt in dtypes}
    T = args.tokens
    ids = torch.randint(0, tcfg.vocab_size, (1, T))
    loss_mask = torch.zeros(1, T, dtype=torch.long)
    loss_mask[0, T // 8:] = 1  # a prompt, then the supervised response
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, T={T}, anchors={args.anchors}, "
          f"block={args.block}; native bf16 on this CPU: {native_bf16}; precision: {precision}"
          + (" (the training stage's on this CPU)" if args.precision == "auto" else "")
          + f"; freed memory kept for reuse: {reuse}")

    layer_ids = DSparkConfig.from_target(tcfg, mask_token_id=16).target_layer_ids
    feats = {}

    def target_base(model, keep_features):
        with torch.no_grad():
            out = model.model(ids, output_hidden_states=True)
            if keep_features:  # fp32 features either way: the drafter's inputs, not what is timed
                feats["aux"] = torch.cat([out.hidden_states[i + 1] for i in layer_ids], -1).float()
                feats["last"] = out.last_hidden_state.float()

    def target_full(model):
        with torch.no_grad():
            model(ids, output_hidden_states=True)

    cases = {}
    for dt, model in targets.items():
        cases[f"target_base_{NAME[dt]}"] = lambda m=model: target_base(m, m is target or "aux" not in feats)
        cases[f"target_full_{NAME[dt]}"] = lambda m=model: target_full(m)
    for A in args.anchors:
        anchors, keep = sample_anchors(loss_mask[0], A, torch.Generator().manual_seed(0))
        anchors, keep = anchors[None], keep[None]
        for n in args.layers:
            cfg = DSparkConfig.from_target(tcfg, mask_token_id=16, num_hidden_layers=n, block_size=args.block)
            d = DSparkDrafter(cfg, target.get_input_embeddings().weight, target.get_output_embeddings().weight)
            d.train()

            def backbone(d=d, anchors=anchors, keep=keep, dt=torch.float32):
                d.zero_grad(set_to_none=True)
                with autocast(dt):
                    h = d(ids, feats["aux"], anchors, keep)
                h.float().square().mean().backward()

            def full(d=d, anchors=anchors, keep=keep, dt=torch.float32):
                d.zero_grad(set_to_none=True)
                with autocast(dt):
                    out = dspark_loss(d, ids, loss_mask, feats["aux"], feats["last"], anchors, keep, matmul_dtype=dt)
                out.total.backward()

            for dt in dtypes:
                cases[f"backbone_{NAME[dt]}_{n}_{A}"] = lambda backbone=backbone, dt=dt: backbone(dt=dt)
                cases[f"full_{NAME[dt]}_{n}_{A}"] = lambda full=full, dt=dt: full(dt=dt)
    # interleave the cases rep by rep so that load changes on a shared machine hit all of them alike
    # Both clocks: wall time, and this process's CPU time (user+sys of all its threads), which a shared,
    # overloaded machine distorts far less (use --threads 1 to make CPU time equal compute time).
    times = {k: [] for k in cases}
    cpu = {k: [] for k in cases}
    for fn in cases.values():
        fn()  # warm-up (the fp32 target first: it fills feats)
    for _ in range(args.reps):
        for k, fn in cases.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            times[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    for clock, table in (("CPU time", cpu), ("wall time", times)):
        print(f"--- {clock} (median of {args.reps})")
        report(args, tcfg, {k: statistics.median(v) for k, v in table.items()}, T, [NAME[dt] for dt in dtypes],
               "bf16" if precision == "bf16" else "fp32" if precision == "fp32" else None)


NAME = {torch.float32: "fp32", torch.bfloat16: "bf16"}
GOALS = {1: 0.3, 5: 0.6}


def report(args, tcfg, med, T, precisions: list[str], recipe: str | None) -> None:
    """Print the figures and ratios of one clock. ``precisions``: the measured ones ("fp32", "bf16");
    ``recipe``: the one the training stage uses here (its verdict is the one against GOALS), None when forced to both."""
    V, d_ = tcfg.vocab_size, tcfg.hidden_size
    per_tok = 30 * (2 * d_ * d_ + 2 * d_ * 192 + 3 * d_ * 1536)  # weights per layer: q,o; k,v; MLP
    print(f"target forward (~{2 * per_tok * T / 1e9:.0f} GFLOP base, {2 * (per_tok + V * d_) * T / 1e9:.0f} with "
          f"the LM head): " + "; ".join(f"{pr}: base+hidden states {med[f'target_base_{pr}'] * 1e3:.0f} ms, "
                                        f"CausalLM {med[f'target_full_{pr}'] * 1e3:.0f} ms" for pr in precisions))
    for A in args.anchors:
        S = A * args.block
        print(f"{A} anchors ({S} slots): loss heads need up to ~{(3 * S * d_ * V + 3 * S * 256 * V) * 2 / 1e9:.0f}"
              f" GFLOP")
        for n in args.layers:
            goal = f"  (goal <= {GOALS[n]})" if n in GOALS else ""
            print(f"  {n} draft layer(s): drafter fwd+bwd "
                  + ", ".join(f"{pr} step {med[f'full_{pr}_{n}_{A}'] * 1e3:.0f} ms (backbone alone "
                              f"{med[f'backbone_{pr}_{n}_{A}'] * 1e3:.0f} ms)" for pr in precisions))
            for tp in precisions:
                base = med[f"target_base_{tp}"]
                print(f"    / the {tp} target base forward: "
                      + ", ".join(f"{pr} step {med[f'full_{pr}_{n}_{A}'] / base:.2f} (backbone "
                                  f"{med[f'backbone_{pr}_{n}_{A}'] / base:.2f})" for pr in precisions) + goal)
    # The goal at the CPU recipe's 16 anchors (drafters.train.resolve.CPU_DEFAULTS), in the precision the training stage
    # runs on this CPU (target and drafter step alike), or, forced to both, for each pairing. A "bf16" drafter
    # step is the bf16 recipe: bf16 loss matmuls and the backbone under bf16 autocast.
    if 16 in args.anchors:
        pairs = [(recipe, recipe)] if recipe else [("fp32", "fp32"), ("bf16", "fp32"), ("bf16", "bf16")]
        for heads, tgt in pairs:
            verdicts = []
            for n, goal in GOALS.items():
                if n in args.layers:
                    r = med[f"full_{heads}_{n}_16"] / med[f"target_base_{tgt}"]
                    verdicts.append(f"{n} layer(s) {r:.2f} {'<=' if r <= goal else '>'} {goal} "
                                    f"{'met' if r <= goal else 'NOT met'}")
            print(f"goal at 16 anchors, {heads} drafter step, {tgt} target"
                  + (" (the training stage's precision here)" if recipe else "") + ": " + "; ".join(verdicts))


if __name__ == "__main__":
    main()
