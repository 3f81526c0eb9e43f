"""Streamed responses recorded as chunk lists (issue 30; docs/traces.md, "Streamed responses"): the chunks are
joined into the one reply they stream (text deltas, tool-call argument fragments by index, Anthropic content
blocks, Ollama ``/api/chat`` lines); a stream that does not end is ``stream_incomplete``, never a truncated reply.

Fixtures ``fixtures/streams/``: hand-made (a llama-stack-style recording with ``__type__``/``__data__`` chunks,
vcrpy cassettes whose bodies are SSE or JSON lines, and copies of them cut before the end); not real files.
"""

from __future__ import annotations

import json

import pytest

from drafters.traces.formats import _streams
from drafters.traces.ingest import ingest

from .conftest import totals

STREAMS = __import__("pathlib").Path(__file__).resolve().parent / "fixtures" / "streams"


def _read(name):
    result = ingest([STREAMS / name], scrub=False)
    return result, [e.code for e in result.report.errors]


def _only_call(result):
    (call,) = [c for conv in result.conversations for c in conv.calls()]
    return call


def test_recorded_chunk_list_is_joined_into_one_reply():
    result, codes = _read("recording_chunks.json")
    assert result.report.ok, codes
    assert totals(result.conversations) == (1, 1, 1)
    call = _only_call(result)
    assert call.completion.text == "Let me check."
    (tc,) = call.completion.tool_calls
    assert (tc.id, tc.name, tc.arguments) == ("call_a1", "get_weather", {"city": "Paris"})  # 3 fragments joined
    assert [m.role for m in call.context] == ["system", "user"] and [t.name for t in call.tools] == ["get_weather"]


@pytest.mark.parametrize("name", ["recording_cut.json", "sse_openai_chat_cut.yaml", "ollama_ndjson_cut.yaml"])
def test_a_stream_that_does_not_end_is_refused_with_a_code(name):
    result, codes = _read(name)
    assert not result.report.ok and not result.conversations
    assert codes[0] == "stream_incomplete", codes


def test_sse_body_in_a_cassette_openai_chat():
    result, codes = _read("sse_openai_chat.yaml")
    assert result.report.ok, codes
    call = _only_call(result)
    assert call.completion.text == "Paris is sunny, 21 C." and call.completion.model == "tiny-chat-1"


def test_sse_body_in_a_cassette_anthropic_blocks_and_input_json():
    result, codes = _read("sse_anthropic.yaml")
    assert result.report.ok, codes
    call = _only_call(result)
    assert call.completion.text == "Checking the weather."
    (tc,) = call.completion.tool_calls
    assert (tc.id, tc.name, tc.arguments) == ("toolu_1", "get_weather", {"city": "Paris"})


def test_ollama_json_lines_in_a_cassette():
    result, codes = _read("ollama_ndjson.yaml")
    assert result.report.ok, codes
    call = _only_call(result)
    assert call.completion.text == "Hello! How can I help?" and call.completion.model == "tiny-llama"
    assert [m.text for m in call.context] == ["Hi"]


def _chunk(delta, finish=None):
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_join_rules():
    # tool calls by index, interleaved; the name given once (a repeat is fine)
    body = _streams.join([
        _chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{\"x\""}}]}),
        _chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": ": 1}"}}]}),
        _chunk({}, "tool_calls")])
    calls = body["choices"][0]["message"]["tool_calls"]
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        ("a", "f", '{"x": 1}'), ("b", "g", "{}")]
    with pytest.raises(_streams.StreamError) as err:  # a tool call renamed mid-stream: not guessed
        _streams.join([_chunk({"tool_calls": [{"index": 0, "function": {"name": "f"}}]}),
                       _chunk({"tool_calls": [{"index": 0, "function": {"name": "h"}}]}, "stop")])
    assert err.value.code == "stream_not_joined"
    with pytest.raises(_streams.StreamError) as err:  # an Anthropic tool input cut mid-JSON
        _streams.join([{"type": "message_start", "message": {"role": "assistant"}},
                       {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "name": "f"}},
                       {"type": "content_block_delta", "index": 0,
                        "delta": {"type": "input_json_delta", "partial_json": "{\"x\": "}},
                       {"type": "message_stop"}])
    assert err.value.code == "stream_not_joined"
    with pytest.raises(_streams.StreamError) as err:  # an error event ends the stream
        _streams.join([{"type": "message_start", "message": {"role": "assistant"}},
                       {"type": "error", "error": {"type": "overloaded_error"}}])
    assert err.value.code == "stream_incomplete"


def test_lists_that_are_not_one_stream_are_left_alone():
    whole = {"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": "STOP"}]}
    assert not _streams.is_chunk_list([whole, whole])  # two whole Gemini responses, not one stream
    done = {"message": {"role": "assistant", "content": "x"}, "done": True}
    assert not _streams.is_chunk_list([done, done])  # two finished Ollama replies
    tree = {"calls": [whole, whole]}
    assert _streams.joined_tree(tree) == (tree, []) and _streams.joined_tree(tree)[0] is tree


def test_gemini_chunks_merge_text_parts():
    body = _streams.join([{"candidates": [{"content": {"role": "model", "parts": [{"text": "He"}]}}]},
                          {"candidates": [{"content": {"role": "model", "parts": [{"text": "llo"}]},
                                           "finishReason": "STOP"}], "modelVersion": "m"}])
    assert body["candidates"][0]["content"]["parts"] == [{"text": "Hello"}]


def test_sse_text_parsing():
    text = "event: x\ndata: " + json.dumps(_chunk({"content": "a"})) + "\n\ndata: " + json.dumps(
        _chunk({}, "stop")) + "\n\ndata: [DONE]\n\n"
    chunks = _streams.chunks_of_text(text)
    assert chunks is not None and chunks[-1] == "[DONE]"
    assert _streams.join(chunks)["choices"][0]["message"]["content"] == "a"
    assert _streams.chunks_of_text("data is not an event stream") is None


def _responses_turn(output_items: list, text: str = "What's the weather in Paris?") -> dict:
    """A captured Responses API turn (magenta.nvim's capture harness): the request and the stream's events; the
    stream was not stored (``store: false``), so ``response.completed`` holds no output and each finished item
    comes in its own ``response.output_item.done`` event."""
    events = [{"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}]
    events += [{"type": "response.output_item.done", "output_index": i, "item": item}
               for i, item in enumerate(output_items)]
    events.append({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": []}})
    request = {"model": "gpt-5.4", "instructions": "Be terse.", "store": False, "stream": True,
               "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}]}
    return {"request": request, "events": events}


def test_a_responses_stream_not_stored_is_its_finished_items(tmp_path):
    call = {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}',
            "status": "completed"}
    path = tmp_path / "tool-call.json"
    path.write_text(json.dumps({"turns": [_responses_turn([call, {**call, "call_id": "call_2"}])]}))
    result = ingest([path], scrub=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert totals(result.conversations) == (1, 1, 2)
    only = _only_call(result)
    assert [m.role for m in only.context] == ["system", "user"] and only.completion.text == ""
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "Super Bowl"}}
    answer = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Seattle won."}]}
    path.write_text(json.dumps({"turns": [_responses_turn([search, answer], "Who won? Search.")]}))
    result = ingest([path], scrub=False)  # a search the provider ran: counted, not a tool call of the model's
    assert result.report.ok and totals(result.conversations) == (1, 1, 0)
    assert _only_call(result).completion.text == "Seattle won." and result.report.counts["unsupported_parts"] == 1


def test_json_lines_of_chat_chunks_in_a_record_are_joined(tmp_path):
    """An app's streamed answer kept as JSON lines of ``chat.completion.chunk`` objects (a RAG sample's
    ``application/x-ndjson`` reply, as a HAR entry's text): joined into the reply, as an SSE body is."""
    pieces = ["To book", " a rental,", " search first."]
    lines = [{"choices": [{"index": 0, "delta": {"content": p, "role": "assistant"}, "finish_reason": None}],
              "object": "chat.completion.chunk"} for p in pieces]
    lines.append({"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}],
                  "object": "chat.completion.chunk"})
    record = {"request": {"messages": [{"role": "user", "content": "How do I book a rental?"}]},
              "response": {"text": "".join(json.dumps(x) + "\n" for x in lines)}}
    path = tmp_path / "exchange.json"
    path.write_text(json.dumps(record))
    result = ingest([path], scrub=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert totals(result.conversations) == (1, 1, 0)
    assert next(iter(result.conversations[0].calls())).completion.text == "To book a rental, search first."
    cut = tmp_path / "cut.json"  # no finish_reason: a cut stream, refused, never a truncated reply
    record["response"]["text"] = "".join(json.dumps(x) + "\n" for x in lines[:-1])
    cut.write_text(json.dumps(record))
    assert not ingest([cut], scrub=False).conversations
