"""A recorder's log of LLM calls beside records of another kind (issue 30; docs/traces.md, "Files of formats with
no module"): Agent Cassette writes one line per wrapped call, the model's (``openai.responses.create``) and the
application's own functions (``flowfuse.deploy``), and a failed request as a line with an ``error`` and no result.
The general path reads the calls, counts the other records (``records_not_calls``) and skips the failed request
(``failed_turn_skipped``), whatever path its request kept its messages at. Lines are hand-made in that layout."""

from __future__ import annotations

import json

from .conftest import codes, totals


def _call(prompt: str, answer: str | None, key: str = "input") -> dict:
    line = {"cassette_version": 1, "call_name": "openai.responses.create", "request_hash": f"h{len(prompt)}",
            "args_preview": [{"model": "gpt-4o", key: [{"role": "system", "content": "You write Node-RED flows."},
                                                       {"role": "user", "content": prompt}]}]}
    if answer is None:
        return {**line, "error": {"name": "Error", "message": "400 Unsupported parameter: 'response_format'."}}
    return {**line, "result": {"object": "response", "status": "completed", "output": [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}]}}


def _deploy(flow_id: str) -> dict:
    return {"cassette_version": 1, "call_name": "flowfuse.deploy", "request_hash": f"d{flow_id}",
            "args_preview": [{"id": flow_id, "type": "tab", "nodes": []}], "result": {"deployed": True}}


def test_calls_beside_application_records_and_a_failed_request(tmp_path):
    from drafters.traces.ingest import ingest

    lines = [_call("Listen on /hello", None, key="messages"), _call("Uppercase the payload", '[{"id": "f1"}]'),
             _deploy("f1"), _call("Add a debug node", '[{"id": "f2"}]'), _deploy("f2")]
    path = tmp_path / "node-red-flow.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 2, 0)
    assert {"records_not_calls", "failed_turn_skipped"} <= set(codes(result, "warnings"))


def test_a_record_of_another_kind_holding_messages_is_still_read(tmp_path):
    # the kind key tells other records apart only where they hold no messages: a second model's calls are calls
    from drafters.traces.ingest import ingest

    other = {**_call("Add a debug node", '[{"id": "f2"}]'), "call_name": "anthropic.messages.create"}
    lines = [_call("Uppercase the payload", '[{"id": "f1"}]'), other, _deploy("f1")]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 2, 0)


def _logged(messages: list[dict], response: str) -> dict:
    return {"timestamp": "2025-09-22T19:35:28", "model": "deepseek-chat", "messages": messages, "response": response}


def test_responses_logged_without_the_tool_calls_the_next_request_shows_are_refused(tmp_path):
    """myagent's LLM log: each record the messages sent and the reply's text with `` Tools: [...]`` appended; the tool
    calls exist only in the next request's assistant message. Read as request/response records, every call would be
    `ok` without its tool calls; read as message lists, each record's own reply would be lost."""
    from drafters.traces.ingest import ingest

    system = {"role": "system", "content": "You research questions with web_search."}
    user = {"role": "user", "content": "Find OpenAI's latest release."}
    turn = {"role": "assistant", "content": "Let me search.", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "web_search", "arguments": '{"q": "OpenAI"}'}}]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "GPT-5 was released."}
    records = [_logged([system, user], "Let me search. Tools: ['web_search']"),
               _logged([system, user, turn, result], "OpenAI released GPT-5.")]
    path = tmp_path / "llm_response.json"
    path.write_text(json.dumps(records))
    got = ingest([path], scrub=False, dedup=False)
    assert not got.report.ok and totals(got.conversations) == (0, 0, 0)
    assert "tool_calls_not_recorded" in str(got.report.files)  # the general path's reason, among the candidates
    # the same log whose replies the next request sends unchanged (no tool calls) is read, one conversation
    plain = {"role": "assistant", "content": "Let me think."}
    records = [_logged([system, user], "Let me think."),
               _logged([system, user, plain, {"role": "user", "content": "And?"}], "GPT-5.")]
    path.write_text(json.dumps(records))
    got = ingest([path], scrub=False, dedup=False)
    assert got.report.ok, codes(got)
    assert totals(got.conversations) == (1, 2, 0)
