"""Each silent loss of issue 30 is exact or a coded error, on the faithful small files of
``fixtures/shapes`` (counts computed here from the raw JSON, independently of the readers)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from drafters.traces.ingest import ingest

from .conftest import codes, totals
from .test_bad_input import SHAPES


def test_claude_code_sub_agents_are_one_conversation_each():
    path = SHAPES / "cc_two_subagents.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    threads = {ln["uuid"] for ln in lines if ln["isSidechain"] and ln["parentUuid"] is None}
    result = ingest([path], scrub=False)
    assert result.report.ok, result.report.errors
    assert len(result.conversations) == 1 + len(threads) == 3
    texts = sorted(tuple(m.text for m in c.messages) for c in result.conversations)
    assert texts == [("Do two things in parallel", "Starting sub-agents"),
                     ("Sub-task A: write a.txt", "Done A"), ("Sub-task B: write b.txt", "Done B")]
    for conv in result.conversations:  # no call's context holds another agent's thread
        for call in conv.calls():
            assert len(call.context) == 1


def test_hermes_text_tool_calls_are_calls():
    path = SHAPES / "hermes_rows.json"
    raw = json.loads(path.read_text())
    blocks = sum(m["content"].count("<tool_call>") for r in raw for m in r["conversations"] if m["role"] == "assistant")
    result = ingest([path], scrub=False)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (1, 1, blocks)
    (call,) = result.conversations[0].messages[-1].tool_calls
    assert (call.name, call.arguments) == ("write", {"path": "hello.txt"})
    assert result.conversations[0].messages[-1].text == "Creating it."


def test_per_call_rows_repeating_history_count_each_call_once():
    path = SHAPES / "hermes_per_call_rows.jsonl"
    rows = [json.loads(x)["conversations"] for x in path.read_text().splitlines()]
    # row 1 is the history of row 2: the distinct calls are row 2's and row 3's
    assert rows[1][: len(rows[0])] == rows[0]
    want_calls = sum(1 for t in rows[1] + rows[2] if t["from"] == "gpt")
    parsed = [b for t in rows[1] if t["from"] == "gpt" for b in re.findall(r"<tool_call>(.*?)</tool_call>",
                                                                          t["value"], re.DOTALL)]
    result = ingest([path], scrub=False)
    blocks3 = re.findall(r"<tool_call>(.*?)</tool_call>", rows[2][-1]["value"], re.DOTALL)
    assert result.report.ok, result.report.errors
    # row 3's block is a Python dict (as Glaive-derived rows write it), read as the call it is
    assert totals(result.conversations) == (2, want_calls, len(parsed) + len(blocks3))
    assert "history_rows_merged" in {w.code for w in result.report.warnings}
    assert result.report.counts["history_rows_merged"] == 1


def test_a_text_tool_call_that_does_not_parse_is_an_error(tmp_path):
    path = tmp_path / "bad_call.json"
    path.write_text(json.dumps([{"conversations": [
        {"role": "user", "content": "go"}, {"role": "assistant", "content": "<tool_call>{name: x(</tool_call>"}]}]))
    result = ingest([path], scrub=False)
    assert [e.code for e in result.report.errors] == ["tool_call_text_not_parsed"]


def test_a_call_object_after_a_tools_own_marker_is_an_error_not_text(tmp_path):
    """ChainForge renders a Claude tool call as ``[[TOOLS]] {"name": ..., "input": {...}}``: read as text the file
    had been ``ok`` with no tool call; prose quoting JSON, or a marker before other JSON, stays text."""
    path = tmp_path / "rows.json"
    call = '[[TOOLS]] {"name": "get_current_weather", "input": {"location": "Boston, MA"}}'
    for reply, errors in ((call, ["tool_call_text_not_parsed"]),
                          ('I would call it as {"name": "get_current_weather", "input": {}} if I could.', []),
                          ('Answer: {"city": "Boston", "temperature": 12}', [])):
        path.write_text(json.dumps([{"messages": [{"role": "user", "content": "Weather in Boston?"},
                                                  {"role": "assistant", "content": reply}]}]))
        assert [e.code for e in ingest([path], scrub=False).report.errors] == errors, reply


def test_a_text_tool_call_written_with_xml_elements_is_a_call(tmp_path):
    """The ``<tool_call>`` block's XML body (``<tool_name>``, ``<param name=...>``; an agent's prompt-defined
    notation) is a call of string arguments; text beside the elements is not only a call: an error, kept as text."""
    block = ("<tool_call>\n<tool_name>BashCommand</tool_name>\n<param name=\"command\">ls -la</param>\n"
             "<param name=\"is_background\">false</param>\n</tool_call>")
    path = tmp_path / "rows.json"
    for body, calls, errors in ((block, 1, []), (block.replace("</tool_name>", "</tool_name> and then"), 0,
                                                 ["tool_call_text_not_parsed"])):
        path.write_text(json.dumps([{"messages": [{"role": "user", "content": "list"},
                                                  {"role": "assistant", "content": "Listing.\n" + body}]}]))
        result = ingest([path], scrub=False)
        assert [e.code for e in result.report.errors] == errors
        message = result.conversations[0].messages[-1]
        assert len(message.tool_calls) == calls and message.text.startswith("Listing.")
    path.write_text(json.dumps([{"messages": [{"role": "user", "content": "list"},
                                              {"role": "assistant", "content": "Listing.\n" + block}]}]))
    (call,) = ingest([path], scrub=False).conversations[0].messages[-1].tool_calls
    assert (call.name, call.arguments) == ("BashCommand", {"command": "ls -la", "is_background": "false"})


def test_a_reply_that_is_one_call_object_is_a_tool_call(tmp_path):
    """A reply holding nothing but ``{"name": ..., "arguments": {...}}`` (a pentest agent told to answer with a tool
    call only, held-out set 63's AI-OPS checkpoint: JSON with a Python-quoted string) is the call it writes; a
    reply that is other JSON (a final answer with a name) stays text."""
    call = '{"name": "search_web", "arguments": {"search_query": \'CVE-2024-6387 checker\'}}'
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": [
        {"role": "user", "content": "find an exploit"}, {"role": "assistant", "content": " " + call},
        {"role": "tool", "content": "3 results"}, {"role": "user", "content": "who wrote it?"},
        {"role": "assistant", "content": '{"name": "Ada", "arguments": "none given", "source": "search"}'}]}))
    result = ingest([path], scrub=False)
    assert result.report.ok, result.report.errors
    first, second = result.conversations[0].calls()
    (tool_call,) = first.completion.tool_calls
    assert (tool_call.name, tool_call.arguments) == ("search_web", {"search_query": "CVE-2024-6387 checker"})
    assert first.completion.text == "" and not second.completion.tool_calls


def test_any_agent_calls_without_input_are_rebuilt_from_the_call_before_and_the_tool_spans():
    path = SHAPES / "any_agent_2calls.json"
    spans = json.loads(path.read_text())["spans"]
    llm = [s for s in spans if s["attributes"]["gen_ai.operation.name"] == "call_llm"]
    tools = [s for s in spans if s["attributes"]["gen_ai.operation.name"] == "execute_tool"]
    n_tool_calls = sum(len(json.loads(s["attributes"]["gen_ai.output"])) for s in llm)
    assert (len(llm), n_tool_calls, len(tools)) == (2, 2, 1)
    result = ingest([path], scrub=False)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (1, len(llm), n_tool_calls)
    assert "context_rebuilt" in {w.code for w in result.report.warnings}
    first, second = result.conversations[0].explicit_calls
    assert second.context[: len(first.context) + 1] == [*first.context, first.completion]
    (call,) = first.completion.tool_calls
    (res,) = second.context[-1].tool_results
    assert call.name == "get_current_time" and call.arguments == {"timezone": "America/New_York"}  # as it ran
    assert json.loads(res.content) == json.loads(tools[0]["attributes"]["gen_ai.output"])


def test_a_call_without_input_that_cannot_be_rebuilt_is_an_error(tmp_path):
    doc = json.loads((SHAPES / "any_agent_2calls.json").read_text())
    doc["spans"] = [s for s in doc["spans"] if s["attributes"]["gen_ai.operation.name"] != "execute_tool"]
    path = tmp_path / "no_tool_span.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False)
    assert [e.code for e in result.report.errors] == ["content_not_captured"]
    assert totals(result.conversations)[:2] == (1, 1)


ANY_AGENT = SHAPES.parent / "any_agent"


def _any_agent_walk(path):
    """(calls read, calls refused, tool calls read), walked from the raw spans: a call without input is read
    when the call before it was read and made tool calls, each matched by an execute_tool span in between."""
    spans = sorted(json.loads(path.read_text())["spans"], key=lambda s: s["start_time"])
    read = refused = tools = 0
    prev_calls = None  # tool calls of the previous call read, None when it was not read
    pending_tools: list[str] = []
    for s in spans:
        a = s["attributes"]
        op = a.get("gen_ai.operation.name")
        if op == "execute_tool":
            pending_tools.append(a["gen_ai.tool.name"])
        if op != "call_llm":
            continue
        out = json.loads(a["gen_ai.output"]) if a.get("gen_ai.output.type") == "json" else a["gen_ai.output"]
        names = [c["tool.name"] for c in out] if isinstance(out, list) else []
        ok = "gen_ai.input.messages" in a or (bool(prev_calls) and pending_tools == prev_calls)
        if ok:
            read, tools = read + 1, tools + len(names)
        else:
            refused += 1
        prev_calls, pending_tools = (names if ok else None), []
    return read, refused, tools


def test_real_any_agent_traces_read_exactly_or_refuse_the_calls_they_cannot_rebuild():
    files = sorted(ANY_AGENT.glob("*_trace.json"))
    assert len(files) == 7
    for path in files:
        read, refused, tools = _any_agent_walk(path)
        result = ingest([path], scrub=False)
        assert totals(result.conversations) == (1, read, tools), path.name
        errors = [e.code for e in result.report.errors]
        assert errors == ["content_not_captured"] * refused, (path.name, errors)
    # by hand: LLAMA_INDEX (the trace) has 5 calls and 3 tool calls; its last call follows a text answer
    assert _any_agent_walk(ANY_AGENT / "LLAMA_INDEX_trace.json") == (4, 1, 3)


def test_claude_code_inline_sub_agent_with_agent_id_on_some_lines_only_is_one_conversation(tmp_path):
    """Claude Code 2.0.x wrote Task sub-agents inline: the sub-agent's tool-result lines carry ``agentId``, its
    answers do not (as in claude-code-log's test/test_data/sidechain_integrated.jsonl, a trimmed real
    session). One thread is one conversation, whatever lines carry the id."""
    def line(uuid, parent, kind, content, side=True, agent=None, mid=None):
        msg = {"role": kind, "content": content}
        if kind == "assistant":
            msg.update(id=mid or f"m-{uuid}", type="message", model="claude-sonnet-4-5-20250929")
        out = {"parentUuid": parent, "isSidechain": side, "sessionId": "s", "type": kind, "uuid": uuid, "message": msg}
        return {**out, **({"agentId": agent} if agent else {})}

    call = [{"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "x"}}]
    result = [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]
    lines = [line("u0", None, "user", "Research x", side=False),
             line("s1", None, "user", "Sub-task: research x"),
             line("s2", "s1", "assistant", call),
             line("s3", "s2", "user", result, agent="e1c84ba5"),
             line("s4", "s3", "assistant", [{"type": "text", "text": "x is in a.py"}]),
             line("a0", "u0", "assistant", [{"type": "text", "text": "Done: a.py"}], side=False)]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    result_ = ingest([path], scrub=False)
    assert result_.report.ok, result_.report.errors
    assert totals(result_.conversations) == (2, 3, 1)  # main: 1 call; the sub-agent: 2 calls, 1 tool call


def test_a_proxy_request_log_with_the_response_beside_the_messages_is_one_call_a_record(tmp_path):
    """A proxy's request log (LiteLLM's spend log: ``messages`` sent and the ``response`` object beside them, one
    request a line): the OpenAI chat reader read the messages as a transcript, its last assistant turn the call, and
    dropped the response (ok, the wrong call). Now each record is one call, its response the completion, chained
    into conversations; a failed request (``response`` null, ``error_str``) is no call; a response stored as a
    JSON string is read too."""
    def record(rid, msgs, reply, as_text=False):
        response = None if reply is None else {"id": rid, "object": "chat.completion", "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply}}]}
        return {"id": rid, "status": "success" if reply else "failure", "messages": msgs,
                "response": json.dumps(response) if as_text and response else response,
                **({} if reply else {"error_str": "RateLimitError"})}

    hi = [{"role": "user", "content": "Hi"}]
    sum_ = [*hi, {"role": "assistant", "content": "Hello! How can I help?"}, {"role": "user", "content": "2+2?"}]
    lines = [record("r1", hi, "Hello! How can I help?"), record("r2", sum_, None), record("r3", sum_, "It is 4.", True)]
    path = tmp_path / "spend_logs.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 0)
    assert [c.completion.text for c in result.conversations[0].calls()] == ["Hello! How can I help?", "It is 4."]
    assert "failed_turn_skipped" in codes(result, "warnings")
    answered = {**record("e1", [*hi, {"role": "assistant", "content": "Hello!"}], "Hello!"), "status": "ok"}
    path.write_text(json.dumps(answered) + "\n")  # an eval's record: the transcript ends with the response's copy
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and result.report.formats == {"openai_chat": 1}
    assert totals(result.conversations) == (1, 1, 0)


def test_openinference_llm_system_names_the_provider_not_a_system_prompt():
    """OpenInference's ``llm.system`` (GenAI's ``gen_ai.system``) names the provider: the real span read ``[system]
    openai`` as each call's system prompt. A one-word name under ``system`` is no prompt."""
    path = Path(__file__).parent / "fixtures" / "unknown_formats" / "openinference-attrs__client_span_tool_calls.json"
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok
    first = next(result.conversations[0].calls())
    assert first.context[0].role == "user" and first.context[0].text == "Weather in Paris?"
    assert not any(m.role == "system" for c in result.conversations for m in c.messages)


def test_a_result_after_calls_written_in_a_form_no_reader_reads_is_refused(tmp_path):
    """ToolACE rows write the calls as ``[Func(a=1), Func(a=2)]`` text, then a ``tool`` turn: read by the ShareGPT
    reader the calls stayed text and the results answered nothing, ``ok`` with a warning (a new-user trial). A result
    with no call id and no call read anywhere before it refuses the conversation in every format."""
    row = {"system": "You can call functions.", "conversations": [
        {"from": "user", "value": "Find Inception and Up."},
        {"from": "assistant", "value": '[Get Movie(title="Inception"), Get Movie(title="Up")]'},
        {"from": "tool", "value": '[{"name": "Get Movie", "results": {"year": 2010}}]'},
        {"from": "assistant", "value": "Inception is from 2010."}]}
    path = tmp_path / "toolace.jsonl"
    path.write_text(json.dumps(row) + "\n")
    result = ingest([path], scrub=False, dedup=False)
    assert not result.report.ok and "tool_result_without_call" in codes(result) and not result.conversations


def test_state_snapshots_newest_first_count_each_call_once(tmp_path):
    """LangGraph's ``get_state_history()``: checkpoints of one thread, newest first, each holding the messages so far
    (read before as one conversation per snapshot: 5 conversations, each call counted up to 3 times, ``ok``). Two
    dialogues that merely share a start, without a common thread id, stay two."""
    turns = [{"type": "human", "content": "Hi", "id": "h1"}, {"type": "ai", "content": "Hello!", "id": "a1"},
             {"type": "human", "content": "Search langgraph", "id": "h2"},
             {"type": "ai", "content": "", "id": "a2", "tool_calls": [
                 {"name": "search", "args": {"q": "langgraph"}, "id": "c1", "type": "tool_call"}]},
             {"type": "tool", "content": "A library.", "tool_call_id": "c1", "name": "search", "id": "t1"},
             {"type": "ai", "content": "LangGraph is a library.", "id": "a3"}]
    snapshots = [{"values": {"messages": turns[:n]}, "next": [], "created_at": f"2026-01-01T00:00:0{n}Z",
                  "config": {"configurable": {"thread_id": "t1", "checkpoint_id": f"cp{n}"}}} for n in range(6, 0, -1)]
    path = tmp_path / "state_history.json"
    path.write_text(json.dumps(snapshots))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 3, 1), codes(result)
    assert "snapshots_read_once" in codes(result, "warnings")
    dialogues = [{"dialog_id": "d1", "messages": [{"role": "user", "content": "Hi"},
                                                  {"role": "assistant", "content": "Hello"},
                                                  {"role": "user", "content": "Bye"},
                                                  {"role": "assistant", "content": "Bye!"}]}]
    dialogues.append({"dialog_id": "d2", "messages": dialogues[0]["messages"][:2]})
    path.write_text(json.dumps(dialogues))
    assert totals(ingest([path], scrub=False, dedup=False).conversations) == (2, 3, 0)
    # the input checkpoint (no message yet) first, two threads interleaved: each thread once
    other = [{**snap, "config": {"configurable": {"thread_id": "t2", "checkpoint_id": f"x{n}"}}}
             for n, snap in enumerate(snapshots[2:])]
    mixed = [{"values": {}, "next": ["__start__"], "config": {"configurable": {"thread_id": "t1", "checkpoint_id": "0"}}}]
    mixed += [s for pair in zip(snapshots, other) for s in pair]
    path.write_text(json.dumps(mixed))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (2, 5, 2), codes(result)
    # a person's edit of the model's tool call (update_state, the same message id): not one chain, refused
    edited = json.loads(json.dumps(snapshots[:3]))
    edited[0]["values"]["messages"][3]["tool_calls"][0]["args"] = {"q": "langchain"}
    path.write_text(json.dumps(edited))
    result = ingest([path], scrub=False, dedup=False)
    assert codes(result) == ["snapshots_not_linear"] and not result.conversations


def test_an_answer_sent_back_without_its_call_is_read_as_the_client_sent_it():
    """llm.rb's Ollama requests send the model's tool-call answer back as an empty assistant message, then the
    result without an id (held-out set 116's real cassette, 0BSD): the call was read as the first answer of the
    cassette's conversation, so the second call's context is what the client sent. Refused for a while by the rule
    above, when it looked only before the result: found by the held-out regression run."""
    path = (Path(__file__).resolve().parents[2] / "benchmarks/data/heldout_formats_116/files"
            / "llmrb-llm__ollama__llm_function_block.yml")
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)


def test_a_call_in_both_content_blocks_and_tool_calls_is_one_call(tmp_path):
    """LangChain's ``messages_to_dict`` of a ChatAnthropic reply: the call is a ``tool_use`` block of ``content``
    and again in ``tool_calls``, with the same id. Read twice before (2 tool calls, ``ok``; a new-user trial)."""
    def msg(kind: str, **data) -> dict:
        return {"type": kind, "data": {"type": kind, "additional_kwargs": {}, "response_metadata": {}, **data}}
    call = {"name": "convert", "args": {"value": 5, "from": "mi", "to": "km"}, "id": "toolu_01A", "type": "tool_call"}
    doc = [msg("system", content="You are a unit converter."), msg("human", content="Convert 5 miles to km"),
           msg("ai", content=[{"type": "text", "text": "Converting."},
                              {"type": "tool_use", "id": "toolu_01A", "name": "convert", "input": call["args"]}],
               tool_calls=[call], invalid_tool_calls=[]),
           msg("tool", content="8.047", tool_call_id="toolu_01A", name="convert"),
           msg("ai", content="About 8.05 km.", tool_calls=[])]
    path = tmp_path / "history.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)


def test_a_message_shown_only_to_the_user_is_in_no_context(tmp_path):
    """gptme's conversation.jsonl marks a message kept for display only (``ui_only: true``, never sent to the
    provider): it was read into the next call's context, ``ok``. A hidden message (``hide: true``) is sent."""
    lines = [{"role": "system", "content": "You are gptme.", "hide": True, "pinned": True},
             {"role": "user", "content": "How many Python files are here?"},
             {"role": "assistant", "content": "```shell\nfind . -name '*.py' | wc -l\n```"},
             {"role": "system", "content": "Ran command: 17"},
             {"role": "system", "content": "Auto-compacting: 0 messages dropped", "ui_only": True},
             {"role": "assistant", "content": "There are 17 Python files."}]
    for name, doc in {"conversation.jsonl": "\n".join(json.dumps(m) for m in lines) + "\n",
                      "conversation.json": json.dumps({"messages": lines})}.items():
        path = tmp_path / name
        path.write_text(doc)
        result = ingest([path], scrub=False, dedup=False)
        assert result.report.ok and totals(result.conversations) == (1, 2, 0), (name, codes(result))
        last = list(result.conversations[0].calls())[-1]
        assert [m.text for m in last.context][-1] == "Ran command: 17", name
        assert "display_only_skipped" in codes(result, "warnings"), name
