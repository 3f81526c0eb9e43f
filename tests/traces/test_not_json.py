"""A file named as JSON that is not JSON at all is ``invalid_json`` with the line and column of its first
syntax error, not ``unknown_format`` (which stays for JSON no format knows, and for other names)."""

from __future__ import annotations

import gzip
import json

from drafters.traces.detect import json_problem
from drafters.traces.ingest import ingest


def test_a_file_that_is_not_json_at_all_is_invalid_json_with_line_and_column(tmp_path):
    (tmp_path / "garbage.jsonl").write_text("hello, not json\nsecond line\n")
    (tmp_path / "late.json").write_text('\n\n  {"turns": [1, 2,, 3]}\n')  # an error on line 3
    (tmp_path / "packed.jsonl.gz").write_bytes(gzip.compress(b"<html>not a trace</html>\n"))
    (tmp_path / "inhouse.jsonl").write_text('{"turns": [{"who": "me", "said": "hi"}]}\n')  # JSON, unknown
    (tmp_path / "notes.txt").write_text("just some notes\n")  # not named JSON
    report = ingest([tmp_path]).report
    by_file = {p.file.rsplit("/", 1)[-1]: p for p in report.errors}
    garbage = by_file["garbage.jsonl"]
    assert garbage.code == "invalid_json" and garbage.line == 1
    assert garbage.message.endswith("Expecting value at line 1 column 1")
    late = by_file["late.json"]
    assert late.code == "invalid_json" and late.line == 3 and "line 3 column 19" in late.message
    assert by_file["packed.jsonl.gz"].code == "invalid_json"
    assert by_file["inhouse.jsonl"].code == "unknown_format" and "--mapping" in by_file["inhouse.jsonl"].message
    assert by_file["notes.txt"].code == "unknown_format"


def test_a_long_json_document_cut_at_the_head_is_not_called_invalid():
    doc = json.dumps({"items": [{"text": "x" * 5000}] * 20})
    assert json_problem(doc[:64 * 1024 - 100], "big.json", whole=False) is None
    assert json_problem(doc[:30_000], "big.json", whole=False) is None  # cut inside a string
    assert json_problem(doc[:30_000], "big.json", whole=True) is not None  # the whole file: it is cut
    assert json_problem("hello", "notes.md", whole=True) is None
    assert json_problem('{"a": 1}\n{"b": 2}\n', "rows.jsonl", whole=True) is None


def test_pretty_printed_objects_one_after_another_are_records(tmp_path):
    """``json.dump(record, f, indent=2)`` per record (HuixiangDou's RAG output): no JSON document, no JSON Lines,
    but JSON; each object is a record at its first line, and a file of no known shape is unknown, not invalid."""
    from drafters.traces.formats._reading import concatenated_objects

    chats = [{"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]}
             for q, a in (("hi", "hello"), ("2+2?", "4"))]
    path = tmp_path / "appended.json"
    path.write_text("".join(json.dumps(c, indent=2) + "\n" for c in chats))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert [len(list(c.calls())) for c in result.conversations] == [1, 1]
    other = tmp_path / "rag_output.json"
    other.write_text("".join(json.dumps({"id": i, "query": "q", "code": 1}, indent=2) + "\n" for i in range(2)))
    assert [e.code for e in ingest([other]).report.errors] == ["unknown_format"]
    assert not concatenated_objects('{"a": 1}\n{"b": 2}\n')  # JSON Lines: read line by line
    cut = tmp_path / "cut.json"  # the last object cut short: the others read, the cut one coded at its line
    cut.write_text("".join(json.dumps(c, indent=2) + "\n" for c in chats) + '{\n  "messages": [\n')
    result = ingest([cut], scrub=False, dedup=False)
    assert [len(list(c.calls())) for c in result.conversations] == [1, 1]
    assert [(e.code, e.line) for e in result.report.errors] == [("invalid_json", 25)]
