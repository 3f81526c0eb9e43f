"""Monocle's span convention read by ``otel_genai`` (docs/traces.md, "OpenTelemetry GenAI spans"): LLM calls are
``span.type: inference*`` spans whose ``data.input`` / ``data.output`` events hold the messages as role-keyed JSON
strings. Documents are hand-made in the layouts of monocle2ai/monocle's file exporter (console-exporter span
objects) and of the Okahu service's trace JSON (flat spans), not copies of real files."""

from __future__ import annotations

import json

from drafters.traces.model import ToolResultPart

from .conftest import codes, ingest_json, totals

SYSTEM = {"system": [{"type": "text", "text": "You book flights."}]}
USER = {"user": [{"type": "text", "text": "Book JFK to SFO."}]}


def _span(span_id: str, kind: str, start: str, events: list[dict] | None = None, parent: str | None = "root",
          trace: str = "0xt1") -> dict:
    return {"name": "openai.resources.chat.completions.Completions.create", "parent_id": parent,
            "context": {"trace_id": trace, "span_id": span_id}, "start_time": f"2026-01-04T00:20:{start}Z",
            "end_time": f"2026-01-04T00:20:{start}Z", "attributes": {"span.type": kind}, "events": events or []}


def _events(context: list[dict], response: dict | str) -> list[dict]:
    return [{"name": "data.input", "attributes": {"input": [json.dumps(m) for m in context]}},
            {"name": "data.output", "attributes": {"response": json.dumps(response)}}]


def test_monocle_calls_with_a_tools_reply_and_the_reply_left_out_of_the_next_context(tmp_path):
    tools = {"tools": [{"tool_id": "call_1", "tool_name": "book_flight", "tool_arguments": '{"to": "SFO"}'}]}
    spans = [
        _span("0xa", "inference", "24.5", _events([SYSTEM, USER], tools)),
        _span("0xa1", "inference.modelapi", "24.6", parent="0xa"),  # the provider span it wraps: no events
        # Microsoft Agent Framework's context holds the tool's result but not the reply that called the tool
        _span("0xb", "inference", "25.1", _events([SYSTEM, USER, {"tool": "Booked #FL105."}], {"assistant": "Done."})),
        _span("0xc", "agentic.tool.invocation", "24.9", _events([{"from": "JFK"}], "ok")),
    ]
    result = ingest_json(tmp_path, spans)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert [m.role for m in first.context] == ["system", "user"] and first.completion.tool_calls[0].name == "book_flight"
    assert [m.role for m in second.context] == ["system", "user", "assistant", "tool"]
    (res,) = second.context[3].parts
    assert isinstance(res, ToolResultPart) and res.call_id == "call_1" and res.content == "Booked #FL105."
    assert second.completion.text == "Done."
    assert {"duplicate_llm_call", "context_rebuilt"} <= set(codes(result, "warnings"))


def test_okahu_supervisor_hand_off_is_one_conversation(tmp_path):
    # LangGraph's supervisor and its specialist share one history; each sends it with its own system prompt
    call = {"name": "transfer_to_specialist", "args": {}, "id": "c1", "type": "tool_call"}
    lookup = {"name": "lookup", "args": {"id": "A-1"}, "id": "c2", "type": "tool_call"}
    sup, spec = {"system": "You are the supervisor."}, {"system": "You are the specialist."}
    human = {"human": "Balance of A-1?"}
    calls = [([sup, human], {"ai": call}),
             ([spec, human, {"ai": json.dumps([call])}, {"tool": "Transferred"}], {"ai": lookup}),
             ([spec, human, {"ai": json.dumps([call])}, {"tool": "Transferred"}, {"ai": json.dumps([lookup])},
               {"tool": "$10"}], {"ai": "A-1 holds $10."}),
             ([sup, human, {"ai": json.dumps([call])}, {"tool": "Transferred"}, {"ai": "A-1 holds $10."}],
              {"ai": "The balance is $10."})]
    spans = [{"span_name": "langchain.chat", "span_id": f"s{i}", "trace_id": "t1", "parent_id": "p",
              "start_time": f"2026-05-27T23:09:3{i}Z", "end_time": f"2026-05-27T23:09:3{i}Z",
              "attributes": {"span.type": "inference.framework"}, "events": _events(ctx, out)}
             for i, (ctx, out) in enumerate(calls)]
    result = ingest_json(tmp_path, {"trace_id": "t1", "spans": spans})
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 4, 2)


def test_monocle_input_in_another_form_or_without_content_is_an_error(tmp_path):
    odd = [_span("0xa", "inference", "24.5", _events([SYSTEM, {"image": "a.png", "detail": "low"}], {"assistant": "x"}))]
    result = ingest_json(tmp_path, odd)
    assert not result.report.ok and "unknown_content" in codes(result)
    bare = [_span("0xa", "inference", "24.5", parent="0xroot")]  # no framework span records this call
    result = ingest_json(tmp_path, bare, name="bare.json")
    assert not result.report.ok and "content_not_captured" in codes(result)
