"""Speculative vs plain decoding speed on CPU with SmolLM2-135M-Instruct.

Prints, for the drafter given by --drafter (a DSpark checkpoint directory) or the n-gram proposer:
  - tau (mean accepted length per verification round, bonus included; drafters.evaluate.tau_of),
  - speculative tokens/s divided by HF ``model.generate`` greedy tokens/s, and by the same loop without a
    drafter (drafters.speculate.plain_generate),
  - the loop's own overhead (time outside target and drafter forwards) as a share of wall time and per round
    (goal < 10%),
and checks that the speculative tokens equal plain greedy decoding's.

    .venv/bin/python benchmarks/bench_speculate.py [--drafter DIR] [--prompts 4] [--max-new-tokens 128]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drafters.baselines import NGramProposer
from drafters.engines.hf import load_proposer
from drafters.evaluate import tau_of
from drafters.speculate import plain_generate, speculative_generate
from drafters.target import load_target

# Agent-like requests: code and JSON in the context that the answer tends to repeat.
PROMPTS = [
    ("Here is a function:\n\ndef add_numbers(a, b):\n    result = a + b\n    return result\n\n"
     "Rewrite add_numbers so that it also accepts a third argument c with default 0. Show the whole function."),
    ('The tool returned {"status": "ok", "files": ["src/main.py", "src/utils.py", "tests/test_main.py"]}. '
     "List every file path from the tool result, one per line."),
    "Convert this list to a JSON array of objects with keys name and age: Alice 31, Bob 27, Carol 45.",
    "Write a Python function that reads a CSV file with the csv module and returns a list of dicts.",
    "class Stack:\n    def __init__(self):\n        self.items = []\n\nAdd push, pop and peek methods to Stack.",
    "Repeat the following command exactly, then explain it: git log --oneline --graph --decorate --all",
]


def render(tok, text: str) -> list[int]:
    ids = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)


def hf_generate(target, ids: list[int], n: int) -> tuple[list[int], float]:
    x = torch.tensor([ids], device=target.device)
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = target.model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=n, min_new_tokens=n,
                                    do_sample=False, eos_token_id=None, pad_token_id=0)
    return out[0, len(ids):].tolist(), time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="smollm2-135m-instruct")
    ap.add_argument("--drafter", default=None, help="DSpark checkpoint directory (default: n-gram proposer)")
    ap.add_argument("--block-size", type=int, default=7, help="n-gram proposer block size")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = leave as is)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    if args.threads:
        torch.set_num_threads(args.threads)

    target = load_target(args.target)
    tok = target.tokenizer
    proposer = load_proposer(args.drafter, target) if args.drafter else NGramProposer(args.block_size)
    name = args.drafter or f"ngram(block {args.block_size})"
    prompts = [render(tok, p) for p in PROMPTS[: args.prompts]]
    n = args.max_new_tokens
    print(f"target {target.name} on {target.device} ({torch.get_num_threads()} threads), proposer {name}, "
          f"{len(prompts)} prompts x {n} new tokens (greedy, no stop tokens)")

    plain_generate(target, prompts[0], 8)  # warm-up
    speculative_generate(target, proposer, prompts[0], 8)
    hf_generate(target, prompts[0], 8)

    rounds, tok_spec, t_spec, t_plain, t_hf, t_target, t_drafter, t_over = [], 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    mismatches = 0
    for ids in prompts:
        ref, secs = hf_generate(target, ids, n)
        t_hf += secs
        p = plain_generate(target, ids, n)
        g = speculative_generate(target, proposer, ids, n)
        t_plain += p.total_s
        mismatches += g.tokens != p.tokens
        if p.tokens != ref:
            print(f"  note: the plain loop and HF generate diverge at token "
                  f"{next((i for i, (a, b) in enumerate(zip(p.tokens, ref)) if a != b), len(ref))} (fp32 near-tie)")
        rounds += g.rounds
        tok_spec += len(g.tokens)
        t_spec += g.total_s
        t_target += g.target_s
        t_drafter += g.drafter_s
        t_over += g.overhead_s
        print(f"  prompt {len(ids):4d} tok: tau {tau_of(g.rounds):.2f}, spec {len(g.tokens) / g.total_s:6.1f} tok/s, "
              f"plain loop {len(p.tokens) / p.total_s:6.1f} tok/s, HF generate {len(ref) / secs:6.1f} tok/s")

    total_tokens = len(prompts) * n
    tau = tau_of(rounds)
    spec_tps, plain_tps, hf_tps = tok_spec / t_spec, total_tokens / t_plain, total_tokens / t_hf
    print(f"\nproposer            {name}")
    print(f"tau                 {tau:.3f}  ({len(rounds)} verification rounds; bonus token included)")
    print(f"tokens/s            speculative {spec_tps:.1f} | plain loop {plain_tps:.1f} | HF generate {hf_tps:.1f}")
    print(f"speedup             {spec_tps / hf_tps:.2f}x vs HF generate, {spec_tps / plain_tps:.2f}x vs plain loop")
    print(f"time split          target {t_target / t_spec:.1%}, drafter {t_drafter / t_spec:.1%}, "
          f"loop overhead {t_over / t_spec:.1%} (goal < 10%)")
    print(f"per round           {1e3 * t_spec / len(rounds):.2f} ms, of which loop overhead "
          f"{1e3 * t_over / len(rounds):.3f} ms")
    print(f"lossless            {'yes' if mismatches == 0 else f'NO: {mismatches} prompts differ from plain greedy'}")


if __name__ == "__main__":
    main()
