"""LLaMA-Factory typed-part records, and the silent-loss rule on the path that used to lose them.

Fixture: ``fixtures/llamafactory_v1_reason_tool_use.json``, a faithful small file written from the shape
LLaMA-Factory's data engine reads (``content = [{"type", "value"}]``, ``loss_weight``, ``tools`` as a JSON
string), see fixtures/README.md. Expected counts are walked from the raw JSON in ``_raw_counts`` below,
independently of the parser, and were also counted by hand (the literals).
"""

from __future__ import annotations

import json
from pathlib import Path

from drafters.traces.detect import detect_format
from drafters.traces.ingest import ingest
from drafters.traces.model import conversation_from_dict, conversation_to_dict

from ._helpers_b import codes, parse_text

FIXTURE = Path(__file__).parent / "fixtures" / "llamafactory_v1_reason_tool_use.json"


def _raw_counts(records: list[dict]) -> dict[str, int]:
    out = {"tool_calls": 0, "reasoning_chars": 0, "supervised": 0, "assistant": 0, "text_chars": 0}
    for rec in records:
        for msg in rec["messages"]:
            if msg["role"] == "assistant":
                out["assistant"] += 1
                out["supervised"] += msg["loss_weight"] != 0
            for part in msg["content"]:
                if part["type"] == "tool_call":
                    out["tool_calls"] += 1
                elif part["type"] == "reasoning":
                    out["reasoning_chars"] += len(part["value"])
                elif part["type"] == "text" and msg["role"] != "tool":
                    out["text_chars"] += len(part["value"])
    return out


def test_detected_and_counted():
    text = FIXTURE.read_text(encoding="utf-8")
    raw = _raw_counts(json.loads(text))
    assert (raw["tool_calls"], raw["assistant"], raw["supervised"]) == (4, 7, 6)  # counted by hand
    assert detect_format(text[:65536], FIXTURE.name).name == "llamafactory"
    result = ingest([FIXTURE], scrub=False)
    report = result.report
    assert report.ok and not report.errors and not report.warnings
    assert report.counts["conversations"] == 4
    assert report.counts["tool_calls"] == raw["tool_calls"]
    assert report.counts["parallel_calls"] == 1
    assert report.counts["calls"] == raw["supervised"]
    assert report.chars["reasoning"] == raw["reasoning_chars"]
    assert report.chars["text"] == raw["text_chars"]
    weather = result.conversations[0]
    assert [t.name for t in weather.tools] == ["get_weather", "convert_currency"]
    call = weather.messages[2].tool_calls[0]
    assert (call.name, call.arguments) == ("get_weather", {"city": "Paris"})
    assert weather.messages[3].tool_results[0].content == '{"temp_c": 18, "sky": "cloudy"}'


def test_loss_weight_zero_is_context_not_a_completion():
    conv = ingest([FIXTURE], scrub=False).conversations[3]
    assert [m.supervised for m in conv.messages if m.role == "assistant"] == [False, True]
    calls = list(conv.calls())
    assert len(calls) == 1
    assert calls[0].completion.text == "It is -3 °C with snow in Oslo."
    assert calls[0].context[1].tool_calls[0].arguments == {"city": "Oslo"}  # still in the context
    back = conversation_from_dict(json.loads(json.dumps(conversation_to_dict(conv))))
    assert [m.supervised for m in back.messages] == [m.supervised for m in conv.messages]
    assert len(list(back.calls())) == 1


def test_read_as_openai_chat_is_refused_not_ok(tmp_path):
    """The path that silently lost every part (and printed ok) now refuses the file with codes."""
    report = ingest([FIXTURE], format="openai_chat", scrub=False).report
    assert not report.ok
    assert report.problem_counts["error:unknown_content"] == 4
    assert report.problem_counts["error:mostly_unsupported"] == 1
    assert report.counts["conversations"] == 0
    assert report.counts["duplicates_dropped"] == 0  # empty conversations are never "duplicates"
    (summary,) = report.files.values()
    assert summary["status"] == "refused" and summary["chars"] == {"tool_args": 0, "text": 0, "reasoning": 0,
                                                                   "tool_results": 0}
    good = ingest([FIXTURE], scrub=False).report.files[str(FIXTURE)]
    assert good["status"] == "ok" and good["chars"]["reasoning"] == _raw_counts(json.loads(
        FIXTURE.read_text(encoding="utf-8")))["reasoning_chars"]


def _record(content_of_answer: list) -> str:
    return json.dumps({"messages": [
        {"role": "user", "content": [{"type": "text", "value": "hi"}]},
        {"role": "assistant", "content": content_of_answer}]})


def test_unknown_part_type_is_an_error_and_the_rest_is_read(tmp_path):
    lines = [_record([{"type": "text", "value": "a"}]),
             _record([{"type": "citation", "value": "[1]"}, {"type": "text", "value": "b"}]),
             _record([{"type": "tool_call", "value": "{not json"}]),
             '{"messages": [{"role": "user", "content": [{"type": "text", "val',
             _record([{"type": "text", "value": "c"}])]
    path = tmp_path / "lf.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = ingest([path], scrub=False)
    report = result.report
    assert [c.messages[1].text for c in result.conversations] == ["a", "c"]
    by_code = {p.code: p for p in report.errors}
    assert set(by_code) == {"unknown_content", "bad_record", "invalid_json"}
    assert (by_code["unknown_content"].line, by_code["bad_record"].line, by_code["invalid_json"].line) == (2, 3, 4)
    assert "citation" in by_code["unknown_content"].message
    assert "messages[1]" in by_code["bad_record"].message


def test_content_that_is_a_json_string_is_reported_with_its_record():
    convs, report = parse_text("llamafactory", json.dumps([
        {"messages": [{"role": "user", "content": [{"type": "text", "value": "q"}]},
                      {"role": "assistant", "content": [{"type": "text", "value": "a"}]}]},
        {"messages": [{"role": "user", "content": [{"type": "text", "value": "q"}]},
                      '{"role": "assistant", "content": [{"type": "text", "value": "a"}]}']}]))
    assert len(convs) == 1
    assert codes(report) == ["bad_record"] and report.errors[0].record == "$[1]"
    assert "messages[1] is a str" in report.errors[0].message
