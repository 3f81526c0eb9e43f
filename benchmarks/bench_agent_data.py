"""What do more regenerated agent calls, with proportionally more steps, buy on tool-call arguments?

    .venv/bin/python benchmarks/bench_agent_data.py --threads 1 --layers 2 --points 160:1000,320:2000 \
        --anchors 16 --tokens-per-batch 1024 --lr 3e-3 --calls 16 --max-new-tokens 64

For each point ``CALLS:STEPS`` trains bench_agent_tau's drafter (b) on that many regenerated agent training
calls for that many steps, and builds suffix decoding at its natural cap (24) over the same calls (its tree holds every training
answer, so it gains from data too); replays the same held-out agent calls with all of them, plus the
what-if hybrid of the largest point's drafter and suffix decoding and the n-gram proposer, and prints tau
overall and on tool-call arguments with 95% call-bootstrap intervals, each drafter's paired difference to
the suffix decoding of the same data, and the largest point's to the smallest. Every flag of
bench_agent_tau.py applies (``--train-calls`` is set per point); the regenerated answers and the trained
drafters are cached under ``--cache`` and shared with it (a rerun resumes, and drafters trained by another
process with the same settings are reused as they are).

The report (per call, per proposer) goes to ``--out``/agent_data-seed{SEED}.json; its training seconds are
this process's (0 for a cached drafter). ``--compare-history`` trains a second drafter at each point with
``--history-anchors`` (blocks anchored on the earlier assistant turns of every row's context too, same
steps and anchors per row) and pairs it with the first.
"""

from __future__ import annotations

import copy
import importlib.util
import json
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
from drafters.baselines import NGramProposer
from drafters.baselines.suffix_decoding import training_outputs
from drafters.evaluate import evaluate, pooled_tau_ci
from drafters.evaluate.lineup import Lineup
from drafters.render import Renderer
from drafters.target import AGENT_SPEC, load_target


def parse_points(text: str) -> list[tuple[int, int]]:
    """``"160:1000,320:2000"`` -> [(160, 1000), (320, 2000)] (training calls, steps), smallest first."""
    points = sorted((int(c), int(s)) for c, s in (p.split(":") for p in text.split(",")))
    if not points or any(c < 1 or s < 1 for c, s in points):
        raise SystemExit(f"--points: expected CALLS:STEPS,... with positive numbers, got {text!r}")
    return points


def parse_args(argv: list[str] | None = None):
    """bench_agent_tau.py's options plus ``--points`` and ``--compare-history`` (``--help`` lists them all)."""
    ap = bench.build_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=parse_points, default=parse_points("160:1000,320:2000"),
                    help="CALLS:STEPS,... training calls and steps per point (default 160:1000,320:2000)")
    ap.add_argument("--compare-history", action="store_true",
                    help="also train a drafter with --history-anchors at each point and pair it with the first")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    points, both = args.points, args.compare_history
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    target = load_target(AGENT_SPEC)
    renderer = Renderer(target.tokenizer, chat_template=EXAMPLE_TEMPLATE.read_text())
    split = split_examples(example_trace_files())
    proposers, timings, rows_of, compare, held = {}, {}, {}, [], None
    for calls, steps in points:
        run = copy.copy(args)
        run.train_calls, run.steps = calls, steps
        prompts, _, held, tools_of = bench.build_prompts(renderer, split, run)
        corpus = bench.regenerate_corpus("agent", prompts, target, renderer, tools_of, run)
        name = f"agent-{len(prompts)}"
        rows_of[name] = len(corpus.rows)
        drafter, timings[name] = bench.train_drafter(name, target, corpus.rows, run)
        last = (calls, steps) == points[-1]
        lineup = Lineup(drafter, None, "", training_outputs(corpus.rows))  # as the evaluate stage builds them
        proposers[name] = lineup.drafter(drafter)
        if both:
            hist = copy.copy(run)
            hist.history_anchors = True
            rows_of[f"{name}+h"] = len(corpus.rows)
            drafter_h, timings[f"{name}+h"] = bench.train_drafter(f"{name}+h", target, corpus.rows, hist)
            proposers[f"{name}+h"] = lineup.drafter(drafter_h)
            compare += [(f"{name}+h", name), (f"{name}+h", f"suffix-{len(prompts)}")]
        proposers[f"suffix-{len(prompts)}"] = lineup.suffix()
        if last:
            proposers["hybrid"] = lineup.baselines()["hybrid"]
        compare.append((name, f"suffix-{len(prompts)}"))
    proposers["ngram"] = NGramProposer(block_size=args.block_size)  # prompt lookup: no data to scale
    names = [n for n in proposers if n.startswith("agent-") and not n.endswith("+h")]
    if len(names) > 1:
        compare += [(names[-1], names[0]), (f"suffix-{names[-1][6:]}", f"suffix-{names[0][6:]}")]
    t = time.perf_counter()
    report = evaluate(target, proposers, held, max_new_tokens=args.max_new_tokens,
                      segmenter=renderer.segment_completion, compare=compare)
    print(f"\n{len(held)} held-out calls, {args.layers} draft layers (init {args.init}), {args.anchors} anchors, "
          f"lr {args.lr}; evaluation {time.perf_counter() - t:.0f} s, total {time.perf_counter() - started:.0f} s")
    print(f"{'proposer':11} {'overall':>18} {'tool_args':>18} {'steps':>6} {'rows':>5} {'loss last':>9} {'train s':>8}")
    for name, e in report["proposers"].items():
        over, args_ = pooled_tau_ci(e, None), pooled_tau_ci(e, "tool_args")
        tm = timings.get(name)
        extra_cols = (f"{tm['steps']:6} {rows_of[name]:5} {tm['last_loss']:9.2f} {tm['seconds']:8.0f}" if tm else "")
        print(f"{name:11} {over[0]:5.2f} [{over[1]:4.2f},{over[2]:4.2f}] "
              f"{args_[0]:5.2f} [{args_[1]:4.2f},{args_[2]:4.2f}] {extra_cols}")
    bench.print_paired(report)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"agent_data-seed{args.seed}.json"
    per_point = ("steps", "train_calls", "history_anchors")  # set by the points and --compare-history
    path.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items() if k not in per_point},
                                "points": points,
                                "compare_history": both, "timings": timings, "rows": rows_of,
                                "report": dict(report)}, indent=1, default=str))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
