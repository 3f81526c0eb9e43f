"""Responses API records chained by ``previous_response_id`` (``drafters/traces/formats/_previous_responses.py``):
each response's ``input`` holds only what is new; the server prepends the previous response's context and output.
Read record by record, each later call's context was a tool output or a user line alone (one conversation per
response, ``ok``: found by a new-user trial); the general path now rebuilds the contexts the model saw."""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest

from .conftest import codes, totals

TOOLS = [{"type": "function", "name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]


def _response(n: int, previous: str | None, inputs, output) -> dict:
    return {"id": f"resp_{n}", "object": "response", "status": "completed", "model": "o4-mini",
            "previous_response_id": previous, "store": True, "input": inputs, "output": output, "tools": TOOLS}


def _chain() -> list[dict]:
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "search",
            "arguments": '{"q": "2018 World Cup winner"}'}
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Need to search."}]}

    def said(n, text):
        return [{"type": "message", "id": f"msg_{n}", "role": "assistant",
                 "content": [{"type": "output_text", "text": text}]}]
    return [_response(1, None, [{"role": "user", "content": "Who won the 2018 World Cup?"}], [reasoning, call]),
            _response(2, "resp_1", [{"type": "function_call_output", "call_id": "call_1", "output": "France, 4-2."}],
                      said(2, "France won.")),
            _response(3, "resp_2", "Score?", said(3, "4-2 against Croatia."))]


def test_each_context_is_rebuilt_from_the_responses_it_continues(tmp_path):
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _chain()))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 3, 1), codes(result)
    assert "previous_responses_prepended" in codes(result, "warnings")
    last = list(result.conversations[0].calls())[-1]
    assert [m.role for m in last.context] == ["user", "assistant", "tool", "assistant", "user"]
    assert last.context[-1].text == "Score?" and last.completion.text == "4-2 against Croatia."


def test_a_response_continuing_one_not_in_the_file_is_refused(tmp_path):
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _chain()[1:]))  # resp_1 missing
    result = ingest([path], scrub=False, dedup=False)
    # resp_3 continues resp_2, whose own context is lost with resp_1: both refused, never read in part
    assert codes(result) == ["previous_response_not_in_file"] * 2 and not result.conversations


def test_a_response_object_holding_a_multi_turn_input_keeps_its_own_output(tmp_path):
    """A Responses object whose ``input`` holds earlier turns: its ``output`` is the call's answer (the Responses
    reader read the input's turns and dropped the output, ``ok`` with the last call missing). Logged with the whole
    history each time (``store: false``), the responses are one conversation, each call once (the answer's model
    name, which its copy in the next input lacks, does not split it)."""
    turns = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
             {"role": "user", "content": "Bye"}]

    def said(text):
        return [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}]
    first = {"id": "resp_1", "object": "response", "model": "gpt-4.1-mini", "input": turns[:1], "output": said("Hello!")}
    second = {"id": "resp_2", "object": "response", "model": "gpt-4.1-mini", "input": turns, "output": said("Goodbye!")}
    path = tmp_path / "responses.jsonl"
    path.write_text(json.dumps(second) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 0), codes(result)
    assert list(result.conversations[0].calls())[-1].completion.text == "Goodbye!"
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 0), codes(result)


def test_a_chain_logged_as_request_and_response_records(tmp_path):
    """A client logging ``responses.create``'s arguments and result as ``{"request", "response"}``: the request
    names ``previous_response_id``, the response its ``id`` (was read record by record, ``ok``)."""
    rows = []
    for n, (previous, ask, answer) in enumerate([(None, "Capital of France?", "Paris."),
                                                 ("resp_0", "And Italy?", "Rome.")]):
        rows.append({"request": {"model": "gpt-4.1", "previous_response_id": previous,
                                 "input": [{"role": "user", "content": ask}]},
                     "response": {"id": f"resp_{n}", "object": "response", "output": [
                         {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}]}})
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 0), codes(result)
    last = list(result.conversations[0].calls())[-1]
    assert [m.text for m in last.context] == ["Capital of France?", "Paris.", "And Italy?"]
