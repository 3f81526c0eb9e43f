"""Cohere's Chat API (``drafters/traces/formats/cohere_chat.py``): a vcrpy cassette of ``/v2/chat`` traffic
(langchain-cohere records its tests so) read as calls, ``tool_plan`` as the reasoning before the calls, document
tool results as their data, citations not read; request records with a ``tool_plan``; v1 cassettes (``chat_history``,
the turn sent now, calls' ids made from name and parameters) and v1 streamed events. Hand-made, shaped like
langchain-cohere's and llm-command-r's recordings (blind set 116 holds real ones)."""

from __future__ import annotations

import json

from drafters.traces.formats import _cassette
from drafters.traces.ingest import ingest

from .conftest import codes, totals

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
USER = {"role": "user", "content": "Find Barack Obama's age."}
CALL = {"id": "web_search_1", "type": "function",
        "function": {"name": "web_search", "arguments": "{\"query\": \"Barack Obama's age\"}"}}
PLANNED = {"role": "assistant", "tool_plan": "I will search for his age.", "tool_calls": [CALL]}
RESULT = {"role": "tool", "tool_call_id": "web_search_1",
          "content": [{"type": "document", "document": {"data": {"output": "60"}}}]}
TOOLS = [{"type": "function", "function": {"name": "web_search", "description": "Search the web.",
                                           "parameters": {"type": "object", "properties": {"query": {}}}}}]
ANSWER = {"role": "assistant", "content": [{"type": "text", "text": "He is 60."}],
          "citations": [{"start": 6, "end": 8, "text": "60", "sources": [{"type": "tool", "id": "web_search_1:0"}]}]}


def _interaction(request: dict, response: dict) -> dict:
    return {"request": {"method": "POST", "uri": "https://api.cohere.com/v2/chat", "body": json.dumps(request)},
            "response": {"status": {"code": 200, "message": "OK"}, "body": {"string": json.dumps(response)}}}


def _cassette_text() -> str:
    import yaml

    first = _interaction({"model": "command-r", "messages": [SYSTEM, USER], "tools": TOOLS},
                         {"id": "a", "message": PLANNED, "finish_reason": "TOOL_CALL"})
    second = _interaction({"model": "command-r", "messages": [SYSTEM, USER, PLANNED, RESULT], "tools": TOOLS},
                          {"id": "b", "message": ANSWER, "finish_reason": "COMPLETE"})
    return yaml.safe_dump({"interactions": [first, second], "version": 1})


def test_a_v2_chat_cassette_is_read_as_calls_with_plans_and_documents(tmp_path):
    text = _cassette_text()
    assert _cassette.sniff_provider(text) == "cohere_chat"
    path = tmp_path / "test_react_agent.yaml"
    path.write_text(text)
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert result.report.formats == {"cohere_chat": 1}
    assert totals(result.conversations) == (1, 2, 1)
    (conv,) = result.conversations
    first, second = conv.calls()
    assert first.completion.reasoning == "I will search for his age."
    assert [c.name for c in first.completion.tool_calls] == ["web_search"]
    assert [r.content for m in second.context for r in m.tool_results] == ['{"output":"60"}']
    assert second.completion.text == "He is 60."  # the citations are metadata: no unknown content
    assert [t.name for t in conv.tools] == ["web_search"]


def test_request_records_with_a_tool_plan_are_cohere_chat(tmp_path):
    path = tmp_path / "requests.jsonl"
    record = {"model": "command-r", "messages": [SYSTEM, USER, PLANNED, RESULT, ANSWER], "tools": TOOLS}
    path.write_text(json.dumps(record) + "\n")
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert result.report.formats == {"cohere_chat": 1}
    assert totals(result.conversations) == (1, 2, 1)


V1_URI = "https://api.cohere.com/v1/chat"
V1_TOOLS = [{"name": "web_search", "description": "Search the web.",
             "parameter_definitions": {"query": {"type": "str", "description": "the query", "required": True}}}]


def _v1(request: dict, response_text: str) -> dict:
    return {"request": {"method": "POST", "uri": V1_URI, "body": json.dumps(request)},
            "response": {"status": {"code": 200, "message": "OK"}, "body": {"string": response_text}}}


def test_a_v1_chat_cassette_history_tool_results_and_ids_made_from_the_call(tmp_path):
    """v1: the preamble, ``chat_history`` (roles in any case), then the turn sent now (``message``, or top-level
    ``tool_results`` answering the last reply's calls); the model's calls carry no id, so each is made from the
    call's name and parameters, which the result's ``call`` repeats (an id a client adds later is not used)."""
    import yaml

    call = {"name": "web_search", "parameters": {"query": "Obama age"}}
    first = {"text": "I will search first.", "tool_calls": [call], "finish_reason": "COMPLETE"}
    history = [{"role": "User", "message": "How old is Obama?"},
               {"role": "Chatbot", "message": "I will search first.",
                "tool_calls": [{"name": "web_search", "args": {"query": "Obama age"}, "id": "lc-1"}]}]
    results = [{"call": call, "outputs": [{"output": "60"}]}]
    second = {"text": "He is 60.", "citations": [{"start": 6, "end": 8}], "finish_reason": "COMPLETE"}
    doc = {"interactions": [
        _v1({"preamble": "Be brief.", "message": "How old is Obama?", "chat_history": [], "tools": V1_TOOLS},
            json.dumps(first)),
        _v1({"preamble": "Be brief.", "message": "", "chat_history": history, "tool_results": results,
             "tools": V1_TOOLS}, json.dumps(second))]}
    path = tmp_path / "v1.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert result.report.formats == {"cohere_chat": 1} and totals(result.conversations) == (1, 2, 1)
    (conv,) = result.conversations
    first_call, second_call = conv.calls()
    assert [m.role for m in second_call.context] == ["system", "user", "assistant", "tool"]
    (made,) = first_call.completion.tool_calls
    assert made.id == 'web_search:{"query":"Obama age"}' and made.arguments == {"query": "Obama age"}
    assert [r.call_id for r in second_call.context[-1].tool_results] == [made.id]
    assert second_call.completion.text == "He is 60."
    assert conv.tools[0].parameters["required"] == ["query"]


def test_a_v1_streamed_reply_is_joined_and_a_cut_one_refused(tmp_path):
    import yaml

    events = [{"is_finished": False, "event_type": "stream-start", "generation_id": "g"},
              {"is_finished": False, "event_type": "text-generation", "text": "Pelly"},
              {"is_finished": False, "event_type": "text-generation", "text": " and Mr. P"},
              {"is_finished": True, "event_type": "stream-end", "finish_reason": "COMPLETE",
               "response": {"text": "Pelly and Mr. P", "finish_reason": "COMPLETE"}}]
    request = {"message": "Two names for a pet pelican", "model": "command-r", "stream": True}
    path = tmp_path / "stream.yaml"
    for kept, ok in ((events, True), (events[:-1], False)):
        body = "\n".join(json.dumps(e) for e in kept) + "\n"
        path.write_text(yaml.safe_dump({"interactions": [_v1(request, body)]}))
        result = ingest([path], scrub=False)
        assert result.report.ok is ok, codes(result)
        if ok:
            (conv,) = result.conversations
            assert [c.completion.text for c in conv.calls()] == ["Pelly and Mr. P"]
        else:
            assert "stream_incomplete" in codes(result) and result.conversations == []
