"""The speed projection onto another machine's cost table (drafters/evaluate/projection.py), by hand."""

from __future__ import annotations

import json

import pytest

from drafters.errors import TracedraftError
from drafters.evaluate.projection import CostTable, drafter_share, format_projection, mean_context, project


def _rows(shape: str = "s", context: int = 512, plain: float = 10.0) -> list[dict]:
    ops = {"plain step": 1.0, "verify 8": 1.5, "verify 16": 2.0, "verify 25": 2.9,
           "dspark 1L draft, Markov top-64, vocab 8192": 0.2, "dspark 1L draft, Markov top-64, all ids": 0.4,
           "dspark 1L draft, reference": 1.1, "dspark 2L draft, Markov top-64, vocab 8192": 0.3,
           "suffix decoding round (cap 24)": 0.01}
    return [{"shape": shape, "context": context, "op": op, "ms": plain * s, "steps": s} for op, s in ops.items()]


BATCH4 = [{"shape": "s", "context": 512, "batch": 4, "op": op, "ms": 15.0 * r, "steps": r}
          for op, r in (("plain step", 1.0), ("verify 8", 1.2), ("verify 16", 1.6))]
TABLE = {"machine": {"device": "cuda", "cuda": "NVIDIA H100", "torch": "2.11"},
         "rows": _rows(context=512) + _rows(context=4096, plain=20.0) + _rows(shape="other") + BATCH4}


def _entry(tau: float, proposed: float, picks: dict | None = None, **kw) -> dict:
    return {"tau": tau, "mean_proposed": proposed, "rounds": 10, "picks": picks,
            "per_call": [{"context_len": 1000}, {"context_len": 3000}], **kw}


def test_the_table_is_read_at_the_nearest_context_and_interpolates_verification():
    t = CostTable.from_rows(TABLE, "s", 3000)
    assert t.context == 4096 and t.plain_ms == 20.0 and t.machine["cuda"] == "NVIDIA H100"
    assert t.draft == {1: 0.2, 2: 0.3} and t.suffix == 0.01  # the shipped rounds only
    assert t.r(1) == 1.0 and t.r(8) == 1.5 and t.r(4.5) == pytest.approx(1.25)  # 1 + 0.5 * 3.5 / 7
    assert t.r(12) == pytest.approx(1.75) and t.r(34) == pytest.approx(2.9 + 0.9)  # beyond 25: the last slope
    assert CostTable.from_rows(TABLE, "s", 2304).context == 512  # equally near: the shorter


def test_a_batch_reads_its_own_rounds_and_counts_each_requests_drafting():
    t = CostTable.from_rows(TABLE, "s", 512, batch=4)
    assert t.batch == 4 and t.plain_ms == 15.0 and t.verify == {8: 1.2, 16: 1.6}
    # drafting runs request by request: 4 rounds of 0.2 batch-1 steps (10 ms each), in 15 ms batch-4 steps
    assert t.draft[1] == pytest.approx(4 * 0.2 * 10 / 15) and t.suffix == pytest.approx(4 * 0.01 * 10 / 15)
    with pytest.raises(TracedraftError, match="batch 16"):
        CostTable.from_rows(TABLE, "s", 512, batch=16)
    text = format_projection([], t, "r.json")
    assert "batch 4 (c: the batch's per-request rounds one after another, an upper bound)" in text


def test_project_applies_tau_over_r_plus_c_with_the_drafters_share_of_rounds():
    report = {"proposers": {
        "candidate": _entry(3.0, 7.0),
        "suffix": _entry(2.5, 3.5),
        "cascade": _entry(3.2, 5.0, picks={"cheap": 3, "drafter": 1}),
        "hybrid": _entry(4.0, 7.0, what_if=True)},
        "speed": {"proposers": {"suffix": {"cost": {"decode_speedup": 1.3}}}}}
    t = CostTable.from_rows(TABLE, "s", mean_context(report))
    rows = {p.proposer: p for p in project(report, t)}
    assert set(rows) == {"candidate", "suffix", "cascade"}  # never a what-if
    cand, suf, cas = rows["candidate"], rows["suffix"], rows["cascade"]
    assert cand.r == 1.5 and cand.c == pytest.approx(0.21) and cand.speedup == pytest.approx(3.0 / 1.71)
    assert suf.drafter_share == 0 and suf.c == 0.01 and suf.r == pytest.approx(1.25)
    assert suf.speedup == pytest.approx(2.5 / 1.26) and suf.measured == 1.3 and cand.measured is None
    assert cas.drafter_share == 0.25 and cas.c == pytest.approx(0.01 + 0.25 * 0.2)
    assert next(p.c for p in project(report, t, drafter_layers=2)) == pytest.approx(0.31)
    text = format_projection(list(rows.values()), t, "report.json")
    assert text.startswith("PROJECTION, not a measurement") and "NVIDIA H100" in text and "context 512" in text


def test_drafter_share_by_kind():
    assert drafter_share("suffix+schema", {"picks": {"cheap": 4, "drafter": 0}}) == 0.0
    assert drafter_share("ngram", {}) == 0.0 and drafter_share("untrained", {}) == 1.0


def test_a_table_without_what_the_projection_needs_is_a_coded_error():
    with pytest.raises(TracedraftError) as e:
        CostTable.from_rows(TABLE, "missing", 512)
    assert e.value.code == "bad_cost_table"
    thin = {"rows": [r for r in _rows() if not r["op"].startswith("verify")]}
    with pytest.raises(TracedraftError, match="verification round"):
        CostTable.from_rows(thin, "s", 512)
    with pytest.raises(TracedraftError, match="3-layer"):
        project({"proposers": {}}, CostTable.from_rows(TABLE, "s", 512), drafter_layers=3)


def test_the_command_projects_a_bench_speed_file(tmp_path, capsys):
    from benchmarks.project_speed import main

    report = {"proposers": {"suffix": _entry(2.5, 3.5)}, "speed": {}}
    (tmp_path / "speed.json").write_text(json.dumps({"runs": [{"report": report}]}))
    (tmp_path / "costs.json").write_text(json.dumps(TABLE))
    assert main([str(tmp_path / "speed.json"), str(tmp_path / "costs.json"), "--shape", "s"]) == 0
    out = capsys.readouterr().out
    assert "| suffix | 2.50 | 4.50 | 0% | 1.25 | 0.010 | 1.98x | - |" in out


def test_the_prepared_gpu_script_runs_on_a_cpu_in_its_quick_mode(tmp_path):
    """benchmarks/gpu_speed.sh, the device session's one script, end to end at tiny sizes: a cost table with
    batch 1 and 2, and the headline projected onto it at both batches, labelled a projection."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    env = {**os.environ, "OUT": str(tmp_path), "DEVICE": "cpu", "QUICK": "1", "PYTHON": sys.executable,
           "OMP_NUM_THREADS": "1"}
    subprocess.run([str(REPO / "benchmarks" / "gpu_speed.sh")], env=env, check=True, capture_output=True, timeout=600)
    rows = json.loads((tmp_path / "costs.json").read_text())["rows"]
    assert {r["batch"] for r in rows} == {1, 2} and {r["shape"] for r in rows} == {"smollm2-135m"}
    for b in (1, 2):
        text = (tmp_path / f"projection-b{b}.md").read_text()
        assert text.startswith("PROJECTION, not a measurement") and f"batch {b}" in text and "| suffix |" in text
