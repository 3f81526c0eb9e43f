"""Recorded HTTP exchanges read by the general path (issue 30; docs/traces.md, "Recorded HTTP exchanges"): a fetch
recorder's tapes keyed by hash (huggingface.js writes ``{hash: {url, init: {body}, response: {status, body}}}``,
bodies as JSON strings, streamed replies as SSE text), error responses skipped, a prompt sent twice read twice,
and an object of records keyed by id never read through one of its ids. Hand-made records in those layouts.
"""

from __future__ import annotations

import json

from drafters.traces.formats import _exchanges
from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import mapping_from_dict

from .conftest import codes, ingest_json, totals

URL = "https://api.example-llm.test/v1/chat/completions"


def _tape(prompt: str, reply: str | None, status: int = 200, stream: bool = False) -> dict:
    request = {"model": "m", "messages": [{"role": "user", "content": prompt}], "stream": stream}
    if status != 200:
        body = json.dumps({"error": "Template error: template not found"})
    elif stream:
        words = reply.split(" ")
        chunks = [{"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                                      "content": w}}]}
                  for w in [words[0], *(" " + w for w in words[1:])]]
        chunks[-1]["choices"][0]["finish_reason"] = "stop"
        body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    else:
        body = json.dumps({"object": "chat.completion", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}]})
    return {"url": URL, "init": {"method": "POST", "body": json.dumps(request)},
            "response": {"status": status, "statusText": "OK" if status == 200 else "Error", "body": body}}


def test_tapes_keyed_by_hash_error_responses_skipped(tmp_path):
    doc = {"5644ae12": _tape("one plus one is", "two."),
           "e1218ba6": _tape("Say this is a test", "This is a test."),
           "9c0f3d21": _tape("Say this is a test", None, status=422),
           "b506912c": _tape("What is the capital of France?", "Paris.")}
    result = ingest_json(tmp_path, doc, "tapes.json")
    assert result.report.ok, [(e.code, e.message) for e in result.report.errors]
    assert totals(result.conversations) == (3, 3, 0)
    assert sorted(c.calls().__next__().completion.text for c in result.conversations) == [
        "Paris.", "This is a test.", "two."]
    assert [w.code for w in result.report.warnings if w.code == "error_response"] == ["error_response"]
    assert "1 recorded HTTP exchange(s)" in next(w.message for w in result.report.warnings
                                                 if w.code == "error_response")


def test_one_prompt_sent_twice_is_two_calls(tmp_path):
    # a client's tests send one prompt plain and streamed: two requests, not a trace restating its generation
    doc = {"a1b2c3d4": _tape("Say this is a test", "This is a test."),
           "e5f6a7b8": _tape("Say this is a test", "This is a test.", stream=True),
           "c9d0e1f2": _tape("Paris is", "the capital of France.")}
    result = ingest_json(tmp_path, doc, "tapes.json")
    assert result.report.ok and totals(result.conversations) == (3, 3, 0)
    assert not [w for w in result.report.warnings if w.code == "repeated_calls"]


def test_records_keyed_by_id_are_never_read_through_one_id(tmp_path):
    # one record no shape reads (an unparseable reply) beside one that reads: reading the one through its id
    # left the other unread and said ok; the file is refused instead
    good = _tape("Paris is", "the capital of France.")
    odd = _tape("Say this is a test", "This is a test.")
    odd["response"]["body"] = "data: {\"choices\": [{\"delta\": {\"content\": \"This\"}}]}\"\n\n"
    result = ingest_json(tmp_path, {"56dc8b91": good, "b3cad2f0": odd}, "tapes.json")
    assert not result.report.ok and result.conversations == []
    assert [e.code for e in result.report.errors] == ["unknown_format"]


def test_a_declared_mapping_skips_error_responses_too(tmp_path):
    lines = [_tape("q1", "a1"), _tape("q2", None, status=500), _tape("q3", "a3")]
    path = tmp_path / "tapes.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    mapping = mapping_from_dict({"name": "tapes", "messages": "$.init.body.messages", "role": "role",
                                 "roles": {"user": "user", "assistant": "assistant"}, "content": "content",
                                 "response": "$.response.body.choices[0].message"})
    result = ingest([path], scrub=False, dedup=False, mapping=mapping)
    assert result.report.ok, [(e.code, e.message) for e in result.report.errors]
    assert totals(result.conversations) == (2, 2, 0)
    assert [w.code for w in result.report.warnings if w.code == "error_response"] == ["error_response"]


def test_http_status_needs_a_url():
    assert _exchanges.http_status({"url": URL, "response": {"status": 404}}) == 404
    assert _exchanges.http_status({"scope": "https://api.x.test:443", "path": "/v1/chat", "status": 200}) == 200
    assert _exchanges.http_status({"RequestUri": URL, "StatusCode": "429"}) == 429
    assert _exchanges.http_status({"request": {"url": URL}, "response": {"status": {"code": 200}}}) == 200
    assert _exchanges.http_status({"status": 500, "messages": []}) is None  # a run's status, no exchange
    assert _exchanges.failed({"url": URL, "response": {"status": 503, "body": "{}"}})
    assert not _exchanges.failed({"url": URL, "response": {"status": 200, "body": "{}"}})


def _recording(body: dict, response: dict) -> dict:
    # an HTTP client's recording (Instructor for PHP's): the request body as JSON text, the response beside it
    return {"request": {"url": URL, "method": "POST", "headers": {"Authorization": "[REDACTED]"},
                        "body": json.dumps(body), "options": {"stream": False}}, "response": response}


def test_responses_of_other_providers_under_the_body(tmp_path):
    prompt = [{"role": "user", "content": "What is the capital of France"}]
    cohere = {"id": "a2", "message": {"role": "assistant", "content": [{"type": "text", "text": "Paris."}]},
              "finish_reason": "COMPLETE"}
    gemini = {"candidates": [{"content": {"parts": [{"text": "Paris."}], "role": "model"}, "finishReason": "STOP",
                              "index": 0}], "usageMetadata": {"totalTokenCount": 9}}
    for body, reply in (({"model": "command-r", "messages": prompt}, cohere),
                        ({"systemInstruction": {"parts": [{"text": "Answer briefly."}]},
                          "contents": [{"role": "user", "parts": [{"text": "What is the capital of France"}]}]},
                         gemini)):
        path = tmp_path / "recording.json"
        path.write_text(json.dumps(_recording(body, {"statusCode": 200, "headers": {}, "body": json.dumps(reply)})))
        result = ingest([path], scrub=False)
        assert result.report.ok, [e.code for e in result.report.errors]
        (call,) = result.conversations[0].calls()
        assert call.completion.text == "Paris." and call.context[-1].text == "What is the capital of France"


def test_a_stream_recorded_as_network_chunks_is_joined(tmp_path):
    # the SSE body in the pieces the network delivered, cut mid-line: joined, then read as the one reply
    events = [{"type": "message_start", "message": {"id": "m1", "type": "message", "role": "assistant",
                                                    "content": [], "model": "claude"}},
              {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "The capital"}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " is Paris."}},
              {"type": "content_block_stop", "index": 0},
              {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, {"type": "message_stop"}]
    sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    record = _recording({"model": "claude", "stream": True, "messages": [
        {"role": "user", "content": "What is the capital of France"}]}, {"statusCode": 200, "headers": {}})
    record["chunks"] = [sse[i:i + 97] for i in range(0, len(sse), 97)]
    path = tmp_path / "stream.json"
    path.write_text(json.dumps(record))
    result = ingest([path], scrub=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    (call,) = result.conversations[0].calls()
    assert call.completion.text == "The capital is Paris."
    record["chunks"] = record["chunks"][:-2]  # cut before the stream's end: refused, never read in part
    path.write_text(json.dumps(record))
    assert not ingest([path], scrub=False).report.ok


def test_network_chunks_recorded_as_objects_are_joined(tmp_path):
    # ReqLLM's fixtures: each network chunk an object, its piece of the SSE body as text beside the same bytes in
    # base64; the pieces of one key are one body (read alone, each piece had been a stream that did not end)
    import base64
    sse = "".join(f"data: {json.dumps(c)}\n\n" for c in (
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "Greetings, traveller."}}]},
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})) + \
        "data: [DONE]\n\n"
    pieces = [sse[i:i + 120] for i in range(0, len(sse), 120)]
    record = _recording({"model": "gpt-4o-mini", "stream": True, "messages": [
        {"role": "user", "content": "Greet me in one sentence."}]}, {"status": 200, "headers": {}, "body": None})
    record["chunks"] = [{"b64": base64.b64encode(p.encode()).decode(), "decoded": p} for p in pieces]
    path = tmp_path / "streaming.json"
    path.write_text(json.dumps(record))
    result = ingest([path], scrub=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    (call,) = result.conversations[0].calls()
    assert call.completion.text == "Greetings, traveller."
    record["chunks"] = record["chunks"][:-1]  # cut before the stream's end: refused, never read in part
    path.write_text(json.dumps(record))
    cut = ingest([path], scrub=False)
    assert not cut.report.ok and not cut.conversations


def test_a_legacy_completion_under_the_bodies(tmp_path):
    # an Elixir client's ExVCR cassette of /v1/completions: request.body.prompt, response.body.choices[0].text
    request = {"model": "text-davinci-003", "prompt": "The apple is", "max_tokens": 100}
    response = {"object": "text_completion", "choices": [{"text": " red.", "index": 0, "finish_reason": "stop"}]}
    cassette = [{"request": {"url": "https://api.openai.com/v1/completions?", "method": "post",
                             "body": json.dumps(request)},
                 "response": {"status_code": 200, "binary": False, "body": json.dumps(response)}}]
    path = tmp_path / "completion_basic_prompt.json"
    path.write_text(json.dumps(cassette))
    result = ingest([path], scrub=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    (call,) = result.conversations[0].calls()
    assert (call.context[0].text, call.completion.text) == ("The apple is", " red.")


def test_an_unknown_providers_cassette_is_refused_not_read_from_its_requests(tmp_path):
    """A cassette of a provider no reader knows, whose responses keep the reply as ``{reply: message}``: its
    requests' message lists alone would give every call but the last (the final answer sits in a response only),
    so nothing is read and the file is refused with a code (blind set 116: a Cohere v2 cassette, before its reader,
    had been kept with 4 of its 5 calls)."""
    import yaml

    def exchange(messages, reply):
        return {"request": {"method": "POST", "uri": "https://api.example.test/v9/talk",
                            "body": json.dumps({"messages": messages})},
                "response": {"status": {"code": 200}, "body": {"string": json.dumps({"reply": reply})}}}

    user = {"role": "user", "content": "Add 2 and 3."}
    call = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "5"}
    answer = {"role": "assistant", "content": "It is 5."}
    follow = {"role": "user", "content": "And 3 and 4?"}
    doc = {"interactions": [exchange([user], call), exchange([user, call, result], answer),
                            exchange([user, call, result, answer, follow], {"role": "assistant", "content": "7."})]}
    path = tmp_path / "unknown_provider.yaml"
    path.write_text(yaml.safe_dump(doc))
    report = ingest([path], scrub=False, dedup=False)
    assert not report.report.ok and report.conversations == []
    assert _exchanges.response_beside(doc, "$.interactions[*].request.body.messages") == "$.interactions[0].response"


def test_a_request_record_whose_response_is_in_an_unknown_spelling_is_not_ok(tmp_path):
    """A request's messages beside a response body no reader knows: the messages alone were read ``ok``, the
    recorded answer lost; now refused with a code."""
    messages = [{"role": "user", "content": "Add 2 and 3."}, {"role": "assistant", "content": "Let me think."},
                {"role": "user", "content": "Go on."}]
    path = tmp_path / "requests.jsonl"
    path.write_text(json.dumps({"request": {"messages": messages},
                                "response": {"body": {"reply": {"text": "It is 5."}}}}) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert not result.report.ok and result.conversations == []


def _har_entry(request: dict, response: dict) -> dict:
    # a HAR 1.2 entry as Polly.js's fs persister writes it: bodies as text under postData / content
    return {"request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages", "headers": [],
                        "postData": {"mimeType": "application/json", "text": json.dumps(request)}},
            "response": {"status": 200, "headers": [{"name": "content-type", "value": "application/json"}],
                         "content": {"mimeType": "application/json", "size": 1, "text": json.dumps(response)}}}


def test_a_har_recording_of_anthropic_messages(tmp_path):
    """A HAR log whose response bodies are Anthropic messages (``content.text``, no ``choices``): each entry a call,
    the tool_use reply answered by the next request's tool_result."""
    ask = {"role": "user", "content": "What is the weather in Paris?"}
    use = {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"location": "Paris"}}
    first = {"id": "msg_1", "type": "message", "role": "assistant", "content": [use], "stop_reason": "tool_use"}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "22 C"}]}
    second = {"id": "msg_2", "type": "message", "role": "assistant", "stop_reason": "end_turn",
              "content": [{"type": "text", "text": "It is 22 °C in Paris."}]}
    doc = {"log": {"version": "1.2", "creator": {"name": "Polly.JS"}, "entries": [
        _har_entry({"model": "claude-3-haiku", "max_tokens": 64, "messages": [ask]}, first),
        _har_entry({"model": "claude-3-haiku", "max_tokens": 64,
                    "messages": [ask, {"role": "assistant", "content": [use]}, result]}, second)]}}
    got = ingest_json(tmp_path, doc, "recording.har")
    assert got.report.ok, [e.code for e in got.report.errors]
    assert totals(got.conversations) == (1, 2, 1)
    calls = list(got.conversations[0].calls())
    assert calls[0].completion.tool_calls[0].arguments == {"location": "Paris"}
    assert [m.role for m in calls[1].context] == ["user", "assistant", "tool"]
    assert calls[1].completion.text == "It is 22 °C in Paris."


def test_a_replay_of_body_segments_with_gemini_tool_calls(tmp_path):
    """google-genai's replay files: each body a list of segments (one here), the SDK's own parse of the response
    beside the raw one (``sdk_response_segments``); the raw body is the answer, the request's ``tools`` hold Gemini
    ``functionDeclarations`` (it had found no answer: no_llm_call)."""
    declarations = [{"name": n, "description": d, "parameters": {"type": "OBJECT", "properties": {}}}
                    for n, d in (("get_weather", "Weather for a city"), ("calculate", "Evaluate an expression"))]
    calls = [{"functionCall": {"name": "get_weather", "args": {"location": "Paris"}}},
             {"functionCall": {"name": "calculate", "args": {"expression": "42 * 17"}}}]
    answer = {"candidates": [{"content": {"role": "model", "parts": calls}, "finishReason": "STOP", "index": 0}],
              "usageMetadata": {"totalTokenCount": 90}}
    replay = {"replay_id": "test_streaming_with_tool_calls", "interactions": [{
        "request": {"method": "post", "url": "{MLDEV_URL_PREFIX}/models/gemini-2.5-flash:streamGenerateContent",
                    "headers": {"x-goog-api-key": "{REDACTED}"}, "body_segments": [{
                        "contents": [{"role": "user", "parts": [{"text": "Weather in Paris? And 42 * 17?"}]}],
                        "tools": [{"functionDeclarations": declarations}]}]},
        "response": {"status_code": 200, "headers": {}, "body_segments": [answer],
                     "sdk_response_segments": [{**answer, "sdk_http_response": {"headers": {}}}]}}]}
    result = ingest_json(tmp_path, replay)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert totals(result.conversations) == (1, 1, 2)
    assert [t.name for t in result.conversations[0].tools] == ["get_weather", "calculate"]


def _b64(text: str, gzipped: bool = False) -> str:
    import base64
    import gzip
    raw = text.encode()
    return base64.b64encode(gzip.compress(raw) if gzipped else raw).decode()


def test_bodies_a_proxy_kept_as_base64(tmp_path):
    """A record-and-replay proxy's exchanges (Echoproxia): the request body base64, the streamed reply as base64
    network chunks, keep-alive comments first (``: PROCESSING``); later versions keep the reply gzip-compressed in
    base64 behind blank keep-alive lines, with a plain-text copy beside it. Each body is the text it encodes."""
    ask = {"model": "openai/gpt-4o-mini", "stream": True,
           "messages": [{"role": "system", "content": "Act as an expert software developer."},
                        {"role": "user", "content": "Change hello to goodbye in test.txt"}]}
    chunks = [": PROCESSING\n\n", ": PROCESSING\n\n"] + [
        "data: " + json.dumps({"object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": {"content": piece}, "finish_reason": finish}]}) + "\n\n"
        for piece, finish in (("Here is the ", None), ("edit.", "stop"))] + ["data: [DONE]\n\n"]
    streamed = [{"request": {"method": "POST", "path": "/chat/completions", "headers": {}, "body": _b64(json.dumps(ask))},
                 "response": {"status": 200, "headers": {"content-type": "text/event-stream"}, "body": None,
                              "chunks": [_b64(c) for c in chunks]}}]
    reply = {"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "Here is the edit."}}]}
    padded = "\n         \n\n         \n" + json.dumps(reply)
    compressed = [{"request": {"method": "POST", "path": "/chat/completions", "headers": {},
                               "body": _b64(json.dumps({**ask, "stream": False})),
                               "bodyPlainText": json.dumps({**ask, "stream": False})},
                   "response": {"status": 200, "headers": {"content-encoding": "gzip"},
                                "bodyPlainText": padded, "body": _b64(padded, gzipped=True)}}]
    for name, doc in (("streamed.json", streamed), ("compressed.json", compressed)):
        result = ingest_json(tmp_path, doc, name)
        assert result.report.ok, (name, [e.code for e in result.report.errors])
        assert totals(result.conversations) == (1, 1, 0), name
        (call,) = result.conversations[0].calls()
        assert call.completion.text == "Here is the edit." and call.context[-1].text.startswith("Change hello")


def test_base64_that_is_no_body_is_left_as_it_is():
    from drafters.traces.formats._exchanges import decoded_bodies
    signature = _b64("\x00\x01binary signature bytes\x02")
    image = _b64("\x89PNG\r\n\x1a\n" + "x" * 64)
    record = {"thoughtSignature": signature, "source": {"type": "base64", "data": image}, "id": "abcdEFGH12345678"}
    assert decoded_bodies(record) is record
    assert decoded_bodies({"body": _b64('{"answer": "yes"}')}) == {"body": '{"answer": "yes"}'}


def test_a_gateway_export_with_a_failed_request(tmp_path):
    """Helicone's request export: ``request_path``, ``request_body`` / ``response_body`` and ``response_status``; a
    rate-limited request's body is the gateway's error, no model turn: skipped (was ``ambiguous_shape`` for the file)."""
    def row(n, messages, body, status=200):
        return {"request_id": f"h-{n}", "request_path": "https://oai.helicone.ai/v1/chat/completions",
                "model": "gpt-4o-mini", "request_body": {"model": "gpt-4o-mini", "messages": messages},
                "response_body": body, "response_status": status}
    ask = [{"role": "user", "content": "Summarize: the cat sat."}]
    said = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "A cat sat."}, "finish_reason": "stop"}]}
    more = [*ask, {"role": "assistant", "content": "A cat sat."}, {"role": "user", "content": "Shorter."}]
    rows = [row(1, ask, said), row(2, more, {"choices": [{"index": 0, "message": {"role": "assistant",
                                                                                  "content": "Cat."}}]}),
            row(3, [*more, {"role": "assistant", "content": "Cat."}, {"role": "user", "content": "One word."}],
                {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}, 429)]
    path = tmp_path / "helicone.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 0), codes(result)
    assert "error_response" in codes(result, "warnings")
