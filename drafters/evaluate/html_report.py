"""Report files: report.json, PNG plots (matplotlib Agg) and a one-page HTML report with them embedded that
leads with the verdict (``drafters.evaluate.verdict``)."""

from __future__ import annotations

import base64
import html
import json
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from drafters.evaluate.metrics import _isnan
from drafters.evaluate.report import _clean, _json_default
from drafters.evaluate.verdict import (
    PROPOSER_TERMS,
    SMALL_SAMPLE_CALLS,
    Verdict,
    deploy_choice,
    reliability_gap,
    small_samples,
)

PLOTS = ("acceptance_by_position", "tau_by_segment", "reliability", "speedup")


def write_report(report: Mapping, out_dir: str | Path, verdict: Verdict | None = None) -> dict[str, str]:
    """Write report.json, PNG plots (acceptance by position, tau by segment, reliability diagram, speed;
    matplotlib Agg) and report.html (``write_html``) under out_dir. Returns {kind: path}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": str(out / "report.json")}
    (out / "report.json").write_text(json.dumps(_clean(dict(report)), indent=2, allow_nan=False,
                                                default=_json_default))
    for key, plot in zip(PLOTS, (_plot_acceptance, _plot_tau_by_segment, _plot_reliability, _plot_speedup)):
        fig = plot(plt, report)
        fig.tight_layout()
        fig.savefig(out / f"{key}.png", dpi=100)
        plt.close(fig)
        paths[key] = str(out / f"{key}.png")
    paths["html"] = write_html(report, out, verdict)
    return paths


def write_html(report: Mapping, out_dir: str | Path, verdict: Verdict | None = None) -> str:
    """(Re)write ``out_dir/report.html`` from the report and the plots ``write_report`` left there, with
    ``verdict`` (the register stage calls it again once the version has its number). Returns its path."""
    out = Path(out_dir)
    pngs = {k: out / f"{k}.png" for k in PLOTS if (out / f"{k}.png").is_file()}
    (out / "report.html").write_text(_html_page(report, pngs, verdict or Verdict()))
    return str(out / "report.html")


def _plot_acceptance(plt: Any, report: Mapping) -> Any:
    """Position-wise conditional acceptance per proposer."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, e in report["proposers"].items():
        ca = [(c["position"], c["rate"]) for c in e["conditional_acceptance"] if c["rate"] is not None]
        if ca:
            ax.plot(*zip(*ca), marker="o", label=name)
    ax.set(xlabel="position in block k", ylabel="P(accept k | 1..k-1 accepted)", ylim=(0, 1.02),
           title="Position-wise conditional acceptance")
    _legend(ax)
    return fig


def _plot_tau_by_segment(plt: Any, report: Mapping) -> Any:
    """tau per segment, one bar per proposer."""
    props = report["proposers"]
    fig, ax = plt.subplots(figsize=(7, 4))
    segs = sorted({s for e in props.values() for s in e["by_segment"]})
    w = 0.8 / max(len(props), 1)
    for i, (name, e) in enumerate(props.items()):
        ys = [(e["by_segment"].get(s) or {}).get("tau") or 0 for s in segs]
        ax.bar([j + i * w for j in range(len(segs))], ys, width=w, label=name)
    ax.set_xticks([j + w * (len(props) - 1) / 2 for j in range(len(segs))], segs, rotation=20, fontsize=8)
    ax.set(ylabel="tau (accepted + 1 per round)", title="tau by segment")
    _legend(ax)
    return fig


def _plot_reliability(plt: Any, report: Mapping) -> Any:
    """Reliability diagram of predicted prefix survival, before and after temperature scaling; when it has
    no points, the axes say why (``reliability_gap``)."""
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], "k:", lw=1)
    for name, e in report["proposers"].items():
        cal = e.get("calibration")
        if not cal:
            continue
        for phase, style in (("before", "-"), ("after", "--")):
            pts = _pooled_bins(cal[phase]["per_position"].values())
            if pts:
                ax.plot(*zip(*pts), style, marker=".", label=f"{name} {phase} scaling")
    ax.set(xlabel="predicted prefix survival", ylabel="observed acceptance", title="Reliability diagram",
           xlim=(0, 1), ylim=(0, 1))
    gap = reliability_gap(report)
    if gap:
        ax.text(0.5, 0.5, textwrap.fill("No points: " + gap, 44), ha="center", va="center", fontsize=9,
                transform=ax.transAxes, bbox={"facecolor": "white", "edgecolor": "#999"})
    _legend(ax)
    return fig


def _pooled_bins(per_position: Any) -> list[tuple[float, float]]:
    """One reliability curve over all block slots: each bin's (mean prediction, observed acceptance)
    weighted by its count across the slots' bins of the same edges."""
    sums: dict[float, list[float]] = {}
    for v in per_position:
        for b in v["reliability"]:
            acc = sums.setdefault(b["lo"], [0.0, 0.0, 0.0])
            acc[0] += b["mean_pred"] * b["count"]
            acc[1] += b["mean_label"] * b["count"]
            acc[2] += b["count"]
    return [(p / n, y / n) for _, (p, y, n) in sorted(sums.items()) if n]


def _plot_speedup(plt: Any, report: Mapping) -> Any:
    """Tokens per second of plain decoding and of each proposer whose speed was measured, each bar annotated
    with tau and the speed-up; a what-if row (no engine serves it) gets no bar, only its tau."""
    props = report["proposers"]
    fig, ax = plt.subplots(figsize=(7, 4))
    names = ["plain"] + list(props)
    speeds = [report["plain"].get("tokens_per_s")] + [
        None if e.get("speedup_vs_plain") is None else e["timing"].get("tokens_per_s") for e in props.values()]
    bars = ax.bar(names, [s or 0 for s in speeds], color=["grey"] + ["C0"] * len(props))
    top = max([s for s in speeds if s] or [1.0])
    for b, n, s in zip(bars[1:], props, speeds[1:]):
        e = props[n]
        label = (f"tau {e['tau'] or 0:.2f}\nx{e['speedup_vs_plain']:.2f}" if s is not None
                 else f"tau {e['tau'] or 0:.2f}\nno speed" + (" (what-if)" if e.get("what_if") else ""))
        ax.annotate(label, (b.get_x() + b.get_width() / 2, s or 0), ha="center", va="bottom", fontsize=8)
    # headroom for two lines of annotation above the tallest bar, so none reaches the title
    ax.set_ylim(0, top * 1.35)
    ax.tick_params(axis="x", labelrotation=15, labelsize=8)
    ax.set(ylabel="tokens / s (wall clock)",
           title=f"Speed against plain decoding ({report['settings'].get('engine')} engine)")
    return fig


def _verdict_html(report: Mapping, verdict: Verdict) -> str:
    """The page's first section: drafter and version, job, gate, what to deploy, warnings, small samples."""
    esc = html.escape
    gate = verdict.gate
    if gate is None:
        gate_line = "<b>not applied</b> to this report"
    else:
        gate_line = f"<b class='{'pass' if gate.get('passed') else 'fail'}'>" \
                    f"{'passed' if gate.get('passed') else 'failed'}</b>"
    reasons = "".join(f"<li>{esc(str(r))}</li>" for r in (gate or {}).get("reasons") or [])
    version = (f"version {verdict.version}" if verdict.version is not None
               else "version not yet assigned (the register stage numbers it)")
    d = deploy_choice(report)
    speed = (f"x{d.speedup_vs_plain:.2f} plain decoding's speed" if d.speedup_vs_plain is not None
             else "speed not measured")
    tps = f", {d.tokens_per_s:.1f} tokens/s" if d.tokens_per_s else ""
    warnings = "".join(f"<li>{'[' + esc(str(w['code'])) + '] ' if w.get('code') else ''}"
                       f"{esc(str(w.get('message') or ''))}</li>" for w in verdict.warnings)
    small = small_samples(report)
    small_html = "".join(f"<li>{esc(s.what)}: {s.calls} call(s)</li>" for s in small)
    return f"""<section class="verdict"><h2>Verdict</h2>
<p>Drafter <b>{esc(verdict.drafter or 'unnamed')}</b>, {esc(version)}; job {esc(verdict.job_id or '-')};
target {esc(str(report['settings'].get('target')))} on the {esc(str(report['settings'].get('engine')))} engine,
{report['heldout']['calls']} held-out calls.</p>
<p>Promotion gate: {gate_line}.</p>{f'<ul>{reasons}</ul>' if reasons else ''}
<p>Deploy: <b>{esc(d.proposer if d.proposer != 'plain' else 'plain decoding (no speculative decoding)')}</b>,
{esc(speed)}{esc(tps)} on this engine and machine. <span class="note">{esc(d.reason)}.</span></p>
<p>Warnings of the job: {f'<ul>{warnings}</ul>' if warnings else 'none.'}</p>
{f'<div class="small"><b>Small samples</b> (fewer than {SMALL_SAMPLE_CALLS} calls: read these intervals as '
 f'anecdotes, not results):<ul>{small_html}</ul></div>' if small else ''}</section>"""


def _terms_html(report: Mapping) -> str:
    """What each proposer name on the page stands for."""
    esc = html.escape
    items = []
    for name, e in report["proposers"].items():
        term = PROPOSER_TERMS.get(name) or ("what-if: tau only, no engine serves it" if e.get("what_if") else None)
        if term:
            items.append(f"<dt>{esc(name)}</dt><dd>{esc(term)}</dd>")
    return f"<dl class='terms'>{''.join(items)}</dl>" if items else ""


def _html_page(report: Mapping, pngs: dict[str, Path], verdict: Verdict) -> str:
    """The one-page HTML report: the verdict, the proposers' names, convention and settings, the proposer
    and paired-comparison tables (small samples marked), plots."""
    esc = html.escape
    props = report["proposers"]
    rows = "".join(_proposer_row(n, e) for n, e in props.items())
    cmp_rows = "".join(
        f"<tr><td>{esc(c['candidate'])} vs {esc(c['incumbent'])}</td><td>{c['calls']}{_small(c['calls'])}</td>"
        f"<td>{_f(c['mean_diff'])}</td><td>[{_f(c['ci95'][0])}, {_f(c['ci95'][1])}]</td>"
        f"<td>{_f(100 * c['relative_gain'], 1) if c['relative_gain'] is not None else '-'}%</td></tr>"
        for c in report.get("comparisons", {}).values())
    imgs = "".join(f"<figure><img src='data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}'>"
                   f"<figcaption>{esc(k.replace('_', ' '))}</figcaption></figure>" for k, p in pngs.items())
    s = report["settings"]
    title = f"{verdict.drafter} v{verdict.version}" if verdict.drafter and verdict.version else "evaluation"
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>tracedraft {esc(title)}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:auto}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}figure{{display:inline-block;margin:4px}}
img{{max-width:520px}}.verdict{{border:2px solid #444;padding:4px 14px;background:#fafafa}}
.pass{{color:#060}}.fail{{color:#b00}}.note{{color:#555;font-size:small}}.small{{color:#8a5a00}}
.flag{{color:#8a5a00;font-size:small}}dt{{font-weight:bold;float:left;clear:left;width:8em}}
dd{{margin-left:9em}}</style></head><body>
<h1>tracedraft evaluation{': ' + esc(title) if verdict.drafter else ''}</h1>
{_verdict_html(report, verdict)}
<h2>Proposers</h2>{_terms_html(report)}
<p><b>Convention:</b> {esc(report['convention'])}. {esc(report.get('end_effects', ''))}.</p>
<p>Target {esc(str(s.get('target')))}, engine {esc(str(s.get('engine')))}, temperature {s.get('temperature')},
max_new_tokens {s.get('max_new_tokens')}, seed {s.get('seed')}. Held-out calls: {report['heldout']['calls']};
plain tokens: {report['heldout'].get('plain_generated_tokens')}. Lossless check at T=0:
{esc(str(report['lossless'].get('checked')))} ({len(report['lossless'].get('near_ties', []))} near-ties).</p>
<table><tr><th>proposer</th><th>tau</th><th>rounds</th><th>tokens</th><th>tokens/s</th><th>speed-up</th>
<th>loop overhead</th></tr><tr><td>plain</td><td>1</td><td></td><td>{report['plain']['tokens']}</td>
<td>{_f(report['plain'].get('tokens_per_s'), 1)}</td><td>1</td><td></td></tr>{rows}</table>
<h2>Paired comparisons (per-call tau, bootstrap 95%)</h2>
<table><tr><th>pair</th><th>calls</th><th>mean diff</th><th>95% CI</th><th>relative gain</th></tr>{cmp_rows}</table>
<h2>Plots</h2>{imgs}
<p style="font-size:small">schema {esc(report['schema'])}</p></body></html>"""


def _proposer_row(name: str, e: Mapping) -> str:
    """A proposer's table row; a row without a measured speed-up (a what-if) shows no speed."""
    speedup = e.get("speedup_vs_plain")
    tps = _f(e["timing"].get("tokens_per_s"), 1) if speedup is not None else "-"
    shown = _f(speedup) if speedup is not None else ("what-if" if e.get("what_if") else "-")
    return (f"<tr><td>{html.escape(name)}</td><td>{_f(e['tau'])}</td><td>{e['rounds']}</td><td>{e['tokens']}</td>"
            f"<td>{tps}</td><td>{shown}</td><td>{_f(100 * (e['timing'].get('overhead_share') or 0), 1)}%</td></tr>")


def _small(calls: int | None) -> str:
    return " <span class='flag'>small sample</span>" if (calls or 0) < SMALL_SAMPLE_CALLS else ""


def _legend(ax: Any) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def _f(x: Any, nd: int = 3) -> str:
    return "-" if x is None or _isnan(x) else f"{x:.{nd}f}"
