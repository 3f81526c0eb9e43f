"""A trial reading of a file: a ``ProblemSink`` that holds a reader's problems until the reading is kept.

Ingestion tries a file's candidate formats in order (``detect.candidate_formats``). Each candidate reads
through a ``TrialSink``: while the reader has produced nothing usable its problems and counts are held
here; at the first usable conversation the trial is ``commit``-ted (what was held goes to the real report,
which raises at the first error with ``on_error="fail"``) and from then on everything passes straight
through. A candidate that finishes without committing declined the file; ``reason`` says why, for the
report's ``candidates`` entry.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from drafters.traces.model import Source
from drafters.traces.report import ValidationReport

MAX_HELD = 10_000  # problems held in detail per trial; beyond that a declining reader's problems are counted


@dataclass
class TrialSink:
    """Problems and counts of one candidate reader, held until ``commit`` (see the module docstring)."""

    report: ValidationReport
    committed: bool = False
    held: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    overflow: Counter[str] = field(default_factory=Counter)  # "severity:code" -> problems beyond MAX_HELD
    codes: Counter[str] = field(default_factory=Counter)  # error codes seen, for ``reason``

    def error(self, code: str, message: str, source: Source, field: str | None = None) -> None:
        """Hold (or, once committed, report) an error; its code is tallied for ``reason``."""
        self.codes[code] += 1
        self._pass("error", (code, message, source, field))

    def warning(self, code: str, message: str, source: Source, field: str | None = None) -> None:
        """Hold (or, once committed, report) a warning."""
        self._pass("warning", (code, message, source, field))

    def count(self, key: str, n: int = 1) -> None:
        """Hold (or, once committed, add) a report counter's increment."""
        self._pass("count", (key, n))

    def refer(self, keys: Any, code: str, message: str, source: Source, field: str | None = None) -> None:
        """Hold (or, once committed, pass on) a reference to content another file may hold
        (``ValidationReport.refer``)."""
        self._pass("refer", (tuple(keys), code, message, source, field))

    def provide(self, keys: Any) -> None:
        """Hold (or, once committed, pass on) keys of content this file holds (``ValidationReport.provide``)."""
        self._pass("provide", (tuple(keys),))

    def _pass(self, kind: str, args: tuple[Any, ...]) -> None:
        if self.committed:
            getattr(self.report, kind)(*args)
        elif len(self.held) < MAX_HELD or kind in ("count", "refer", "provide"):
            self.held.append((kind, args))
        else:
            self.overflow[f"{kind}:{args[0]}"] += 1

    def commit(self) -> None:
        """Send what was held to the report (raises ``TraceError`` at its first error with on_error="fail")
        and pass everything through from now on."""
        self.committed = True
        held, self.held = self.held, []
        for kind, args in held:
            getattr(self.report, kind)(*args)
        self.report.problem_counts.update(self.overflow)

    def reason(self) -> str:
        """Why this candidate declined: its error codes with counts, or that it found no conversation."""
        if not self.codes:
            return "read no conversation"
        return ", ".join(f"{code} x{n}" for code, n in self.codes.most_common(3))
