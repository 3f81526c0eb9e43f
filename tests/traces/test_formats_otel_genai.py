"""OpenTelemetry GenAI spans: Jaeger JSON sample, console-exporter dumps and OTLP JSON."""

from __future__ import annotations

import json

from ._helpers_b import codes, parse_text, read
from .conftest import parse_file, sample, totals

JAEGER = "otel_genai_spans/packet-panic-agntcy__jaeger_export_traces.json"


def _msgs(*items) -> str:
    return json.dumps(list(items))


USER = {"role": "user", "parts": [{"type": "text", "content": "weather in Oslo?"}]}
CALL = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}],
        "finish_reason": "tool_call"}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "cold"}]}
ANSWER = {"role": "assistant", "parts": [{"type": "text", "content": "It is cold."}], "finish_reason": "stop"}


def _console_span(span_id: str, start: str, end: str | None, attrs: dict) -> dict:
    return {"name": f"chat {span_id}", "context": {"trace_id": "0xabc", "span_id": span_id, "trace_state": "[]"},
            "kind": "SpanKind.CLIENT", "parent_id": "0xroot", "start_time": start, "end_time": end,
            "status": {"status_code": "UNSET"}, "attributes": attrs, "events": [], "links": [],
            "resource": {"attributes": {"service.name": "agent"}, "schema_url": ""}}


def test_jaeger_sample_counts():
    # Independent count (python json.load): 129 spans, 129 distinct spanIDs; 5 spans have tag
    # gen_ai.operation.name == "chat", all with gen_ai.input/output.messages. Sorted by startTime, their
    # outputs hold 1, 1, 1 (+text), 0 and 0 tool_call parts (3 tool calls), and their inputs chain into two
    # agent loops: the supervisor (1 message in, then 3 in = first call + its tool result) and the
    # detector (1, 3, 5 messages in): 2 conversations, 5 calls, 3 tool calls.
    convs, report = parse_file("otel_genai", sample(JAEGER))
    assert not report.errors and not report.warnings
    assert totals(convs) == (2, 5, 3)
    assert [len(c.explicit_calls) for c in convs] == [2, 3]
    assert all(c.append_only for c in convs)
    detector = convs[1]
    assert [m.role for m in detector.messages] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    call = detector.messages[2].tool_calls[0]
    assert detector.messages[3].tool_results[0].call_id == call.id
    assert "pyats_list_devices" in [t.name for t in detector.tools]


def test_console_dump_dedup_in_progress_and_content_capture():
    """README: console dumps are pretty-printed objects (not JSONL), print spans twice, print in-progress
    copies with end_time null; content exists only when capture was on."""
    call_attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                  "gen_ai.response.model": "gpt-4o-2024-08-06",
                  "gen_ai.input.messages": _msgs(USER), "gen_ai.output.messages": _msgs(CALL),
                  "gen_ai.tool.definitions": json.dumps([{"type": "function", "name": "weather",
                                                          "parameters": {"type": "object"}}])}
    second = {"gen_ai.operation.name": "chat", "gen_ai.response.model": "gpt-4o-2024-08-06",
              "gen_ai.input.messages": _msgs(USER, CALL, RESULT), "gen_ai.output.messages": _msgs(ANSWER)}
    spans = [
        _console_span("0x01", "2025-01-01T00:00:00.000000Z", None, call_attrs),               # in progress
        _console_span("0x01", "2025-01-01T00:00:00.000000Z", "2025-01-01T00:00:01.000000Z", call_attrs),
        _console_span("0x01", "2025-01-01T00:00:00.000000Z", "2025-01-01T00:00:01.000000Z", call_attrs),  # again
        _console_span("0x02", "2025-01-01T00:00:02.000000Z", "2025-01-01T00:00:03.000000Z",
                      {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather"}),
        _console_span("0x03", "2025-01-01T00:00:04.000000Z", "2025-01-01T00:00:05.000000Z", second),
        _console_span("0x04", "2025-01-01T00:00:06.000000Z", "2025-01-01T00:00:07.000000Z",
                      {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 12}),  # capture off
        _console_span("0x05", "2025-01-01T00:00:08.000000Z", None, second),                 # never finished
    ]
    text = "\n".join(json.dumps(s, indent=4) for s in spans) + "\n"
    (conv,), report = parse_text("otel_genai", text, "console.txt")
    assert not report.errors
    assert sorted(w.code for w in report.warnings) == ["content_not_captured", "duplicate_span", "in_progress_span"]
    assert totals([conv]) == (1, 2, 1) and conv.append_only
    assert conv.explicit_calls[0].completion.model == "gpt-4o-2024-08-06"
    assert [t.name for t in conv.tools] == ["weather"]
    assert conv.messages[-2].tool_results[0].content == "cold"


def test_otlp_json_and_openllmetry_flat_attributes():
    def attr(k, v):
        return {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}

    span1 = {"traceId": "t1", "spanId": "s1", "name": "chat", "startTimeUnixNano": "1000", "endTimeUnixNano": "2000",
             "attributes": [attr("gen_ai.operation.name", "chat"), attr("gen_ai.input.messages", _msgs(USER)),
                            attr("gen_ai.output.messages", _msgs(CALL)), attr("gen_ai.usage.input_tokens", 5)]}
    span2 = {"traceId": "t2", "spanId": "s2", "name": "openai.chat", "startTimeUnixNano": "3000",
             "endTimeUnixNano": "4000",
             "attributes": [attr("gen_ai.prompt.0.role", "user"), attr("gen_ai.prompt.0.content", "hi"),
                            attr("gen_ai.completion.0.role", "assistant"), attr("gen_ai.completion.0.content", ""),
                            attr("gen_ai.completion.0.tool_calls.0.id", "x"),
                            attr("gen_ai.completion.0.tool_calls.0.name", "f"),
                            attr("gen_ai.completion.0.tool_calls.0.arguments", "{\"a\": 1}")]}
    doc = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {}, "spans": [span1, span2]}]}]}
    convs, report = parse_text("otel_genai", json.dumps(doc) + "\n" + json.dumps(doc) + "\n", "otlp.jsonl")
    assert totals(convs) == (2, 2, 2)
    assert [w.code for w in report.warnings] == ["duplicate_span"]  # the same export twice
    flat = convs[1].explicit_calls[0].completion.tool_calls[0]
    assert flat.raw_arguments == '{"a": 1}' and flat.arguments == {"a": 1}


def test_truncated_export_reports_invalid_json():
    text = read(sample(JAEGER))
    convs, report = parse_text("otel_genai", text[: len(text) // 2], "cut.json")
    assert convs == [] and codes(report) == ["invalid_json"] and report.errors[0].line == 1
