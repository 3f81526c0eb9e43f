"""`tracedraft run`'s printed summary: paired differences by segment and the baselines still ahead."""

from __future__ import annotations

import io

from rich.console import Console

from service.cli import main_job


def _summary() -> dict:
    seg = {"tool_args": 1.8, "text": 1.1}
    return {
        "job_id": "job_x", "status": "succeeded", "heldout_calls": 6, "generated_tokens": 192,
        "proposers": {
            "candidate": {"tau": 1.5, "tau_by_segment": seg, "tokens_per_s": 9.0, "speedup_vs_plain": 1.2},
            "untrained": {"tau": 1.0, "tau_by_segment": {"tool_args": 1.0, "text": 1.0}, "tokens_per_s": 7.0,
                          "speedup_vs_plain": 0.9},
            "ngram": {"tau": 1.4, "tau_by_segment": {"tool_args": 1.2, "text": 1.6}, "tokens_per_s": 9.0,
                      "speedup_vs_plain": 1.1},
            "suffix": {"tau": 1.7, "tau_by_segment": {"tool_args": 1.9, "text": 1.0}, "tokens_per_s": 9.5,
                       "speedup_vs_plain": 1.3},
        },
        "comparisons": {"candidate__vs__untrained": {
            "candidate": "candidate", "incumbent": "untrained", "calls": 6, "mean_diff": 0.5, "ci95": [0.2, 0.8],
            "by_segment": {"tool_args": {"calls": 5, "mean_diff": 0.75, "ci95": [0.4, 1.1]},
                           "text": {"calls": 3, "mean_diff": None, "ci95": None}}}},
        "gate": {}, "registry": {},
    }


def test_summary_prints_paired_segments_and_where_baselines_win(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(main_job, "console", Console(file=out, width=300, color_system=None))
    main_job.print_summary(_summary())
    text = out.getvalue()
    assert ("candidate - untrained per call: overall +0.500 [+0.200, +0.800] (6 calls); "
            "tool_args +0.750 [+0.400, +1.100] (5 calls)") in text
    ahead = text.split("baselines still ahead of the trained drafter:")[1]
    assert "ngram on text (1.60 vs 1.10)" in ahead and "suffix overall (1.70 vs 1.50)" in ahead
    assert "suffix on tool_args (1.90 vs 1.80)" in ahead
    assert "ngram overall" not in ahead and "ngram on tool_args" not in ahead and "suffix on text" not in ahead


def test_a_what_if_row_shows_its_tau_and_no_speed(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(main_job, "console", Console(file=out, width=300, color_system=None))
    s = _summary()
    s["proposers"]["hybrid"] = {"tau": 1.9, "tau_by_segment": {"tool_args": 2.1, "text": 1.6}, "tokens_per_s": 4.8,
                                "speedup_vs_plain": None, "what_if": True}
    main_job.print_summary(s)
    text = out.getvalue()
    (row,) = [line for line in text.splitlines() if "hybrid (what-if)" in line]
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells == ["hybrid (what-if)", "1.90", "1.60", "2.10", "-", "-"]  # tau, text, tool_args; no speed
    assert "what-if: no engine serves this proposer" in text


def test_speed_leads_with_the_cost_model_and_what_to_deploy(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(main_job, "console", Console(file=out, width=300, color_system=None))
    s = _summary()
    cost = {"r": 1.4, "c": 0.1, "formula_speedup": 1.13}
    s["speed"] = {"engine": "hf", "hardware": "AMD EPYC, 2 cores", "proposers": {
        "cascade": {"speedup_vs_plain": 1.45, "tokens_per_s": 11.0, "tau": 1.8, "cost": cost},
        "suffix": {"speedup_vs_plain": 1.3, "tokens_per_s": 9.5, "tau": 1.7, "cost": cost},
        "hybrid": {"speedup_vs_plain": None, "tau": 1.9, "what_if": True, "cost": None}}}
    s["deploy"] = {"engine": "hf", "proposer": "cascade", "speedup_vs_plain": 1.5, "chosen_on": "development",
                   "on_test": {"speedup_vs_plain": 1.45}}
    s["selection"] = {"dev_calls": 4, "cascade_threshold": 1.5}
    main_job.print_summary(s)
    text = out.getvalue()
    assert text.index("Speed on the test calls (hf engine, AMD EPYC, 2 cores)") < text.index("Accepted length")
    (row,) = [ln for ln in text.splitlines() if "│ cascade" in ln]
    assert [c.strip() for c in row.split("│")[1:-1]] == ["cascade", "1.45x", "11.00", "1.80", "1.40", "0.10",
                                                          "1.13x"]
    assert text.index("│ cascade") < text.index("│ suffix")  # fastest first
    assert ("deploy on hf: cascade: chosen on 4 development calls at 1.50x; 1.45x on the test calls; cascade "
            "threshold 1.5") in text
    assert "why:" not in text  # no reason recorded: no line
    assert "r below 1" not in text
    out.truncate(0)
    s["speed"]["proposers"]["suffix"]["cost"] = {**cost, "r": 0.79}  # timed on a busy machine
    main_job.print_summary(s)
    assert "r below 1 for suffix: a verification round timed faster than a plain decoding step is timing noise" in \
        out.getvalue()
    s["speed"]["proposers"]["suffix"]["cost"] = cost
    out.truncate(0)
    s["deploy"]["reason"] = "level with the fastest measured (suffix, 1.52x), and of those level with it the highest tau"
    s["deploy"]["tied"] = ["cascade", "suffix"]
    main_job.print_summary(s)
    assert "why: level with the fastest measured (suffix, 1.52x), and of those level with it the highest tau\n" in \
        out.getvalue()
    out.truncate(0)
    s["deploy"] = {"engine": "hf", "proposer": None, "speedup_vs_plain": 1.0, "chosen_on": "test: too few"}
    main_job.print_summary(s)
    assert ("deploy on hf: plain decoding, no proposer faster: 1.00x, chosen on the test calls themselves: too "
            "few held-out calls for a development split") in out.getvalue()


def test_the_gate_line_says_it_judges_tau_against_the_incumbent(monkeypatch):
    """A gate passed beside a drafter slower than plain decoding read as a contradiction: the line names what the
    gate compares (tau against the incumbent) and where speed is judged."""
    out = io.StringIO()
    monkeypatch.setattr(main_job, "console", Console(file=out, width=300, color_system=None))
    s = _summary()
    s["gate"] = {"passed": True, "reasons": ["paired tau difference +0.500 per call"],
                 "details": {"candidate": "candidate", "incumbent": "untrained"}}
    main_job.print_summary(s)
    assert ("gate (tau against untrained; speed is judged by deploy): passed paired tau difference +0.500 per call"
            in out.getvalue())
