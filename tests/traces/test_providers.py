"""Provider API recordings (cassettes): Anthropic, OpenAI Responses, Bedrock Converse, Gemini."""

from __future__ import annotations

import io
import json

import pytest
import yaml

from drafters.traces.formats import anthropic_messages, bedrock_converse, gemini_api, openai_responses
from drafters.traces.model import ReasoningPart, UnsupportedPart
from drafters.traces.report import ValidationReport

from .conftest import parse_file, sample, totals

# Counted independently with yaml.safe_load(...)["interactions"]: every interaction is one call (all are
# 200 POSTs to an LLM endpoint; one conversation per file, each file's requests start with the same user
# message); tool calls = tool_use blocks (Anthropic), output items of type function_call (Responses),
# toolUse blocks (Bedrock), functionCall parts (Gemini) in the response bodies.
CASES = [
    ("anthropic_messages", "anthropic_messages_api/pydantic-ai__test_anthropic_multiple_parallel_tool_calls.yaml", (1, 2, 4)),
    ("anthropic_messages", "anthropic_messages_api/pydantic-ai__test_anthropic_tool_with_thinking.yaml", (1, 2, 1)),
    ("anthropic_messages", "mcp_in_transcripts/pydantic-ai__test_anthropic_mcp_servers.yaml", (1, 2, 0)),
    ("bedrock_converse", "bedrock_converse/pydantic-ai__test_bedrock_anthropic_tool_with_thinking.yaml", (1, 2, 1)),
    ("bedrock_converse", "bedrock_converse/pydantic-ai__test_bedrock_moonshotai_tool_call.yaml", (1, 2, 1)),
    ("gemini_api", "gemini_api_function_call/pydantic-ai__test_google_thinking_with_tool_calls_from_other_model.yaml", (1, 3, 2)),
    ("gemini_api", "gemini_api_function_call/pydantic-ai__test_google_tool_output.yaml", (1, 2, 2)),
    ("openai_responses", "openai_responses_api/pydantic-ai__test_openai_responses_simple_response_with_tool_call.yaml", (1, 2, 1)),
]


@pytest.mark.parametrize("fmt,rel,expected", CASES)
def test_sample_counts(fmt, rel, expected):
    convs, report = parse_file(fmt, sample(rel))
    assert totals(convs) == expected
    assert not report.errors


def test_anthropic_parallel_calls_in_one_message():
    convs, _ = parse_file("anthropic_messages", sample("anthropic_messages_api/pydantic-ai__test_anthropic_multiple_parallel_tool_calls.yaml"))
    first = convs[0].explicit_calls[0].completion
    assert len(first.tool_calls) == 4 and all(c.id.startswith("toolu_") for c in first.tool_calls)
    second = convs[0].explicit_calls[1]
    assert [m.role for m in second.context][-4:] == ["tool"] * 4  # results in the user role become tool messages
    assert any(m is first for m in second.context)  # the re-sent history shares the response message


def test_anthropic_thinking_signature_byte_exact():
    path = sample("anthropic_messages_api/pydantic-ai__test_anthropic_tool_with_thinking.yaml")
    raw = yaml.safe_load(open(path))["interactions"][0]["response"]["parsed_body"]["content"][0]
    convs, _ = parse_file("anthropic_messages", path)
    part = convs[0].explicit_calls[0].completion.parts[0]
    assert isinstance(part, ReasoningPart)
    assert part.signature == raw["signature"] and part.text == raw["thinking"]


def test_server_side_mcp_calls_are_not_client_tool_calls():
    """README mcp_in_transcripts: server-side MCP calls must not be rendered as client calls."""
    convs, _ = parse_file("anthropic_messages", sample("mcp_in_transcripts/pydantic-ai__test_anthropic_mcp_servers.yaml"))
    completion = convs[0].explicit_calls[0].completion
    kinds = [p.kind for p in completion.parts if isinstance(p, UnsupportedPart)]
    assert kinds == ["server_tool_use", "server_tool_result"]
    assert completion.tool_calls == []


def test_anthropic_redacted_thinking_and_records():
    rec = {"system": "sys", "model": "claude-x", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "OPAQUE"},
                                          {"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"},
                                     {"type": "text", "text": "and?"}]}]}
    assert anthropic_messages.sniff(json.dumps(rec) + "\n", "x.jsonl")
    (conv,) = anthropic_messages.parse(io.StringIO(json.dumps(rec)), "x.jsonl", ValidationReport())
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool", "user"]
    r = conv.messages[2].parts[0]
    assert r.redacted and r.signature == "OPAQUE" and conv.messages[2].model == "claude-x"


def test_bedrock_raw_string_body_and_reasoning_signature():
    """README: Bedrock requests are stored as a raw JSON string in body, not parsed_body."""
    path = sample("bedrock_converse/pydantic-ai__test_bedrock_anthropic_tool_with_thinking.yaml")
    assert isinstance(yaml.safe_load(open(path))["interactions"][1]["request"]["body"], str)
    convs, _ = parse_file("bedrock_converse", path)
    second = convs[0].explicit_calls[1]
    reasoning = second.context[1].parts[0]
    assert isinstance(reasoning, ReasoningPart) and reasoning.signature.startswith("ErcBCkgIBhAB")
    assert second.context[1].tool_calls[0].id.startswith("tooluse_")
    assert second.completion.model == "us.anthropic.claude-3-7-sonnet-20250219-v1:0"  # from the URI


def test_gemini_mixed_provider_conversation_and_thought_signature():
    """README: a Gemini conversation that starts on OpenAI Responses; foreign reasoning stays marked."""
    convs, _ = parse_file("gemini_api", sample("gemini_api_function_call/pydantic-ai__test_google_thinking_with_tool_calls_from_other_model.yaml"))
    (conv,) = convs
    assert [c.completion.model for c in conv.explicit_calls] == ["gpt-5-2025-08-07", "gpt-5-2025-08-07", "gemini-3-pro-preview"]
    last = conv.explicit_calls[-1].completion
    assert isinstance(last.parts[0], ReasoningPart) and last.parts[0].signature.startswith("EpwECpkE")
    assert last.tool_calls[0].arguments == {"city": "Mexico City", "country": "Mexico"}


def test_responses_items_merge_and_outputs():
    items = [{"role": "user", "content": "q"},
             {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}], "encrypted_content": "ENC"},
             {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{\"x\":1}"},
             {"type": "function_call", "call_id": "b", "name": "f", "arguments": "{\"x\":2}"},
             {"type": "function_call_output", "call_id": "a", "output": "1"},
             {"type": "function_call_output", "call_id": "b", "output": "2"}]
    msgs = openai_responses.items_to_messages(items, model="gpt")
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "tool"]
    assert len(msgs[1].tool_calls) == 2 and msgs[1].parts[0].signature == "ENC" and msgs[1].parts[0].text == "plan"


def test_gemini_and_bedrock_records_sniff():
    g = {"contents": [{"role": "user", "parts": [{"text": "x"}]}, {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]}]}
    assert gemini_api.sniff(json.dumps(g) + "\n", "g.jsonl")
    b = {"messages": [{"role": "user", "content": [{"text": "x"}]}, {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t", "name": "f", "input": {}}}]}]}
    assert bedrock_converse.sniff(json.dumps(b) + "\n", "b.jsonl")
    (conv,) = bedrock_converse.parse(io.StringIO(json.dumps(b)), "b.jsonl", ValidationReport())
    assert conv.messages[1].tool_calls[0].arguments == {}


def _vertex_line(parts, candidate):
    """One Vertex AI batch prediction output line: the request as sent, the response as returned."""
    return json.dumps({"status": "", "request": {"contents": [{"role": "user", "parts": parts}]},
                       "response": {"candidates": [candidate], "modelVersion": "gemini-1.5-flash-002"}})


def _validate_text(tmp_path, text: str) -> dict:
    from drafters.traces.ingest import ingest

    path = tmp_path / "batch.jsonl"
    path.write_text(text)
    return ingest([path], scrub=False, dedup=False).report.to_dict()


def test_gemini_lone_part_object_is_read():
    # Vertex AI batch requests write one part as an object, not a list: its text was dropped, the call kept `ok`
    line = _vertex_line({"text": "Give me a recipe for banana bread."},
                        {"content": {"role": "model", "parts": [{"text": "Mash three bananas."}]}, "finishReason": "STOP"})
    (conv,) = gemini_api.parse(io.StringIO(line + "\n"), "b.jsonl", ValidationReport())
    assert [(m.role, m.text) for m in conv.messages] == [("user", "Give me a recipe for banana bread."),
                                                        ("assistant", "Mash three bananas.")]


def test_gemini_null_fields_and_snake_case_parts():
    # the Python SDK dumps every field, unset ones as null, in snake_case: the image is a counted placeholder
    parts = [{"fileData": None, "file_data": None, "text": "List objects in this image."},
             {"fileData": None, "file_data": {"file_uri": "gs://b/desk.jpeg", "mime_type": "image/jpeg"}, "text": None}]
    line = _vertex_line(parts, {"content": {"role": "model", "parts": [{"text": "A desk."}]}})
    (conv,) = gemini_api.parse(io.StringIO(line + "\n"), "b.jsonl", ValidationReport())
    user = conv.messages[0]
    assert user.text == "List objects in this image."
    assert [p.kind for p in user.parts if isinstance(p, UnsupportedPart)] == ["image"]


def test_gemini_unknown_part_is_reported_not_dropped(tmp_path):
    line = _vertex_line([{"text": "hi"}, {"someNewPart": {"x": 1}}],
                        {"content": {"role": "model", "parts": [{"text": "hello"}]}})
    report = _validate_text(tmp_path, line + "\n")
    assert not report["ok"] and [e["code"] for e in report["errors"]] == ["unknown_content"]


def test_gemini_withheld_reply_is_a_failed_request(tmp_path):
    # finishReason RECITATION with no content: the provider withheld the reply, no model turn; the rest is read
    ok = _vertex_line([{"text": "q1"}], {"content": {"role": "model", "parts": [{"text": "a1"}]}, "finishReason": "STOP"})
    withheld = _vertex_line({"text": "q2"}, {"finishReason": "RECITATION", "citationMetadata": {"citations": []}})
    report = _validate_text(tmp_path, ok + "\n" + withheld + "\n")
    assert report["ok"] and report["counts"]["calls"] == 1
    assert [w["code"] for w in report["warnings"]] == ["failed_turn_skipped"]
