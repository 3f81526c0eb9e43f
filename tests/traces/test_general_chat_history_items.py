"""A chat history whose messages keep their content as typed items (Semantic Kernel's ``ChatHistory``: each message
``{role, name, items: [{content_type: text | function_call | function_result, ...}]}``), stored as JSON text inside a
tool's own record (a clinical orchestrator's evaluation chat, ``{"conversation_id", "chat_history": "<JSON>"}``):
the general path reads the items as the message's parts, follows the JSON text (as the mapping it states does), and
reads two agents' replies in a row (``name``: ``Forecaster``, ``Critic``) as two calls (docs/traces.md,
"Consecutive assistant messages"). Hand-made file, shaped like the serialized ``ChatHistory``."""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest

from .conftest import codes, totals


def _message(role, items, **more):
    return {"metadata": {}, "content_type": "message", "role": role, **more,
            "items": [{"metadata": {}, **item} for item in items]}


def _history():
    text = {"content_type": "text"}
    return [_message("system", [{**text, "text": "You are a weather agent."}]),
            _message("user", [{**text, "text": "Weather in Oslo?"}]),
            _message("assistant", [{"content_type": "function_call", "id": "call_1", "name": "Weather-get",
                                    "function_name": "get", "plugin_name": "Weather",
                                    "arguments": "{\"city\": \"Oslo\"}"}], ai_model_id="gpt-4o", name="Forecaster"),
            _message("tool", [{"content_type": "function_result", "id": "call_1", "name": "Weather-get",
                               "result": "12 C, rain"}]),
            _message("assistant", [{**text, "text": "It is 12 C and raining in Oslo."}], name="Forecaster"),
            _message("assistant", [{**text, "text": "The forecast names its source."}], name="Critic")]


def test_typed_items_in_a_history_kept_as_json_text_are_read_with_each_agent_s_turn_a_call(tmp_path):
    path = tmp_path / "chat_context.json"
    path.write_text(json.dumps({"conversation_id": "c1", "patient_id": "p",
                                "chat_history": json.dumps({"messages": _history()}, indent=2)}))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 3, 1)
    calls = list(result.conversations[0].calls())
    assert calls[0].completion.tool_calls[0].arguments == {"city": "Oslo"}
    assert [c.completion.text for c in calls[1:]] == ["It is 12 C and raining in Oslo.", "The forecast names its source."]
    assert "12 C, rain" in str(calls[1].context[-1].parts)  # the function result answers the call
    assert "unpaired_tool_call" not in [w.code for w in result.report.warnings]


def test_one_agent_s_replies_in_a_row_stay_one_call(tmp_path):
    history = _history()
    history[5]["name"] = "Forecaster"  # the same speaker twice: one reply written as two messages
    path = tmp_path / "chat_context.json"
    path.write_text(json.dumps({"conversation_id": "c1", "chat_history": json.dumps({"messages": history})}))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    assert "adjacent_answers_joined" in [w.code for w in result.report.warnings]


def test_a_request_body_kept_as_json_text_is_not_read_as_a_history(tmp_path):
    """An inference store's rows (``input``: the request's messages as JSON text, ending with the user's turn; the
    reply elsewhere): read as a history, each row would keep a conversation without its reply; none is kept."""
    rows = [{"id": str(i), "input": json.dumps({"messages": [
        {"role": "user", "content": f"Question {i}?"}, {"role": "assistant", "content": f"Answer {i}."},
        {"role": "user", "content": "And then?"}]}), "output": json.dumps([{"type": "text", "text": "Then done."}])}
            for i in range(3)]
    path = tmp_path / "chat_inference.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = ingest([path], scrub=False, dedup=False)
    assert not result.report.ok and result.conversations == []


def test_chatlas_turns_tool_requests_and_results_naming_their_request(tmp_path):
    """chatlas turns as shinychat's history store saves them (``turns.jsonl``: ``{seq, data: {role, contents:
    [{content_type: text | thinking | tool_request | tool_result}]}}``): a ``tool_request`` is a call, a
    ``tool_result`` answers the call its ``request`` names (no id of its own)."""
    request = {"content_type": "tool_request", "id": "fc_1", "name": "get_schema",
               "arguments": {"table_name": "titanic"}}
    turns = [{"role": "user", "contents": [{"content_type": "text", "text": "Show only female passengers"}]},
             {"role": "assistant", "contents": [{"content_type": "thinking", "thinking": ""}, request]},
             {"role": "user", "contents": [{"content_type": "tool_result", "value": "Columns: sex, age",
                                            "error": None, "request": request}]},
             {"role": "assistant", "contents": [{"content_type": "text", "text": "Filtered to female passengers."}]}]
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps({"seq": i, "data": t}) + "\n" for i, t in enumerate(turns)))
    result = ingest([str(path)], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    (conv,) = result.conversations
    assert [r.call_id for m in conv.messages for r in m.tool_results] == ["fc_1"]
