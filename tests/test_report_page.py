"""The HTML report leads with a verdict (drafter, version, job, gate, what to deploy and its measured speed-up,
warnings, small samples), defines its proposers, draws no speed for a what-if row, keeps the speed plot's
labels below its title, says why an empty reliability diagram is empty, and renders in a real browser
(headless Chromium screenshot, skipped with the reason when none is installed).

The realistic report is the committed benchmark report ``benchmarks/results/agent_tau/agent_data-seed1.json``
(the same EvalReport schema a job writes: 32 calls, a what-if hybrid without a speed)."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from drafters.evaluate import write_report
from drafters.evaluate.html_report import _plot_reliability, _plot_speedup, write_html
from drafters.evaluate.verdict import Verdict, deploy_choice, reliability_gap, small_samples

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks/results/agent_tau/agent_data-seed1.json"
VERDICT = Verdict("smollm2-135m-agent", 3, "job_0123", {"passed": False, "reasons": ["gain +0.09 below 0.10"]},
                  [{"code": "model_mismatch", "message": "the traces were written by gpt-4o"}])


@pytest.fixture(scope="module")
def bench():
    return json.loads(BENCH.read_text())["report"]


@pytest.fixture(scope="module")
def plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def test_deploy_is_the_reports_choice_else_the_fastest_measured_else_plain(bench):
    d = deploy_choice(bench)  # suffix 1.99x; the what-if hybrid has tokens/s but no speed-up: never chosen
    assert (d.proposer, round(d.speedup_vs_plain, 2), round(d.tokens_per_s, 1)) == ("suffix-692", 1.99, 57.5)
    named = dict(bench, speed={"deploy": {"proposer": "cascade", "speedup_vs_plain": 2.4, "tokens_per_s": 69.0,
                                          "reason": "fastest on the test split"}})
    assert deploy_choice(named).proposer == "cascade" and deploy_choice(named).reason == "fastest on the test split"
    slow = copy.deepcopy(bench)
    for e in slow["proposers"].values():
        if e["speedup_vs_plain"] is not None:
            e["speedup_vs_plain"] = 0.8
    d = deploy_choice(slow)
    assert d.proposer == "plain" and d.speedup_vs_plain == 1.0 and "no proposer decoded faster" in d.reason
    assert d.tokens_per_s == bench["plain"]["tokens_per_s"]
    plain = dict(bench, speed={"deploy": {"proposer": None, "speedup_vs_plain": 1.0, "tokens_per_s": None,
                                          "reason": "no proposer decoded faster than plain decoding"}})
    assert deploy_choice(plain).proposer == "plain"  # the report's own "None" is plain decoding, never "None"


def test_small_samples_flag_intervals_over_fewer_than_ten_calls(bench):
    flagged = {s.what: s.calls for s in small_samples(bench)}
    assert flagged == {"agent-692+h vs agent-692, tool_name": 5, "agent-692+h vs suffix-692, tool_name": 4,
                       "agent-692 vs suffix-692, tool_name": 4}
    few = dict(bench, heldout={**bench["heldout"], "calls": 6})
    assert {"held-out calls replayed": 6}.items() <= {s.what: s.calls for s in small_samples(few)}.items()


def test_the_page_leads_with_the_verdict_and_defines_its_terms(bench, tmp_path):
    write_report(bench, tmp_path, VERDICT)
    page = (tmp_path / "report.html").read_text()
    verdict = page.split("<section class=\"verdict\">", 1)[1].split("</section>", 1)[0]
    assert page.index("class=\"verdict\"") < page.index("<h2>Proposers</h2>") < page.index("Convention")
    for needle in ("smollm2-135m-agent", "version 3", "job_0123", "failed", "gain +0.09 below 0.10",
                   "suffix-692", "x1.99", "57.5 tokens/s", "[model_mismatch] the traces were written by gpt-4o",
                   "Small samples", "tool_name: 4 call(s)"):
        assert needle in verdict, needle
    assert "<dt>hybrid</dt>" in page and "<dt>ngram</dt>" in page  # names on the page are defined
    # the what-if row shows no speed in the table either
    hybrid_row = page.split("<td>hybrid</td>", 1)[1].split("</tr>", 1)[0]
    assert "<td>-</td><td>what-if</td>" in hybrid_row
    # the register stage re-renders the page once the version has its number; the plots stay
    write_html(bench, tmp_path, Verdict("d", None, "job_1", None, ()))
    page = (tmp_path / "report.html").read_text()
    assert "version not yet assigned" in page and "not applied" in page and "Warnings of the job: none." in page
    assert page.count("data:image/png;base64,") == 4


def test_speed_plot_has_no_bar_for_a_what_if_and_its_labels_stay_below_the_title(bench, plt):
    fig = _plot_speedup(plt, bench)
    ax = fig.axes[0]
    heights = {t.get_text(): p.get_height() for t, p in zip(ax.get_xticklabels(), ax.patches)}
    assert heights["hybrid"] == 0 and heights["suffix-692"] > 50
    labels = [t.get_text() for t in ax.texts]
    assert not any("x0.00" in t for t in labels) and any("no speed (what-if)" in t for t in labels)
    fig.canvas.draw()
    title_bottom = ax.title.get_window_extent().y0
    assert all(t.get_window_extent().y1 <= title_bottom for t in ax.texts)
    plt.close(fig)


def test_an_empty_reliability_diagram_says_why(bench, plt):
    assert reliability_gap(bench) is None
    counters = copy.deepcopy(bench)
    for e in counters["proposers"].values():
        e["calibration"] = None
    assert "no proposer reported confidences" in reliability_gap(counters)
    fig = _plot_reliability(plt, counters)
    assert any("No points: no proposer reported confidences" in t.get_text() for t in fig.axes[0].texts)
    plt.close(fig)
    empty = copy.deepcopy(bench)
    for e in empty["proposers"].values():
        for phase in ("before", "after"):
            if e.get("calibration"):
                e["calibration"][phase]["per_position"] = {}
    assert "calibration's evaluation half" in reliability_gap(empty)


def _chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def test_the_page_renders_in_headless_chromium(bench, tmp_path):
    """A real browser lays the page out: the DOM it renders starts with the verdict, and its screenshot has the
    verdict's dark border near the top and the decoded plots below (not a blank page)."""
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium installed (apt-get install chromium): the page was not looked at in a browser")
    write_report(bench, tmp_path, VERDICT)
    url = (tmp_path / "report.html").as_uri()
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,2400"]
    dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True).stdout
    body = dom.split("<body>", 1)[1]
    assert body.index("Verdict") < body.index("Paired comparisons") < body.index("<img")
    shot = tmp_path / "report.png"
    subprocess.run([*flags, f"--screenshot={shot}", url], capture_output=True, timeout=120, check=True)
    from PIL import Image

    img = Image.open(shot).convert("L")
    assert img.size == (1200, 2400)
    top = img.crop((0, 0, 1200, 500))
    assert top.getextrema()[0] < 100  # the verdict box's border and bold text are drawn near the top
    plots = img.crop((0, 1000, 1200, 2400))
    assert sum(1 for n in plots.histogram() if n) > 50  # the embedded plots were decoded and drawn
