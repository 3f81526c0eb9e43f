"""Bad input inside a file is one coded error at its line, and the rest of the file is still read.

Fixtures: ``fixtures/shapes/deep_in_record.jsonl`` and ``deep_in_content.jsonl`` (three OpenAI chat records,
the second with a value nested 10,000 deep in the record or in a message's content).
"""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest

from .conftest import totals

SHAPES = __import__("pathlib").Path(__file__).resolve().parent / "fixtures" / "shapes"


def _good_lines(path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except RecursionError:
            continue
    return out


def test_deep_nesting_is_one_error_at_its_line_and_the_rest_is_read():
    for name in ("deep_in_record.jsonl", "deep_in_content.jsonl"):
        path = SHAPES / name
        good = _good_lines(path)
        assert len(good) == 2  # lines 1 and 3
        result = ingest([path], scrub=False)
        errors = [(p.code, p.line) for p in result.report.errors]
        assert errors == [("too_deep", 2)], (name, errors)
        want_calls = sum(1 for rec in good for m in rec["messages"] if m["role"] == "assistant")
        assert totals(result.conversations)[:2] == (2, want_calls)


def test_lines_that_are_arrays_read_as_jsonl(tmp_path):
    path = tmp_path / "arrays.jsonl"
    rows = [[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = ingest([path], format="generic", scrub=False)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations)[:2] == (2, 2)


def test_truncated_and_non_object_lines_are_coded_at_their_line(tmp_path):
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    other = {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}
    path = tmp_path / "cut.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(other)[:30] + "\n" + "[1, 2]\n" + json.dumps(other) + "\n")
    result = ingest([path], scrub=False)
    where = sorted((p.code, p.line) for p in result.report.errors)
    assert [w[1] for w in where] == [2, 3], where
    assert where[0][0] == "invalid_json"
    assert totals(result.conversations)[:2] == (2, 2)
    # the message says what happened to the line and what to do about it
    (bad,) = [p for p in result.report.errors if p.code == "invalid_json"]
    assert "it is skipped and the rest of the file read (fix or remove it" in bad.message
