"""Trace ingestion benchmark: parse+normalize+scrub throughput and peak memory.

    .venv/bin/python benchmarks/bench_traces.py [--corpus DIR] [--size-mb 200] [--repeat 3]

1. Throughput on the trace corpus (tests/traces/fixtures/corpus; one core, one process): every file of the
   corpus goes through ``iter_conversations`` (detect, parse, validate, scrub, dedup); MB/s = input bytes
   (decompressed) / s.
   Reported for the whole corpus and per format.
2. A synthetic OpenAI-chat JSONL file of ``--size-mb`` MB (agent-like records: tool calls with
   arguments, long tool results, some secrets and e-mails to scrub) is generated in a temp dir and
   ingested in a fresh subprocess that streams it (conversations are consumed, not kept); the
   subprocess reports its throughput and peak RSS (``resource.getrusage(...).ru_maxrss``).

Goals: >= 10 MB/s per core; peak memory < 500 MB whatever the file size (the goal is stated
for a 1 GB file: run with ``--size-mb 1024``; the default 200 MB keeps the run short).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_MBPS = 10.0
GOAL_PEAK_MB = 500.0


def corpus_throughput(corpus: Path, repeat: int) -> dict:
    from drafters.traces.ingest import expand_paths, iter_conversations
    from drafters.traces.report import ValidationReport

    files = expand_paths([corpus])  # the corpus README and SOURCES.tsv are skipped as documentation
    per_format: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # bytes, seconds
    total_bytes = total_s = 0.0
    convs = 0
    for path in files:
        size = path.stat().st_size
        best = float("inf")
        fmt_name = "?"
        for _ in range(repeat):
            report = ValidationReport()
            t0 = time.perf_counter()
            n = sum(1 for _ in iter_conversations([path], report=report))
            best = min(best, time.perf_counter() - t0)
            fmt_name = next(iter(report.formats), "unknown")
        convs += n
        per_format[fmt_name][0] += size
        per_format[fmt_name][1] += best
        total_bytes += size
        total_s += best
    return {
        "files": len(files),
        "conversations": convs,
        "mb": total_bytes / 1e6,
        "seconds": total_s,
        "mb_per_s": total_bytes / 1e6 / total_s,
        "per_format": {k: {"mb": b / 1e6, "mb_per_s": b / 1e6 / s if s else None}
                       for k, (b, s) in sorted(per_format.items())},
    }


def make_synthetic(path: Path, size_mb: int, seed: int = 0) -> int:
    """Write agent-like OpenAI chat records until the file has ``size_mb`` MB; returns the record count."""
    rng = random.Random(seed)
    words = ["the", "function", "returns", "a", "value", "when", "the", "test", "passes", "and", "the", "build", "is", "green", "so", "we", "ship", "it", "def", "main():", "import", "os", "print(x)", "for", "i", "in", "range(10):", "yield", "i"]
    target = size_mb * 1_000_000
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        while f.tell() < target:
            msgs = [{"role": "system", "content": "You are a coding agent. " * 20},
                    {"role": "user", "content": f"Fix bug #{n}: " + " ".join(rng.choices(words, k=40))}]
            for step in range(rng.randint(2, 6)):
                cid = f"call_{n}_{step}"
                code = "\n".join(" ".join(rng.choices(words, k=12)) for _ in range(rng.randint(5, 40)))
                args = {"path": f"/home/alice/project/src/mod_{step}.py", "content": code}
                if rng.random() < 0.05:
                    args["env"] = "OPENAI_API_KEY=sk-" + "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=40))
                msgs.append({"role": "assistant", "content": "Let me look. " + " ".join(rng.choices(words, k=15)),
                             "tool_calls": [{"id": cid, "type": "function",
                                             "function": {"name": "write_file", "arguments": json.dumps(args)}}]})
                out = "\n".join(" ".join(rng.choices(words, k=14)) for _ in range(rng.randint(10, 120)))
                if rng.random() < 0.1:
                    out += f"\nauthor: dev{rng.randint(0, 50)}@corp.io from 10.0.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
                msgs.append({"role": "tool", "tool_call_id": cid, "content": out})
            msgs.append({"role": "assistant", "content": "Done: " + " ".join(rng.choices(words, k=30))})
            f.write(json.dumps({"id": f"s{n}", "model": "agent-model", "messages": msgs,
                                "tools": [{"type": "function", "function": {"name": "write_file", "description": "Write a file",
                                                                            "parameters": {"type": "object"}}}]}) + "\n")
            n += 1
    return n


_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
from drafters.traces.ingest import iter_conversations
from drafters.traces.report import ValidationReport
path = sys.argv[1]
report = ValidationReport()
t0 = time.perf_counter()
n = 0
for conv in iter_conversations([path], report=report):
    n += 1
dt = time.perf_counter() - t0
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"conversations": n, "seconds": dt, "peak_rss_mb": peak_kb / 1024,
                  "scrub_counts": dict(report.scrub_counts), "errors": len(report.errors)}))
"""


def synthetic_peak(size_mb: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic.jsonl"
        t0 = time.perf_counter()
        records = make_synthetic(path, size_mb)
        gen_s = time.perf_counter() - t0
        size = path.stat().st_size
        out = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(ROOT)], capture_output=True, text=True,
                             check=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
    result.update(records=records, mb=size / 1e6, mb_per_s=size / 1e6 / result["seconds"], generate_s=gen_s)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path,
                    default=Path(__file__).resolve().parents[1] / "tests" / "traces" / "fixtures" / "corpus")
    ap.add_argument("--size-mb", type=int, default=200, help="synthetic file size (the goal is stated at 1024)")
    ap.add_argument("--repeat", type=int, default=3, help="best of N per corpus file")
    ap.add_argument("--skip-corpus", action="store_true")
    ap.add_argument("--skip-synthetic", action="store_true")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    figures: dict = {}
    if not args.skip_corpus and args.corpus.exists():
        c = figures["corpus"] = corpus_throughput(args.corpus, args.repeat)
        print(f"corpus: {c['files']} files, {c['mb']:.2f} MB, {c['conversations']} conversations, "
              f"{c['seconds']:.2f} s -> {c['mb_per_s']:.1f} MB/s (goal >= {GOAL_MBPS:.0f})")
        for name, f in c["per_format"].items():
            print(f"  {name:20s} {f['mb']:7.2f} MB  {f['mb_per_s'] or 0:7.1f} MB/s")
    if not args.skip_synthetic:
        s = figures["synthetic"] = synthetic_peak(args.size_mb)
        print(f"synthetic: {s['mb']:.0f} MB, {s['records']} records, {s['seconds']:.1f} s -> {s['mb_per_s']:.1f} MB/s; "
              f"peak RSS {s['peak_rss_mb']:.0f} MB (goal < {GOAL_PEAK_MB:.0f} MB at any size; stated for 1 GB); "
              f"scrubbed {s['scrub_counts']}")
    if args.json:
        print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
