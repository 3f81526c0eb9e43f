"""How the CLI shows drafter versions: one plain shape for a version (the API's JSON or a database row), the
diff and compatibility check of ``service.registry`` over it, the gate decision and the diff as tables, and
VERSION arguments (``3``, ``v3``) as numbers.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from rich.markup import escape

from service.cli._common import console, table
from service.registry import version_score


def version_view(v: Any, drafter_name: str | None = None, target_model: str | None = None) -> dict[str, Any]:
    """A version as the API's DrafterVersionOut dict, from an API answer (returned as is) or a row."""
    if isinstance(v, dict):
        return v
    return {
        "drafter": drafter_name or v.drafter.name, "version": v.version, "ref": v.ref, "id": v.id,
        "job_id": v.job_id, "checkpoint_uri": v.checkpoint_uri, "files": dict(v.files or {}),
        "size_bytes": v.size_bytes, "config": dict(v.config or {}),
        "lineage": {"target_model": target_model or v.drafter.target_model, **dict(v.lineage or {})},
        "gate": v.gate, "report": v.report, "score": version_score(v.report, v.gate), "created_by": v.created_by,
        "created_at": v.created_at,
    }


def _ns(view: dict[str, Any]) -> SimpleNamespace:
    """The attribute shape ``service.registry.diff_versions``/``compatibility`` read."""
    lineage = dict(view.get("lineage") or {})
    return SimpleNamespace(version=view["version"], config=view.get("config") or {}, lineage=lineage,
                           report=view.get("report") or {}, gate=view.get("gate") or {},
                           files=view.get("files") or {},
                           drafter=SimpleNamespace(target_model=lineage.get("target_model")))


def diff_views(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """``service.registry.diff_versions`` over two version views (from ``a`` to ``b``)."""
    from service.registry import diff_versions

    return diff_versions(_ns(a), _ns(b))


def compat_problems(candidate: dict[str, Any], holder: dict[str, Any]) -> list[str]:
    """``service.registry.compatibility`` over two version views (empty: compatible)."""
    from service.registry import compatibility

    return compatibility(_ns(candidate), _ns(holder))


HEADLINE = ("recipe", "data", "score")


def print_diff(d: dict[str, Any], limit: int = 60) -> None:
    """A version diff, headline first: the recipe (seed included), data and score differences; then the
    config, lineage and gate differences (at most ``limit`` rows), how many report values differ (the
    per-call, calibration and timing figures: ``--json`` has them) and the changed files."""
    head = [[section, key, cell_text(x), cell_text(y)]
            for section in HEADLINE for key, (x, y) in (d.get(section) or {}).items()]
    cols = ["what", "key", f"v{d['from']}", f"v{d['to']}"]
    if head:
        console.print(table(f"Recipe, data and score v{d['from']} -> v{d['to']}", cols, head))
    else:
        console.print(f"v{d['from']} -> v{d['to']}: same recipe, data and score")
    rows = [[section, key, cell_text(x), cell_text(y)]
            for section in ("config", "lineage", "gate") for key, (x, y) in (d.get(section) or {}).items()
            if not (section == "lineage" and key.split(".")[0] in ("recipe", "dataset_sha256", "dataset_sha256s"))]
    if rows:
        console.print(table(f"Differences v{d['from']} -> v{d['to']}", cols, rows[:limit]))
    if len(rows) > limit:
        console.print(f"[dim]... and {len(rows) - limit} more (use --json for all)[/dim]")
    if d.get("report"):
        console.print(f"[dim]{len(d['report'])} values of the evaluation reports differ (per-call, calibration, "
                      "timing; use --json for all)[/dim]")
    files = d.get("files") or {}
    for kind in ("added", "removed", "changed"):
        if files.get(kind):
            console.print(f"files {kind}: {', '.join(files[kind])}")


def cell_text(v: Any) -> str:
    s = "" if v is None else str(v)
    return s if len(s) <= 80 else s[:77] + "..."


def print_gate(view: dict[str, Any]) -> None:
    gate = view.get("gate")
    if not gate:
        console.print(f"gate of v{view['version']}: [dim]no gate decision recorded[/dim]")
        return
    verdict = "[green]passed[/green]" if gate.get("passed") else "[yellow]not passed[/yellow]"
    console.print(f"gate of v{view['version']}: {verdict}")
    for reason in gate.get("reasons") or []:
        console.print(f"  - {escape(str(reason))}", highlight=False)


def parse_version(text: str) -> int | None:
    """``3`` or ``v3`` -> 3; anything else (an alias, ``latest``) -> None."""
    t = text.strip().lower()
    t = t.removeprefix("v")
    return int(t) if t.isdigit() and int(t) > 0 else None
