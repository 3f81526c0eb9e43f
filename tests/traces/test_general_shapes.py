"""The general path reads every shape of issue 30 with no format module and no declared mapping, states the
mapping it inferred, and that mapping (as ``infer-mapping`` writes it) reads the file the same way.

Fixtures (``fixtures/shapes``, written from the tools' documented record shapes, see fixtures/README.md):
``events_envelope.jsonl`` (one message per line in a JSON-string ``payload``, two sessions, metadata lines),
``runs_inputs_outputs.jsonl`` (run records ``inputs.messages`` / ``outputs.choices[0].message``, three calls of
one agent loop and one unrelated call), ``openinference_spans.json`` (the same loop as spans whose attributes
are flattened ``llm.input_messages.N.message.*`` keys), ``agent_steps.json`` (steps with ``action`` and
``observation`` beside a ``task``), ``anthropic_array.json`` (the file is the message list), and OpenAI
Responses API item lists (``function_call``, ``function_call_output``, ``reasoning``) as the file
(``responses_items.json``), in a record (``responses_in_record.json``) and as per-call input/output items
(``responses_calls.jsonl``).
"""

from __future__ import annotations

import itertools
import json

import pytest

from drafters.traces.infer import infer_mapping, mapping_yaml
from drafters.traces.ingest import ingest

from .conftest import codes, inferred_mapping_totals, ingest_json, totals
from .test_bad_input import SHAPES


def _walk_events():
    lines = [json.loads(x) for x in (SHAPES / "events_envelope.jsonl").read_text().splitlines()]
    msgs = [(ln["session_id"], json.loads(ln["payload"])) for ln in lines if "payload" in ln]
    return (len({s for s, _ in msgs}), sum(m["role"] == "assistant" for _, m in msgs),
            sum(len(m.get("tool_calls") or []) for _, m in msgs))


def _walk_runs():
    runs = [json.loads(x) for x in (SHAPES / "runs_inputs_outputs.jsonl").read_text().splitlines()]
    outs = [r["outputs"]["choices"][0]["message"] for r in runs]
    # runs 1-3 chain (each input = the previous input + output + tool results); run 4 stands alone
    for prev, nxt in itertools.pairwise(runs[:3]):
        n = len(prev["inputs"]["messages"])
        assert nxt["inputs"]["messages"][:n + 1] == prev["inputs"]["messages"] + [prev["outputs"]["choices"][0]["message"]]
    return 2, len(runs), sum(len(o.get("tool_calls") or []) for o in outs)


def _walk_spans():
    spans = json.loads((SHAPES / "openinference_spans.json").read_text())
    outs = [k for s in spans for k in s["attributes"] if k.startswith("llm.output_messages.0.message.tool_calls.")
            and k.endswith(".tool_call.function.name")]
    return 1, len(spans), len(outs)


def _walk_steps():
    records = json.loads((SHAPES / "agent_steps.json").read_text())
    steps = [s for r in records for s in r["steps"]]
    return len(records), len(steps), sum("action" in s for s in steps)


def _walk_array():
    raw = json.loads((SHAPES / "anthropic_array.json").read_text())
    return 1, sum(m["role"] == "assistant" for m in raw), sum(b["type"] == "tool_use" for m in raw for b in m["content"])


def _model_turns(items):
    """(calls, tool calls) of a Responses item list: each run of model-side items is one call."""
    model = [i.get("type") in ("reasoning", "function_call") or i.get("role") == "assistant" for i in items]
    runs = sum(1 for k, m in enumerate(model) if m and (k == 0 or not model[k - 1]))
    return runs, sum(i.get("type") == "function_call" for i in items)


def _walk_items():
    return 1, *_model_turns(json.loads((SHAPES / "responses_items.json").read_text()))


def _walk_items_in_record():
    (rec,) = json.loads((SHAPES / "responses_in_record.json").read_text())
    return 1, *_model_turns(rec["history"])


def _walk_item_calls():
    rows = [json.loads(x) for x in (SHAPES / "responses_calls.jsonl").read_text().splitlines()]
    # row 2's input is row 1's input + output + the tool output: one conversation of two calls
    assert rows[1]["model_input"][: len(rows[0]["model_input"]) + 2] == rows[0]["model_input"] + rows[0]["model_output"]
    return 1, len(rows), sum(i.get("type") == "function_call" for r in rows for i in r["model_output"])


CASES = [("events_envelope.jsonl", "message_lines", _walk_events), ("runs_inputs_outputs.jsonl", "request_response", _walk_runs),
         ("openinference_spans.json", "request_response", _walk_spans), ("agent_steps.json", "steps", _walk_steps),
         ("anthropic_array.json", "file_list", _walk_array), ("responses_items.json", "file_list", _walk_items),
         ("responses_in_record.json", "record_lists", _walk_items_in_record),
         ("responses_calls.jsonl", "request_response", _walk_item_calls)]


@pytest.mark.parametrize(("name", "shape", "walk"), CASES)
def test_general_path_reads_the_shape_exactly_and_its_mapping_reads_it_the_same(tmp_path, name, shape, walk):
    path = SHAPES / name
    want = walk()
    result = ingest([path], scrub=False)
    assert result.report.ok, result.report.errors
    assert result.report.files[str(path)]["format"] == "generic"
    assert totals(result.conversations) == want
    stated = [w.message for w in result.report.warnings if w.code == "generic_mapping"]
    assert len(stated) == 1 and "inferred mapping" in stated[0]
    assert inferred_mapping_totals(path, shape, tmp_path) == want


def test_two_readings_are_refused_naming_both(tmp_path):
    path = tmp_path / "pairs.json"
    turns = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    path.write_text(json.dumps([{"chosen": turns, "rejected": turns[:1] + [{"role": "assistant", "content": "c"}]}]))
    result = ingest([path], scrub=False)
    (err,) = result.report.errors
    assert err.code == "ambiguous_shape" and "$.chosen" in err.message and "$.rejected" in err.message


def test_tool_calls_under_a_key_the_inferred_mapping_does_not_read_refuse_the_file(tmp_path):
    lines = [{"session_id": "s", "payload": {"role": "user", "content": "weather?"}},
             {"session_id": "s", "payload": {"role": "assistant", "content": "",
                                             "invocations": [{"tool": "weather", "args": {"city": "Oslo"}}]}},
             {"session_id": "s", "payload": {"role": "assistant", "content": "-3C"}}]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    result = ingest([path], scrub=False)
    (err,) = result.report.errors
    assert err.code == "content_not_mapped" and "invocations" in err.message and not result.conversations
    assert "TOOL CALLS under invocations" in mapping_yaml(infer_mapping(path))


def test_the_general_path_forced_on_every_real_module_file_is_exact_or_not_ok():
    """On the real files of formats that have a module (fixtures/corpus), reading with the general path alone
    either gives the module's counts or is not ``ok``: a shape it cannot read exactly is refused, never read
    into other counts (SWE-agent's run held as both history and trajectory is ambiguous_shape, a Claude Code
    loglines export keeps its tool calls)."""
    from .conftest import DATA

    checked = 0
    for path in sorted(p for p in DATA.rglob("*") if p.is_file() and p.suffix not in (".md", ".tsv")):
        module, general = ingest([path], scrub=False).report, ingest([path], format="generic", scrub=False).report
        if general.ok:
            keys = ("conversations", "calls", "tool_calls")
            assert [general.counts[k] for k in keys] == [module.counts[k] for k in keys], path.name
            checked += 1
    assert checked >= 5


def test_one_response_written_as_several_message_lines_is_one_call(tmp_path):
    """An event log that writes one model response as one line per content block (sharing its id), as Claude
    Code does: one assistant message, one call, both tool calls in it."""
    lines = [{"session_id": "s", "message": {"role": "user", "content": "list and count"}},
             {"session_id": "s", "message": {"id": "r1", "role": "assistant", "content": [
                 {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]}},
             {"session_id": "s", "message": {"id": "r1", "role": "assistant", "content": [
                 {"type": "tool_use", "id": "t2", "name": "wc", "input": {}}]}},
             {"session_id": "s", "message": {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": "t1", "content": "a b"},
                 {"type": "tool_result", "tool_use_id": "t2", "content": "2"}]}},
             {"session_id": "s", "message": {"id": "r2", "role": "assistant", "content": "2 files"}}]
    path = tmp_path / "blocks.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    result = ingest([path], scrub=False)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (1, 2, 2)
    assert result.report.counts["parallel_calls"] == 1


def test_a_prompt_kept_beside_the_message_list_refuses_the_record(tmp_path):
    """A turn kept as text beside the list (a sampler's ``message_prompt`` / ``message_edit`` beside a history)
    is content the list does not hold: refused, never read as the list alone and reported ok (issue 30)."""
    history = [{"role": "user", "content": "Add a save method."}, {"role": "assistant", "content": "Added it."}]
    doc = {"title": "t", "message_history": history, "message_prompt": "Now add a test for save.",
           "message_edit": "I will add the test."}
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False)
    assert not result.conversations and codes(result) == ["content_not_mapped"]
    assert "message_prompt" in result.report.errors[0].message
    for beside in ({"prompt": "Add a save method."},  # a copy of a message: no loss
                   {"response_format": "json object please now"}, {"input": "text"}, {"answer": "the reference one"}):
        path.write_text(json.dumps({"messages": history, **beside}))
        result = ingest([path], scrub=False)
        assert result.report.ok and totals(result.conversations) == (1, 1, 0), beside


def test_a_list_ending_before_the_answer_with_the_answer_elsewhere_is_refused(tmp_path):
    """An agent step log: the messages sent, then the reply in a spelling the general path does not read (a
    repr string under ``extra_info``); reading the list alone would keep only the replies restated in later steps
    (issue 30, a set-14 file)."""
    steps = [{"step": 1, "observation": [{"role": "user", "content": "Count the cubes."}],
              "extra_info": {"original_response": "ChatCompletion(choices=[Choice(message='There are three.')])"}},
             {"step": 2, "observation": [{"role": "user", "content": "Count the cubes."},
                                         {"role": "assistant", "content": "There are three."},
                                         {"role": "user", "content": "And red ones?"}],
              "extra_info": {"original_response": "ChatCompletion(choices=[Choice(message='One is red.')])"}}]
    path = tmp_path / "output.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in steps))
    result = ingest([path], scrub=False)
    assert not result.conversations and "content_not_mapped" in codes(result)
    assert any("extra_info.original_response" in e.message for e in result.report.errors)


def test_responses_items_in_and_out_named_by_their_own_keys(tmp_path):
    """A rollout record: the input items under ``responses_create_params.input`` (whose first key holds the word
    "response"), the output items, with tool calls and their outputs between answers, under ``response.output``,
    tool definitions beside both (a set-14 file): every model turn of the output is a call."""
    record = {"responses_create_params": {"input": [{"role": "user", "content": "Add 2 then read.", "type": "message"}],
                                          "tools": [{"type": "function", "name": "add", "parameters": {}}]},
              "response": {"id": "r1", "output": [
                  {"type": "function_call", "call_id": "c1", "name": "add", "arguments": "{\"n\": 2}"},
                  {"type": "function_call_output", "call_id": "c1", "output": "ok"},
                  {"type": "function_call", "call_id": "c2", "name": "read", "arguments": "{}"},
                  {"type": "function_call_output", "call_id": "c2", "output": "2"},
                  {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is 2."}]}],
                  "tools": [{"type": "function", "name": "add", "parameters": {}}]}, "reward": 1.0}
    path = tmp_path / "rollouts.jsonl"
    path.write_text(json.dumps(record) + "\n")
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 3, 2)
    assert [t.name for t in result.conversations[0].tools] == ["add"]  # the request's tools, beside its input
    assert "no_tool_definitions" not in codes(result, "warnings")
    *_, last = result.conversations[0].calls()
    assert [m.role for m in last.context] == ["user", "assistant", "tool", "assistant", "tool"]


def test_a_record_after_the_last_reply_with_no_content_is_not_read_one_before_it_refuses(tmp_path):
    """A game's per-player chat log closed by a ``system`` record of game data (``game_info``, no content): after
    the last reply no call saw it, so it is warned and not read; the same record before a reply would be part of
    that call's context, whose content is not understood: refused."""
    chat = [{"role": "user", "content": "You are Alice. Offer a split."}, {"role": "assistant", "content": "5 and 5?"},
            {"role": "user", "content": "Bob accepts."}, {"role": "assistant", "content": "Deal."}]
    end = {"role": "system", "game_info": {"rounds": 1, "agents": ["Alice", "Bob"]}, "agent_name": "Alice"}
    path = tmp_path / "match_1.json"
    path.write_text(json.dumps([*chat, end]))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0) and "trailing_record_not_read" in codes(result, "warnings")
    path.write_text(json.dumps([*chat[:2], end, *chat[2:]]))
    result = ingest([path], scrub=False, dedup=False)
    declined = [w.message for w in result.report.warnings if w.code == "candidates_declined"]
    assert not result.conversations and "generic (content_not_mapped" in declined[0]


def test_an_agent_span_beside_the_llm_spans_is_no_call(tmp_path):
    """OpenInference spans exported one a line: the agent's ``CHAIN`` span (the run's input and final answer as
    texts) beside the ``LLM`` spans (request and response bodies as JSON text). The chain span is no call: the two
    LLM spans are read (the general path had refused the file as two readings, and the mapping it inferred lost the
    final answer)."""
    ask = {"role": "user", "content": "Book the cheapest BOS-ORD flight."}
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "search_flights", "arguments": "{\"route\": \"BOS-ORD\"}"}}]}

    def span(kind, inp, out):
        return {"span_kind": kind, "attributes": {"openinference.span.kind": kind, "input.value": inp,
                                                  "output.value": out}}

    def body(msgs):
        return json.dumps({"messages": msgs})

    def answer(msg):
        return json.dumps({"choices": [{"index": 0, "message": msg, "finish_reason": "stop"}]})

    lines = [span("CHAIN", ask["content"], "Booked UA512."),
             span("LLM", body([ask]), answer(call)),
             span("LLM", body([ask, call, {"role": "tool", "tool_call_id": "c1", "content": "UA512 $129"}]),
                  answer({"role": "assistant", "content": "Booked UA512."}))]
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1) and "records_not_calls" in codes(result, "warnings")


def test_a_transcript_beside_copies_of_its_replies_is_read_once(tmp_path):
    """A benchmark rollout (FLE's): ``turns`` keep each reply with its usage and tool results, ``messages`` the whole
    transcript holding those replies in the same order: the transcript is the conversation, nothing is lost; two
    lists that do not hold each other stay ambiguous."""
    call = {"id": "c1", "type": "function", "function": {"name": "observe", "arguments": "{}"}}
    messages = [{"role": "system", "content": "You play Factorio."}, {"role": "user", "content": "Craft a gear."},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "2 iron plates"},
                {"role": "assistant", "content": "Crafting it now."}]
    turns = [{"turn": 1, "assistant": messages[2], "usage": {"total_tokens": 9}},
             {"turn": 2, "assistant": messages[4], "usage": {"total_tokens": 7}}]
    result = ingest_json(tmp_path, {"model": "m", "turns": turns, "transcript": messages})
    assert result.report.ok and result.report.files, codes(result)
    assert next(iter(result.report.files.values()))["format"] == "generic"
    assert totals(result.conversations) == (1, 2, 1)
    other = [{"role": "user", "content": "Something else"}, {"role": "assistant", "content": "Another reply."}]
    result = ingest_json(tmp_path, {"model": "m", "turns": [{"turn": 1, "assistant": other[1]}],
                                    "transcript": messages, "history": other})
    assert "ambiguous_shape" in codes(result) and result.conversations == []


def test_a_checkpoint_beside_its_last_writes_is_read_once(tmp_path):
    """A graph checkpoint (LangGraph's tuple): ``channel_values.messages`` holds the thread, ``metadata.writes``
    repeats the last step's new messages: the thread is the conversation and the copy is no fourth call."""
    def lc(cls, content, **kw):
        return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", cls],
                "kwargs": {"content": content, **kw}}
    call = {"name": "weather", "args": {"city": "Lisbon"}, "id": "c1", "type": "tool_call"}
    thread = [lc("HumanMessage", "Weather in Lisbon?"), lc("AIMessage", "", tool_calls=[call]),
              lc("ToolMessage", "21 C", tool_call_id="c1"), lc("AIMessage", "21 C and clear."),
              lc("HumanMessage", "And tonight?"), lc("AIMessage", "Cooler, about 15 C.")]
    doc = {"config": {"configurable": {"thread_id": "user-42"}}, "checkpoint": {"v": 1, "channel_values": {
        "messages": thread}}, "metadata": {"source": "loop", "step": 8, "writes": {"agent": {"messages": thread[-1:]}}}}
    result = ingest_json(tmp_path, doc)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 3, 1)


def test_one_response_in_two_spellings_is_read_once(tmp_path):
    """An HTTP recording (the Google GenAI SDK's replays) keeps the response body beside the client library's object
    of it: the same candidates in camelCase and snake_case, the thought signature encoded once more. They read alike
    (role, text, tool calls) and their paths differ in one key, so the record holds one list, not two; a part's
    signature and ``thought: false`` beside its function call are no payload of their own."""
    def candidate(camel: bool, signature: str):
        call, sig = ("functionCall", "thoughtSignature") if camel else ("function_call", "thought_signature")
        return {"content": {"role": "model", "parts": [{"text": "Looking it up."},
                                                        {call: {"name": "weather", "args": {"city": "Paris"}},
                                                         sig: signature, "thought": False}]},
                ("finishReason" if camel else "finish_reason"): "STOP", "index": 0}
    doc = {"request": {"contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}]},
           "response": {"body": {"candidates": [candidate(True, "CiQB")]},
                        "sdk_response": {"candidates": [candidate(False, "Q2lRQg==")]}}}
    result = ingest_json(tmp_path, doc)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 1, 1)
    (call,) = result.conversations[0].calls()
    assert call.completion.text == "Looking it up." and call.completion.tool_calls[0].arguments == {"city": "Paris"}
    copies = [doc["response"]["body"]["candidates"], doc["response"]["sdk_response"]["candidates"]]
    record = {"choices": copies}  # the same lists as two items of one list: two answers, not one object twice
    result = ingest_json(tmp_path, {**doc, "response": record})
    assert not result.report.ok and result.conversations == []


def test_new_messages_a_line_under_a_key_of_the_tools_naming(tmp_path):
    """A session log writing each line's new message under its own key (AI-Trader's ``{"signature", "new_messages":
    {role, content}}``, sometimes a list of one): one message a line (``records: messages``), under the one key that
    holds it; the mapping ``infer-mapping`` writes reads the lists of one the same way (never skipped as lines
    without a message)."""
    def line(role, text, listed=False):
        msg = {"role": role, "content": text}
        return {"signature": "deepseek-chat-v3.1", "new_messages": [msg] if listed else msg}
    lines = [line("user", "Update today's positions.", listed=True), line("assistant", "Reading prices first."),
             line("user", "Tool results: 2238.84"), line("assistant", "Buying NVDA.", listed=True)]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    assert list(result.conversations[0].calls())[-1].completion.text == "Buying NVDA."
    assert inferred_mapping_totals(path, "message_lines", tmp_path) == (1, 2, 0)
    lines.append({"signature": "x", "new_messages": [{"role": "user", "content": "a"},
                                                     {"role": "assistant", "content": "b"}]})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))  # a line of two new messages: both read
    result = ingest([path], scrub=False)
    assert result.report.ok and totals(result.conversations) == (1, 3, 0)


def test_a_message_list_typed_by_its_class_name_in_lower_case(tmp_path):
    """PromptingTools.jl saves a conversation as a list of messages whose ``_type`` is the message class in lower
    case (``systemmessage``, ``usermessage``, ``aimessage``): the general path reads them, and the mapping
    ``infer-mapping`` writes reads them alike; a ``_type`` naming no message class is no role."""
    doc = [{"content": "You are a Julia expert.", "variables": [], "_type": "systemmessage"},
           {"content": "Write audi_filter.", "variables": ["ask"], "_type": "usermessage"},
           {"content": "```julia\naudi_filter(df) = df\n```", "status": 200, "_type": "aimessage"},
           {"content": "It fails on an empty frame; fix it.", "variables": ["feedback"], "_type": "usermessage"},
           {"content": "```julia\naudi_filter(df) = isempty(df) ? df : df\n```", "_type": "aimessage"}]
    result = ingest_json(tmp_path, doc, "conversation.json")
    assert result.report.ok and totals(result.conversations) == (1, 2, 0)
    assert [m.role for m in result.conversations[0].messages] == ["system", "user", "assistant", "user", "assistant"]
    assert inferred_mapping_totals(tmp_path / "conversation.json", "file_list", tmp_path) == (1, 2, 0)
    odd = [{**m, "_type": "datamessage" if m["_type"] == "usermessage" else m["_type"]} for m in doc]
    assert not ingest_json(tmp_path, odd, "odd.json").report.ok


def test_tool_calls_in_a_messages_options_object_are_not_lost(tmp_path):
    """LlamaIndexTS's messages keep their tool calls one level down, ``options: {toolCall: [...]}``, and the tool's
    result as a user message with ``options.toolResult``: read without ``options`` the file had 0 tool calls and the
    result as the user's words, ``ok``; it is refused with a code naming the key."""
    ask = [{"role": "user", "content": "What is the weather in San Francisco?"}]
    call = {"role": "assistant", "content": "", "options": {"toolCall": [
        {"id": "call_1", "name": "getWeather", "input": '{"city": "San Francisco"}'}]}}
    result = {"role": "user", "content": "72 degrees", "options": {"toolResult": {
        "result": "72 degrees", "isError": False, "id": "call_1"}}}
    doc = {"events": [{"id": "a", "messages": ask, "response": {"raw": None, "message": call}},
                      {"id": "b", "messages": [*ask, call, result],
                       "response": {"raw": None, "message": {"role": "assistant", "content": "It is 72.",
                                                             "options": {}}}}]}
    got = ingest_json(tmp_path, doc)
    assert not got.conversations and codes(got) == ["content_not_mapped"]
    assert "options" in got.report.errors[0].message


def test_sessions_interleaved_in_one_message_log(tmp_path):
    """A server's log of one message a line, two users' sessions interleaved (``session_id``): each session is one
    conversation in order (was ``no_assistant_message`` / ``no_llm_call``: only adjacent lines were grouped), for
    the general path and for the mapping it infers, with a ``sessions_interleaved`` warning."""
    lines = [{"session_id": "s1", "role": "user", "content": "Capital of France?"},
             {"session_id": "s2", "role": "user", "content": "Capital of Italy?"},
             {"session_id": "s1", "role": "assistant", "content": "Paris."},
             {"session_id": "s2", "role": "assistant", "content": "Rome."},
             {"session_id": "s1", "role": "user", "content": "And of Spain?"},
             {"session_id": "s1", "role": "assistant", "content": "Madrid."}]
    path = tmp_path / "server.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = ingest([path], scrub=False)
    assert result.report.ok and totals(result.conversations) == (2, 3, 0), codes(result)
    by_id = {c.id.rsplit(":", 1)[-1]: [m.text for m in c.messages] for c in result.conversations}
    assert by_id == {"s1": ["Capital of France?", "Paris.", "And of Spain?", "Madrid."],
                     "s2": ["Capital of Italy?", "Rome."]}
    (warning,) = [w for w in result.report.warnings if w.code == "sessions_interleaved"]
    assert warning.message.startswith("3 time(s)")  # s1, s2 and s1 again, each after the other
    assert inferred_mapping_totals(path, "message_lines", tmp_path) == (2, 3, 0)


def test_a_sub_agents_thread_kept_inside_a_message_is_refused_not_dropped(tmp_path):
    """An orchestrator's tool message keeps the sub-agent's own messages (``subagent.messages``): read `ok` by the
    OpenAI chat reader and by the general path, its calls were silently lost; now ``content_not_mapped`` naming
    where, by every reader tried (a tree's ``children``, which its mapping reads, are no such thread:
    ``test_general_envelopes_trees.py``)."""
    sub = [{"role": "user", "content": "Find the release year of Python 3.0."},
           {"role": "assistant", "content": "2008 (December 3)."}]
    doc = {"messages": [{"role": "user", "content": "When did Python 3 come out?"},
                        {"role": "assistant", "content": None, "tool_calls": [{"id": "p1", "type": "function",
                         "function": {"name": "research", "arguments": "{}"}}]},
                        {"role": "tool", "tool_call_id": "p1", "content": "2008.", "subagent": {"messages": sub}},
                        {"role": "assistant", "content": "Python 3 came out in 2008."}]}
    result = ingest_json(tmp_path, doc)
    assert not result.conversations and "content_not_mapped" in codes(result), codes(result)
    assert any("$[2].subagent.messages" in e.message for e in result.report.errors)
    # a copy of the context the answer was given in (PDL's model blocks: ``context``) is no thread of its own
    msgs = [{"role": "user", "content": "Say hi."}, {"role": "assistant", "content": "Hi!", "context": [
        {"role": "user", "content": "Say hi."}, {"role": "assistant", "content": "(an earlier try)"}]}]
    result = ingest_json(tmp_path, {"messages": msgs}, name="copy.json")
    assert result.report.ok and totals(result.conversations) == (1, 1, 0), codes(result)
