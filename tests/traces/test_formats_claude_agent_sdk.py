"""Claude Agent SDK message objects as programs log them (``claude_agent_sdk``; docs/traces.md, "Supported
formats"). Documents are hand-made in two loggers' layouts (a harness's envelope ``{timestamp, type, content:
{_type, ...}}`` with blocks dumped by ``dataclasses.asdict``, so without a type; one ``type``-named message per JSON
line), not copies of real files."""

from __future__ import annotations

import json

from drafters.traces.model import ReasoningPart, ToolResultPart

from .conftest import codes, ingest_json, totals


def _env(name: str, **fields) -> dict:
    return {"timestamp": "2025-08-27T12:47:18", "type": name, "content": {"_type": name, **fields}}


RUN = [
    _env("SystemMessage", subtype="init", data={"type": "system", "session_id": "s-1", "tools": ["Bash"]}),
    _env("AssistantMessage", content=[{"thinking": "List first.", "signature": "sig"}], model="claude-sonnet-4"),
    _env("AssistantMessage", content=[{"text": "I'll list the registries."}], model="claude-sonnet-4"),
    _env("AssistantMessage", content=[{"id": "toolu_1", "name": "list_registries", "input": {}}], model="claude-sonnet-4"),
    _env("UserMessage", content=[{"tool_use_id": "toolu_1", "content": [{"type": "text", "text": "5 registries"}],
                                  "is_error": None}]),
    _env("AssistantMessage", content=[{"text": "There are 5 registries."}], model="claude-sonnet-4"),
    _env("ResultMessage", subtype="success", session_id="s-1", result="There are 5 registries.", num_turns=2),
]


def test_an_sdk_run_in_a_harness_envelope_with_the_prompt_beside_it(tmp_path):
    result = ingest_json(tmp_path, {"scenario": "registries", "user_intent": "Which registries exist?", "messages": RUN})
    assert result.report.ok, codes(result)
    assert result.report.formats == {"claude_agent_sdk": 1}
    assert totals(result.conversations) == (1, 2, 1)  # one reply written as three messages is one call
    first, second = result.conversations[0].calls()
    assert [(m.role, m.text) for m in first.context] == [("user", "Which registries exist?")]
    assert isinstance(first.completion.parts[0], ReasoningPart) and first.completion.tool_calls[0].name == "list_registries"
    (res,) = second.context[-1].parts
    assert isinstance(res, ToolResultPart) and res.call_id == "toolu_1" and res.content == "5 registries"
    assert second.completion.text == "There are 5 registries."  # the ResultMessage's copy is not a call


def test_one_message_per_line_with_a_user_prompt(tmp_path):
    lines = [{"type": "UserMessage", "content": "Which registries exist?"},
             {"type": "AssistantMessage", "content": [{"type": "TextBlock", "text": "Five."}], "model": "m"},
             {"type": "ResultMessage", "result": "Five.", "session_id": "s-2"}]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    from drafters.traces.ingest import ingest

    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 1, 0) and result.conversations[0].id == "s-2"


def test_no_prompt_sub_agents_and_unknown_blocks_are_errors(tmp_path):
    result = ingest_json(tmp_path, {"messages": RUN})  # the stream never echoes query()'s prompt
    assert not result.report.ok and "prompt_not_recorded" in codes(result)
    nested = [*RUN[:5], _env("AssistantMessage", content=[{"text": "sub"}], parent_tool_use_id="toolu_1"), *RUN[5:]]
    result = ingest_json(tmp_path, {"prompt": "Which?", "messages": nested}, name="nested.json")
    assert "subagent_not_read" in codes(result) and totals(result.conversations) == (1, 2, 1)
    odd = [*RUN[:2], _env("AssistantMessage", content=[{"image_data": "..."}]), *RUN[5:]]
    result = ingest_json(tmp_path, {"prompt": "Which?", "messages": odd}, name="odd.json")
    assert not result.report.ok and "unknown_content" in codes(result)
