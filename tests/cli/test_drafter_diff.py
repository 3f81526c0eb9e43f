"""`drafters diff` and `drafters versions` as an operator reads them: the diff leads with the recipe (its seed
included), data and score differences, not with the report's hundreds of per-call and calibration values;
the versions table shows each version's tau and speed-up (``speedup_vs_plain``, blank when not measured)."""

from __future__ import annotations

from tests.cli.conftest import LINEAGE


def _report(tau: float, speedup: float | None) -> dict:
    """An evaluation report shaped like the evaluate stage's (schema tracedraft.eval/1), with the per-call,
    calibration and timing values that differ between any two runs."""
    cand = {"tau": tau, "rounds": 120, "calibration": {f"bin{i}": tau / (i + 1) for i in range(40)},
            "timing": {"seconds": tau * 7, "tokens_per_s": tau * 3},
            "per_call": [{"call_id": f"c{i}", "tau": tau + i / 100} for i in range(30)]}
    if speedup is not None:
        cand["speedup_vs_plain"] = speedup
    return {"schema": "tracedraft.eval/1", "proposers": {"candidate": cand, "ngram": {"tau": 1.9}},
            "extra_key_from_a_newer_report": {"anything": 1}}


def _lineage(seed: int, dataset: str) -> dict:
    recipe = {"seed": seed, "lr": 3e-4, "max_steps": 500, "block_size": 7}
    return {**LINEAGE, "recipe": recipe, "dataset_sha256": [dataset * 64]}


def test_diff_leads_with_recipe_data_and_score(stack, cli):
    stack.register(1, lineage=_lineage(0, "a"), report=_report(3.10, 1.42))
    stack.register(2, lineage=_lineage(7, "b"), report=_report(3.55, None))

    r = cli("drafters", "diff", "smol-agent", "1", "2")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    head = r.out.index("Recipe, data and score v1 -> v2")
    assert head < r.out.index("Differences v1 -> v2")
    first = r.out[head:r.out.index("Differences v1 -> v2")]
    seed_row = next(line for line in lines if "seed" in line)
    assert "recipe" in seed_row and "0" in seed_row and "7" in seed_row
    assert "dataset_sha256" in first and "a" * 20 in first
    assert "3.1" in first and "3.55" in first and "speedup_vs_plain" in first and "1.42" in first
    # the report's per-call and calibration values are counted, not listed
    assert "proposers.candidate.calibration" not in r.out and "per_call" not in r.out
    assert "values of the evaluation reports differ" in r.out
    assert len(lines) < 40, r.out

    # --json keeps every difference, headline sections first
    d = cli("drafters", "diff", "smol-agent", "1", "2", "--json").json
    assert list(d)[:5] == ["from", "to", "recipe", "data", "score"]
    assert d["recipe"] == {"seed": [0, 7]}
    assert d["score"] == {"tau": [3.1, 3.55], "speedup_vs_plain": [1.42, None]}
    assert any(k.startswith("proposers.candidate.calibration") for k in d["report"])


def test_versions_show_tau_and_speedup(stack, cli):
    stack.register(1, report=_report(3.10, 1.42))
    stack.register(2, report=_report(3.55, None))  # no speed measured (e.g. an older report): blank
    stack.register(3)  # a report without proposers: its bare tau

    r = cli("drafters", "versions", "smol-agent")
    assert r.code == 0, r.err
    assert "speed-up" in r.out
    rows = {line.split()[1]: line for line in r.out.splitlines() if line.strip()[:1] in "│|" and "smol" not in line
            and line.split()[1:2] and line.split()[1].isdigit()}
    assert "3.10" in rows["1"] and "x1.42" in rows["1"]
    assert "3.55" in rows["2"] and "x" not in rows["2"].split("3.55")[1].split()[0]
    assert "3.30" in rows["3"]
    items = cli("drafters", "versions", "smol-agent", "--json").json
    assert [v["score"] for v in items] == [
        {"tau": 3.1, "speedup_vs_plain": 1.42, "gate": True}, {"tau": 3.55, "speedup_vs_plain": None, "gate": True},
        {"tau": 3.3, "speedup_vs_plain": None, "gate": True}]



def test_show_gives_the_versions_tau_and_speedup(stack, cli):
    stack.register(1, report=_report(3.10, 1.42))
    stack.register(2, report=_report(3.55, None))
    assert "tau: 3.10   speed-up: x1.42" in cli("drafters", "show", "smol-agent", "1").out
    assert "tau: 3.55   speed-up: not measured" in cli("drafters", "show", "smol-agent", "2").out
