"""HTTP recordings in containers other than vcrpy's (issue 30; docs/traces.md, provider cassettes): Ruby VCR
YAML (``http_interactions``, ``!binary`` base64 bodies, ``base64_string``, gzip) and Go httprr files.

Fixtures ``fixtures/streams/ruby_vcr_anthropic.yml`` and ``fixtures/streams/*.httprr``: hand-made (a two-call
Anthropic tool-use run), not copies of real recordings.
"""

from __future__ import annotations

from drafters.traces.formats import _cassette
from drafters.traces.ingest import ingest

from .conftest import ingest_json, totals

STREAMS = __import__("pathlib").Path(__file__).resolve().parent / "fixtures" / "streams"


def test_ruby_vcr_binary_and_base64_gzip_bodies():
    result = ingest([STREAMS / "ruby_vcr_anthropic.yml"], scrub=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert first.completion.tool_calls[0].arguments == {"city": "Lyon"}
    assert second.completion.text == "It is 18 °C and cloudy in Lyon."  # base64 of gzip, UTF-8 kept
    assert [m.role for m in second.context] == ["user", "assistant", "tool"]


def test_ruby_vcr_is_a_cassette():
    assert _cassette.is_cassette("---\nhttp_interactions:\n- request:\n")
    assert _cassette.is_cassette("interactions:\n- request:\n")
    assert not _cassette.is_cassette("---\nname: x\n")


def test_httprr_exchanges_by_their_byte_lengths_and_a_chunked_sse_reply():
    result = ingest([STREAMS / "openai_chat.httprr"], scrub=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert first.completion.tool_calls[0].arguments == {"a": 2, "b": 3}  # a CRLF JSON body, exact length
    assert second.completion.text == "2 + 3 = 5."  # chunked transfer of SSE chunks, joined
    assert [m.role for m in second.context] == ["user", "assistant", "tool"]


def test_httprr_cut_inside_an_exchange_is_refused_with_a_code():
    result = ingest([STREAMS / "openai_chat_cut.httprr"], scrub=False)
    assert "recording_not_parsed" in [e.code for e in result.report.errors]
    assert not result.report.ok  # the first exchange is read, the cut one is not
    assert totals(result.conversations) == (1, 1, 1)


def test_httprr_read_as_text_only_refuses_a_body_end_it_cannot_tell():
    from drafters.traces.report import ValidationReport

    text = (STREAMS / "openai_chat.httprr").read_bytes().decode().replace("\r\n", "\n")
    problems = ValidationReport()
    got = _cassette._httprr(text, "not-a-file.httprr", problems, "openai_chat")  # no raw bytes to re-read
    # the CRLF JSON body is followed by "664 ..." : ending at "}", "}6" or "}66" all fit once CRs are gone
    assert got is None and [e.code for e in problems.errors] == ["recording_not_parsed"]
    assert "ambiguous" in problems.errors[0].message


def _go_vcr(interactions: list[tuple[str, str, str]]) -> str:
    """A go-vcr (v2) cassette: ``version``, then ``interactions`` with ``url``, string bodies and ``code``."""
    import json

    out = "---\nversion: 2\ninteractions:\n"
    for i, (url, req, resp) in enumerate(interactions):
        out += (f"- id: {i}\n  request:\n    proto: HTTP/1.1\n    body: {json.dumps(req)}\n    url: {url}\n"
                f"    method: POST\n  response:\n    body: {json.dumps(resp)}\n    status: 200 OK\n    code: 200\n")
    return out


def test_go_vcr_cassettes(tmp_path):
    import json

    url = "https://api.openai.com/v1/chat/completions"
    user = {"role": "user", "content": "Add 2 and 3."}
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}}
    first = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}], "model": "m"}
    second_req = {"model": "m", "messages": [user, first["choices"][0]["message"],
                                             {"role": "tool", "tool_call_id": "c1", "content": "5"}]}
    second = {"choices": [{"message": {"role": "assistant", "content": "2 + 3 = 5."}}], "model": "m"}
    failed = {"error": {"message": "rate limited"}}
    text = _go_vcr([(url, json.dumps({"model": "m", "messages": [user]}), json.dumps(first)),
                    (url, json.dumps(second_req), json.dumps(second))])
    assert _cassette.is_cassette(text)
    path = tmp_path / "TestOpenAI.yaml"
    path.write_text(text)
    result = ingest([path], scrub=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert result.report.formats == {"openai_chat": 1}
    assert totals(result.conversations) == (1, 2, 1)
    # a response recorded with another code is skipped and said
    path.write_text(text.replace("    code: 200\n", "    code: 429\n", 1).replace(json.dumps(json.dumps(first)),
                                                                             json.dumps(json.dumps(failed))))
    result = ingest([path], scrub=False)
    assert "error_response" in [w.code for w in result.report.warnings]


def test_the_same_request_sent_again_is_another_conversation(tmp_path):
    """A test suite's cassette of two runs of one prompt (huggingface_hub's tool-choice tests): grouped by their first
    user message alone, the second run's call joined the first's conversation, which its context does not continue."""
    import json

    import yaml

    request = {"model": "tgi", "messages": [{"role": "user", "content": "Weather in SF for 3 days?"}]}

    def exchange(tool: str) -> dict:
        reply = {"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [
            {"id": "0", "type": "function", "function": {"name": tool, "arguments": "{}"}}]}}]}
        return {"request": {"method": "POST", "uri": "https://api.example/v1/chat/completions",
                            "body": json.dumps(request)},
                "response": {"status": {"code": 200}, "body": {"string": json.dumps(reply)}}}

    path = tmp_path / "test_chat_completion_with_tool.yaml"
    path.write_text(yaml.safe_dump({"interactions": [exchange("forecast"), exchange("current_weather")]}))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert totals(result.conversations) == (2, 2, 2)


def test_the_same_prompt_without_the_previous_reply_is_another_conversation(tmp_path):
    """A plugin's test cassette (datasette-extract): the prompt sent once with a forced tool call, then again under a
    system prompt to another API; the second request holds no answer, so it continues nothing. A later request that
    holds the reply with its tool calls split into messages of their own (a client rewriting them) continues it."""
    import json

    import yaml

    prompt = {"role": "user", "content": "Sergei is 4, Cynthia is 7"}
    call = {"id": "call_1", "type": "function", "function": {"name": "extract", "arguments": "{}"}}
    call2 = {**call, "id": "call_2"}

    def exchange(messages: list, reply: dict) -> dict:
        return {"request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                            "body": json.dumps({"model": "gpt-4o", "messages": messages})},
                "response": {"status": {"code": 200}, "body": {"string": json.dumps(
                    {"choices": [{"index": 0, "message": {"role": "assistant", **reply}}]})}}}

    split = [prompt, {"role": "assistant", "tool_calls": [call]}, {"role": "assistant", "tool_calls": [call2]},
             {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
             {"role": "tool", "tool_call_id": "call_2", "content": "ok"}]
    path = tmp_path / "test_extract_flow.yaml"
    # the first call's reply and results sent again to another model (pydantic-ai's "tool calls from another model"):
    # it continues the first call, not the second, and stays in the conversation
    branch = [prompt, {"role": "assistant", "tool_calls": [call, call2]}, *split[3:]]
    path.write_text(yaml.safe_dump({"interactions": [
        exchange([prompt], {"tool_calls": [call, call2]}),
        exchange(split, {"content": "Done."}),
        exchange(branch, {"content": "Both are recorded."}),
        exchange([{"role": "system", "content": "Be nice"}, prompt], {"content": "Sergei: 4, Cynthia: 7."})]}))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert totals(result.conversations) == (2, 4, 2)
    assert [len(list(c.calls())) for c in result.conversations] == [3, 1]


def _mock(path: str, request: dict, status: int, response: dict) -> str:
    """One exchange as a mock server records it (httpmock: a YAML document of ``when`` / ``then``)."""
    import json

    return (f"when:\n  path: {path}\n  method: POST\n  body: {json.dumps(json.dumps(request))}\nthen:\n"
            f"  status: {status}\n  header:\n  - name: content-type\n    value: application/json\n"
            f"  body: {json.dumps(json.dumps(response))}\n")


def test_recorded_mocks_one_exchange_a_document(tmp_path):
    """rig's tests record the provider's traffic with httpmock: one YAML document per exchange, the request under
    ``when`` (its path: the provider), the response under ``then``; a response with an error status is skipped."""
    user = {"role": "user", "content": [{"type": "text", "text": "Add 3 and 4."}]}
    use = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"x": 3, "y": 4}}
    first = {"role": "assistant", "content": [{"type": "text", "text": "Adding."}, use], "stop_reason": "tool_use"}
    result_msg = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "7"}]}
    second = {"role": "assistant", "content": [{"type": "text", "text": "It is 7."}], "stop_reason": "end_turn"}
    exchanges = [
        _mock("/v1/messages", {"model": "claude", "messages": [user]}, 200, first),
        _mock("/v1/messages", {"model": "claude", "messages": [user, first, result_msg]}, 429,
              {"type": "error", "error": {"message": "overloaded"}}),
        _mock("/v1/messages", {"model": "claude", "messages": [user, first, result_msg]}, 200, second)]
    text = "---\n".join(exchanges)
    assert _cassette.is_cassette(text) and _cassette.sniff_provider(text) == "anthropic_messages"
    path = tmp_path / "sequential_tool_calls.yaml"
    path.write_text(text)
    result = ingest([path], scrub=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert result.report.formats == {"anthropic_messages": 1}
    assert totals(result.conversations) == (1, 2, 1)
    assert [w.code for w in result.report.warnings].count("error_response") == 1


def _client_interaction(messages: list, reply: str, tools: list | None = None) -> dict:
    # a client library's own cassette (NodeLLM's @node-llm/testing): the call as the client made it, the reply
    # as the client's result object, {content, usage, reasoning}, no stop reason
    request = {"model": "gpt-4o-mini", "messages": messages, "max_tokens": 4096, "headers": {}}
    if tools:
        request["tools"] = tools
    return {"method": "chat", "request": request,
            "response": {"content": reply, "usage": {"input_tokens": 15, "output_tokens": 9}, "reasoning": None}}


def test_client_cassette_result_objects_with_usage(tmp_path):
    ask = [{"role": "user", "content": "What is the vacation policy?"}]
    first = "Twenty days a year."
    again = [*ask, {"role": "assistant", "content": first, "usage": {"input_tokens": 15}},
             {"role": "user", "content": "And sick days?"}]
    doc = {"name": "multi-turn", "interactions": [_client_interaction(ask, first),
                                                  _client_interaction(again, "Ten.")]}
    result = ingest_json(tmp_path, doc)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert totals(result.conversations) == (1, 2, 0)
    assert [c.completion.text for c in result.conversations[0].calls()] == [first, "Ten."]


def test_tool_definitions_beside_the_messages_are_no_messages(tmp_path):
    # {"type": "function", "function": {...}} spells a role ("function") under a role key ("type"): a list of
    # definitions under ``tools`` is still no message list (it had made the request hold two, and go unread)
    tools = [{"type": "function", "function": {"name": "search_documents", "description": "Search the policies.",
                                               "parameters": {"type": "object", "properties": {}}}}]
    doc = {"interactions": [_client_interaction([{"role": "user", "content": "Who is the HR head?"}],
                                                "I can only search the HR documents.", tools)]}
    result = ingest_json(tmp_path, doc)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert totals(result.conversations) == (1, 1, 0)
    assert [t.name for t in result.conversations[0].tools] == ["search_documents"]
