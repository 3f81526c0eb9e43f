"""A request/response record keeping the request's messages twice (issue 30; docs/traces.md, "Files of formats with
no module"): ProAgent's ``LLM_inout_pair`` records hold ``input.messages`` and the same list again under
``input.base_kwargs.messages`` beside the API's response. Two equal input lists are one input (the shortest path);
two different ones are not guessed. Records are hand-made in that layout."""

from __future__ import annotations

import json

from .conftest import codes, ingest_json, totals

MESSAGES = [{"role": "system", "content": "You are an RPA agent."}, {"role": "user", "content": "Sync the sheet."}]
RECORD = {"input": {"base_kwargs": {"model": "gpt-4-32k", "messages": MESSAGES}, "messages": MESSAGES,
                    "functions": [{"name": "function_define", "description": "Define functions.", "parameters": {}}]},
          "output": {"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "function_call", "message": {
              "role": "assistant", "function_call": {"name": "function_define", "arguments": json.dumps({"a": 1})}}}]}}


def test_the_request_written_twice_is_read_once(tmp_path):
    result = ingest_json(tmp_path, RECORD)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 1, 1)
    (call,) = result.conversations[0].calls()
    assert [m.role for m in call.context] == ["system", "user"] and call.completion.tool_calls[0].name == "function_define"


def test_two_different_requests_are_not_guessed(tmp_path):
    record = json.loads(json.dumps(RECORD))  # two lists, not one object twice
    record["input"]["base_kwargs"]["messages"][1] = {"role": "user", "content": "Another task."}
    result = ingest_json(tmp_path, record)
    assert not result.report.ok and totals(result.conversations) == (0, 0, 0)
