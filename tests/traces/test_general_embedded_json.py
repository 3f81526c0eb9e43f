"""JSON records printed whole inside a text log (issue 30; docs/traces.md, "JSON inside a text log"): a test
generator's log (CoverUp's ``coverup-log``: ``---- <time> <file:lines> ----`` headers, each request body and
response body pretty-printed below one) is read as its request/response pairs, chained into conversations; the log's
own lines are not read (counted); so is a tool's Markdown report of its bodies (headings, lists and tables around
JSON code blocks, no prose); a Markdown document quoting JSON in a code block among prose, and a log printing one
object, are not read this way. Hand-made logs in those layouts."""

from __future__ import annotations

import json

from drafters.traces.formats._embedded_json import embedded_records
from drafters.traces.ingest import ingest

from .conftest import codes, totals

TASK = {"role": "user", "content": "Write pytest tests covering lines 6-17 of errors.py."}
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_info", "arguments": '{"name": "Err"}'}}
TOOLS = [{"type": "function", "function": {"name": "get_info", "description": "Returns information about a symbol.",
                                           "parameters": {"type": "object", "properties": {"name": {"type": "string"}}}}}]


def _response(message: dict) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}]}


def _log() -> str:
    first = {"model": "gpt-4o", "temperature": 0, "messages": [TASK], "tools": TOOLS}
    answer1 = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    second = {**first, "messages": [TASK, answer1, {"role": "tool", "tool_call_id": "call_1", "content": "class Err"}]}
    answer2 = {"role": "assistant", "content": "```python\ndef test_err():\n    assert Err\n```"}
    parts = ["---- 2024-09-07T18:36:16 startup ----", "Command: coverup --model gpt-4o errors.py"]
    for body in (first, _response(answer1), second, _response(answer2)):
        parts += ["---- 2024-09-07T18:36:18 errors.py:6-17 ----", json.dumps(body, indent=2)]
    parts += ["---- 2024-09-07T18:36:23 errors.py:6-17 ----", "Saved as coverup-tests/test_coverup_1.py", ""]
    return "\n".join(parts)


def test_a_log_of_request_and_response_bodies_is_read_as_its_calls(tmp_path):
    path = tmp_path / "coverup-log-1"
    path.write_text(_log())
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert [p.name for p in first.completion.tool_calls] == ["get_info"] and [t.name for t in first.tools] == ["get_info"]
    assert [m.role for m in second.context] == ["user", "assistant", "tool"]
    assert "text_not_read" in codes(result, "warnings")


def test_a_markdown_document_quoting_json_or_a_log_of_one_object_is_not_read_this_way():
    quoted = "# Notes\n\nI sent this request:\n\n```json\n" + json.dumps({"messages": [TASK]}, indent=2) + \
        "\n```\n\nand the model answered:\n\n```json\n" + \
        json.dumps(_response({"role": "assistant", "content": "ok"}), indent=2) + "\n```\n"
    assert embedded_records(quoted) is None  # prose around the blocks: a transcript quoting JSON
    one = "---- start ----\n" + json.dumps({"messages": [TASK]}, indent=2) + "\n"
    assert embedded_records(one) is None


def test_a_markdown_report_of_request_and_response_bodies_is_read_as_its_calls(tmp_path):
    """A tool's Markdown rendering of its model I/O (Starcode's round transcript): headings, ``- key: value`` lists
    and a timeline table around JSON code blocks, no prose; the bodies are its records."""
    first = {"model": "kimi-k2.5", "messages": [TASK], "tools": TOOLS}
    answer1 = {"role": "assistant", "content": "", "tool_calls": [CALL]}
    second = {**first, "messages": [TASK, answer1, {"role": "tool", "tool_call_id": "call_1", "content": "class Err"}]}
    events = [{"phase": "tool_result", "tool_call_id": "call_1", "ok": True}]
    parts = ["# Model I/O Round Transcript", "", "- trace_id: `793c`", "", "| ts | phase |", "| --- | --- |",
             "| 14:55:02 | model_request |", ""]
    for n, (request, answer) in enumerate(((first, answer1), (second, {"role": "assistant", "content": "Done."}))):
        parts += [f"## Round {n}", "", "### Agent -> Model (request)", "", "```json", json.dumps(request, indent=2),
                  "```", "", "### Model -> Agent (response)", "", "```json",
                  json.dumps({"finish_reason": "stop", "message": answer}, indent=2), "```", ""]
        parts += ["### Tool Events", "", "```json", json.dumps(events, indent=2), "```", ""] if n == 0 else []
    path = tmp_path / "round-transcript.md"
    path.write_text("\n".join(parts))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first_call, second_call = result.conversations[0].calls()
    assert [p.name for p in first_call.completion.tool_calls] == ["get_info"]
    assert [m.role for m in second_call.context] == ["user", "assistant", "tool"]
    assert "text_not_read" in codes(result, "warnings")
