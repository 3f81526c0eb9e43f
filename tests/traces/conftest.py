"""Shared fixtures for the trace-ingestion tests: the sample corpus and a parse helper."""

from __future__ import annotations

from pathlib import Path

import pytest

from drafters.traces import io as tio
from drafters.traces.formats import get_format
from drafters.traces.model import Conversation
from drafters.traces.report import ValidationReport

DATA = Path(__file__).resolve().parent / "fixtures" / "corpus"


def sample(rel: str) -> Path:
    """A sample file of the trace corpus (tests/traces/fixtures/corpus); a missing one fails the test."""
    path = DATA / rel
    assert path.is_file(), f"no such corpus file: {path}"
    return path


def parse_file(fmt: str, path: str | Path, on_error: str = "skip") -> tuple[list[Conversation], ValidationReport]:
    """Parse one file with the named format (no validation/scrub/dedup): (conversations, report)."""
    report = ValidationReport(on_error)  # type: ignore[arg-type]
    with tio.open_text(path) as stream:
        convs = list(get_format(fmt).parse(stream, str(path), report))
    return convs, report


def totals(convs: list[Conversation]) -> tuple[int, int, int]:
    """(conversations, LLM calls, tool calls). Tool calls are those of every assistant message of the
    transcript (of the explicit calls' completions when the source recorded calls)."""
    n_calls = n_tools = 0
    for conv in convs:
        calls = list(conv.calls())
        n_calls += len(calls)
        msgs = [c.completion for c in calls] if conv.explicit_calls is not None else conv.messages
        n_tools += sum(len(m.tool_calls) for m in msgs if m.role == "assistant")
    return len(convs), n_calls, n_tools


def inferred_mapping_totals(path: Path, shape: str, tmp_path: Path) -> tuple[int, int, int]:
    """Infer ``path``'s mapping (its shape must be ``shape``), write it as YAML, read the file back with it
    (the report must be ok) and return the totals, to compare with the general path's."""
    from drafters.traces.infer import infer_mapping, mapping_yaml
    from drafters.traces.ingest import ingest
    from drafters.traces.mapping_file import parse_mapping

    inferred = infer_mapping(path)
    assert inferred.shape == shape
    written = tmp_path / "m.yaml"
    written.write_text(mapping_yaml(inferred))
    again = ingest([path], mapping=parse_mapping(written.read_text(), str(written)), scrub=False)
    assert again.report.ok, again.report.errors
    return totals(again.conversations)


@pytest.fixture
def data_dir() -> Path:
    return DATA


def codes(result, kind: str = "errors") -> list[str]:
    """The codes of an ingestion result's report problems of one kind ("errors" or "warnings"), in order."""
    return [p.code for p in getattr(result.report, kind)]


def ingest_json(tmp_path: Path, doc, name: str = "trace.json"):
    """``doc`` written as one JSON file under ``tmp_path`` and ingested as the general path reads it (no scrub,
    no dedup): the ``IngestResult``."""
    import json

    from drafters.traces.ingest import ingest

    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return ingest([path], scrub=False, dedup=False)
