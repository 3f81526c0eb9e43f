"""DSpark training cost relative to the target forward, at SmolLM2-135M dimensions on CPU.

Measures, per training sequence (default 512 tokens, block 7, 16 and 64 anchors):
  - target forward: the base model with hidden states (what feature extraction needs) and the full
    CausalLM forward (base + LM head over all positions), in fp32 and in bf16;
  - drafter forward+backward of the whole DSpark loss (backbone + Markov/confidence heads + full-vocab
    CE/L1/BCE, DSPARK.md 2.2) with the V-sized matmuls in fp32 and in bf16 (softmax always fp32), and the
    backbone alone;
for 1 and 5 draft layers. Goals (issue 5): drafter fwd+bwd / target forward <= 0.3 (1 layer), <= 0.6 (5).
Random weights (built from a LlamaConfig): timing does not depend on the values.

Why the anchor count matters: per valid slot the loss needs V*(3d + 3r) multiply-adds (drafter logits
forward and input-gradient, target logits, Markov W2 forward and both gradients); at SmolLM2 dims that is
~123M, more than the target's ~106M per token, so at 64 anchors x 7 slots per 512 tokens the loss heads
alone cost about as much as the target forward whatever the implementation. The CPU recipe samples 16.

Usage: .venv/bin/python benchmarks/bench_dspark.py [--tokens 512] [--anchors 16 64] [--block 7] [--reps 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import transformers

from drafters.dspark.anchors import sample_anchors
from drafters.dspark.config import DSparkConfig
from drafters.dspark.losses import dspark_loss
from drafters.dspark.model import DSparkDrafter


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
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    tcfg = smollm2_135m_config()
    target = transformers.LlamaForCausalLM(tcfg).eval()
    target16 = transformers.LlamaForCausalLM(tcfg).to(torch.bfloat16).eval()
    T = args.tokens
    ids = torch.randint(0, tcfg.vocab_size, (1, T))
    loss_mask = torch.zeros(1, T, dtype=torch.long)
    loss_mask[0, T // 8:] = 1  # a prompt, then the supervised response
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, T={T}, anchors={args.anchors}, "
          f"block={args.block}")

    layer_ids = DSparkConfig.from_target(tcfg, mask_token_id=16).target_layer_ids
    feats = {}

    def target_base(model=target, keep_features=True):
        with torch.no_grad():
            out = model.model(ids, output_hidden_states=True)
            if keep_features:  # the fp32 model's: the drafter trains on fp32 features either way
                feats["aux"] = torch.cat([out.hidden_states[i + 1] for i in layer_ids], -1)
                feats["last"] = out.last_hidden_state

    def target_full(model=target):
        with torch.no_grad():
            model(ids, output_hidden_states=True)

    cases = {"target_base": target_base, "target_full": target_full,
             "target_base_bf16": lambda: target_base(target16, False), "target_full_bf16": lambda: target_full(target16)}
    for A in args.anchors:
        anchors, keep = sample_anchors(loss_mask[0], A, torch.Generator().manual_seed(0))
        anchors, keep = anchors[None], keep[None]
        for n in args.layers:
            cfg = DSparkConfig.from_target(tcfg, mask_token_id=16, num_hidden_layers=n, block_size=args.block)
            d = DSparkDrafter(cfg, target.get_input_embeddings().weight, target.get_output_embeddings().weight)
            d.train()

            def backbone(d=d, anchors=anchors, keep=keep):
                d.zero_grad(set_to_none=True)
                h = d(ids, feats["aux"], anchors, keep)
                h.float().square().mean().backward()

            def full(d=d, anchors=anchors, keep=keep, dt=torch.float32):
                d.zero_grad(set_to_none=True)
                out = dspark_loss(d, ids, loss_mask, feats["aux"], feats["last"], anchors, keep, matmul_dtype=dt)
                out.total.backward()

            cases[f"backbone_{n}_{A}"] = backbone
            cases[f"full_{n}_{A}"] = full
            cases[f"full16_{n}_{A}"] = lambda full=full: full(dt=torch.bfloat16)
    # interleave the cases rep by rep so that load changes on a shared machine hit all of them alike
    # Both clocks: wall time, and this process's CPU time (user+sys of all its threads), which a shared,
    # overloaded machine distorts far less (use --threads 1 to make CPU time equal compute time).
    times = {k: [] for k in cases}
    cpu = {k: [] for k in cases}
    for fn in cases.values():
        fn()  # warm-up (target_base first: it fills feats)
    for _ in range(args.reps):
        for k, fn in cases.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            times[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    for clock, table in (("CPU time", cpu), ("wall time", times)):
        print(f"--- {clock} (median of {args.reps})")
        report(args, tcfg, {k: statistics.median(v) for k, v in table.items()}, T)


def report(args, tcfg, med, T) -> None:
    """Print the figures and ratios of one clock."""
    V, d_ = tcfg.vocab_size, tcfg.hidden_size
    per_tok = 30 * (2 * d_ * d_ + 2 * d_ * 192 + 3 * d_ * 1536)  # weights per layer: q,o; k,v; MLP
    print(f"target forward, fp32: base+hidden states {med['target_base'] * 1e3:.0f} ms, CausalLM "
          f"{med['target_full'] * 1e3:.0f} ms; bf16: {med['target_base_bf16'] * 1e3:.0f} / "
          f"{med['target_full_bf16'] * 1e3:.0f} ms  (~{2 * per_tok * T / 1e9:.0f} / "
          f"{2 * (per_tok + V * d_) * T / 1e9:.0f} GFLOP)")
    for A in args.anchors:
        S = A * args.block
        print(f"{A} anchors ({S} slots): loss heads need up to ~{(3 * S * d_ * V + 3 * S * 256 * V) * 2 / 1e9:.0f}"
              f" GFLOP")
        for n in args.layers:
            bb, f32, f16 = med[f"backbone_{n}_{A}"], med[f"full_{n}_{A}"], med[f"full16_{n}_{A}"]
            goal = 0.3 if n == 1 else 0.6 if n == 5 else None
            print(f"  {n} draft layer(s): drafter fwd+bwd {f32 * 1e3:.0f} ms with fp32 loss matmuls, "
                  f"{f16 * 1e3:.0f} ms with bf16 (backbone alone {bb * 1e3:.0f} ms)")
            print(f"    ratio to the fp32 target base forward: fp32 heads {f32 / med['target_base']:.2f}, "
                  f"bf16 heads {f16 / med['target_base']:.2f}, backbone {bb / med['target_base']:.2f}; "
                  f"to the bf16 target: bf16 heads {f16 / med['target_base_bf16']:.2f}"
                  + (f"  (goal <= {goal})" if goal else ""))
    # The goal at the CPU recipe's 16 anchors (workers.stages.CPU_DEFAULTS), bf16 loss matmuls, against both
    # target precisions: fp32 (issue 6's CPU target) and bf16 (what the recipe loads for training features
    # where the CPU has native bf16, workers.stages._load_target).
    if 16 in args.anchors:
        for label, base in (("fp32 target", "target_base"), ("bf16 target", "target_base_bf16")):
            verdicts = []
            for n, goal in ((1, 0.3), (5, 0.6)):
                if n in args.layers:
                    r = med[f"full16_{n}_16"] / med[base]
                    verdicts.append(f"{n} layer(s) {r:.2f} {'<=' if r <= goal else '>'} {goal} "
                                    f"{'met' if r <= goal else 'NOT met'}")
            print(f"goal at 16 anchors, bf16 loss matmuls, {label}: " + "; ".join(verdicts))


if __name__ == "__main__":
    main()
