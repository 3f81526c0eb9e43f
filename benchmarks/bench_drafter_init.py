"""Does starting a drafter from the target's own layers pay? (drafters/dspark/target_init.py)

    .venv/bin/python benchmarks/bench_drafter_init.py --threads 2 --steps 500     # about 30 min on 2 cores

Trains bench_agent_tau's drafter (b), on the same regenerated agent calls with the same settings, four
times: 1 and 2 draft layers, each from a random start and from the target's layers; replays the same
held-out agent calls with each and prints tau overall and on tool-call arguments (95% call-bootstrap
intervals), the first and last training loss, the training time, and each start's ratio to the random one.
Every flag of bench_agent_tau.py applies (``--layers`` and ``--init`` are set here); the regenerated answers
are shared with it through ``--cache``, and each trained drafter is checkpointed there (a rerun resumes).
"""

from __future__ import annotations

import copy
import importlib.util
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("bench_agent_tau", HERE / "bench_agent_tau.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_agent_tau"] = bench
_spec.loader.exec_module(bench)

from drafters.agent_target_build import EXAMPLE_TEMPLATE, example_trace_files, split_examples
from drafters.dspark.proposer import DSparkProposer
from drafters.evaluate import evaluate, pooled_tau_ci
from drafters.render import Renderer
from drafters.target import AGENT_SPEC, load_target

VARIANTS = [(1, "random"), (1, "target"), (2, "random"), (2, "target")]


def main() -> int:
    args = bench.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    target = load_target(AGENT_SPEC)
    renderer = Renderer(target.tokenizer, chat_template=EXAMPLE_TEMPLATE.read_text())
    split = split_examples(example_trace_files())
    agent_prompts, _, held, tools_of = bench.build_prompts(renderer, split, args)
    corpus = bench.regenerate_corpus("agent", agent_prompts, target, renderer, tools_of, args)
    proposers, timings = {}, {}
    for layers, init in VARIANTS:
        run = copy.copy(args)
        run.layers, run.init = layers, init
        name = f"{layers}L-{init}"
        drafter, timings[name] = bench.train_drafter(f"agent-{name}", target, corpus.rows, run)
        proposers[name] = DSparkProposer(drafter)
    t = time.perf_counter()
    report = evaluate(target, proposers, held, max_new_tokens=args.max_new_tokens,
                      segmenter=renderer.segment_completion, compare=[(f"{n}L-target", f"{n}L-random") for n in (1, 2)])
    print(f"\n{len(corpus.rows)} agent rows, {args.steps} steps, {args.anchors} anchors, lr {args.lr}; "
          f"{len(held)} held-out calls (evaluation {time.perf_counter() - t:.0f} s)")
    print(f"{'drafter':10} {'overall':>18} {'tool_args':>18} {'x random':>14} {'loss first -> last':>20} {'train s':>8}")
    for name, e in report["proposers"].items():
        base = report["proposers"][name.split("-")[0] + "-random"]
        over, args_ = pooled_tau_ci(e, None), pooled_tau_ci(e, "tool_args")
        ratio = f"{over[0] / pooled_tau_ci(base, None)[0]:.2f} / {args_[0] / pooled_tau_ci(base, 'tool_args')[0]:.2f}"
        tm = timings[name]
        print(f"{name:10} {over[0]:5.2f} [{over[1]:4.2f},{over[2]:4.2f}] {args_[0]:5.2f} [{args_[1]:4.2f},{args_[2]:4.2f}] "
              f"{ratio:>14} {tm['first_loss']:8.2f} -> {tm['last_loss']:5.2f} {tm['seconds']:8.0f}")
    bench.print_paired(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
