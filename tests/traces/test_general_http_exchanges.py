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

from .conftest import ingest_json, totals

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
