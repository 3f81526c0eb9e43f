"""Helpers for the part-B format tests (sharegpt ... agentbench): parse text, corrupt copies."""

from __future__ import annotations

import io
from pathlib import Path

from drafters.traces.formats import get_format
from drafters.traces.model import Conversation
from drafters.traces.report import ValidationReport


def parse_text(fmt: str, text: str, name: str = "x.json") -> tuple[list[Conversation], ValidationReport]:
    """Parse in-memory ``text`` with format ``fmt`` into (conversations, report); never raises on bad data."""
    report = ValidationReport()
    return list(get_format(fmt).parse(io.StringIO(text), name, report)), report


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def codes(report: ValidationReport) -> list[str]:
    return [p.code for p in report.errors]


def truncate_line(text: str, line_no: int, keep: float = 0.5) -> str:
    """``text`` with its 1-based line ``line_no`` cut to ``keep`` of its length (a torn write)."""
    lines = text.split("\n")
    lines[line_no - 1] = lines[line_no - 1][: max(1, int(len(lines[line_no - 1]) * keep))]
    return "\n".join(lines)
