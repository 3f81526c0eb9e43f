"""Inspect AI evaluation logs (.json and .eval).

Fixtures (fixtures/README.md): ``inspect_ai_log.json`` holds the real sample of inspect_ai's test log
``log_read_sample.json`` (trimmed of state events) plus a written tool-calling sample with a model-graded
scorer call; ``inspect_ai_log.eval`` holds the same header and samples in the ``.eval`` archive layout
(``_journal/start.json``, ``samples/<id>_epoch_<n>.json``, summaries, ``header.json``). Expected values are
walked from the raw JSON here.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from drafters.traces import io as tio
from drafters.traces.detect import detect_format
from drafters.traces.ingest import ingest

from ._helpers_b import codes, parse_text

FIX = Path(__file__).parent / "fixtures"
LOG, EVAL = FIX / "inspect_ai_log.json", FIX / "inspect_ai_log.eval"


def _agent_model_events(sample: dict) -> int:
    scorer = {e["id"] for e in sample["events"] if e["event"] == "span_begin" and e.get("type") in ("scorer", "scorers")}
    return sum(e["event"] == "model" and e["span_id"] not in scorer for e in sample["events"])


def test_json_log_calls_from_model_events_with_attachments_resolved():
    raw = json.loads(LOG.read_text(encoding="utf-8"))
    want_calls = sum(_agent_model_events(s) for s in raw["samples"])
    want_tool_calls = sum(len(m.get("tool_calls") or []) for s in raw["samples"] for m in s["messages"])
    assert (want_calls, want_tool_calls) == (3, 1)  # by hand: 1 + 2 model events outside scorer spans
    assert detect_format(LOG.read_text(encoding="utf-8")[:65536], LOG.name).name == "inspect_ai"
    result = ingest([LOG], scrub=False)
    report = result.report
    assert report.ok and report.formats == {"inspect_ai": 1}
    assert (report.counts["conversations"], report.counts["calls"], report.counts["tool_calls"]) == (
        2, want_calls, want_tool_calls)
    first = result.conversations[0].explicit_calls[0]
    assert first.context[0].text == raw["samples"][0]["attachments"]["d9a079613c70c3ebfb913c007dd9c9a4"]
    assert first.completion.text == "Yes\n" and first.completion.model == "gemma3"
    second = result.conversations[1]
    assert [t.name for t in second.tools] == ["bash"] and second.tools[0].parameters["required"] == ["cmd"]
    c1, c2 = second.explicit_calls
    assert c1.completion.tool_calls[0].arguments == {"cmd": "wc -l /etc/hosts"}
    assert c2.context[-1].tool_results[0].content == "7 /etc/hosts\n"  # an attachment, resolved
    assert "GRADE" not in json.dumps([c.completion.text for c in second.explicit_calls])  # scorer call skipped
    assert second.append_only


def test_eval_archive_reads_like_the_json_log():
    assert zipfile.is_zipfile(EVAL) and tio.compression_of(EVAL) == "zip"
    a = ingest([LOG], scrub=False).conversations
    b = ingest([EVAL], scrub=False)
    assert b.report.ok and b.report.formats == {"inspect_ai": 1}
    assert [(c.context, c.completion) for conv in a for c in conv.explicit_calls] == [
        (c.context, c.completion) for conv in b.conversations for c in conv.explicit_calls]


def test_sample_without_events_uses_messages_and_bad_samples_are_reported():
    raw = json.loads(LOG.read_text(encoding="utf-8"))
    for s in raw["samples"]:
        s.pop("events")
    raw["samples"].append("not a sample")
    convs, report = parse_text("inspect_ai", json.dumps(raw), "l.json")
    assert [len(list(c.calls())) for c in convs] == [1, 2]
    assert codes(report) == ["bad_record"] and report.errors[0].record.endswith("samples[2]")


def test_truncated_eval_archive_is_unreadable_not_a_crash(tmp_path):
    cut = tmp_path / "cut.eval"
    cut.write_bytes(EVAL.read_bytes()[: len(EVAL.read_bytes()) // 2])
    report = ingest([cut], scrub=False).report
    assert not report.ok and [p.code for p in report.errors] == ["unreadable_file"]
