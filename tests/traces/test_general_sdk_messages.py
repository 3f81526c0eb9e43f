"""Message lists as SDKs serialize them, read by the general path (issue 30; docs/traces.md, "Content blocks"):
each case was read ``ok`` with content lost or wrong in a new-user trial (LangChain's reasoning in
``additional_kwargs``, LlamaIndex's tool-call and thinking blocks, the AI SDK v5's typed tool outputs, Anthropic's
redacted thinking, Mistral's thinking chunks).

Every record below is hand-made in the layout each SDK writes, not a copy of a real file.
"""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest
from drafters.traces.model import ToolResultPart

from .conftest import codes, totals


def _read(tmp_path, doc):
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    return result


def test_langchain_reasoning_in_additional_kwargs(tmp_path):
    """``messages_to_dict`` of a DeepSeek-R1 reply (``reasoning_content``) and of an OpenAI Responses one (a
    reasoning item with its summary): the reasoning was dropped."""
    def ai(content: str, kwargs: dict) -> dict:
        return {"type": "ai", "data": {"type": "ai", "content": content, "additional_kwargs": kwargs,
                                       "response_metadata": {}, "tool_calls": [], "invalid_tool_calls": []}}
    human = {"type": "human", "data": {"type": "human", "content": "Is 91 prime?", "additional_kwargs": {}}}
    for kwargs, reasoning in [({"reasoning_content": "91 = 7 * 13."}, "91 = 7 * 13."),
                              ({"reasoning": {"id": "rs_1", "type": "reasoning", "summary": [
                                  {"type": "summary_text", "text": "Check small factors."}]}}, "Check small factors.")]:
        result = _read(tmp_path, [human, ai("No, 91 = 7 x 13.", kwargs)])
        assert next(result.conversations[0].calls()).completion.reasoning == reasoning


def test_llamaindex_tool_call_and_thinking_blocks(tmp_path):
    """LlamaIndex's ``ChatMessage`` blocks: a ``ToolCallBlock`` keeps its arguments in ``tool_kwargs`` (read as
    ``add {}``), a ``ThinkingBlock`` its text in ``content`` (dropped)."""
    doc = [{"role": "user", "blocks": [{"block_type": "text", "text": "Add 3 and 4."}]},
           {"role": "assistant", "blocks": [
               {"block_type": "thinking", "content": "Use the add tool.", "num_tokens": None},
               {"block_type": "tool_call", "tool_call_id": "c1", "tool_name": "add", "tool_kwargs": {"a": 3, "b": 4}}]},
           {"role": "tool", "blocks": [{"block_type": "text", "text": "7"}], "additional_kwargs": {"tool_call_id": "c1"}},
           {"role": "assistant", "blocks": [{"block_type": "text", "text": "3 + 4 = 7."}]}]
    result = _read(tmp_path, doc)
    first = next(result.conversations[0].calls()).completion
    assert first.tool_calls[0].arguments == {"a": 3, "b": 4} and first.reasoning == "Use the add tool."


def test_ai_sdk_typed_tool_outputs_are_their_value(tmp_path):
    """AI SDK v5 model messages: a tool result's ``output`` is ``{type: json|text|error-text, value}``, and the
    model is sent the value (the wrapper was in the context)."""
    doc = [{"role": "user", "content": [{"type": "text", "text": "List /tmp and read notes.txt"}]},
           {"role": "assistant", "content": [
               {"type": "tool-call", "toolCallId": "L", "toolName": "listDir", "input": {"path": "/tmp"}},
               {"type": "tool-call", "toolCallId": "R", "toolName": "readFile", "input": {"path": "/tmp/notes.txt"}}]},
           {"role": "tool", "content": [
               {"type": "tool-result", "toolCallId": "L", "toolName": "listDir",
                "output": {"type": "json", "value": ["notes.txt", "a.log"]}},
               {"type": "tool-result", "toolCallId": "R", "toolName": "readFile",
                "output": {"type": "error-text", "value": "EACCES: permission denied"}}]},
           {"role": "assistant", "content": [{"type": "text", "text": "notes.txt is not readable."}]}]
    result = _read(tmp_path, doc)
    last = list(result.conversations[0].calls())[-1]
    results = [p.content for m in last.context for p in m.parts if isinstance(p, ToolResultPart)]
    assert [json.loads(results[0]), results[1]] == [["notes.txt", "a.log"], "EACCES: permission denied"]


def test_redacted_and_chunked_thinking_are_no_text_of_the_wrong_kind(tmp_path):
    """Anthropic's ``redacted_thinking`` (``{type, data}``) was read as a tagged variant, its encrypted data as
    reasoning text; Mistral's thinking (a list of text chunks) was kept as its JSON."""
    doc = [{"role": "user", "content": "Delete the temp files."},
           {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
                                             {"type": "thinking", "thinking": "List, then delete.", "signature": "s1"},
                                             {"type": "text", "text": "Listing them first."}]},
           {"role": "user", "content": "Is 221 prime?"},
           {"role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "13 * 17."}]},
                                             {"type": "text", "text": "No."}]}]
    result = _read(tmp_path, doc)
    assert totals(result.conversations) == (1, 2, 0)
    assert [c.completion.reasoning for c in result.conversations[0].calls()] == ["List, then delete.", "13 * 17."]


def test_cohere_v2_documents_and_plan_and_bedrock_cache_markers(tmp_path):
    """Cohere v2 messages: a tool result's ``document`` blocks hold its data (were placeholders: the results gone
    from the context) and ``tool_plan`` is the reasoning before the calls (dropped). Bedrock Converse's
    ``cachePoint`` blocks mark a prompt cache, no content (the file was refused, ``unknown_content``)."""
    call = {"id": "w1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}}
    doc = [{"role": "user", "content": "Weather in Oslo?"},
           {"role": "assistant", "tool_plan": "I will look up the weather.", "tool_calls": [call]},
           {"role": "tool", "tool_call_id": "w1", "content": [{"type": "document", "document": {
               "data": "{\"temp\": 7}", "id": "doc-1"}}]},
           {"role": "assistant", "content": [{"type": "text", "text": "It is 7 C in Oslo."}]}]
    result = _read(tmp_path, doc)
    first, second = result.conversations[0].calls()
    assert first.completion.reasoning == "I will look up the weather."
    assert [p.content for m in second.context for p in m.parts if isinstance(p, ToolResultPart)] == ["{\"temp\": 7}"]
    use = {"toolUse": {"toolUseId": "t1", "name": "create_bucket", "input": {"name": "a"}}}
    bedrock = {"modelId": "anthropic.claude-3-5-sonnet", "messages": [
        {"role": "user", "content": [{"text": "Create bucket a."}, {"cachePoint": {"type": "default"}}]},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "created"}]}}]},
        {"role": "assistant", "content": [{"text": "Bucket a is created."}]}],
        "toolConfig": {"tools": [{"toolSpec": {"name": "create_bucket", "inputSchema": {"json": {"type": "object"}}}}]}}
    result = _read(tmp_path, bedrock)
    assert totals(result.conversations) == (1, 2, 1)
