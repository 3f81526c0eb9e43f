"""Report files: report.json, PNG plots (matplotlib Agg) and a one-page HTML report with them embedded."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from drafters.evaluate.metrics import _isnan
from drafters.evaluate.report import _clean, _json_default


def write_report(report: Mapping, out_dir: str | Path) -> dict[str, str]:
    """Write report.json, PNG plots (acceptance by position, tau by segment, reliability diagram, speedup;
    matplotlib Agg) and report.html (one page, images embedded as base64) under out_dir.
    Returns {kind: path}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": str(out / "report.json")}
    (out / "report.json").write_text(json.dumps(_clean(dict(report)), indent=2, allow_nan=False,
                                                default=_json_default))
    pngs: dict[str, Path] = {}
    for key, plot in (("acceptance_by_position", _plot_acceptance), ("tau_by_segment", _plot_tau_by_segment),
                      ("reliability", _plot_reliability), ("speedup", _plot_speedup)):
        fig = plot(plt, report)
        pngs[key] = out / f"{key}.png"
        fig.tight_layout()
        fig.savefig(pngs[key], dpi=100)
        plt.close(fig)
    paths.update({k: str(v) for k, v in pngs.items()})
    (out / "report.html").write_text(_html_page(report, pngs))
    paths["html"] = str(out / "report.html")
    return paths


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
    """Reliability diagram of predicted prefix survival, before and after temperature scaling."""
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], "k:", lw=1)
    for name, e in report["proposers"].items():
        cal = e.get("calibration")
        if not cal:
            continue
        for phase, style in (("before", "-"), ("after", "--")):
            pts = [(b["mean_pred"], b["mean_label"]) for v in cal[phase]["per_position"].values()
                   for b in v["reliability"]]
            if pts:
                pts.sort()
                ax.plot(*zip(*pts), style, marker=".", label=f"{name} {phase} scaling")
    ax.set(xlabel="predicted prefix survival", ylabel="observed acceptance", title="Reliability diagram",
           xlim=(0, 1), ylim=(0, 1))
    _legend(ax)
    return fig


def _plot_speedup(plt: Any, report: Mapping) -> Any:
    """Tokens per second of plain decoding and each proposer, annotated with tau and speedup."""
    props = report["proposers"]
    fig, ax = plt.subplots(figsize=(6, 4))
    names = ["plain"] + list(props)
    tps = [report["plain"].get("tokens_per_s") or 0] + [e["timing"].get("tokens_per_s") or 0 for e in props.values()]
    bars = ax.bar(names, tps, color=["grey"] + ["C0"] * len(props))
    for b, n in zip(bars[1:], props):
        e = props[n]
        ax.annotate(f"tau {e['tau'] or 0:.2f}\nx{e.get('speedup_vs_plain') or 0:.2f}",
                    (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=8)
    ax.set(ylabel="tokens / s (wall clock)", title=f"Speculative vs plain ({report['settings'].get('engine')})")
    return fig


def _html_page(report: Mapping, pngs: dict[str, Path]) -> str:
    """The one-page HTML report: convention, settings, the proposer and paired-comparison tables, plots."""
    esc = html.escape
    props = report["proposers"]
    rows = "".join(
        f"<tr><td>{esc(n)}</td><td>{_f(e['tau'])}</td><td>{e['rounds']}</td><td>{e['tokens']}</td>"
        f"<td>{_f(e['timing'].get('tokens_per_s'), 1)}</td><td>{_f(e.get('speedup_vs_plain'))}</td>"
        f"<td>{_f(100 * (e['timing'].get('overhead_share') or 0), 1)}%</td></tr>" for n, e in props.items())
    cmp_rows = "".join(
        f"<tr><td>{esc(c['candidate'])} vs {esc(c['incumbent'])}</td><td>{c['calls']}</td>"
        f"<td>{_f(c['mean_diff'])}</td><td>[{_f(c['ci95'][0])}, {_f(c['ci95'][1])}]</td>"
        f"<td>{_f(100 * c['relative_gain'], 1) if c['relative_gain'] is not None else '-'}%</td></tr>"
        for c in report.get("comparisons", {}).values())
    imgs = "".join(f"<figure><img src='data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}'>"
                   f"<figcaption>{esc(k.replace('_', ' '))}</figcaption></figure>" for k, p in pngs.items())
    s = report["settings"]
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>tracedraft evaluation</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:auto}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}figure{{display:inline-block;margin:4px}}
img{{max-width:520px}}</style></head><body>
<h1>tracedraft evaluation</h1>
<p><b>Convention:</b> {esc(report['convention'])}. {esc(report.get('end_effects', ''))}.</p>
<p>Target {esc(str(s.get('target')))}, engine {esc(str(s.get('engine')))}, temperature {s.get('temperature')},
max_new_tokens {s.get('max_new_tokens')}, seed {s.get('seed')}. Held-out calls: {report['heldout']['calls']};
plain tokens: {report['heldout'].get('plain_generated_tokens')}. Lossless check at T=0:
{esc(str(report['lossless'].get('checked')))} ({len(report['lossless'].get('near_ties', []))} near-ties).</p>
<table><tr><th>proposer</th><th>tau</th><th>rounds</th><th>tokens</th><th>tokens/s</th><th>speedup</th>
<th>loop overhead</th></tr><tr><td>plain</td><td>1</td><td></td><td>{report['plain']['tokens']}</td>
<td>{_f(report['plain'].get('tokens_per_s'), 1)}</td><td>1</td><td></td></tr>{rows}</table>
<h2>Paired comparisons (per-call tau, bootstrap 95%)</h2>
<table><tr><th>pair</th><th>calls</th><th>mean diff</th><th>95% CI</th><th>relative gain</th></tr>{cmp_rows}</table>
<h2>Plots</h2>{imgs}
<p style="font-size:small">schema {esc(report['schema'])}</p></body></html>"""
    return page


def _legend(ax: Any) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def _f(x: Any, nd: int = 3) -> str:
    return "-" if x is None or _isnan(x) else f"{x:.{nd}f}"
