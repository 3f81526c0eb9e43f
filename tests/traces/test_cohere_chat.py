"""Cohere's v2 Chat API (``drafters/traces/formats/cohere_chat.py``): a vcrpy cassette of ``/v2/chat`` traffic
(langchain-cohere records its tests so) read as calls, ``tool_plan`` as the reasoning before the calls, document
tool results as their data, citations not read; request records with a ``tool_plan``. Hand-made, shaped like
langchain-cohere's recordings (blind set 116 holds a real one)."""

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
