"""Which proposer makes our agents fastest, and by how much? The headline benchmark (docs/experiments.md).

    .venv/bin/python benchmarks/bench_speed.py                # the headline: 3 seeds, defaults below
    .venv/bin/python benchmarks/bench_speed.py --seeds 0 --steps 20 --calls 4 --dev-calls 2 --max-new-tokens 16

The target is the demo agent ``smollm2-135m-agent``, fp32, greedy, on this machine's CPU. Data, two sources:
the example traces split as the agent target's adapter was built (its held-out conversations were never
seen by the adapter), and a second source outside examples/ (--extra-traces, default tau-bench airline:
real GPT-4o runs with a long policy prompt; benchmarks/data/SOURCES.md) split by conversation, its tools
inferred from its training calls. Held-out conversations whose assistant side nearly duplicates a training
conversation's move to training (drafters/traces/near_duplicates.py); the held-out agent calls (up to
--max-context tokens) are split by conversation into development and test (drafters/evaluate/select.py),
each sampled round-robin over the sources. Per seed:

  1. regenerate the training calls with the target (cached): the short ones (rows up to --max-seq-len) train
     the agent drafter (bench_agent_tau's drafter (b), --steps steps, --layers layers, from the target's
     layers); they and the second source's long ones (--extra-train-calls) are suffix decoding's corpus;
  2. development (--dev-calls): replay the line-up (drafters/evaluate/lineup.py: the drafter with its draft
     vocabulary, n-gram, suffix decoding at cap 24 and at the block size, the tool-schema proposer and
     suffix+schema) and the cascade at each threshold; fit the cascade's threshold and choose the proposer
     to ship by the product's own rule (drafters/evaluate/speed.py deploy_choice: the fastest measured there,
     the highest tau among those level with it on speed); the development entries it read are kept in the JSON;
  3. test (--calls), read once: replay the line-up and the fitted cascade; report speed-up over plain
     decoding (end to end, prefill included) and tau, each with a 95% interval that resamples whole calls
     (pooled like the estimate), the cost model (r, c), per source, and the shipped proposer against suffix
     decoding.

Then across seeds: the mean, and the spread (min..max) across seeds beside the intervals across calls. The
proposers whose drafts do not depend on the seed (n-gram, suffix@block, schema, suffix+schema) are replayed
with the first seed only; every seed replays the drafter, the cascade and suffix decoding.
Speed-ups are measured in one process with every proposer replayed right after plain decoding on the same
call, so a machine whose load drifts moves them alike; they are figures of this machine, not a GPU's.
The JSON report (--out/speed.json) holds the arguments it ran with, the code version and the machine.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("bench_agent_tau", HERE / "bench_agent_tau.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_agent_tau"] = bench
_spec.loader.exec_module(bench)

from drafters.agent_target_build import EXAMPLE_TEMPLATE, example_trace_files, split_examples
from drafters.baselines.suffix_decoding import training_outputs
from drafters.evaluate import evaluate, pooled_tau_ci
from drafters.evaluate.lineup import SUFFIX_CAP, Lineup
from drafters.evaluate.metrics import pooled_ratio_ci
from drafters.evaluate.replay import spread_calls
from drafters.evaluate.report import hardware
from drafters.evaluate.select import CASCADE_THRESHOLDS, choose_on_dev, split_dev_test
from drafters.evaluate.speed import deploy_choice
from drafters.render import Renderer
from drafters.target import AGENT_SPEC, load_target
from drafters.traces.infer_tools import infer_tools, with_inferred_tools
from drafters.traces.ingest import ingest, split_conversations
from drafters.traces.near_duplicates import split_without_near_duplicates
from drafters.train.resolve import Machine

SHOWN = ("cascade", "suffix+schema", "schema", "suffix", "suffix@block", "candidate", "ngram")


#: The second source: real GPT-4o customer-service runs (tau-bench airline, MIT; benchmarks/data/SOURCES.md),
#: long system policy and tool results, outside examples/ so the agent target's adapter never saw them.
EXTRA_TRACES = HERE / "data" / "tau-bench__gpt-4o-airline__first40.json"


def parse_args(argv: list[str] | None = None):
    ap = bench.build_parser(__doc__.split("\n\n")[0])
    ap.set_defaults(steps=300, train_calls=120, calls=24, max_context=6144, max_new_tokens=48, layers=1,
                    out=Path("benchmarks/results/speed"))
    ap.add_argument("--seeds", default="0,1,2", help="training seeds, comma-separated (the spread is reported)")
    ap.add_argument("--dev-calls", type=int, default=12, help="development calls (threshold, what to ship)")
    ap.add_argument("--suffix-cap", type=int, default=SUFFIX_CAP, help="suffix decoding's most drafts per round")
    ap.add_argument("--extra-traces", type=Path, nargs="*", default=[EXTRA_TRACES],
                    help="trace files of a second source (none: the example traces only), split by conversation "
                         "(--extra-heldout-fraction); tools inferred from their training calls where they record "
                         "none (drafters/traces/infer_tools.py)")
    ap.add_argument("--extra-heldout-fraction", type=float, default=0.25)
    ap.add_argument("--tables", type=Path, default=None,
                    help="print the markdown tables of a speed.json this benchmark wrote, and run nothing")
    ap.add_argument("--extra-train-calls", type=int, default=48,
                    help="training calls of the second source regenerated for suffix decoding's corpus (prompts "
                         "up to --max-context; the drafter trains on rows up to --max-seq-len only)")
    return ap.parse_args(argv)


def source_of(call_id: str) -> str:
    """The trace file a call came from (its conversation id up to '#')."""
    return str(call_id).split("#", 1)[0].split("/", 1)[0]


def extra_split(paths: list[Path], fraction: float) -> tuple[list, list]:
    """(train, held-out) conversations of the second source, split by conversation; conversations that
    record no tools get the tools inferred from the training conversations' calls (never the held-out's)."""
    if not paths:
        return [], []
    train, held = split_conversations(ingest(paths).conversations, fraction, min_heldout=1)
    tools = infer_tools(train)
    return with_inferred_tools(train, tools), with_inferred_tools(held, tools)


def by_source(prompts: list, n: int) -> list:
    """At most ``n`` of ``prompts``, taken round-robin over their sources, each source's calls in the order of
    a stable hash of their call id: every source is represented however many conversations it has, and a
    source's sample covers all positions in its conversations (early calls have the shortest contexts)."""
    groups: dict[str, list] = {}
    for p in sorted(prompts, key=lambda p: hashlib.sha256(str(p.call_id).encode()).hexdigest()):
        groups.setdefault(source_of(p.conversation_id), []).append(p)
    out, depth = [], 0
    while len(out) < n and any(depth < len(g) for g in groups.values()):
        out.extend(g[depth] for g in groups.values() if depth < len(g))
        depth += 1
    return out[:n]


def calls(renderer: Renderer, args) -> tuple[list, list, list, list, dict, int]:
    """(agent training prompts, the second source's long training prompts, development prompts, test prompts,
    tools by call id, near duplicates moved). The held-out agent calls are bench_agent_tau.build_prompts'
    (its rule, without its --calls cap), split by conversation into development and test, each taken
    round-robin over the sources."""
    split = split_examples(example_trace_files())
    xtrain, xheld = extra_split(args.extra_traces, args.extra_heldout_fraction)
    split.train, split.heldout = split.train + xtrain, split.heldout + xheld
    split.train, split.heldout, moved = split_without_near_duplicates(split.train, split.heldout)
    uncapped = argparse.Namespace(**{**vars(args), "calls": sys.maxsize})
    agent, _, held, tools_of = bench.build_prompts(renderer, split, uncapped)
    xids = {c.id for c in xtrain}
    long = [renderer.render_prompt(c) for conv in split.train if conv.id in xids for c in conv.calls() if c.tools]
    long = spread_calls([p for p in long if len(p.prompt_ids) <= args.max_context], args.extra_train_calls)
    halves = split_dev_test(held)
    return agent, long, by_source(halves.dev, args.dev_calls), by_source(halves.test, args.calls), tools_of, len(moved)


def per_call_sums(report: dict, a: str, b: str | None, what: str) -> list[tuple[float, float, float, float]]:
    """Per call (na, da, nb, db) for pooled_ratio_ci: what="speed" (tokens, seconds of a; of b, or of plain
    decoding when b is None) or "tau" (committed tokens, rounds of a; of b)."""
    pa = {c["call_id"]: c for c in report["proposers"][a]["per_call"]}
    pb = {c["call_id"]: c for c in (report["plain"]["per_call"] if b is None else report["proposers"][b]["per_call"])}
    keys = ("tokens", "seconds") if what == "speed" else ("sum_len", "rounds")
    return [(pa[k][keys[0]], pa[k][keys[1]], pb[k][keys[0]], pb[k][keys[1]]) for k in pa if k in pb
            and pa[k][keys[1]] and pb[k][keys[1]]]


#: Proposers whose drafts do not depend on the training seed: replayed with the first seed only (later seeds
#: replay the drafter, the cascade and suffix decoding, the reference they are compared with).
SEED_FREE = ("ngram", "suffix@block", "schema", "suffix+schema")


def seed_run(seed: int, target, renderer: Renderer, corpus, extra, dev: list, test: list, args,
             first: dict | None = None) -> dict:
    """Train one drafter (on ``corpus``), choose on development, report on test (module docstring); suffix
    decoding indexes the answers of ``corpus`` and ``extra`` (the second source's long calls). With
    ``first`` (the first seed's run) the SEED_FREE proposers are not replayed again: their development
    speed-ups are the first seed's, and the proposer to ship is the fastest of theirs and this seed's."""
    args.seed = seed
    drafter, timing = bench.train_drafter("agent", target, corpus.rows, args)
    lineup = Lineup(drafter, None, "", training_outputs(corpus.rows + extra.rows), renderer.end_of_turn_ids(),
                    suffix_cap=args.suffix_cap, renderer=renderer)
    settings = {"max_new_tokens": args.max_new_tokens, "segmenter": renderer.segment_completion}

    def run(proposers, prompts, compare=None):
        return evaluate(target, proposers, prompts, compare=compare or [], **settings,
                        progress=lambda d, n: print(f"  seed {seed}: replayed {d}/{n}", flush=True)
                        if d % 20 == 0 else None)

    shippable = {k: v for k, v in lineup.shippable().items() if first is None or k not in SEED_FREE}
    choice = choose_on_dev(run, shippable, lineup.cascade, dev)
    threshold = choice.threshold if choice.threshold is not None else 1.0
    report = run(shippable | {"cascade": lineup.cascade(threshold)}, test)
    speeds, entries = dict(choice.speedups), {k: dev_entry(e) for k, e in choice.entries.items()}
    if first is not None:
        speeds |= {k: v for k, v in first["dev_speedups"].items() if k in SEED_FREE}
        entries |= {k: v for k, v in first["dev"].items() if k in SEED_FREE}
    return {"seed": seed, "training": timing, "threshold": threshold,
            "shipped": deploy_choice(entries, "hf")["proposer"] if entries else None,
            "dev_speedups": speeds, "dev": entries, "report": dict(report)}


def dev_entry(entry: dict) -> dict:
    """What the deploy choice reads of a development entry (drafters.evaluate.speed.deploy_choice): its
    speed-up, tau and per-call tokens and seconds; kept in the JSON, so a choice can be checked offline."""
    timing = {"tokens_per_s": (entry.get("timing") or {}).get("tokens_per_s")}
    return {"speedup_vs_plain": entry.get("speedup_vs_plain"), "tau": entry.get("tau"), "timing": timing,
            "per_call": [{"call_id": c["call_id"], "tokens": c["tokens"], "seconds": c["seconds"]}
                         for c in entry.get("per_call") or ()]}


def summarize(runs: list[dict]) -> dict:
    """Per proposer and per seed: speed-up over plain and tau with call intervals; the shipped proposer
    against suffix decoding; the mean and the spread across seeds. A SEED_FREE proposer's row in a later
    seed is the first seed's (``"from_seed"``)."""
    out: dict[str, Any] = {"per_seed": [], "across_seeds": {}}
    for r in runs:
        rep = r["report"]
        row = {"seed": r["seed"], "shipped": r["shipped"], "threshold": r["threshold"], "proposers": {}}
        for name, e in rep["proposers"].items():
            sp = pooled_ratio_ci(per_call_sums(rep, name, None, "speed"))
            cost = (rep.get("speed") or {}).get("proposers", {}).get(name, {}).get("cost") or {}
            row["proposers"][name] = {"speedup": sp, "tau": pooled_tau_ci(e), "r": cost.get("r"), "c": cost.get("c"),
                                      "by_source": per_source(rep, name)}
        first = out["per_seed"][0] if out["per_seed"] else None
        for name, p in (first["proposers"].items() if first else ()):
            row["proposers"].setdefault(name, {**p, "from_seed": first["seed"]})
        # a seed-free proposer shipped by a later seed is compared with suffix decoding where it was replayed
        src = next((x for x in (rep, runs[0]["report"]) if r["shipped"] in x["proposers"]), None)
        if src is not None:
            row["shipped_vs_suffix"] = {"speed": pooled_ratio_ci(per_call_sums(src, r["shipped"], "suffix", "speed")),
                                        "tau": pooled_ratio_ci(per_call_sums(src, r["shipped"], "suffix", "tau"))}
            if src is not rep:
                row["shipped_vs_suffix"]["from_seed"] = runs[0]["seed"]
        out["per_seed"].append(row)
    names = out["per_seed"][0]["proposers"]
    for name in names:
        own = [s for s in out["per_seed"] if "from_seed" not in s["proposers"][name]]
        sp = [s["proposers"][name]["speedup"][0] for s in own]
        tau = [s["proposers"][name]["tau"][0] for s in own]
        out["across_seeds"][name] = {"seeds": len(own), "speedup_mean": sum(sp) / len(sp),
                                     "speedup_range": [min(sp), max(sp)], "tau_mean": sum(tau) / len(tau),
                                     "tau_range": [min(tau), max(tau)]}
    return out


def per_source(report: dict, name: str) -> dict:
    """Speed-up and tau of one proposer per trace source (pooled over that source's calls)."""
    plain = {c["call_id"]: c for c in report["plain"]["per_call"]}
    groups: dict[str, list] = {}
    for c in report["proposers"][name]["per_call"]:
        groups.setdefault(source_of(c["conversation_id"] or c["call_id"]), []).append(c)
    out = {}
    for src, cs in groups.items():
        sp = (sum(c["tokens"] for c in cs) / sum(c["seconds"] for c in cs)) / (
            sum(plain[c["call_id"]]["tokens"] for c in cs) / sum(plain[c["call_id"]]["seconds"] for c in cs))
        out[src] = {"calls": len(cs), "speedup": sp, "tau": sum(c["sum_len"] for c in cs) / max(1, sum(c["rounds"] for c in cs))}
    return out


def _ci(t: tuple) -> str:
    v, lo, hi = t
    return "-" if v is None or math.isnan(v) else f"{v:.2f} [{lo:.2f}, {hi:.2f}]"


def print_summary(s: dict) -> None:
    for row in s["per_seed"]:
        print(f"\nseed {row['seed']}: shipped (chosen on development) = {row['shipped']}, cascade threshold "
              f"{row['threshold']}")
        print(f"  {'proposer':14} {'speed-up vs plain':>24} {'tau':>24} {'r':>6} {'c':>6}")
        for name in [n for n in SHOWN if n in row["proposers"]]:
            p = row["proposers"][name]
            print(f"  {name:14} {_ci(p['speedup']):>24} {_ci(p['tau']):>24} "
                  f"{(p['r'] or float('nan')):6.2f} {(p['c'] or float('nan')):6.2f}")
        if "shipped_vs_suffix" in row:
            v = row["shipped_vs_suffix"]
            print(f"  shipped / suffix: speed {_ci(v['speed'])}, tau {_ci(v['tau'])}")
        for name in [n for n in (row["shipped"], "suffix") if n in row["proposers"]]:
            for src, f in row["proposers"][name]["by_source"].items():
                print(f"  {name} on {src} ({f['calls']} calls): speed-up {f['speedup']:.2f}, tau {f['tau']:.2f}")
    print("\nacross seeds (mean, min..max):")
    for name in [n for n in SHOWN if n in s["across_seeds"]]:
        a = s["across_seeds"][name]
        print(f"  {name:14} speed-up {a['speedup_mean']:.2f} ({a['speedup_range'][0]:.2f}..{a['speedup_range'][1]:.2f})"
              f"   tau {a['tau_mean']:.2f} ({a['tau_range'][0]:.2f}..{a['tau_range'][1]:.2f})"
              + ("" if a["seeds"] > 1 else "   (seed-free: replayed with the first seed only)"))


def markdown(result: dict) -> str:
    """The headline table of a speed.json (docs/speed.md): per proposer, speed-up over plain decoding and tau
    (mean over seeds, the spread across seeds, the first seed's 95% call interval), then the shipped
    proposer against suffix decoding per seed, and per source. The summary is recomputed from the runs."""
    s = summarize(result["runs"])
    first = s["per_seed"][0]
    lines = [("| proposer | speed-up over plain: mean (seeds min..max) | first seed, 95% CI over calls | tau: mean "
              "(seeds min..max) | first seed, 95% CI | r | c |"), "|---|---|---|---|---|---|---|"]
    for name in [n for n in SHOWN if n in s["across_seeds"]]:
        a, p = s["across_seeds"][name], first["proposers"][name]
        spread = ((f"{a['speedup_range'][0]:.2f}..{a['speedup_range'][1]:.2f}",
                   f"{a['tau_range'][0]:.2f}..{a['tau_range'][1]:.2f}") if a["seeds"] > 1 else ("seed-free",) * 2)
        lines.append(f"| {name} | {a['speedup_mean']:.2f} ({spread[0]}) | {_ci(p['speedup'])} | {a['tau_mean']:.2f} "
                     f"({spread[1]}) | {_ci(p['tau'])} | {p['r']:.2f} | {p['c']:.2f} |")
    lines += ["", "| seed | shipped (chosen on development) | shipped / suffix: speed | shipped / suffix: tau |",
              "|---|---|---|---|"]
    for row in s["per_seed"]:
        v = row.get("shipped_vs_suffix") or {}
        lines.append(f"| {row['seed']} | {row['shipped']} | {_ci(v['speed']) if v else '-'} | "
                     f"{_ci(v['tau']) if v else '-'} |")
    lines += ["", "| proposer (first seed) | source | calls | speed-up | tau |", "|---|---|---|---|---|"]
    for name in [n for n in SHOWN if n in first["proposers"]]:
        for src, f in first["proposers"][name]["by_source"].items():
            lines.append(f"| {name} | {src} | {f['calls']} | {f['speedup']:.2f} | {f['tau']:.2f} |")
    return "\n".join(lines)


def code_version() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.tables:
        print(markdown(json.loads(args.tables.read_text())))
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    machine = {"hardware": hardware(), "torch": torch.__version__, "threads": torch.get_num_threads(),
               "precision": str(Machine.detect().precision), "python": platform.python_version()}
    print(f"machine: {machine}")
    target = load_target(AGENT_SPEC)
    renderer = Renderer(target.tokenizer, chat_template=EXAMPLE_TEMPLATE.read_text())
    agent, long, dev, test, tools_of, moved = calls(renderer, args)
    sources = {src: sum(source_of(p.conversation_id) == src for p in test) for src in
               dict.fromkeys(source_of(p.conversation_id) for p in test)}
    print(f"{len(agent)} agent training calls (+{len(long)} long ones for suffix decoding); {len(dev)} development "
          f"and {len(test)} test calls (test by source: {sources}; contexts up to "
          f"{max(len(p.prompt_ids) for p in test)} tokens); {moved} near-duplicate held-out conversations moved to "
          f"training", flush=True)
    corpus = bench.regenerate_corpus("agent", agent, target, renderer, tools_of, args)
    long_args = argparse.Namespace(**{**vars(args), "max_seq_len": args.max_context + args.max_answer})
    extra = bench.regenerate_corpus("long", long, target, renderer, tools_of, long_args)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "speed.json"
    runs: list[dict] = []
    for s in args.seeds.split(","):
        runs.append(seed_run(int(s), target, renderer, corpus, extra, dev, test, args, runs[0] if runs else None))
        # written after every seed, so a run cut short keeps the seeds it finished
        path.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "code_version": code_version(),
                                    "machine": machine, "near_duplicates_moved": moved,
                                    "calls": {"train": len(agent), "train_long": len(long), "dev": len(dev),
                                              "test": len(test), "test_by_source": sources},
                                    "seconds": time.perf_counter() - started, "summary": summarize(runs),
                                    "runs": runs}, indent=1, default=str))
        print(f"wrote {path} ({len(runs)} seed(s))", flush=True)
    print_summary(summarize(runs))
    print(f"\ntotal {time.perf_counter() - started:.0f} s; cascade thresholds tried on development: "
          f"{list(CASCADE_THRESHOLDS)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
