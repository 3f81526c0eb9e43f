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
    assert [e.code for e in report.errors] == ["content_not_captured"]  # a lost call is an error, not ok
    assert sorted(w.code for w in report.warnings) == ["duplicate_span", "in_progress_span"]
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


def _fixture(name: str):
    from pathlib import Path

    return Path(__file__).parent / "fixtures" / name


def test_tempo_batches_read_like_the_jaeger_export_they_were_converted_from():
    """fixtures: the supervisor's two chat spans of the real Jaeger sample, and the same spans in the
    "batches" form Grafana Tempo's trace API returns (base64 ids, OTLP attributes)."""
    from drafters.traces.detect import detect_format

    tempo = _fixture("otel_tempo_batches.json")
    raw = json.loads(tempo.read_text(encoding="utf-8"))
    spans = raw["batches"][0]["scopeSpans"][0]["spans"]
    outputs = [json.loads(next(a["value"]["stringValue"] for a in s["attributes"] if a["key"] == "gen_ai.output.messages"))
               for s in spans]
    want_tool_calls = sum(p["type"] == "tool_call" for out in outputs for m in out for p in m["parts"])
    assert (len(spans), want_tool_calls) == (2, 1)  # by hand
    assert detect_format(tempo.read_text(encoding="utf-8"), tempo.name).name == "otel_genai"
    a, ra = parse_file("otel_genai", tempo)
    b, rb = parse_file("otel_genai", _fixture("otel_jaeger_subset.json"))
    assert not ra.errors and not ra.warnings and not rb.errors
    assert totals(a) == totals(b) == (1, 2, want_tool_calls)
    assert [(c.context, c.completion) for c in a[0].explicit_calls] == [
        (c.context, c.completion) for c in b[0].explicit_calls]
    assert a[0].append_only and "query_detector" in [t.name for t in a[0].tools]


def test_any_agent_trace_with_input_messages():
    """fixture any_agent_trace.json: the real any-agent test trace below plus the gen_ai.input.messages
    and gen_ai.output attributes later any-agent versions write (written, fixtures/README.md)."""
    raw = json.loads(_fixture("any_agent_trace.json").read_text(encoding="utf-8"))
    llm = [s for s in raw["spans"] if s["attributes"]["gen_ai.operation.name"] == "call_llm"]
    tool_calls = sum(len(json.loads(s["attributes"]["gen_ai.output"])) for s in llm
                     if s["attributes"]["gen_ai.output.type"] == "json")
    assert (len(llm), tool_calls) == (3, 2)  # by hand
    convs, report = parse_file("otel_genai", _fixture("any_agent_trace.json"))
    assert not report.errors and not report.warnings
    assert totals(convs) == (1, 3, 2) and convs[0].append_only
    last = convs[0].explicit_calls[-1]
    assert last.completion.text == raw["final_output"]
    assert last.context[-1].tool_results[0].call_id == "call_ByO0ALTNcA7Z4ANjw2GeGqNs"


def test_any_agent_trace_without_input_messages_is_refused_with_codes():
    """fixture any_agent_trace_no_input.json: the real tests/assets/OPENAI_trace.json of mozilla-ai/any-agent,
    written before any-agent recorded input messages: no call has a known context."""
    from drafters.traces.ingest import ingest

    report = ingest([_fixture("any_agent_trace_no_input.json")], scrub=False).report
    assert not report.ok and report.counts["conversations"] == 0
    # the first call's input is unknown, so no later context can be rebuilt from it
    assert [p.code for p in report.errors] == ["content_not_captured"] * 3


def test_otlp_spans_whose_messages_are_genai_events():
    """opentelemetry-instrumentation-openai-v2 writes a chat span's messages as events (``gen_ai.user.message`` ...,
    ``gen_ai.choice`` holding the answer): read as the call (was ``content_not_captured`` with the content there).
    Events without content (capture off) are still ``content_not_captured``."""
    def s(v):
        return {"stringValue": v}

    def event(name, **attrs):
        return {"name": name, "attributes": [{"key": k, "value": v} for k, v in attrs.items()]}
    call = {"kvlistValue": {"values": [{"key": "id", "value": s("call_1")}, {"key": "type", "value": s("function")},
                                       {"key": "function", "value": {"kvlistValue": {"values": [
                                           {"key": "name", "value": s("search")},
                                           {"key": "arguments", "value": s('{"q": "tokyo"}')}]}}}]}}
    first = [event("gen_ai.system.message", content=s("You plan trips.")),
             event("gen_ai.user.message", content=s("Flights to Tokyo?")),
             event("gen_ai.choice", index={"intValue": "0"}, finish_reason=s("tool_calls"), message={"kvlistValue": {
                 "values": [{"key": "role", "value": s("assistant")},
                            {"key": "tool_calls", "value": {"arrayValue": {"values": [call]}}}]}})]
    second = [*first[:2], event("gen_ai.assistant.message", tool_calls={"arrayValue": {"values": [call]}}),
              event("gen_ai.tool.message", id=s("call_1"), content=s("JL 5, 10:00")),
              event("gen_ai.choice", index={"intValue": "0"}, finish_reason=s("stop"), message={"kvlistValue": {
                  "values": [{"key": "role", "value": s("assistant")}, {"key": "content", "value": s("JL 5.")}]}})]
    spans = [{"traceId": "t1", "spanId": f"s{n}", "name": "chat gpt-4o", "startTimeUnixNano": str(n * 1000),
              "endTimeUnixNano": str(n * 1000 + 500), "events": events,
              "attributes": [{"key": "gen_ai.operation.name", "value": s("chat")}]}
             for n, events in enumerate([first, second], 1)]
    doc = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {}, "spans": spans}]}]}
    convs, report = parse_text("otel_genai", json.dumps(doc), "otlp.json")
    assert totals(convs) == (1, 2, 1) and not report.errors, codes(report)
    last = list(convs[0].calls())[-1]
    assert [m.role for m in last.context] == ["system", "user", "assistant", "tool"] and last.completion.text == "JL 5."
    bare = [{**sp, "events": [{"name": e["name"], "attributes": []} for e in sp["events"]]} for sp in spans]
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"] = bare
    convs, report = parse_text("otel_genai", json.dumps(doc), "otlp.json")
    assert not convs and "content_not_captured" in codes(report)
