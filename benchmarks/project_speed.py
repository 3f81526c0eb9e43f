"""Project an evaluation's measured proposers onto another machine's costs (drafters/evaluate/projection.py).

    # 1. on the machine to project to (a GPU: --device cuda --dtype bfloat16), the demo target's shape:
    .venv/bin/python benchmarks/bench_draft_cost.py --contexts 512,2048,4096 --verify 2,3,4,6,8,16,25 \
        --batches 1,16 --out costs.json
    # 2. anywhere: the headline's first seed (or a job's report.json) projected onto those costs
    .venv/bin/python benchmarks/project_speed.py benchmarks/results/speed/speed.json costs.json [--batch 16]

Prints, for each proposer of the report (what-if rows left out), tau and the tokens verified per round as
measured, r(n) and c from the cost table at the context nearest the report's mean context, the projected
decoding speed-up tau / (r + c) and the decoding speed-up the report measured on its own machine. Run on a
cost table of the report's own machine it checks the projection itself (docs/speed.md). Labelled a
projection: it is not a measurement of the other machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drafters.evaluate.projection import CostTable, format_projection, mean_context, project


def load_report(path: Path, seed_index: int) -> dict:
    """An evaluation report: a job's report.json as it is, or run ``seed_index`` of bench_speed's JSON."""
    data = json.loads(path.read_text())
    return data["runs"][seed_index]["report"] if "runs" in data else data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report", type=Path, help="report.json, or bench_speed.py's JSON (see --run)")
    ap.add_argument("costs", type=Path, help="bench_draft_cost.py --out JSON of the machine projected to")
    ap.add_argument("--shape", default="smollm2-135m", help="the cost table's target shape (the report's target)")
    ap.add_argument("--context", type=int, default=0, help="context length (0: the report's mean context)")
    ap.add_argument("--drafter-layers", type=int, default=1, help="the report's drafter depth")
    ap.add_argument("--batch", type=int, default=1, help="requests per target forward (bench_draft_cost --batches)")
    ap.add_argument("--run", type=int, default=0, help="which seed's run of bench_speed's JSON (0: the first)")
    a = ap.parse_args(argv)
    report = load_report(a.report, a.run)
    table = CostTable.from_rows(json.loads(a.costs.read_text()), a.shape, a.context or mean_context(report),
                                a.batch)
    print(format_projection(project(report, table, a.drafter_layers), table, str(a.report)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
