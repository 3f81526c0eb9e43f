"""Request/response logs and executed calls read by the general path (issue 30; docs/traces.md, "Logs of
calls: order, task spans, calls made twice" and "Calls recorded with their results"):

- a log not in call order (an event export sorted by time, descending; shuffled records) is read in order of
  context length, so each session's calls form one conversation (``calls_out_of_order`` warning);
- records holding no part of a call (a root task span, an operation span) beside the calls' records are
  skipped and counted (``records_not_calls``), not refused;
- two identical records with other records between them are the same request made twice (two calls); an
  identical copy right after its record is still not guessed (``ambiguous_shape``);
- an assistant message that keeps the calls its harness ran with their results (``[{request: {api_name,
  parameters}, response, exception}]``) is read as calls, each answered before the next, before its text.

Every record below is hand-made, not a copy of a real file.
"""

from __future__ import annotations

import json

from drafters.traces.formats._spellings import executed_calls
from drafters.traces.ingest import ingest
from drafters.traces.model import ToolCallPart, ToolResultPart

from .conftest import codes, inferred_mapping_totals, totals

SYSTEM = {"role": "system", "content": "You are a research agent."}


def _event(session: str, history: list, answer: dict, t: float) -> dict:
    return {"event_type": "model", "session_id": session, "start_time": t,
            "inputs": {"chat_history": history}, "outputs": {"role": "assistant", **answer}}


def _session(session: str, t0: float) -> list[dict]:
    """Three calls of one agent loop, oldest first: a call, its result, the answer, a follow-up."""
    h1 = [SYSTEM, {"role": "user", "content": f"Find the {session} report."}]
    a1 = {"content": None, "tool_calls": [{"id": f"{session}-c1", "type": "function",
                                           "function": {"name": "search", "arguments": "{\"q\": \"report\"}"}}]}
    h2 = [*h1, {"role": "assistant", **a1}, {"role": "tool", "tool_call_id": f"{session}-c1", "content": "found"}]
    a2 = {"content": "It is in the archive."}
    h3 = [*h2, {"role": "assistant", **a2}, {"role": "user", "content": "Summarise it."}]
    a3 = {"content": "Sales rose."}
    return [_event(session, h1, a1, t0), _event(session, h2, a2, t0 + 1), _event(session, h3, a3, t0 + 2)]


def _write(tmp_path, value, name):
    path = tmp_path / name
    path.write_text(json.dumps(value))
    return path


def test_a_log_not_in_call_order_is_read_in_order_of_context_length(tmp_path):
    events = [*reversed(_session("alpha", 10.0)), *reversed(_session("beta", 0.0))]
    result = ingest([_write(tmp_path, events, "events.json")], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 6, 2)
    assert "calls_out_of_order" in codes(result, "warnings")
    first = list(result.conversations[0].calls())
    assert [c.completion.text for c in first] == ["", "It is in the archive.", "Sales rose."]
    assert [len(c.context) for c in first] == [2, 4, 6]
    # shuffled: read the same
    shuffled = [events[i] for i in (3, 0, 5, 1, 4, 2)]
    result = ingest([_write(tmp_path, shuffled, "shuffled.json")], scrub=False)
    assert totals(result.conversations) == (2, 6, 2) and "calls_out_of_order" in codes(result, "warnings")
    assert [len(c.context) for c in result.conversations[0].calls()] == [2, 4, 6]
    # the same log oldest first: read the same, without the warning
    oldest = ingest([_write(tmp_path, [*_session("alpha", 10.0), *_session("beta", 0.0)], "old.json")], scrub=False)
    assert totals(oldest.conversations) == (2, 6, 2) and "calls_out_of_order" not in codes(oldest, "warnings")


def test_unrelated_calls_are_not_relinked(tmp_path):
    """Single calls with unrelated contexts stay separate conversations in either order."""
    events = [_event(s, [{"role": "user", "content": f"Say {s}."}], {"content": s}, 0.0) for s in ("a", "b", "c")]
    result = ingest([_write(tmp_path, events, "single.json")], scrub=False)
    assert totals(result.conversations) == (3, 3, 0) and "calls_out_of_order" not in codes(result, "warnings")


def _spans() -> list[dict]:
    root = {"name": "suite-root", "type": "task", "metadata": {"scenario": "tools"}, "metrics": {"start": 0}}
    ask = {"input": [{"role": "user", "content": "Count to three."}],
           "output": {"role": "assistant", "content": [{"type": "text", "text": "1 2 3"}]}, "type": "llm"}
    tool = {"input": [{"role": "user", "content": "Weather in Paris?"}], "type": "llm",
            "output": {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather",
                                                         "input": {"city": "Paris"}}]}}
    ops = [{"name": f"{op}-operation", "type": None, "metadata": {"operation": op}} for op in ("create", "stream")]
    return [root, ops[0], ask, ops[1], dict(ask), {"name": "tool-operation", "type": None}, tool]


def test_a_wrapper_span_with_null_input_and_output_is_skipped_not_refused(tmp_path):
    # a trace document's spans: the chat span and the span wrapping it, whose input and output are null
    chat = {"type": "chat", "input": [{"role": "user", "content": "Summarise the feedback."}],
            "output": {"role": "assistant", "content": "Mostly positive."}}
    wrapper = {"type": "span", "name": "Executing Prompt Template", "input": None, "output": None}
    result = ingest([_write(tmp_path, {"name": "trace", "spans": [chat, wrapper]}, "trace.json")], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 1, 0) and "records_not_calls" in codes(result, "warnings")


def test_task_spans_beside_the_calls_are_skipped_and_identical_calls_apart_are_two_calls(tmp_path):
    result = ingest([_write(tmp_path, _spans(), "spans.json")], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 3, 1)
    assert "records_not_calls" in codes(result, "warnings")
    # an identical copy right after its record: made twice, or written twice? not guessed
    spans = _spans()
    copied = [*spans[:3], dict(spans[2]), *spans[3:]]
    result = ingest([_write(tmp_path, copied, "copied.json")], scrub=False, dedup=False)
    assert not result.report.ok and "ambiguous_shape" in codes(result)
    # a span holding text under an input key is part of a call: never skipped as a task span
    spans = _spans()
    spans[1]["input"] = "Count to three."
    result = ingest([_write(tmp_path, spans, "text_span.json")], scrub=False, dedup=False)
    assert not result.report.ok


def test_dedup_is_the_datasets_choice_after_reading(tmp_path):
    deduped = ingest([_write(tmp_path, _spans(), "spans.json")], scrub=False)
    assert totals(deduped.conversations) == (2, 2, 1) and deduped.report.counts["duplicates_dropped"] == 1


def _apis_turns() -> list[dict]:
    apis = [{"request": {"api_name": "QueryCalendar", "parameters": {"day": "monday"}},
             "response": {"events": []}, "exception": None},
            {"request": {"api_name": "CreateEvent", "parameters": {"name": "sync"}},
             "response": None, "exception": "session expired"}]
    return [{"index": 0, "role": "user", "text": "Book a sync on Monday."},
            {"index": 1, "role": "assistant", "text": "I could not book it: your session expired.", "apis": apis},
            {"index": 2, "role": "user", "text": "Thanks."},
            {"index": 3, "role": "assistant", "text": "You're welcome."}]


def test_calls_recorded_with_their_results_are_read_before_the_text(tmp_path):
    parts = executed_calls(_apis_turns()[1]["apis"])
    assert [type(p) for p in parts] == [ToolCallPart, ToolResultPart, ToolCallPart, ToolResultPart]
    assert parts[0].name == "QueryCalendar" and parts[0].arguments == {"day": "monday"}
    assert json.loads(parts[1].content) == {"events": []}
    assert parts[3].is_error and parts[3].content == "session expired"
    doc = {"name": "booking", "conversation": _apis_turns()}
    result = ingest([_write(tmp_path, doc, "talk.json")], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 4, 2)
    calls = list(result.conversations[0].calls())
    assert [len(c.completion.tool_calls) for c in calls] == [1, 1, 0, 0]
    assert calls[2].completion.text == "I could not book it: your session expired."
    assert [m.role for m in calls[2].context] == ["user", "assistant", "tool", "assistant", "tool"]
    assert "executed_calls_before_text" in codes(result, "warnings")


def test_executed_calls_need_a_call_and_its_result():
    assert executed_calls([{"request": {"api_name": "Q", "parameters": {}}}]) is None  # no result beside it
    assert executed_calls([{"request": {"url": "/x"}, "response": {}}]) is None  # no tool name
    assert executed_calls([]) is None and executed_calls("x") is None


def _gemini_record(turns: list, answer: str) -> dict:
    """A recorded Gemini ``generateContent`` request and its response (a proxy's request log)."""
    return {"url": "https://proxy.example/v1beta/models/gemini-1.5-pro:generateContent", "method": "POST",
            "body": {"systemInstruction": {"role": "system", "parts": [{"text": "You are Mary, an analyst."}]},
                     "contents": turns, "generationConfig": {"temperature": 1}},
            "response": {"candidates": [{"content": {"role": "model", "parts": [{"text": answer}]},
                                         "finishReason": "STOP", "index": 0}], "modelVersion": "gemini-1.5-pro"}}


def test_gemini_requests_and_their_candidates(tmp_path):
    """``contents`` is a request's input and a response's ``candidates[0].content`` its answer; a request
    that extends the previous one continues its conversation."""
    u1 = {"role": "user", "parts": [{"text": "Extract the name: I am Ada."}]}
    a1 = {"role": "model", "parts": [{"text": "{\"name\": \"Ada\"}"}]}
    u2 = {"role": "user", "parts": [{"text": "And her age? She is 36."}]}
    records = [_gemini_record([u1], "{\"name\": \"Ada\"}"), _gemini_record([u1, a1, u2], "{\"age\": 36}"),
               _gemini_record([{"role": "user", "parts": [{"text": "Another task."}]}], "Done.")]
    result = ingest([_write(tmp_path, records, "gemini.requests.json")], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 3, 0)
    second = list(result.conversations[0].calls())[1]
    assert [m.role for m in second.context] == ["system", "user", "assistant", "user"]
    assert second.completion.text == "{\"age\": 36}"


def test_calls_kept_under_an_unread_key_without_results_refuse_the_conversation(tmp_path):
    """Calls nested one level down (``{request: {api_name, parameters}}``) with no result beside them are not
    read as executed calls; left unread they would be lost, so the conversation is refused."""
    turns = _apis_turns()
    turns[1]["apis"] = [{"request": a["request"]} for a in turns[1]["apis"]]
    result = ingest([_write(tmp_path, {"conversation": turns}, "talk.json")], scrub=False, format="generic")
    assert not result.report.ok and "content_not_mapped" in codes(result)
    assert not result.conversations


def test_an_object_of_records_keyed_by_id(tmp_path):
    """A trajectory dump ``{id: {"traj": [...], "reward": ...}}``: each value is one record (``records:
    values``), read by the general path and by the mapping ``infer-mapping`` writes the same way."""
    def traj(q: str, steps: int) -> dict:
        msgs = [{"role": "user", "content": q}]
        for i in range(steps):
            msgs += [{"role": "assistant", "content": f"Thought: step {i}\nAction: search[{q}]"},
                     {"role": "user", "content": f"Observation: result {i}"}]
        return {"reward": steps % 2 == 0, "pred": "x", "prompt": [], "traj": msgs}
    doc = {"6238": traj("Who made it?", 1), "909": traj("Where is it?", 3), "923": traj("When?", 2)}
    path = _write(tmp_path, doc, "trajs.json")
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 6, 0)
    assert [c.id.rsplit(":", 1)[-1] for c in result.conversations] == ["$['6238']", "$['909']", "$['923']"]
    assert inferred_mapping_totals(path, "record_lists", tmp_path) == (3, 6, 0)
    # an object whose values are not all records of that shape is not read as one
    doc["config"] = {"model": "gpt-3.5", "temperature": 0}
    assert not ingest([_write(tmp_path, doc, "mixed.json")], scrub=False).report.ok


def test_a_test_report_of_named_cases_beside_its_metadata(tmp_path):
    """An agent's test results (Heurist's mesh-agent tests): named cases, each ``{input: {query}, output: {response,
    data}}``, under ``results`` beside the run's ``metadata``; a case that runs a tool directly (``input: {tool,
    tool_arguments}``, an empty response) is no model turn. Each query and its response is a call; the mapping
    ``infer-mapping`` writes (``records: values``, ``lists: $.results``) reads the file the same way."""
    def case(query: str, answer: str) -> dict:
        return {"input": {"query": query, "raw_data_only": False},
                "output": {"response": answer, "data": {"status": "success", "rates": [0.01]}},
                "status": "success"}
    results = {"by_symbol": case("Funding rate for BTC?", "0.0071% on Binance."),
               "arbitrage": case("Any arbitrage above 0.05%?", "None right now."),
               "direct_tool": {"input": {"tool": "get_rates", "tool_arguments": {"symbol": "BTC"}},
                               "output": {"response": "", "data": {"rates": [0.01]}}}}
    doc = {"metadata": {"agent": "FundingRateAgent", "total_tests": 3, "passed": 3}, "results": results}
    path = _write(tmp_path, doc, "funding_rate_agent_example.json")
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 2, 0) and "records_not_calls" in codes(result, "warnings")
    first = next(result.conversations[0].calls())
    assert first.context[0].text == "Funding rate for BTC?" and first.completion.text == "0.0071% on Binance."
    assert inferred_mapping_totals(path, "request_response", tmp_path) == (2, 2, 0)
    path = _write(tmp_path, results["by_symbol"], "allora_example.json")  # one case alone
    assert totals(ingest([path], scrub=False).conversations) == (1, 1, 0)
    doc["settings"] = {"model": {"name": "x"}, "retries": {"max": 2}}  # records beside other records: not guessed
    assert not ingest([_write(tmp_path, doc, "two.json")], scrub=False).report.ok


def test_messages_with_blocks_and_additional_kwargs(tmp_path):
    """LlamaIndex ``ChatMessage`` (a chat store ``{"store": {key: [messages]}}``): text in ``blocks`` typed by
    ``block_type``; tool calls and a result's call id in ``additional_kwargs``, as LangChain messages keep them."""
    call = {"id": "call_1", "type": "function", "function": {"name": "query_engine", "arguments": "{\"input\": \"link\"}"}}
    msgs = [{"role": "user", "additional_kwargs": {}, "blocks": [{"block_type": "text", "text": "Their link?"}]},
            {"role": "assistant", "additional_kwargs": {"tool_calls": [call]}, "blocks": []},
            {"role": "tool", "additional_kwargs": {"name": "query_engine", "tool_call_id": "call_1"},
             "blocks": [{"block_type": "text", "text": "No link in the context."}]},
            {"role": "assistant", "additional_kwargs": {}, "blocks": [{"block_type": "text", "text": "I found none."}]}]
    path = _write(tmp_path, {"store": {"user1": msgs}, "class_name": "SimpleChatStore"}, "chat_store.json")
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = result.conversations[0].calls()
    assert (first.completion.tool_calls[0].name, first.completion.tool_calls[0].arguments) == (
        "query_engine", {"input": "link"})
    assert second.context[-1].tool_results[0].call_id == "call_1"
    assert second.completion.text == "I found none."


def test_model_answer_keys_and_paths_through_numeric_keys(tmp_path):
    """A results file whose instances keep the prompt as ``query`` and the reply as ``llm_raw_response`` beside
    a reference (``ground_truth_plan``, never the answer); and a record whose call sits under a numeric key
    (``step_wise_dict: {"0": {...}}``), whose concrete path (``$.step_wise_dict.0``) reads back."""
    instances = [{"instance_id": i, "query": f"Plan {i}?", "ground_truth_plan": "(pick a)",
                  "llm_raw_response": f"Plan {i}: pick a.", "llm_correct": True} for i in range(3)]
    doc = {"task": "plan_generation", "engine": "m", "instances": instances}
    result = ingest([_write(tmp_path, doc, "results.json")], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 3, 0)
    assert [c.completion.text for conv in result.conversations for c in conv.calls()] == [
        "Plan 0: pick a.", "Plan 1: pick a.", "Plan 2: pick a."]
    steps = [{"instance_id": i, "step_wise_dict": {"0": {
        "sent_messages": [{"role": "system", "content": "Plan."}, {"role": "user", "content": f"Goal {i}?"}],
        "response_object": {"choices": [{"message": {"role": "assistant", "content": f"Plan {i}."}}]}}}}
        for i in range(2)]
    result = ingest([_write(tmp_path, {"instances": steps}, "steps.json")], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 2, 0)


def test_gemini_sdk_shorthand_contents_and_an_untyped_image(tmp_path):
    """Spans of the Python SDK's ``generate_content("...")``: ``contents`` is one part (``{"text": ...}``), the
    user's turn; an image part written ``{"image_url": {...}}`` with no type is a counted placeholder."""
    from drafters.traces.formats._spellings import block_part, contents_shorthand
    from drafters.traces.model import UnsupportedPart

    assert contents_shorthand({"input": {"contents": {"text": "Hi"}}}) == {
        "input": {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}}
    assert contents_shorthand({"contents": {"text": "Hi", "role": "user"}}) == {"contents": {"text": "Hi", "role": "user"}}
    assert isinstance(block_part({"image_url": {"url": "x.png"}}), UnsupportedPart)

    def span(contents, answer):
        return {"type": "llm", "name": "generate_content", "input": {"contents": contents, "model": "gemini"},
                "output": {"candidates": [{"content": {"role": "model", "parts": [{"text": answer}]}}]}}
    image = [{"role": "user", "parts": [{"image_url": {"url": "ship.png"}}, {"text": "Describe it."}]}]
    spans = [{"name": "root", "type": "task"}, span({"text": "Say PARIS."}, "PARIS"), span(image, "A ship.")]
    result = ingest([_write(tmp_path, spans, "spans.json")], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 2, 0)
    assert result.report.counts["unsupported_parts"] == 1


def test_query_and_response_message_lists_with_typed_call_and_result_blocks(tmp_path):
    """Azure AI evaluation's agent-converter rows: the input messages under ``query``, the run's continuation
    under ``response``; calls as ``{"type": "tool_call", "tool_call": {...}}`` blocks and results as ``{"type":
    "tool_result", "tool_result": {<the result object>}}`` in a tool message naming its call."""
    call = {"type": "tool_call", "tool_call": {"id": "c1", "type": "function",
                                               "function": {"name": "fetch_weather", "arguments": {"city": "Oslo"}}}}
    row = {"query": [{"role": "system", "content": "You are a helpful assistant"},
                     {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]}],
           "response": [{"role": "assistant", "content": [call]},
                        {"role": "tool", "tool_call_id": "c1",
                         "content": [{"type": "tool_result", "tool_result": {"weather": "Snowy, -3 C"}}]},
                        {"role": "assistant", "content": [{"type": "text", "text": "Snowy, -3 C."}]}],
           "tool_definitions": [{"name": "fetch_weather", "parameters": {"type": "object"}}]}
    path = tmp_path / "evaluation_data.jsonl"
    path.write_text(json.dumps(row) + "\n")
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    second = list(result.conversations[0].calls())[1]
    assert second.context[-1].tool_results[0].call_id == "c1"
    assert json.loads(second.context[-1].tool_results[0].content) == {"weather": "Snowy, -3 C"}


def test_a_prompt_string_beside_its_response_object(tmp_path):
    """A call log of ``{"prompt": "<text>", "response": <a Chat Completions response>, "raw_kwargs": {...}}``
    (STORM's, DSPy's history): the prompt is the user's message, ``choices[0].message`` the answer."""
    rows = [{"prompt": f"Write search queries for topic {i}.\nQueries:",
             "response": {"id": f"chatcmpl-{i}", "object": "chat.completion", "choices": [
                 {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": f"- topic {i}"}}]},
             "raw_kwargs": {"temperature": 1.0}} for i in range(3)]
    path = tmp_path / "llm_call_history.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 3, 0)
    call = next(iter(result.conversations[1].calls()))
    assert [m.role for m in call.context] == ["user"] and call.completion.text == "- topic 1"


def test_a_metadata_header_line_is_not_a_record_without_messages(tmp_path):
    # an explorer's dataset export: a first line of metadata (the tools' names), then one record per trace
    header = {"metadata": {"created_on": "2025-05-27 14:24:12",
                           "tool_calls": {"send_money": {"name": "send_money", "arguments": ["amount", "recipient"]}}}}
    trace = {"index": 4, "messages": [
        {"role": "user", "content": "Pay the bill."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "send_money", "arguments": "{\"amount\": 10, \"recipient\": \"Bob\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sent"},
        {"role": "assistant", "content": "Done."}], "metadata": {"id": "t4"}}
    path = tmp_path / "export.jsonl"
    path.write_text(json.dumps(header) + "\n" + json.dumps(trace) + "\n")
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    assert "records_not_calls" in [w.code for w in result.report.warnings]
    path.write_text(json.dumps(header) + "\n")  # nothing but metadata: nothing read, not ok
    assert not ingest([path], scrub=False).report.ok


def test_message_lists_keyed_by_name_under_results_beside_metadata(tmp_path):
    """Records of message lists keyed by name under ``results`` beside a run's ``metadata``: each value is a
    conversation, read by the spellings at ``lists: $.results`` (never the document's own keys as records)."""
    def chat(q: str, a: str) -> dict:
        return {"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}], "passed": True}
    doc = {"metadata": {"agent": "SupportAgent", "total_tests": 2},
           "results": {"refund_case": chat("Refund my order.", "Done."), "late_case": chat("Where is it?", "Today.")}}
    result = ingest([_write(tmp_path, doc, "report.json")], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 2, 0)
    assert [c.id.rsplit(":", 1)[-1] for c in result.conversations] == ["$.results.refund_case", "$.results.late_case"]


def test_an_ollama_chat_request_with_its_reply_message_beside(tmp_path):
    """Ollama's ``/api/chat`` logged as one object: the request's ``messages`` and the reply ``message`` beside them
    (refused as ``no_assistant_message``: ``message`` was no output key); calls extending the last are chained. A
    user's ``message`` beside a history is no reply."""
    first = [{"role": "user", "content": "Why is the sky blue?"}]
    reply = {"role": "assistant", "content": "Rayleigh scattering."}
    second = [*first, reply, {"role": "user", "content": "And at sunset?"}]
    lines = [{"model": "llama3", "messages": first, "message": reply, "done": True},
             {"model": "llama3", "messages": second, "message": {"role": "assistant", "content": "Longer path."},
              "done": True}]
    path = tmp_path / "ollama.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = ingest([path], scrub=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 0), codes(result)
    assert [c.completion.text for c in result.conversations[0].calls()] == ["Rayleigh scattering.", "Longer path."]
    path.write_text(json.dumps({"messages": second[:2], "message": {"role": "user", "content": "And at sunset?"}}))
    result = ingest([path], scrub=False)
    assert not any(c.completion.text == "And at sunset?" for conv in result.conversations for c in conv.calls())


def test_a_call_log_of_input_messages_and_an_output_message_is_not_responses_api(tmp_path):
    """``{"input": [chat messages], "output": {assistant message}}`` (an agent's own call log): the Responses API
    reader claimed it (its ``input`` may be messages) and read it ``partial``, dropping a tool call; a Responses
    output is a list of items, so such a record is the general path's."""
    first = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix utils.py"}]
    call1 = {"role": "assistant", "content": "Reading it.", "tool_calls": [
        {"id": "t1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "utils.py"}'}}]}
    second = [*first, call1, {"role": "tool", "tool_call_id": "t1", "content": "def add(a, b): return a - b"}]
    call2 = {"role": "assistant", "content": "A minus sign.", "tool_calls": [
        {"id": "t2", "type": "function", "function": {"name": "write_file", "arguments": '{"path": "utils.py"}'}}]}
    lines = [{"event": "llm_call", "step": 1, "input": first, "output": call1},
             {"event": "llm_call", "step": 2, "input": second, "output": call2}]
    path = tmp_path / "agent.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = ingest([path], scrub=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 2), codes(result)
    assert {c.source.format for c in result.conversations} == {"generic"}


def test_images_beside_a_messages_text_are_counted_not_quietly_unread(tmp_path):
    """Ollama keeps a message's images as ``images: [base64]`` beside its text: the model saw them, the drafter's
    text cannot hold them, so they are counted as unsupported parts (they were a key "not read", ``ok``)."""
    ask = {"role": "user", "content": "What is in this picture?", "images": ["iVBORw0KGgo=", "iVBORw0KGgp="]}
    lines = [{"model": "llava", "messages": [ask], "message": {"role": "assistant", "content": "A cat."}}]
    path = tmp_path / "ollama.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": [ask, {"role": "assistant", "content": "A cat."}]}))
    for file in (path, chat):
        result = ingest([file], scrub=False)
        assert result.report.ok and totals(result.conversations) == (1, 1, 0), codes(result)
        assert result.report.counts["unsupported_parts"] == 2, file.name


def test_an_answer_sent_back_without_its_reasoning_or_call_id_continues_the_conversation(tmp_path):
    """Request/response logs whose client sends the answer back as APIs ask: without its reasoning (DeepSeek's
    ``reasoning_content``, Ollama's ``thinking``), its tool call without the id the reader gave it and with the
    arguments spaced otherwise. One conversation (was two, ``ok``: a new-user trial)."""
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    first_ask = [{"role": "user", "content": "Weather in Toronto?"}]
    answer = {"role": "assistant", "content": "", "thinking": "Call the tool.",
              "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Toronto"}}}]}
    sent_back = {"role": "assistant", "content": "",
                 "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Toronto"}}}]}
    rows = [{"request": {"model": "llama3.1", "messages": first_ask, "tools": tools},
             "response": {"model": "llama3.1", "message": answer, "done": True, "done_reason": "stop"}},
            {"request": {"model": "llama3.1", "messages": [*first_ask, sent_back, {"role": "tool", "content": "-3C"}],
                         "tools": tools},
             "response": {"model": "llama3.1", "message": {"role": "assistant", "content": "-3C in Toronto."},
                          "done": True, "done_reason": "stop"}}]
    path = tmp_path / "ollama.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)


def test_an_output_list_beside_a_responses_repr_is_the_answer(tmp_path):
    """DSPy's ``lm.history`` saved as JSON: ``messages``, the answer in ``outputs`` and ``response`` as the repr of
    the client's response object (``ModelResponse(id=...)``), not text the model wrote (refused before: two outputs)."""
    entry = {"prompt": None, "messages": [{"role": "system", "content": "Answer the question."},
                                          {"role": "user", "content": "Capital of Peru?"}],
             "kwargs": {"temperature": 0.0}, "outputs": ["Lima"], "model": "openai/gpt-4o-mini",
             "response": "ModelResponse(id='chatcmpl-1', choices=[Choices(finish_reason='stop', index=0, "
                         "message=Message(content='Lima', role='assistant'))])", "uuid": "u1"}
    path = tmp_path / "history.json"
    path.write_text(json.dumps([entry, {**entry, "uuid": "u2", "outputs": ["Santiago"], "messages": [
        entry["messages"][0], {"role": "user", "content": "Capital of Chile?"}],
        "response": entry["response"].replace("Lima", "Santiago")}]))  # the repr of each call's own response
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (2, 2, 0), codes(result)
    assert sorted(c.completion.text for conv in result.conversations for c in conv.calls()) == ["Lima", "Santiago"]


def test_tool_calls_recorded_flat_with_their_output(tmp_path):
    """DeepEval's conversational test cases keep a turn's ``tools_called`` as ``{name, input_parameters, output}``:
    the calls with their results, read as run before the turn's text (were dropped, a "keys not read" warning
    only, ``ok``: a new-user trial)."""
    turns = [{"role": "user", "content": "My order hasn't arrived"},
             {"role": "assistant", "content": "It shipped yesterday.",
              "tools_called": [{"name": "get_order", "input_parameters": {"order_id": "A1"},
                                "output": {"status": "shipped"}}]}]
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"test_cases": [{"scenario": "support", "turns": turns}]}))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)
    assert "executed_calls_before_text" in codes(result, "warnings")


def _mlflow_span(name: str, inputs: object, outputs: object, trace: str) -> dict:
    """An MLflow 3 trace's span as ``mlflow.entities.Span.to_dict`` writes it (attributes as JSON text)."""
    return {"name": name, "span_id": f"{trace}-{name}", "parent_span_id": None, "events": [],
            "status": {"message": "", "code": "STATUS_CODE_OK"},
            "attributes": {"mlflow.traceRequestId": json.dumps(trace), "mlflow.spanType": json.dumps("CHAT_MODEL"),
                           "mlflow.spanInputs": json.dumps(inputs), "mlflow.spanOutputs": json.dumps(outputs)}}


def test_a_call_in_a_record_of_another_layout_is_not_skipped_as_an_event(tmp_path):
    """Two MLflow traces in one file, a LangChain chat model's span (``[[{type: human, ...}]]``, generations) and an
    OpenAI client's (``{messages}``, ``choices``): the mapping inferred from the first records finds nothing in the
    second's span, which was counted among ``records_not_calls`` and its call dropped, ``ok``. It holds a call:
    refused, saying where its messages are."""
    first = _mlflow_span("ChatOpenAI", [[{"type": "system", "content": "Translate to French."},
                                         {"type": "human", "content": "Good morning."}]],
                         {"generations": [[{"text": "Bonjour.", "message": {"type": "ai", "content": "Bonjour."}}]]},
                         "tr-1")
    second = _mlflow_span("Completions", {"messages": [{"role": "user", "content": "A haiku about ferries."}]},
                          {"id": "chatcmpl-1", "object": "chat.completion", "choices": [
                              {"index": 0, "message": {"role": "assistant", "content": "Grey ferry at dawn."}}]},
                          "tr-2")
    path = tmp_path / "traces.json"
    path.write_text(json.dumps([{"info": {"trace_id": t}, "data": {"spans": [s]}}
                                for t, s in (("tr-1", first), ("tr-2", second))]))
    result = ingest([path], scrub=False, dedup=False)
    assert codes(result) == ["no_messages_found"] and totals(result.conversations) == (1, 1, 0), codes(result)
    assert "spanOutputs.choices" in result.report.errors[0].message


def test_a_root_span_before_any_call_is_judged_by_the_calls_kinds(tmp_path):
    """Opik's span export: a trace's root span (``type: general``, its input a question, no messages) is the
    file's first line, before any LLM span: it was refused (``no_messages_found``) because no call's kind was known
    yet; judged once the calls' kinds are, it is a span of another kind, counted and not read."""
    def span(i: int, kind: str, inp: dict, out: dict) -> dict:
        return {"id": f"s{i}", "trace_id": "t1", "parent_span_id": None if i == 0 else "s0", "name": f"span{i}",
                "type": kind, "input": inp, "output": out, "metadata": {}}
    def llm(i: int, ticket: str) -> dict:
        msgs = [{"role": "system", "content": "You summarize tickets."}, {"role": "user", "content": ticket}]
        return span(i, "llm", {"messages": msgs}, {"choices": [{"index": 0, "message": {
            "role": "assistant", "content": f"Summary: {ticket.lower()}"}}]})
    lines = [span(0, "general", {"question": "Summarize tickets 4411 to 4413 for me"}, {"output": "Three tickets."}),
             llm(1, "Printer jams."), llm(2, "VPN drops."), llm(3, "Badge reader dead.")]
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in lines) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (3, 3, 0), codes(result)
    assert "records_not_calls" in codes(result, "warnings")


def test_weave_calls_of_other_ops_beside_the_llm_calls_are_not_calls(tmp_path):
    """W&B Weave's calls export: the agent's own op (a question and its answer), a tool op and the OpenAI calls,
    each named by ``op_name``. The agent's and the tool's records made the file ambiguous (two lists in the LLM
    calls' records read as candidates); ``op_name`` is the record's kind, so they are other ops, counted."""
    def op(i: int, name: str, inputs: dict, output) -> dict:
        return {"id": f"c{i}", "op_name": f"weave:///ent/proj/op/{name}:Xy12", "trace_id": "tr", "inputs": inputs,
                "output": output, "exception": None}
    sys_user = [{"role": "system", "content": "Always call get_weather first."},
                {"role": "user", "content": "What's the weather in Perth?"}]
    call = {"id": "w1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Perth\"}"}}
    def llm(i: int, msgs: list, message: dict) -> dict:
        return op(i, "openai.chat.completions.create", {"model": "gpt-4o", "messages": msgs},
                  {"id": f"x{i}", "object": "chat.completion", "choices": [{"index": 0, "message": message}]})
    answer = {"role": "assistant", "content": None, "tool_calls": [call]}
    rows = [op(0, "WeatherAgent.run", {"question": "What's the weather in Perth right now?"}, "17C and rain."),
            llm(1, sys_user, answer), op(2, "get_weather", {"city": "Perth"}, "Perth: 17C, light rain"),
            llm(3, [*sys_user, answer, {"role": "tool", "tool_call_id": "w1", "content": "Perth: 17C, light rain"}],
                {"role": "assistant", "content": "17C and rain."})]
    path = tmp_path / "calls.json"
    path.write_text(json.dumps(rows))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)


def test_a_gateway_log_row_of_a_failed_request_is_no_call(tmp_path):
    """Portkey's logs export: each row a request and its response, a rate-limited row's status under
    ``response_status_code`` (429, an error body as the response). The failed row made the file ambiguous."""
    sys_user = [{"role": "system", "content": "Always call get_weather first."},
                {"role": "user", "content": "What's the weather in Hanoi?"}]
    call = {"id": "p1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Hanoi\"}"}}
    answer = {"role": "assistant", "content": None, "tool_calls": [call]}
    second = [*sys_user, answer, {"role": "tool", "tool_call_id": "p1", "content": "Hanoi: 17C"}]
    def row(i: int, msgs: list, status: int, response: dict) -> dict:
        return {"id": f"pk-{i}", "trace_id": "t", "response_status_code": status, "is_success": status == 200,
                "request_url": "https://api.openai.com/v1/chat/completions",
                "request": {"model": "gpt-4o", "messages": msgs}, "response": response}
    rows = [row(1, sys_user, 200, {"object": "chat.completion", "choices": [{"index": 0, "message": answer}]}),
            row(2, second, 429, {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}),
            row(3, second, 200, {"object": "chat.completion", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "17C in Hanoi."}}]})]
    path = tmp_path / "logs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)
