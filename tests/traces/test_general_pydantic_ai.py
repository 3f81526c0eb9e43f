"""Pydantic AI's message history (issue 30; docs/traces.md, "Messages as tagged variants"): ``ModelMessagesTypeAdapter``
dumps a run as requests (``kind: request``: system prompt, user prompt and tool-return parts together) and responses
(``kind: response``: text, thinking and tool-call parts), each part typed by ``part_kind``. The general path reads a
request as the messages it holds and a response as the assistant's; the mapping ``infer-mapping`` writes reads the
file the same way; a part of a kind no reader reads (a built-in tool the provider ran) is refused, not dropped.

Documents: hand-made after Pydantic AI's ``ModelRequest`` / ``ModelResponse`` dataclasses (``pydantic_ai.messages``),
not copies of real files.
"""

from __future__ import annotations

from drafters.traces.model import ReasoningPart, ToolResultPart

from .conftest import codes, inferred_mapping_totals, ingest_json, totals


def _history() -> list[dict]:
    def request(*parts, instructions=None):
        return {"parts": list(parts), "instructions": instructions, "kind": "request"}

    def response(*parts):
        return {"parts": list(parts), "model_name": "gpt-4o", "kind": "response", "finish_reason": "stop",
                "usage": {"input_tokens": 90, "output_tokens": 20}}
    return [
        request({"content": "You are a weather assistant.", "dynamic_ref": None, "part_kind": "system-prompt"},
                {"content": "Weather in Paris and Berlin?", "part_kind": "user-prompt"}),
        response({"content": "Two cities: two calls.", "signature": None, "part_kind": "thinking"},
                 {"tool_name": "get_weather", "args": '{"city":"Paris"}', "tool_call_id": "c1", "part_kind": "tool-call"},
                 {"tool_name": "get_weather", "args": {"city": "Berlin"}, "tool_call_id": "c2", "part_kind": "tool-call"}),
        request({"tool_name": "get_weather", "content": {"temp_c": 19}, "tool_call_id": "c1", "part_kind": "tool-return"},
                {"tool_name": "get_weather", "content": "14 C", "tool_call_id": "c2", "part_kind": "tool-return"}),
        response({"content": "Paris 19 C, Berlin 14 C.", "id": None, "part_kind": "text"}),
    ]


def test_requests_and_responses_are_read_as_their_messages(tmp_path):
    result = ingest_json(tmp_path, _history(), "messages.json")
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 2)
    first, second = result.conversations[0].calls()
    assert [m.role for m in first.context] == ["system", "user"]
    assert [(t.id, t.arguments) for t in first.completion.tool_calls] == [("c1", {"city": "Paris"}),
                                                                          ("c2", {"city": "Berlin"})]
    assert [p.text for p in first.completion.parts if isinstance(p, ReasoningPart)] == ["Two cities: two calls."]
    results = [p for m in second.context for p in m.parts if isinstance(p, ToolResultPart)]
    assert [(r.call_id, r.content) for r in results] == [("c1", '{"temp_c": 19}'), ("c2", "14 C")]
    assert second.completion.text == "Paris 19 C, Berlin 14 C."
    assert inferred_mapping_totals(tmp_path / "messages.json", "file_list", tmp_path) == (1, 2, 2)


def test_instructions_head_the_context_and_a_retry_is_the_tools_answer(tmp_path):
    history = _history()
    history[0]["parts"] = history[0]["parts"][1:]
    history[0]["instructions"] = history[2]["instructions"] = "Answer in one line."
    history[2]["parts"].insert(0, {"tool_name": "get_weather", "content": "city must be a string",
                                   "tool_call_id": "c0", "part_kind": "retry-prompt"})
    history[1]["parts"].insert(1, {"tool_name": "get_weather", "args": {"city": 7}, "tool_call_id": "c0",
                                   "part_kind": "tool-call"})
    result = ingest_json(tmp_path, history, "messages.json")
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 3)
    _, second = result.conversations[0].calls()
    assert [m.role for m in second.context][:2] == ["system", "user"]  # the same instructions once
    assert sum(m.role == "system" for m in second.context) == 1


def test_a_part_no_reader_reads_is_refused(tmp_path):
    history = _history()
    history[3]["parts"].insert(0, {"tool_name": "web_search", "args": {"query": "Paris"}, "tool_call_id": "b1",
                                   "provider_name": "openai", "part_kind": "builtin-tool-call"})
    result = ingest_json(tmp_path, history, "messages.json")
    assert not result.report.ok and result.conversations == []
