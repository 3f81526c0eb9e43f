"""Letta agent files (.af): the in-context message list, tools from json_schema, double-encoded files.

Fixtures (fixtures/README.md): ``letta_memgpt_indices.af`` is written in the older .af schema (one agent
at the top, ``in_context_message_indices``) with a memory edit whose rewritten system prompt was stored
between a tool call and its result; ``letta_customer_service.af`` is the real published agent file of
letta-ai/agent-file (trimmed), stored as a JSON string holding the JSON, with no conversation in it.
"""

from __future__ import annotations

import json
from pathlib import Path

from drafters.traces.detect import detect_format
from drafters.traces.ingest import ingest

from ._helpers_b import parse_text
from .conftest import parse_file, totals

FIX = Path(__file__).parent / "fixtures"
AF = FIX / "letta_memgpt_indices.af"


def _no_system_between_call_and_result(messages) -> bool:
    return all(messages[i + 1].role == "tool" for i, m in enumerate(messages[:-1]) if m.tool_calls)


def test_in_context_indices_order_and_tools_from_json_schema():
    raw = json.loads(AF.read_text(encoding="utf-8"))
    want_roles = [raw["messages"][i]["role"] for i in raw["in_context_message_indices"]]
    assert raw["messages"][6]["role"] == "system" and raw["messages"][5]["tool_calls"]  # the trap, by hand
    assert detect_format(AF.read_text(encoding="utf-8"), AF.name).name == "letta"
    result = ingest([AF], scrub=False)
    report = result.report
    assert report.ok and not report.warnings
    conv = result.conversations[0]
    assert [m.role for m in conv.messages] == want_roles
    assert conv.messages[0].text == raw["messages"][6]["content"][0]["text"]  # the current system prompt
    assert _no_system_between_call_and_result(conv.messages)
    assert [t.name for t in conv.tools] == ["send_message", "core_memory_append"]
    assert conv.tools[1].parameters["required"] == ["label", "content"]
    assert set(conv.tools[1].parameters["properties"]) == {"label", "content"}
    n_calls = sum(len(m["tool_calls"]) for m in raw["messages"])
    assert (report.counts["calls"], report.counts["tool_calls"]) == (3, n_calls)
    assert report.chars["reasoning"] == sum(len(m["content"][0]["reasoning"]) for m in raw["messages"]
                                            if m["role"] == "assistant")


def test_without_in_context_list_superseded_system_prompts_are_dropped():
    raw = json.loads(AF.read_text(encoding="utf-8"))
    del raw["in_context_message_indices"]
    (conv,), report = parse_text("letta", json.dumps(raw), "a.af")
    assert [p.code for p in report.warnings] == ["system_prompt_rewritten"]
    assert [m.role for m in conv.messages].count("system") == 1 and conv.messages[0].role == "system"
    assert "Loves sailing." in conv.messages[0].text
    assert _no_system_between_call_and_result(conv.messages)


def test_bad_index_is_an_error_and_the_rest_is_read():
    raw = json.loads(AF.read_text(encoding="utf-8"))
    raw["in_context_message_indices"].append(99)
    (conv,), report = parse_text("letta", json.dumps(raw), "a.af")
    assert [(p.code, p.field) for p in report.errors] == [("bad_record", "in_context_message_indices")]
    assert len(conv.messages) == 9


def test_real_double_encoded_file_without_conversation_is_refused_with_a_code():
    path = FIX / "letta_customer_service.af"
    assert isinstance(json.loads(path.read_text(encoding="utf-8")), str)
    (conv,), report = parse_file("letta", path)
    assert [p.code for p in report.warnings] == ["double_encoded"]
    assert [(t.name, t.parameters["required"]) for t in conv.tools] == [
        ("cancel_order", ["order_number", "reason"]), ("check_order_status", ["order_number"])]
    result = ingest([path], scrub=False)
    assert not result.report.ok and [p.code for p in result.report.errors] == ["no_assistant_message"]


def test_evicted_history_is_read_as_the_earlier_calls_it_was():
    """Real file (fixtures/README.md): 91 stored messages, 11 in context; the 75 evicted non-system messages
    hold 25 of the 28 assistant messages. Every assistant message is one call, none silently skipped."""
    path = FIX / "letta_memgpt_with_convo.af"
    raw = json.loads(path.read_text(encoding="utf-8"))
    stored, in_ctx = raw["messages"], set(raw["in_context_message_indices"])
    assistants = [i for i, m in enumerate(stored) if m["role"] == "assistant"]
    evicted = [i for i, m in enumerate(stored) if i not in in_ctx and m["role"] != "system"]
    assert (len(stored), len(in_ctx), len(assistants), len(evicted)) == (91, 11, 28, 75)  # by hand too
    n_tool_calls = sum(len(stored[i].get("tool_calls") or []) for i in assistants)
    result = ingest([path], scrub=False)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (1, len(assistants), n_tool_calls)
    (warn,) = [w for w in result.report.warnings if w.code == "history_rebuilt"]
    assert "75 of 91" in warn.message and "25 earlier call(s)" in warn.message
    calls = result.conversations[0].explicit_calls
    # the call right after the first memory edit saw the system prompt rewritten by it (stored message 6)
    second_edit = next(c for c in calls if c.completion.text.startswith("I've updated the user's name"))
    assert second_edit.context[0].text == stored[6]["content"][0]["text"]
    assert [m.role for m in second_edit.context].count("system") == 1


def test_evicted_history_after_an_earlier_eviction_is_an_error():
    raw = json.loads((FIX / "letta_memgpt_with_convo.af").read_text(encoding="utf-8"))
    raw["messages"][11]["content"][0]["text"] = '{"type": "system_alert", "message": "summary"}'
    (conv,), report = parse_text("letta", json.dumps(raw), "a.af")
    assert [(p.code, p.field) for p in report.errors] == [("history_not_read", "messages")]
    assert len(list(conv.calls())) == 3
