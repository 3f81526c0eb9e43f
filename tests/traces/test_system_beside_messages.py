"""A system prompt stored beside the message list is the first system message (openai_chat, general path,
declared mappings); a tool result the reading cannot link to its call is never kept (docs/traces.md)."""

from __future__ import annotations

import json
from pathlib import Path

from drafters.traces.formats._system_prompts import sibling_system, system_text
from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import mapping_from_dict
from drafters.traces.model import Message, TextPart

from .conftest import codes

SHAPES = Path(__file__).parent / "fixtures" / "shapes"
CHAT = SHAPES / "chat_with_system_beside.json"
PARTS = SHAPES / "parts_tool_results.jsonl"



def _write(tmp_path, name, value) -> str:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value, indent=2))
    return str(path)


def test_system_text_reads_text_only():
    assert system_text("Be brief.") == "Be brief."
    assert system_text([{"type": "text", "text": "Be "}, "brief."]) == "Be brief."
    assert system_text({"parts": [{"text": "Be brief."}]}) == "Be brief."
    assert system_text({"os": "linux"}) is None and system_text("  ") is None and system_text(None) is None


def test_sibling_system_is_added_once_and_a_different_one_is_named():
    prompt, not_read = sibling_system({"system_prompt": "A", "messages": []})
    assert [m.role for m in prompt] == ["system"] and not not_read
    head = [Message("system", [TextPart("A")])]
    assert sibling_system({"system_prompt": "A"}, head) == ([], [])  # a copy of the list's own prompt
    assert sibling_system({"system_prompt": "B"}, head) == ([], ["system_prompt"])
    prompt, not_read = sibling_system({"system": "A", "instructions": "B"})
    assert prompt[0].parts[0].text == "A" and not_read == ["instructions"]


def test_openai_chat_reads_the_system_prompt_beside_its_messages():
    result = ingest([str(CHAT)], scrub=False)
    assert result.report.ok, result.report.errors
    assert codes(result, "warnings").count("marker_skipped") == 1  # {"role": "end_of_session"} holds nothing
    (conv,) = result.conversations
    assert conv.source.format == "openai_chat"
    calls = list(conv.calls())
    assert [[m.role for m in c.context] for c in calls] == [["system", "user"], ["system", "user", "assistant", "tool"]]
    assert calls[0].context[0].parts[0].text == "You are a careful file clerk."
    (tool,) = conv.tools
    assert tool.description == "List a folder" and "path" in tool.parameters["properties"]


def test_a_marker_with_data_stays_an_error(tmp_path):
    doc = json.loads(CHAT.read_text())
    doc["messages"][-1]["note"] = "closed by the user"
    result = ingest([_write(tmp_path, "chat.json", doc)], scrub=False)
    assert not result.report.ok and "not_an_object" in codes(result)


def test_a_different_system_prompt_beside_the_list_is_warned_not_dropped(tmp_path):
    doc = json.loads(CHAT.read_text())
    doc["messages"].insert(0, {"role": "system", "content": "You are someone else."})
    result = ingest([_write(tmp_path, "chat.json", doc)], scrub=False)
    assert "system_prompt_not_read" in codes(result, "warnings")
    (conv,) = result.conversations
    assert [m.role for m in conv.messages].count("system") == 1


def test_general_path_reads_a_system_prompt_spelt_system_prompt(tmp_path):
    doc = {"session": "x", "system_prompt": "Answer in French.",
           "turns": [{"speaker": "human", "text": "Hi"}, {"speaker": "bot", "text": "Salut"}]}
    result = ingest([_write(tmp_path, "log.json", doc)], scrub=False)
    assert result.report.ok, result.report.errors
    (conv,) = result.conversations
    assert conv.source.format == "generic"
    assert [m.role for m in conv.messages] == ["system", "user", "assistant"]


def test_declared_mapping_reads_the_system_prompt_beside_its_list(tmp_path):
    rec = {"instructions": "Use metric units.",
           "history": [{"who": "u", "said": "Height of a door?"}, {"who": "a", "said": "About 2 m."}]}
    mapping = {"name": "m", "messages": "$.history", "role": "who", "roles": {"u": "user", "a": "assistant"},
               "content": "said"}
    result = ingest([_write(tmp_path, "h.jsonl", json.dumps(rec))], scrub=False, mapping=mapping_from_dict(mapping))
    assert result.report.ok, result.report.errors
    (conv,) = result.conversations
    assert [m.role for m in conv.messages] == ["system", "user", "assistant"]
    assert conv.messages[0].parts[0].text == "Use metric units."
    # declared elsewhere: the sibling is not read twice, and a second prompt is named
    declared = {**mapping, "prompt": {"system": "$.instructions"}}
    result = ingest([_write(tmp_path, "h2.jsonl", json.dumps({**rec, "system": "Use imperial units."}))],
                    scrub=False, mapping=mapping_from_dict(declared))
    (conv,) = result.conversations
    assert [m.role for m in conv.messages] == ["system", "user", "assistant"]
    assert "system_prompt_not_read" in codes(result, "warnings")


def test_tool_results_held_as_message_parts_are_linked_to_their_calls():
    result = ingest([str(PARTS)], scrub=False)
    assert result.report.ok, result.report.errors
    (conv,) = result.conversations
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    (res,) = conv.messages[2].tool_results
    assert res.call_id == "fc-1" and json.loads(res.content) == {"size": 512}


def test_a_tool_result_that_cannot_be_linked_is_not_kept(tmp_path):
    mapping = {"name": "m", "records": "messages", "messages": "$", "group": "$.sid", "role": "kind",
               "roles": {"user": "user", "assistant": "assistant", "tool_result": "tool"},
               "content": "message.parts", "tool_result": {"id": "tool_call_id", "content": "kind"}}
    result = ingest([str(PARTS)], scrub=False, mapping=mapping_from_dict(mapping))  # result content points at the wrong key
    assert "tool_result_not_found" in codes(result)
    assert result.conversations == []  # never kept with the record's text as the result


def test_one_line_record_of_another_reader_keeps_its_system_prompt_and_messages(tmp_path):
    doc = json.loads(CHAT.read_text())
    doc["messages"].pop()  # no marker
    result = ingest([_write(tmp_path, "chat.jsonl", json.dumps(doc))], scrub=False)
    (conv,) = result.conversations  # tools with input_schema: first offered to the Anthropic records reader
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool", "assistant"]
