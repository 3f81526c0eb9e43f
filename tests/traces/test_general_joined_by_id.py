"""Requests and responses logged as records of their own, paired by the id they share
(``drafters/traces/formats/_joined_by_id.py``): an application's log lines by ``request_id``, an OpenAI / vLLM
batch's input and output lines and an Anthropic batch's requests and results by ``custom_id``. Refused before
(``unknown_format``); one half alone was refused with a code that did not say what was missing."""

from __future__ import annotations

import json

from drafters.traces.formats._joined_by_id import join_key, side_of
from drafters.traces.ingest import ingest

from .conftest import codes, totals

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
ASK = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Weather in Paris?"}]
CALL = {"role": "assistant", "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
THEN = [*ASK, CALL, {"role": "tool", "tool_call_id": "c1", "content": "12C"}]
DONE = {"role": "assistant", "content": "It is 12C in Paris."}


def _write(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _app_log() -> list[dict]:
    rows = []
    for i, (messages, reply) in enumerate([(ASK, CALL), (THEN, DONE)]):
        rows.append({"ts": f"10:00:0{i}", "event": "llm.request", "request_id": f"req-{i}",
                     "payload": {"model": "qwen", "messages": messages, "tools": TOOLS}})
        rows.append({"ts": f"10:00:0{i}", "event": "llm.response", "request_id": f"req-{i}", "payload": {
            "id": f"chatcmpl-{i}", "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}]}})
    return rows


def _openai_batch() -> tuple[list[dict], list[dict]]:
    asked = [{"custom_id": f"request-{i}", "method": "POST", "url": "/v1/chat/completions",
              "body": {"model": "qwen", "messages": m, "tools": TOOLS}} for i, m in enumerate([ASK, THEN])]
    answered = [{"id": f"batch_req_{i}", "custom_id": f"request-{i}", "response": {"status_code": 200, "body": {
        "id": f"chatcmpl-{i}", "object": "chat.completion", "choices": [{"index": 0, "message": a,
                                                                        "finish_reason": "stop"}]}}, "error": None}
                for i, a in enumerate([CALL, DONE])]
    return asked, answered


def test_sides_and_the_pairing_key():
    """A chat row ending with its answer is neither half (it is a whole call); the record's own ``id`` does not
    pair (each value once in the file), ``request_id`` does."""
    rows = _app_log()
    assert [side_of(r) for r in rows] == ["request", "response"] * 2
    assert side_of({"id": 1, "messages": [*ASK, DONE]}) is None
    assert join_key(rows) == "request_id"
    assert join_key([{**r, "event_id": n} for n, r in enumerate(rows)]) == "request_id"


def test_an_app_log_of_request_and_response_lines(tmp_path):
    result = ingest([_write(tmp_path, "app.jsonl", _app_log())], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)
    assert "requests_joined_by_id" in codes(result, "warnings")
    (conv,) = result.conversations
    last = list(conv.calls())[-1]
    assert [m.role for m in last.context] == ["system", "user", "assistant", "tool"] and last.completion.text == DONE["content"]


def test_a_batch_input_and_output_in_one_file_results_in_any_order(tmp_path):
    """OpenAI's (and vLLM ``run-batch``'s) input lines then output lines, the outputs in another order: one
    conversation of two calls, in the requests' order (no ``calls_out_of_order``)."""
    asked, answered = _openai_batch()
    result = ingest([_write(tmp_path, "batch.jsonl", asked + answered[::-1])], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)
    assert "calls_out_of_order" not in codes(result, "warnings")


def test_an_anthropic_batch_requests_and_results(tmp_path):
    tools = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    use = [{"type": "tool_use", "id": "tu1", "name": "get_weather", "input": {"city": "Paris"}}]
    asks = [[{"role": "user", "content": "Weather in Paris?"}]]
    asks.append([*asks[0], {"role": "assistant", "content": use},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": "12C"}]}])
    replies = [use, [{"type": "text", "text": "12C in Paris."}]]
    rows = [{"custom_id": f"q{i}", "params": {"model": "claude", "max_tokens": 99, "tools": tools, "messages": m}}
            for i, m in enumerate(asks)]
    rows += [{"custom_id": f"q{i}", "result": {"type": "succeeded", "message": {
        "id": f"msg_{i}", "type": "message", "role": "assistant", "content": c, "stop_reason": "end_turn"}}}
             for i, c in enumerate(replies)]
    result = ingest([_write(tmp_path, "anthropic_batch.jsonl", rows)], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)


def test_unanswered_requests_warn_and_a_response_without_its_request_is_an_error(tmp_path):
    rows = _app_log()
    rows.insert(2, {"ts": "x", "event": "llm.request", "request_id": "req-lost", "payload": {"messages": ASK[1:]}})
    result = ingest([_write(tmp_path, "app.jsonl", rows)], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1)
    assert "request_without_response" in codes(result, "warnings")
    rows = [*_app_log(), {"event": "llm.response", "request_id": "req-9", "payload": {
        "choices": [{"message": {"role": "assistant", "content": "orphan"}, "finish_reason": "stop"}]}}]
    result = ingest([_write(tmp_path, "app2.jsonl", rows)], scrub=False, dedup=False)
    assert not result.report.ok and "response_without_request" in codes(result)
    assert totals(result.conversations) == (1, 2, 1)  # the rest of the file is read


def test_one_half_alone_says_what_is_missing(tmp_path):
    asked, answered = _openai_batch()
    for name, rows, code in [("input.jsonl", asked, "responses_not_in_file"),
                             ("output.jsonl", answered, "requests_not_in_file")]:
        result = ingest([_write(tmp_path, name, rows)], scrub=False, dedup=False)
        assert not result.report.ok and codes(result) == [code], (name, codes(result))
        assert "custom_id" in result.report.errors[0].message and "cat " in result.report.errors[0].message


def test_chat_rows_with_ids_are_still_read_as_rows(tmp_path):
    """Fine-tuning rows with an id each (whole calls, ending with the answer): no half, read as before."""
    rows = [{"id": f"row-{i}", "messages": [*ASK, DONE]} for i in range(3)]
    result = ingest([_write(tmp_path, "rows.jsonl", rows)], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (3, 3, 0), codes(result)


def _chunk(delta: dict, finish: str | None = None) -> dict:
    return {"id": "chatcmpl-9", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_a_stream_logged_one_chunk_per_record_beside_its_request(tmp_path):
    """A proxy's log: the request line, then each chunk of the streamed reply as a line of its own (OpenAI's with
    the usage chunk after the finish; Anthropic's events with a tool use streamed as JSON pieces)."""
    rows = [{"request_id": "r1", "body": {"model": "m", "messages": ASK, "stream": True}}]
    rows += [{"request_id": "r1", "chunk": c} for c in [_chunk({"role": "assistant", "content": ""}),
                                                       _chunk({"content": "It is "}), _chunk({"content": "12C."}),
                                                       _chunk({}, "stop")]]
    rows.append({"request_id": "r1", "chunk": {"id": "chatcmpl-9", "object": "chat.completion.chunk", "choices": [],
                                              "usage": {"prompt_tokens": 9, "completion_tokens": 3}}})
    result = ingest([_write(tmp_path, "proxy.jsonl", rows)], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 1, 0), codes(result)
    assert next(iter(result.conversations[0].calls())).completion.text == "It is 12C."
    events = [{"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                    "content": []}},
              {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "tu1",
                                                                            "name": "get_weather", "input": {}}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta",
                                                                    "partial_json": '{"city": "Pa'}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta",
                                                                    "partial_json": 'ris"}'}},
              {"type": "content_block_stop", "index": 0}, {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
              {"type": "message_stop"}]
    rows = [{"id": "a1", "type": "request", "request": {"messages": [{"role": "user", "content": "Weather?"}]}}]
    rows += [{"id": "a1", "type": "event", "event": e} for e in events]
    result = ingest([_write(tmp_path, "anthropic.jsonl", rows)], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 1, 1), codes(result)
    (call,) = result.conversations[0].calls()
    assert call.completion.tool_calls[0].arguments == {"city": "Paris"}
    result = ingest([_write(tmp_path, "cut.jsonl", rows[:-1])], scrub=False, dedup=False)  # no message_stop
    assert not result.report.ok and codes(result)[0] == "stream_incomplete" and not result.conversations


def test_a_failed_result_drops_its_request_and_the_answers_are_kept_as_written(tmp_path):
    """A batch whose one request failed (an Anthropic ``errored`` result, an OpenAI status 400 body): the others
    are read, the failed one warned (was ``no_llm_call`` for the file); a tool call's arguments text is the
    response's own (was re-spaced: the pairing decoded it)."""
    asked, answered = _openai_batch()
    asked.append({"custom_id": "request-9", "body": {"model": "qwen", "messages": [{"role": "user", "content": "x"}]}})
    answered.append({"id": "batch_req_9", "custom_id": "request-9", "response": {"status_code": 400, "body": {
        "error": {"message": "bad request", "type": "invalid_request_error"}}}, "error": None})
    result = ingest([_write(tmp_path, "batch.jsonl", asked + answered)], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)
    assert "request_without_response" in codes(result, "warnings")
    (call, _) = result.conversations[0].calls()
    assert call.completion.tool_calls[0].raw_arguments == '{"city": "Paris"}'


def test_an_interleaved_log_a_chat_reader_would_pair_by_order_is_paired_by_id(tmp_path):
    """Two sessions' requests and responses interleaved, with ``messages`` / ``choices`` at the top (the OpenAI
    chat reader's layout, which pairs a request with the record after it: refused before, ``not_an_object``)."""
    rows = [{"event": "llm.request", "request_id": "r1", "messages": ASK},
            {"event": "llm.request", "request_id": "r2", "messages": [{"role": "user", "content": "3*7?"}]},
            {"event": "llm.response", "request_id": "r2", "choices": [{"message": {"role": "assistant",
                                                                                  "content": "21"}}]},
            {"event": "llm.response", "request_id": "r1", "choices": [{"message": CALL}]},
            {"event": "llm.request", "request_id": "r3", "messages": THEN},
            {"event": "llm.response", "request_id": "r3", "choices": [{"message": DONE}]}]
    result = ingest([_write(tmp_path, "app.jsonl", rows)], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (2, 3, 1), codes(result)


def test_the_key_naming_the_call_pairs_not_a_tables_row_id(tmp_path):
    """Two tables exported one after the other: each numbers its rows ``id`` 1, 2, and ``request_id`` links them (was
    paired by ``id``: each answer under the other's question, ``ok``). A retried request (429, then the answer) and a
    line logged twice are read once."""
    rows = [{"id": 1, "request_id": "req-x", "data": {"messages": [{"role": "user", "content": "A joke?"}]}},
            {"id": 2, "request_id": "req-y", "data": {"messages": [{"role": "user", "content": "2+2?"}]}},
            {"id": 1, "request_id": "req-y", "data": {"choices": [{"message": {"role": "assistant", "content": "4"}}]}},
            {"id": 2, "request_id": "req-x", "data": {"choices": [{"message": {"role": "assistant",
                                                                               "content": "A cat walks in."}}]}}]
    rows.insert(2, {"id": 0, "request_id": "req-y", "status": 429, "data": {"error": {"message": "Rate limit"}}})
    rows.append(rows[-1])
    result = ingest([_write(tmp_path, "tables.jsonl", rows)], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (2, 2, 0), codes(result)
    answers = {c.context[-1].text: c.completion.text for conv in result.conversations for c in conv.calls()}
    assert answers == {"A joke?": "A cat walks in.", "2+2?": "4"}
    assert "repeated_records_skipped" in codes(result, "warnings")


def test_a_store_of_new_messages_per_turn_is_no_request_response_log(tmp_path):
    """A chat store writing each turn's new message on a line with the turn's ``request_id`` and the conversation's
    id: one conversation (was paired by ``request_id``, the second call without the first turn, ``ok``)."""
    rows = [{"conversation_id": "c-1", "request_id": f"turn-{n}", "messages": [{"role": role, "content": text}]}
            for n, role, text in [(1, "user", "I am Ana."), (1, "assistant", "Hello Ana!"),
                                  (2, "user", "My name?"), (2, "assistant", "Ana.")]]
    result = ingest([_write(tmp_path, "store.jsonl", rows)], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 0), codes(result)
