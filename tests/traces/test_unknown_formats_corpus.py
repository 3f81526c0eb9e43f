"""Corpus test: public files of formats with no module here (``fixtures/unknown_formats``, provenance in its
SOURCES.tsv) are read exactly by the general path or refused with a code (a trajectory whose context was handed
off mid-run: its calls before the handoff read exactly, those after it refused); none is ``ok`` with a wrong
count.

Expected counts come from ``hand_count.py``, which reads the raw files without importing tracedraft. The
share read exactly is the figure docs/traces.md reports ("Files of formats with no module").
"""

from __future__ import annotations

import json
import subprocess
import sys

from drafters.traces.infer import infer_mapping, mapping_yaml
from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import parse_mapping

from .conftest import totals
from .test_bad_input import SHAPES

CORPUS = SHAPES.parent / "unknown_formats"


def _hand_counts() -> dict[str, dict]:
    out = subprocess.run([sys.executable, str(CORPUS / "hand_count.py")], capture_output=True, text=True, check=True)
    return {row["file"]: row for row in map(json.loads, out.stdout.splitlines())}


def test_every_file_is_read_exactly_or_refused_with_a_code():
    want = _hand_counts()
    listed = [line.split("\t")[0] for line in (CORPUS / "SOURCES.tsv").read_text().splitlines()[1:]]
    assert sorted(listed) == sorted(want), "every corpus file has its provenance in SOURCES.tsv"
    exact, partial, refused, wrong = [], [], [], []
    for name, hand in sorted(want.items()):
        result = ingest([CORPUS / name], scrub=False)
        report = result.report
        got = totals(result.conversations)
        if hand["readable"]:
            completions = sorted(c.completion.text for conv in result.conversations for c in conv.calls())
            same = got == (hand["conversations"], hand["calls"], hand["tool_calls"]) and \
                completions == sorted(hand["completions"])
            if report.ok and same and not hand.get("calls_not_readable"):
                exact.append(name)
                continue
            # calls the file does not give the context of (after a context handoff): the rest read exactly, those
            # refused with a code, the file partial
            if hand.get("calls_not_readable") and same and not report.ok and \
                    [e.code for e in report.errors] == ["handoff_context_not_recorded"] and \
                    f"{hand['calls_not_readable']} LLM call(s)" in report.errors[0].message:
                partial.append(name)
                continue
        if not result.conversations and report.errors:
            refused.append((name, report.errors[0].code))
            continue
        wrong.append((name, got, report.ok))
    assert not wrong, wrong  # never ok (or partial) with counts the file does not hold
    readable = [n for n, h in want.items() if h["readable"] and not h.get("calls_not_readable")]
    assert sorted(exact) == sorted(readable)  # every file the hand count can read, the general path reads
    assert partial == [n for n, h in sorted(want.items()) if h.get("calls_not_readable")]
    assert (len(exact), len(partial), len(want)) == (28, 1, 42)  # the shares written in docs/traces.md


def test_the_mapping_infer_mapping_writes_reads_each_exact_file_the_same(tmp_path):
    want = _hand_counts()
    for name, hand in sorted(want.items()):
        if not hand["readable"]:
            continue
        written = tmp_path / f"{name}.mapping.yaml"
        written.write_text(mapping_yaml(infer_mapping(CORPUS / name)))
        again = ingest([CORPUS / name], mapping=parse_mapping(written.read_text(), str(written)), scrub=False)
        if hand.get("calls_not_readable"):  # the declared mapping refuses the calls after a handoff the same way
            assert [e.code for e in again.report.errors] == ["handoff_context_not_recorded"], name
        else:
            assert again.report.ok, (name, again.report.errors)
        assert totals(again.conversations) == (hand["conversations"], hand["calls"], hand["tool_calls"]), name
