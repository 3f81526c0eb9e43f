"""Tool calls and results keyed by call id (issue 30; docs/traces.md, "Calls and results keyed by id"): an
assistant message's ``tool_calls`` as a map of call id -> MCP request (``{method: tools/call, params: {name,
arguments}}``), the next user turn's ``tool_results`` as a map of call id -> MCP result (``{content, isError}``),
reasoning as text blocks under ``channels.reasoning`` (fast-agent's history). Documents are hand-made in that
layout, not copies of real files."""

from __future__ import annotations

import json

from drafters.traces.formats._spellings import calls_of, keyed_by_id
from drafters.traces.ingest import ingest

from .conftest import codes, totals


def _history():
    call = {"method": "tools/call", "params": {"name": "lookup", "arguments": {"user": "ada"}}}
    return {"messages": [
        {"role": "user", "content": [{"type": "text", "text": "Which orgs is ada in?"}], "is_template": False},
        {"role": "assistant", "content": [], "tool_calls": {"c7": call},
         "channels": {"reasoning": [{"type": "text", "text": "I should look her up."}]}, "stop_reason": "toolUse"},
        {"role": "user", "content": [], "tool_results": {"c7": {"content": [{"type": "text", "text": "orgs: x, y"}],
                                                              "isError": False}}},
        {"role": "assistant", "content": [{"type": "text", "text": "She is in x and y."}], "stop_reason": "endTurn"},
    ]}


def test_calls_and_results_keyed_by_call_id(tmp_path):
    path = tmp_path / "history.json"
    path.write_text(json.dumps(_history()))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    (call,) = first.completion.tool_calls
    assert (call.id, call.name, call.arguments) == ("c7", "lookup", {"user": "ada"})
    assert first.completion.reasoning == "I should look her up."
    assert [m.role for m in second.context] == ["user", "assistant", "tool"]
    (res,) = second.context[2].tool_results
    assert (res.call_id, res.content, res.is_error) == ("c7", "orgs: x, y", False)


def test_a_map_is_keyed_by_id_only_when_no_key_is_a_field():
    assert keyed_by_id({"c1": {"name": "f"}, "c2": {"name": "g"}}) is not None
    assert keyed_by_id({"name": "f", "arguments": {}}) is None  # one call, not a map
    assert keyed_by_id({"c1": "text"}) is None
    (legacy,) = calls_of({"name": "f", "arguments": "{}"})  # a legacy function_call object: one call
    assert legacy.name == "f"
