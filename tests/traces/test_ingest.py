"""ingest(): compression, on_error, dedup, split, canonical form, unreadable files, report."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import zstandard

from drafters.traces import io as tio
from drafters.traces.ingest import ingest, iter_conversations, read_canonical, split_of, write_canonical
from drafters.traces.report import TraceError, ValidationReport

RECORD = {"messages": [
    {"role": "user", "content": "email me at jane@corp.io"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "send", "arguments": "{\"to\": \"jane@corp.io\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sent"},
    {"role": "assistant", "content": "Sent.", "model": "gpt-4o"},
]}


def _record(i: int) -> dict:
    r = json.loads(json.dumps(RECORD))
    r["id"] = f"r{i}"
    r["messages"][0]["content"] += f" #{i}"
    return r


def _write_jsonl(path: Path, records, opener=open) -> Path:
    with opener(path, "wt") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def test_gzip_and_zstd_are_sniffed_by_content(tmp_path):
    plain = _write_jsonl(tmp_path / "a.jsonl", [_record(i) for i in range(3)])
    gz = tmp_path / "b.data"  # misleading name: the magic bytes decide
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    zst = tmp_path / "c.jsonl"
    zst.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    assert tio.compression_of(gz) == "gzip" and tio.compression_of(zst) == "zstd"
    assert tio.compression_of(plain) is None
    for path in (gz, zst):
        result = ingest([path], scrub=False)
        assert [c.id.rsplit(":", 1)[1] for c in result.conversations] == ["r0", "r1", "r2"]
        assert result.report.formats == {"openai_chat": 1}


def test_exact_duplicates_dropped_and_counted(tmp_path):
    path = _write_jsonl(tmp_path / "d.jsonl", [_record(0), _record(1), _record(0)])
    result = ingest([path, path])
    assert len(result.conversations) == 2
    assert result.report.counts["duplicates_dropped"] == 4


def test_scrubbed_by_default_and_counts_reported(tmp_path):
    path = _write_jsonl(tmp_path / "s.jsonl", [_record(0)])
    result = ingest([path])
    conv = result.conversations[0]
    assert conv.messages[0].text == "email me at <EMAIL_1> #0"
    assert conv.messages[1].tool_calls[0].arguments == {"to": "<EMAIL_1>"}
    assert result.report.scrub_counts == {"EMAIL": 2}
    assert "jane@corp.io" not in json.dumps(result.report.to_dict())
    raw = ingest([path], scrub=False)
    assert "jane@corp.io" in raw.conversations[0].messages[0].text


def test_split_is_stable_and_near_the_fraction():
    ids = [f"conv-{i}" for i in range(4000)]
    first = [split_of(i, 0.1) for i in ids]
    assert first == [split_of(i, 0.1) for i in ids]
    share = first.count("heldout") / len(ids)
    assert 0.08 < share < 0.12
    assert all(split_of(i, 0.0) == "train" for i in ids[:50])


def test_ingest_result_split_matches_split_of(tmp_path):
    path = _write_jsonl(tmp_path / "x.jsonl", [_record(i) for i in range(40)])
    result = ingest([path], heldout_fraction=0.25)
    assert {c.id for c in result.heldout()} == {c.id for c in result.conversations if split_of(c.id, 0.25) == "heldout"}
    assert len(result.train()) + len(result.heldout()) == 40


def test_on_error_skip_reports_every_bad_record(tmp_path):
    path = _write_jsonl(tmp_path / "bad.jsonl", [_record(0), "{oops", _record(1), json.dumps({"messages": []}),
                                                 json.dumps({"messages": [{"role": "user", "content": "hi"}]})])
    result = ingest([path])
    assert len(result.conversations) == 2
    got = sorted((p.code, p.line) for p in result.report.errors)
    assert got == [("empty_conversation", 4), ("invalid_json", 2), ("no_assistant_message", 5)]
    d = result.report.to_dict()
    json.dumps(d)
    assert d["counts"]["conversations"] == 2 and d["counts"]["calls"] == 4 and d["counts"]["tool_calls"] == 2


def test_on_error_fail_stops_at_first_error_with_file_and_line(tmp_path):
    path = _write_jsonl(tmp_path / "bad.jsonl", [_record(0), "{oops", "{also bad"])
    with pytest.raises(TraceError) as exc:
        list(iter_conversations([path], on_error="fail"))
    assert exc.value.code == "invalid_json"
    assert exc.value.where == f"{path}:2"


def test_unreadable_and_unknown_files_are_reported_not_raised(tmp_path):
    missing = tmp_path / "missing.jsonl"
    broken = tmp_path / "broken.zst"
    broken.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00garbage" * 10)
    prose = tmp_path / "notes.txt"
    prose.write_text("hello\n")
    result = ingest([missing, broken, prose])
    codes = sorted(p.code for p in result.report.errors)
    assert codes == ["unknown_format", "unreadable_file", "unreadable_file"]
    unknown = next(p for p in result.report.errors if p.code == "unknown_format")
    assert "tried: claude_code" in unknown.message and "openai_chat" in unknown.message
    with pytest.raises(TraceError) as exc:
        ingest([missing], on_error="fail")
    assert exc.value.code == "unreadable_file"


def test_a_directorys_documentation_is_skipped_with_a_warning_and_read_when_named(tmp_path):
    (tmp_path / "run.jsonl").write_text(json.dumps(_record(1)) + "\n")
    for name in ("README.md", "SOURCES.tsv", "LICENSE"):
        (tmp_path / name).write_text("Traces of our support agent, collected in May.\n")
    (tmp_path / "readme_notes.md").write_text("not a documentation name: read, and refused\n")
    result = ingest([tmp_path])
    assert len(result.conversations) == 1
    skipped = sorted(Path(p.file).name for p in result.report.warnings if p.code == "documentation_skipped")
    assert skipped == ["LICENSE", "README.md", "SOURCES.tsv"]
    assert [Path(p.file).name for p in result.report.errors] == ["readme_notes.md"]
    named = ingest([tmp_path / "README.md"])  # given by name: read like any file (here refused)
    assert [p.code for p in named.report.errors] == ["unknown_format"]


def test_canonical_round_trip(tmp_path):
    from .conftest import sample

    result = ingest([sample("claude_code_jsonl/fasthooks__sample_main_transcript.jsonl"),
                     sample("openai_chat_tool_calls/pydantic-ai__test_openai_tool_output.yaml")])
    out = tmp_path / "canon.jsonl"
    assert write_canonical(result.conversations, out) == 2
    back = list(read_canonical(out))
    assert back == result.conversations
    assert [m.meta for m in back[0].messages] == [m.meta for m in result.conversations[0].messages]


def test_problems_stream_to_file_and_detail_is_bounded(tmp_path):
    path = _write_jsonl(tmp_path / "many.jsonl", ["{bad"] * 30)
    report = ValidationReport(max_problems=5, problems_path=tmp_path / "problems.jsonl")
    list(iter_conversations([path], format="openai_chat", report=report))
    assert len(report.errors) == 5
    assert report.problem_counts["error:invalid_json"] == 30
    lines = (tmp_path / "problems.jsonl").read_text().splitlines()
    assert len(lines) == 30 and json.loads(lines[29])["line"] == 30
    assert report.to_dict()["problems_truncated"] is True


def test_model_mismatch_warning(tmp_path):
    path = _write_jsonl(tmp_path / "m.jsonl", [_record(0)])
    result = ingest([path], target_model="HuggingFaceTB/SmolLM2-135M-Instruct")
    (w,) = [p for p in result.report.warnings if p.code == "model_mismatch"]
    assert "different model than the target" in w.message and "regenerate" in w.message and "gpt-4o" in w.message
    same = ingest([path], target_model="openai/gpt-4o")
    assert not [p for p in same.report.warnings if p.code == "model_mismatch"]


def test_validation_warnings(tmp_path):
    rec = {"messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "not json"}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "r"},
        {"role": "tool", "tool_call_id": "zzz", "content": "orphan"},
        {"role": "assistant", "content": "end"}]}
    path = _write_jsonl(tmp_path / "w.jsonl", [rec])
    result = ingest([path])
    codes = sorted(p.code for p in result.report.warnings)
    assert codes == ["arguments_not_json", "no_tool_definitions", "tool_result_without_call", "unpaired_tool_call"]
    assert result.report.counts["parallel_calls"] == 1


def test_tool_calls_without_definitions_warn_with_a_code(tmp_path):
    with_defs = {**RECORD, "tools": [{"type": "function", "function": {"name": "send", "parameters": {}}}]}
    path = _write_jsonl(tmp_path / "t.jsonl", [RECORD, with_defs])
    report = ingest([path], scrub=False).report
    (w,) = [p for p in report.warnings if p.code == "no_tool_definitions"]
    assert w.line == 1 and "1 tool call(s)" in w.message
    assert report.ok  # a warning: the content itself was understood


def test_huge_tool_output_kept_whole(tmp_path):
    """README: tool outputs of ~80K characters exist; they are kept whole (truncation is the renderer's job)."""
    big = "x" * 80_000 + "\nend"
    rec = {"messages": [{"role": "user", "content": "go"},
                        {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]},
                        {"role": "tool", "tool_call_id": "c", "content": big},
                        {"role": "assistant", "content": "ok"}]}
    path = _write_jsonl(tmp_path / "big.jsonl", [rec])
    result = ingest([path])
    assert result.conversations[0].messages[2].tool_results[0].content == big
    assert result.report.chars["tool_results"] == len(big)


def test_inline_think_next_to_tool_calls_counts_as_reasoning(tmp_path):
    """An assistant's <think>...</think> written inside content next to its tool calls is reasoning in the
    character counts (`tracedraft datasets validate`), as rendering labels it; a user's is text."""
    think = "<think>\nNeed the file first.\n</think>"
    rec = {"messages": [{"role": "user", "content": "show <think>x</think>"},
                        {"role": "assistant", "content": think + "\n\nReading.", "tool_calls": [
                            {"id": "c", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]},
                        {"role": "tool", "tool_call_id": "c", "content": "data"},
                        {"role": "assistant", "content": "Done."}]}
    path = _write_jsonl(tmp_path / "think.jsonl", [rec])
    result = ingest([path], scrub=False)
    chars = result.report.chars
    assert chars["reasoning"] == len(think)
    assert chars["text"] == len("show <think>x</think>") + len("\n\nReading.") + len("Done.")
    assert result.report.files[str(path)]["chars"]["reasoning"] == len(think)


def test_traces_package_is_torch_free():
    import subprocess
    import sys

    code = ("import sys, drafters.traces.ingest, drafters.traces.formats as f; f.all_formats(); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers')]; print(bad); "
            "sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_empty_conversations_are_errors_never_duplicates(tmp_path):
    empty = {"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}]}
    path = _write_jsonl(tmp_path / "e.jsonl", [empty, empty, _record(0)])
    report = ingest([path], scrub=False).report
    assert report.problem_counts["error:content_lost"] == 2
    assert report.counts["duplicates_dropped"] == 0 and report.counts["conversations"] == 1
    assert [p.line for p in report.errors] == [1, 2]
    assert not report.ok


def test_shared_content_reader_never_dumps_unknown_parts_as_text():
    from drafters.traces.formats._content import content_parts
    from drafters.traces.model import ReasoningPart, TextPart, UnsupportedPart

    parts = content_parts([{"type": "text", "value": "a"}, {"type": "thinking", "thinking": "b"},
                           {"type": "tool_call", "value": "{\"name\": \"f\"}"}, {"text": "c"}, {"type": "image_url"}])
    assert parts[0] == TextPart("a") and parts[1] == ReasoningPart("b") and parts[3] == TextPart("c")
    assert parts[2] == UnsupportedPart("tool_call") and parts[2].lost
    assert parts[4].kind == "image" and not parts[4].lost


def test_every_corpus_file_counts_the_records_it_read():
    """``records`` is what the reader read, in every format: a JSON array's items (counted here with json),
    one per JSONL line or JSON document; it was 0 for the formats read as one document or streamed
    (Langfuse, OpenTelemetry, tau-bench, ShareGPT arrays, SWE-agent, ...), which made a report read as if
    nothing had been read."""
    corpus = Path(__file__).resolve().parent / "fixtures" / "corpus"
    files = sorted(p for p in corpus.glob("*/*") if p.is_file())
    assert len(files) > 40
    for path in files:
        report = ingest([path]).report
        assert report.counts["records"] >= 1, path.name
        if path.suffix == ".json":
            doc = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(doc, list):
                assert report.counts["records"] == len(doc), path.name


def test_a_file_repeating_earlier_files_is_duplicate_not_refused(tmp_path):
    """A file whose every conversation was already read (Inspect's .json and .eval of one log) is
    understood: status "duplicate" naming the file it repeats, not "refused" with no error to say why."""
    import shutil

    fx = Path(__file__).resolve().parent / "fixtures"
    for name in ("inspect_ai_log.eval", "inspect_ai_log.json"):
        shutil.copy(fx / name, tmp_path / name)
    report = ingest([tmp_path]).report
    files = {Path(k).name: v for k, v in report.files.items()}
    assert (files["inspect_ai_log.eval"]["status"], files["inspect_ai_log.eval"]["conversations"]) == ("ok", 2)
    dup = files["inspect_ai_log.json"]
    assert (dup["status"], dup["conversations"], dup["errors"]) == ("duplicate", 0, 0)
    assert dup["duplicate_of"] == [str(tmp_path / "inspect_ai_log.eval")]
    assert report.counts["duplicates_dropped"] == 2 and report.counts["files_duplicate"] == 1
    assert "files_refused" not in report.counts


def test_a_log_with_an_answer_but_no_context_is_an_error(tmp_path):
    """A one-line Claude Code log holding only an assistant tool call (the real corpus file) has no LLM
    call to train on: it was "ok" with 1 conversation and 0 calls; now no_llm_call, refused."""
    path = Path(__file__).resolve().parent / "fixtures" / "corpus" / "mcp_in_transcripts" / \
        "agentcmd__claude_tool-mcp__happy__change_title.jsonl"
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    assert [x["type"] for x in lines] == ["assistant"]  # counted in the raw file
    report = ingest([path]).report
    assert [(e.code, e.line) for e in report.errors] == [("no_llm_call", 1)]
    assert report.files[str(path)]["status"] == "refused" and report.counts["conversations"] == 0


def test_empty_and_unknown_files_say_what_to_do(tmp_path):
    """An empty file is empty_file (not "no format recognizes it" with the list of every format); an
    unrecognized one points at declared mappings."""
    (tmp_path / "empty.jsonl").write_text("\n  \n", encoding="utf-8")
    (tmp_path / "inhouse.jsonl").write_text('{"turns": [{"who": "me", "said": "hi"}]}\n', encoding="utf-8")
    report = ingest([tmp_path]).report
    by_file = {Path(e.file).name: e for e in report.errors}
    assert by_file["empty.jsonl"].code == "empty_file" and "tried" not in by_file["empty.jsonl"].message
    assert by_file["inhouse.jsonl"].code == "unknown_format" and "--mapping" in by_file["inhouse.jsonl"].message
