"""Held-out measurement of the general ingestion path on trace files of formats with no module (files that the
tests never saw). Set 1 is benchmarks/data/heldout_formats/ (report: docs/heldout-formats.md); set N > 1 is
benchmarks/data/heldout_formats_N/ (docs/heldout-formats-N.md). Each holds files/, SOURCES.md (provenance) and
hand_count.py, its evaluator's own counting script (standard library, does not import tracedraft).

Compares the product's counts (``tracedraft datasets validate --json``) with the hand counts. Where a file
with a readable LLM call is refused, it also tries the mapping ``infer-mapping`` writes, unchanged.

Where the set has ``examples.tsv`` (the evaluator's piece of each file's first model reply, as a user would copy it),
a file still refused is tried once more with the mapping ``infer-mapping --reply PIECE`` learns, unchanged.

Classes: exact (ok, same conversations / calls / tool calls); exact-with-mapping (the inferred mapping reads it
exactly); exact-with-example (the mapping learned from the example reply reads it exactly); refused-with-code (not ok, no conversation kept, an error code); WRONG (ok, or conversations kept,
with counts the file does not hold); crash (no JSON report). Prints a Markdown table and the share exact, and how
many inferred or learned mappings, used unchanged, read a refused file ``ok`` with counts it does not hold.

Run: ``python benchmarks/heldout_formats.py [SET]`` (SET: a set under benchmarks/data/, 1 to 141 today, 70 not
collected, 89, 92, 102, 114, 115, 118, 121, 127, 128, 131, 134, 136 and 139 holding no file; uses
.venv/bin/tracedraft, a CLI run or two per file).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data" / "heldout_formats"


def data_dir(held_out_set: int) -> Path:
    """The directory of held-out set ``held_out_set`` (1: heldout_formats, N: heldout_formats_N)."""
    return DATA if held_out_set == 1 else DATA.with_name(f"heldout_formats_{held_out_set}")
CLI = str(ROOT / ".venv" / "bin" / "tracedraft")
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _validate(path: Path, mapping: Path | None = None) -> dict | None:
    # --no-dedup: the hand counts count what a file holds; dropping a conversation identical to another
    # (duplicates_dropped) is the dataset's choice after reading, not a reading (counted from set 15 on)
    cmd = [CLI, "datasets", "validate", "--json", "--no-scrub", "--no-dedup", str(path)]
    if mapping is not None:
        cmd[3:3] = ["--mapping", str(mapping)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=300, check=False)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        return None


def _counts(report: dict) -> tuple[int, int, int]:
    c = report["counts"]
    return c["conversations"], c["calls"], c["tool_calls"]


def _infer(path: Path, out: Path, reply: str | None = None) -> bool:
    cmd = [CLI, "datasets", "infer-mapping", "-o", str(out), str(path)] + (["--reply", reply] if reply else [])
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=300, check=False)
    return res.returncode == 0 and out.exists() and out.stat().st_size > 0


def _examples(data: Path) -> dict[str, str]:
    """``examples.tsv``: file name -> a piece of its first model reply (empty where the evaluator gave none)."""
    path = data / "examples.tsv"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return {name: piece for name, _, piece in (line.partition("\t") for line in lines) if piece.strip()}


def _mapped(path: Path, want: tuple[int, int, int], mapping: Path) -> tuple[bool, str]:
    """Whether ``mapping`` reads ``path`` exactly, and what it read."""
    mapped = _validate(path, mapping)
    if mapped is None:
        return False, "no report"
    return mapped["ok"] and _counts(mapped) == want, f"ok={mapped['ok']} {'/'.join(map(str, _counts(mapped)))}"


def classify(path: Path, hand: dict, tmp: Path, reply: str | None = None) -> dict:
    report = _validate(path)
    if report is None:
        return {"class": "crash", "product": "no JSON report", "codes": []}
    got = _counts(report)
    codes = [e["code"] for e in report["errors"]]
    want = (hand["conversations"], hand["calls"], hand["tool_calls"])
    product = f"ok={report['ok']} {got[0]}/{got[1]}/{got[2]}" + (f" {codes[0]}" if codes else "")
    if report["ok"] and hand["readable"] and got == want:
        return {"class": "exact", "product": product, "codes": codes}
    if not report["ok"] and got[0] == 0 and codes:
        row = {"class": "refused-with-code", "product": product, "codes": codes}
        if hand["readable"]:
            mapping = tmp / (path.name + ".mapping.yaml")
            if _infer(path, mapping):
                exact, read = _mapped(path, want, mapping)
                row["class"] = "exact-with-mapping" if exact else row["class"]
                row["mapping_wrong"] = not exact and read.startswith("ok=True")  # the user would read wrong counts
                row["mapping"] = "inferred mapping: " + read
            else:
                row["mapping"] = "infer-mapping refused"
        if hand["readable"] and reply and row["class"] == "refused-with-code":
            learned = tmp / (path.name + ".learned.yaml")
            if _infer(path, learned, reply):
                exact, read = _mapped(path, want, learned)
                row["class"] = "exact-with-example" if exact else row["class"]
                row["learned_wrong"] = not exact and read.startswith("ok=True")  # the user would read wrong counts
                row["mapping"] += "; learned from the example reply: " + read
            else:
                row["mapping"] += "; infer-mapping --reply refused"
        return row
    return {"class": "WRONG", "product": product, "codes": codes}


def main(held_out_set: int = 1) -> int:
    data = data_dir(held_out_set)
    hands = []
    if (data / "files").is_dir():  # a set whose evaluator found no file has only SOURCES.md, saying why
        hand_out = subprocess.run([sys.executable, str(data / "hand_count.py")], capture_output=True, text=True,
                                  check=True)
        hands = [json.loads(line) for line in hand_out.stdout.splitlines()]
    examples = _examples(data)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for hand in hands:
            row = classify(data / "files" / hand["file"], hand, Path(tmp), examples.get(hand["file"]))
            rows.append((hand, row))
    print("| file | format | hand conv/calls/tools | readable | product | class |")
    print("|---|---|---|---|---|---|")
    for hand, row in rows:
        note = f" ({row['mapping']})" if row.get("mapping") else ""
        print(f"| {hand['file']} | {hand['format']} | {hand['conversations']}/{hand['calls']}/"
              f"{hand['tool_calls']} | {'yes' if hand['readable'] else 'no'} | {row['product']}{note} | "
              f"{row['class']} |")
    classes = [row["class"] for _, row in rows]
    readable = [row["class"] for hand, row in rows if hand["readable"]]
    n_exact = sum(c in ("exact", "exact-with-mapping") for c in classes)
    print()
    print(f"files: {len(rows)}; exact: {classes.count('exact')}; exact with the inferred mapping: "
          f"{classes.count('exact-with-mapping')}; exact with an example reply: {classes.count('exact-with-example')}; "
          f"refused with a code: {classes.count('refused-with-code')}; "
          f"WRONG: {classes.count('WRONG')}; crash: {classes.count('crash')}")
    print(f"share exact: {n_exact}/{len(rows)} of all files; "
          f"{sum(c in ('exact', 'exact-with-mapping') for c in readable)}/{len(readable)} of the files holding a "
          f"readable LLM call; correct outcome (exact, or refused where nothing is readable): "
          f"{n_exact + sum(1 for h, r in rows if not h['readable'] and r['class'] == 'refused-with-code')}"
          f"/{len(rows)}")
    print(f"inferred mappings reading ok with wrong counts (unchanged, where infer-mapping exits 0): "
          f"{sum(r.get('mapping_wrong', False) for _, r in rows)}")
    if examples:
        print(f"with the mappings learned from example replies (infer-mapping --reply): "
              f"{sum(c.startswith('exact') for c in readable)}/{len(readable)} of the files holding a readable LLM "
              f"call; learned mappings reading ok with wrong counts: {sum(r.get('learned_wrong', False) for _, r in rows)}")
    return 1 if classes.count("WRONG") or classes.count("crash") else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    sets = sorted([1] + [int(d.name.rsplit("_", 1)[1]) for d in DATA.parent.glob("heldout_formats_*")])
    parser.add_argument("set", nargs="?", type=int, default=1, choices=sets,
                        help="which held-out set (default 1)")
    sys.exit(main(parser.parse_args().set))
