"""A mapping learned from one of the model's replies (``drafters/traces/infer_example.py``,
``infer-mapping --reply``): where the example sits decides the message list, role key and values, or the
request/response paths; the mapping then reads the file exactly, or the example is refused with a code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drafters.traces.infer_example import learn_mapping, learned_yaml
from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import mapping_from_dict
from drafters.traces.report import TraceError


def _read(path, learned):
    report = ingest([str(path)], mapping=mapping_from_dict(learned.mapping), scrub=False, dedup=False)
    return report


def _counts(path, learned):
    result = _read(path, learned)
    convs = result.conversations
    return result.report.ok, len(convs), sum(len(list(c.calls())) for c in convs)


def test_roles_nobody_spells_are_learned_from_the_reply(tmp_path):
    """A tutoring log whose speakers are "STU" and "TUT": the reply's speaker is the assistant, the one other value
    nobody spells the user."""
    path = tmp_path / "sessions.json"
    turns = [{"who": "STU", "said": "How do I factor x^2 - 9?"},
             {"who": "TUT", "said": "It is a difference of squares: (x - 3)(x + 3)."},
             {"who": "STU", "said": "And x^2 - 16?"},
             {"who": "TUT", "said": "The same way: (x - 4)(x + 4)."}]
    path.write_text(json.dumps({"sessions": [{"id": "a", "log": turns}, {"id": "b", "log": turns[:2]}]}))
    learned = learn_mapping(path, "It is a difference of squares")
    assert learned.mapping["messages"] == "$.sessions[*].log"
    assert (learned.mapping["role"], learned.mapping["content"]) == ("who", "said")
    assert learned.mapping["roles"] == {"STU": "user", "TUT": "assistant"}
    assert learned.found_at == "$.sessions[0].log[1].said" and not learned.unnamed
    assert _counts(path, learned) == (True, 2, 3)
    assert "found at $.sessions[0].log[1].said" in learned_yaml(learned)


def test_a_third_unknown_role_is_left_for_the_user(tmp_path):
    path = tmp_path / "log.json"
    turns = [{"who": "SYS", "said": "You are a patient tutor."}, {"who": "STU", "said": "What is 2 + 2?"},
             {"who": "TUT", "said": "Two plus two is four."}, {"who": "STU", "said": "And 3 + 3?"},
             {"who": "TUT", "said": "Three plus three is six."}]
    path.write_text(json.dumps({"log": turns}))
    learned = learn_mapping(path, "Two plus two is four")
    assert learned.mapping["roles"] == {"SYS": "?", "STU": "?", "TUT": "assistant"}
    assert learned.unnamed == ["SYS", "STU"]
    assert '"?" (SYS, STU)' in learned_yaml(learned)


def test_one_message_a_line(tmp_path):
    """A JSONL log of one message a record: the records are the list (``records: messages``)."""
    path = tmp_path / "chat.jsonl"
    lines = [{"ts": 1, "from": "visitor", "body": "Is the shop open on Sunday?"},
             {"ts": 2, "from": "bot", "body": "Yes, from ten to four on Sundays."},
             {"ts": 3, "from": "visitor", "body": "Thanks, and on holidays?"},
             {"ts": 4, "from": "bot", "body": "Closed on public holidays."}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    learned = learn_mapping(path, "from ten to four on Sundays")
    assert (learned.mapping["records"], learned.mapping["messages"], learned.mapping["role"]) == ("messages", "$",
                                                                                                   "from")
    assert learned.mapping["roles"] == {"visitor": "user", "bot": "assistant"}
    assert _counts(path, learned) == (True, 1, 2)


def test_prompt_and_reply_under_keys_of_their_own(tmp_path):
    """An eval log: the prompt under an input spelling (``question``), the reply under ``model_said``, beside a
    reference answer that is never the model's."""
    path = tmp_path / "eval.jsonl"
    rows = [{"question": f"What is the capital of country {i}?", "model_said": f"The capital of {i} is City {i}.",
             "reference": f"City {i}"} for i in range(3)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    learned = learn_mapping(path, "The capital of 0 is City 0")
    assert (learned.mapping["messages"], learned.mapping["response"]) == ("$.question", "$.model_said")
    assert not learned.notes
    result = _read(path, learned)
    assert result.report.ok and len(result.conversations) == 3
    call = next(result.conversations[1].calls())
    assert call.context[-1].text == "What is the capital of country 1?" and call.completion.text == (
        "The capital of 1 is City 1.")


def test_a_prompt_under_no_known_key_is_a_guess_said_in_a_comment(tmp_path):
    path = tmp_path / "samples.jsonl"
    rows = [{"doc_id": i, "arguments": {"arg_0": f"Translate to French, then explain the grammar: sentence {i}"},
             "resps": [[f"Voici la phrase {i}, with its grammar explained."]]} for i in range(2)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    learned = learn_mapping(path, "Voici la phrase 0")
    assert (learned.mapping["messages"], learned.mapping["response"]) == ("$.arguments.arg_0", "$.resps[0][0]")
    assert learned.notes and learned.notes[0].startswith("# PROMPT: guessed")
    assert _counts(path, learned) == (True, 2, 2)


def test_a_record_of_several_calls_is_not_read_as_one(tmp_path):
    """The reply is one of several calls a record keeps under names of their own (``plan``, ``act``): one response
    path would read one call of two, so no request/response reading is offered, and with no role list the example
    is refused. Kept as the items of a list, at any depth, the items are read one call each (``records: lists``,
    ``lists`` naming the object holding the list)."""
    path = tmp_path / "runs.json"
    calls = [{"prompt_text": f"Step {i}: what next?", "generated": f"Next I open file number {i} and read it."}
             for i in range(3)]
    path.write_text(json.dumps({"run": {"id": "r1", "plan": calls[0], "act": calls[1]}}))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "Next I open file number 0")
    assert err.value.code == "example_not_read" and "$.run.plan.generated" in err.value.message
    path.write_text(json.dumps({"run": "r1", "calls": calls}))
    learned = learn_mapping(path, "Next I open file number 0")
    assert learned.mapping["records"] == "lists" and _counts(path, learned) == (True, 3, 3)
    path.write_text(json.dumps({"runs": [{"id": "r1", "calls": calls}, {"id": "r2", "calls": calls[:2]}]}))
    learned = learn_mapping(path, "Next I open file number 0")
    assert learned.mapping["lists"] == "$.runs[*]" and _counts(path, learned) == (True, 5, 5)


@pytest.mark.parametrize(("reply", "code"), [("not in the file at all", "example_not_found"),
                                             ("short", "example_too_short")])
def test_an_example_not_found_or_too_short_is_refused(tmp_path, reply, code):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"log": [{"who": "A", "said": "hello there"}, {"who": "B", "said": "hi, how are you"}]}))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, reply)
    assert err.value.code == code


def test_a_list_of_calls_a_record_keeps_is_read_item_by_item(tmp_path):
    """A benchmark's details file: one document whose ``examples`` list holds one call per item (``records:
    lists``), every item's answer read, none lost."""
    path = tmp_path / "details.json"
    items = [{"question": f"Solve for x: x + {i} = 10", "model_response": f"Subtracting {i} gives x = {10 - i}.",
              "correct": True} for i in range(4)]
    path.write_text(json.dumps({"model": "m", "score": 1.0, "examples": items}))
    learned = learn_mapping(path, "Subtracting 2 gives x = 8")
    assert learned.mapping["records"] == "lists" and learned.mapping["response"] == "$.model_response"
    assert learned.found_at == "$.examples[2].model_response"
    assert _counts(path, learned) == (True, 4, 4)


LEARNED = Path(__file__).parent / "fixtures" / "learned"  # real public files (SOURCES.tsv), formats with no module


def test_real_eval_samples_learned_from_one_reply():
    """lm-evaluation-harness ``--log_samples``: the prompt under ``arguments.gen_args_0.arg_0`` (no input spelling:
    a guess, said in a comment), the reply under ``resps[0][0]``; every line one call, each completion the file's."""
    path = LEARNED / "lm-eval-samples__masakhaner_luo_prompt_1__first10.jsonl"
    learned = learn_mapping(path, "Return only the output that contains the word 'Covid-19'")
    assert (learned.mapping["messages"], learned.mapping["response"]) == ("$.arguments.gen_args_0.arg_0",
                                                                          "$.resps[0][0]")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    result = _read(path, learned)
    calls = [call for conv in result.conversations for call in conv.calls()]
    assert result.report.ok and len(result.conversations) == len(rows) == len(calls) == 10
    assert [c.completion.text for c in calls] == [r["resps"][0][0] for r in rows]
    assert [c.context[-1].text for c in calls] == [r["arguments"]["gen_args_0"]["arg_0"] for r in rows]


def test_real_task_run_learned_from_one_reply():
    """A Kiln task run: the user's ``input`` (an input spelling) and the model's ``output.output``; one call."""
    path = LEARNED / "kiln__ffmpeg_run_160486341538.task_run.kiln"
    learned = learn_mapping(path, "To reverse audio, use the `-af` (audio filter) option with `areverse`.")
    run = json.loads(path.read_text())
    result = _read(path, learned)
    (call,) = [call for conv in result.conversations for call in conv.calls()]
    assert result.report.ok and call.context[-1].text == run["input"]
    assert "To reverse audio, use the `-af`" in call.completion.text and "areverse" in call.completion.text


def test_a_history_written_newest_first_is_not_learned(tmp_path):
    """A list opening with the assistant's message and ending with the user's (a history kept newest first, its
    last answer beside it): read oldest first it would misplace every call, so it is refused."""
    path = tmp_path / "sample.json"
    history = [{"role": "assistant", "content": "I renamed the function to parse_config everywhere."},
               {"role": "user", "content": "Rename parse to parse_config."},
               {"role": "assistant", "content": "I added the missing import of json at the top."},
               {"role": "user", "content": "The import of json is missing."}]
    path.write_text(json.dumps({"message_history": history, "message_prompt": "Add a test.",
                                "message_edit": "I added a test for parse_config in tests/test_config.py."}))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "I added the missing import of json")
    assert err.value.code == "example_not_read"


def test_the_prompt_is_the_input_text_nearest_the_reply_and_other_texts_are_named(tmp_path):
    """The prompt is the text under a key naming an input, searched from the object holding the reply outwards
    (``agent_input_prompt`` beside the output, not the episode's short ``instruction``; never a ``prompt_id``), and
    the record's other long texts the mapping does not read are named in a ``# NOT READ`` comment."""
    path = tmp_path / "episode.json"
    prompt = "You are a robot in a kitchen. Task: find the ladle. Observation: you see a counter and a sink."
    path.write_text(json.dumps({"instruction": "Find the ladle.", "task_description": "A household task in a simulated "
                                "kitchen, scored on success.", "trajectory": [
                                    {"prompt_id": "kitchen-template-v2-0001", "agent_input_prompt": prompt,
                                     "agent_output": "I will walk to the counter and look for the ladle there."}]}))
    learned = learn_mapping(path, "walk to the counter and look for the ladle")
    assert learned.mapping["messages"] == "$.trajectory[0].agent_input_prompt"
    assert any("$.task_description" in n and n.startswith("# NOT READ") for n in learned.notes)
    call = next(c for conv in _read(path, learned).conversations for c in conv.calls())
    assert call.context[-1].text == prompt


def test_a_turn_the_general_path_refuses_beside_the_reply_refuses_the_reading(tmp_path):
    """The reply under ``message_edit`` beside a history and a ``message_prompt`` the general path refuses to
    lose: a response reading that would read the file ``ok`` without that turn is not offered."""
    path = tmp_path / "sample.json"
    path.write_text(json.dumps({
        "message_history": [{"role": "user", "content": "Rename parse to parse_config."},
                            {"role": "assistant", "content": "Renamed it everywhere."}],
        "message_prompt": "Now add a test for parse_config.",
        "message_edit": "I added a test for parse_config in tests/test_config.py."}))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "I added a test for parse_config")
    assert err.value.code == "example_not_read" and "message_prompt" in err.value.message


def test_a_table_is_learned_from_one_reply(tmp_path):
    """An MT experiment's TSV (ChatGPT-MT's layout, held-out set 57, written here by hand): ``messages`` the
    Python repr of the list sent, ``predictions`` the reply: a request/response reading of its rows."""
    import csv

    path = tmp_path / "mt.tsv"
    rows = [("This is an English to French translation: Hello there.", "Bonjour à tous.", "Salut tout le monde."),
            ("This is an English to French translation: Thank you.", "Merci.", "Merci beaucoup.")]
    with path.open("w", newline="") as f:
        writer = csv.writer(f, delimiter="\t")
        writer.writerow(["messages", "label", "predictions"])
        writer.writerows([repr([{"role": "user", "content": p}]), label, reply] for p, label, reply in rows)
    learned = learn_mapping(path, "Salut tout le monde")
    assert (learned.mapping["messages"], learned.mapping["response"]) == ("$.messages", "$.predictions")
    result = _read(path, learned)
    calls = [c for conv in result.conversations for c in conv.calls()]
    assert result.report.ok and [(c.context[0].text, c.completion.text) for c in calls] == [
        (p, reply) for p, _, reply in rows]


def test_rows_numbering_the_turns_of_one_dialogue_are_not_read_as_calls_of_their_own(tmp_path):
    """A tutoring table (``turn``, ``student_msg``, ``tutor_msg``): each row a turn of one dialogue, so each read as
    its own call would lose the turns before it: the rows continue each other (``turns``), each call's context the
    turns before it."""
    path = tmp_path / "chat.csv"
    path.write_text("turn,student_msg,tutor_msg\n1,what is 9 times 59?,To find it we multiply 9 by 59.\n"
                    "2,and then?,Then we add the partial products.\n3,thanks,You are welcome!\n")
    learned = learn_mapping(path, "To find it we multiply 9 by 59")
    assert learned.mapping["turns"] == "$.turn" and _counts(path, learned) == (True, 1, 3)
    (conv,) = _read(path, learned).conversations
    assert [len(call.context) for call in conv.calls()] == [1, 3, 5]


def test_a_response_kept_twice_as_equal_copies_is_one_reply(tmp_path):
    """A test harness's response cache: the response parsed (``response_data``) and again as the raw body
    (``request_metadata.response_body``), equal, beside the request's messages whose texts sit under the same
    ``content`` key as the reply's: one call, not a record of several calls."""
    response = {"model": "llama3.2:1b", "message": {"role": "assistant", "content": "Arrr, what brings ye here?"},
                "done": True}
    request = {"model": "llama3.2:1b", "messages": [{"role": "system", "content": "You are a pirate."},
                                                    {"role": "user", "content": "Hello there!"}]}
    path = tmp_path / "cache_entry.json"
    path.write_text(json.dumps({"response_data": response, "request_metadata": {
        "request_body": request, "response_body": response, "status_code": 200}}))
    learned = learn_mapping(path, "what brings ye here")
    assert (learned.mapping["messages"], learned.mapping["response"]) == (
        "$.request_metadata.request_body.messages", "$.response_data.message.content")
    (conv,) = _read(path, learned).conversations
    (call,) = conv.calls()
    assert [m.role for m in call.context] == ["system", "user"]
    assert call.completion.text == "Arrr, what brings ye here?"
    response["message"]["content"] = "Arrr, another reply."  # no longer a copy: which call is it? not learned
    path.write_text(json.dumps({"response_data": response, "request_metadata": {
        "request_body": request, "response_body": {**response, "message": {"role": "assistant",
                                                                        "content": "Arrr, another reply. 2"}}}}))
    with pytest.raises(TraceError):
        learn_mapping(path, "Arrr, another reply")


def test_a_thought_then_a_tool_call_are_one_reply(tmp_path):
    """An agent framework's result (AutoGen's ``TaskResult``): a thought event and the tool-call event after it
    are two assistant records of one model turn; the learned mapping joins them as the general path does."""
    path = tmp_path / "task_result.json"
    path.write_text(json.dumps({"messages": [
        {"source": "user", "content": "What is 13960000 divided by 1000?", "type": "TextMessage"},
        {"source": "assistant", "content": "I'll use the calculator for that.", "type": "ThoughtEvent"},
        {"source": "assistant", "content": [{"id": "call_1", "arguments": "{\"expression\": \"13960000/1000\"}",
                                             "name": "calculator"}], "type": "ToolCallRequestEvent"},
        {"source": "assistant", "content": [{"content": "13960.0", "name": "calculator", "call_id": "call_1"}],
         "type": "ToolCallExecutionEvent"},
        {"source": "assistant", "content": "13960000 divided by 1000 is 13,960.", "type": "TextMessage"}]}))
    learned = learn_mapping(path, "divided by 1000 is 13,960")
    assert learned.mapping["adjacent_answers"] == "join"
    result = _read(path, learned)
    general = ingest([str(path)], scrub=False, dedup=False)
    counts = [(len(r.conversations), sum(len(list(c.calls())) for c in r.conversations)) for r in (result, general)]
    assert result.report.ok and counts[0] == counts[1]


def test_prompts_rebuilt_for_every_call_open_a_conversation_each(tmp_path):
    """An algorithm-design loop's conversation log (LLaMEA's ``conversationlog.jsonl``: one message a line, the
    driver's prompts under its own name, the model's replies under the model's): every prompt restates the long
    task description and quotes earlier candidates as text, so each is sent whole (``whole_prompts``); a chat whose
    second turn is short continues one conversation."""
    task = ("You are a highly skilled computer scientist. Your task is to design novel metaheuristic algorithms to "
            "solve black box optimization problems on the BBOB suite of 24 noiseless functions, in Python, with an "
            "__init__(self, budget, dim) and a __call__(self, func) that optimizes the black box function. ")
    lines = [{"role": "LLaMEA", "content": task + "Give a first algorithm."},
             {"role": "gpt-4o", "content": "# Description: A hybrid of particle swarm and differential evolution."},
             {"role": "LLaMEA", "content": task + "The best so far:\n# Description: A hybrid of particle swarm and "
                                                     "differential evolution.\nScore 0.31. Refine it."},
             {"role": "gpt-4o", "content": "# Description: PSO-DE with adaptive inertia."}]
    path = tmp_path / "conversationlog.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    learned = learn_mapping(path, "A hybrid of particle swarm")
    assert learned.mapping["whole_prompts"] is True and any("whole_prompts" in n for n in learned.notes)
    result = _read(path, learned)
    assert result.report.ok and [len(list(c.calls())) for c in result.conversations] == [1, 1]
    assert [call.context[0].text[-12:] for c in result.conversations for call in c.calls()] == [
        "t algorithm.", ". Refine it."]
    chat = [dict(lines[0]), dict(lines[1]), {"role": "LLaMEA", "content": "Why that one?"}, dict(lines[3])]
    path.write_text("\n".join(json.dumps(x) for x in chat) + "\n")
    learned = learn_mapping(path, "A hybrid of particle swarm")
    assert "whole_prompts" not in learned.mapping and _counts(path, learned) == (True, 1, 2)
    # a chat front-end restating its context block above each turn (CodeCompanion's): the turn continues the chat
    restated = [dict(lines[0]), dict(lines[1]), {"role": "LLaMEA", "content": task + "Why that one?"}, dict(lines[3])]
    path.write_text("\n".join(json.dumps(x) for x in restated) + "\n")
    learned = learn_mapping(path, "A hybrid of particle swarm")
    assert "whole_prompts" not in learned.mapping and _counts(path, learned) == (True, 1, 2)


def test_calls_kept_as_json_text_beside_a_reply_refuse_the_reading(tmp_path):
    """A chat-flow builder's messages (Flowise's): the tools an answer used kept as JSON text under ``usedTools``
    (``{tool, toolInput, toolOutput}``): a reading of the texts alone would lose the call and its result."""
    used = json.dumps([{"tool": "calculator", "toolInput": {"input": "12*7+5"}, "toolOutput": "89"}])
    rows = [{"role": "userMessage", "content": "What is 12 times 7, plus 5?", "sessionId": "a", "usedTools": None},
            {"role": "apiMessage", "content": "12 times 7 is 84, and adding 5 gives 89.", "sessionId": "a",
             "usedTools": used}]
    path = tmp_path / "chatmessages.json"
    path.write_text(json.dumps(rows))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "12 times 7 is 84")
    assert err.value.code == "example_not_read" and "usedTools" in err.value.message


def test_an_identifier_is_never_guessed_as_the_prompt(tmp_path):
    """A tracer's call records (Weave's): the op's URI is a long text of no words, never the model's input."""
    rows = [{"op_name": "weave:///acme/support-bot/op/answer_question:Qm3x", "inputs": {"question": "Rotate a key?"},
             "output": "Open Settings > Keys, select the key and click Rotate."},
            {"op_name": "weave:///acme/support-bot/op/openai.chat.completions.create:Kp2a",
             "inputs": {"messages": [{"role": "user", "content": "Rotate a key?"}]}, "output": "Use Settings > Keys."}]
    path = tmp_path / "calls.json"
    path.write_text(json.dumps(rows))
    try:
        learned = learn_mapping(path, "select the key and click Rotate")
    except TraceError:
        return  # refused: fine
    assert "op_name" not in learned.mapping["messages"]


def test_a_setting_of_the_record_is_never_learned_as_the_role(tmp_path):
    """A benchmark's response log (the Decision Judgment Benchmark's): each record a prompt and the model's answer,
    beside settings (``reasoning_effort: low | minimal``) that are no speaker's side."""
    rows = [{"run_id": f"r{i}", "model_under_test": "gpt-5-nano", "full_prompt": f"You advise on decisions.\nQ{i}: "
             "Should I take the new job offer or stay?", "response": f"Answer {i}: weigh growth against stability.",
             "reasoning_effort": effort} for i, effort in enumerate(("minimal", "low", "low", "minimal"))]
    path = tmp_path / "responses.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    learned = learn_mapping(path, "weigh growth against stability")
    assert learned.mapping.get("role") != "reasoning_effort"
    assert _counts(path, learned) == (True, 4, 4)


def test_a_quote_of_the_reply_elsewhere_is_not_learned_as_it(tmp_path):
    """FactReasoner's assessor output: the checked reply is ``output``, a web snippet among the evidence quotes part
    of it, and the checker's raw replies sit under ``results.raw_outputs``. Reading the reply's place as a prompt and
    its reply would drop those replies; a reading learned from the quote (the evidence as records) would read the
    reply nowhere: refused, not learned. Without the raw replies, the reply's own place is learned."""
    reply = "Lanny Flaherty is an American actor born on December 18, 1949, in Pensacola, Florida."
    doc = {"input": "Tell me a biography of Lanny Flaherty", "output": reply,
           "contexts": [{"id": f"c_{i}", "title": f"Lanny Flaherty - page {i}",
                         "text": f"Lanny Flaherty (July 27, 1942 - February 18, 2024) was an American actor ({i}).",
                         "link": f"https://example.org/{i}",
                         "snippet": "Quoted: " + reply[:75] if i == 1 else f"Lanny Flaherty; born 1942 ({i})."}
                        for i in range(4)],
           "results": {"raw_outputs": {"a0": "###Supported###", "a1": "###Contradicted###"}}}
    path = tmp_path / "factverify_output.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "American actor born on December 18, 1949")
    assert err.value.code == "example_not_read" and "read nowhere" in err.value.message
    del doc["results"]
    path.write_text(json.dumps(doc))
    assert learn_mapping(path, "American actor born on December 18, 1949").mapping["response"] == "$.output"


def test_a_reading_of_no_call_gives_way_to_the_prompt_beside_the_reply(tmp_path):
    """A query history: a question and the generated query per record, beside a setting with a few short values
    (``dialect``). Read as a role, the setting made every record a message and no message followed another: no
    call. The record's question, under a key with an input word, is the prompt instead."""
    path = tmp_path / "history.json"
    rows = [{"timestamp": f"2025-03-08T08:3{i}:00", "natural_query": f"List the customers with {i} orders.\n",
             "sql_query": f"SELECT name FROM customers WHERE orders = {i};", "dialect": d}
            for i, d in enumerate(["mysql", "mysql", "postgresql"])]
    rows.insert(1, {**rows[0], "timestamp": "2025-03-08T08:43:57"})  # the button pressed again: another call
    path.write_text(json.dumps(rows))
    learned = learn_mapping(path, "SELECT name FROM customers WHERE orders = 0;")
    assert (learned.mapping["messages"], learned.mapping["response"]) == ("$.natural_query", "$.sql_query")
    assert _counts(path, learned) == (True, 4, 4)  # two records of one request at two times: two calls


@pytest.mark.parametrize("in_arguments", [True, False])
def test_a_reply_holding_a_legacy_function_call_is_read_with_it(tmp_path, in_arguments):
    """ProAgent's records: the request's messages beside the API's response, whose message holds a legacy
    ``function_call`` (its ``thought`` inside the arguments, or a text beside it). Read as the text alone (the
    arguments string, or ``content``), the call was lost; the reply is the message, its call keys declared."""
    thought = "Define a trigger, then read the sheet and post to Slack."
    call = {"name": "function_define", "arguments": json.dumps({"thought": thought, "plan": ["a", "b"]})}
    message = {"role": "assistant", "function_call": call, **({} if in_arguments else {"content": thought})}
    record = {"input": {"messages": [{"role": "system", "content": "You are an RPA agent."},
                                     {"role": "user", "content": "Sync the sheet to Slack."}]},
              "output": {"object": "chat.completion", "choices": [{"index": 0, "message": message}]}}
    path = tmp_path / "LLM_inout_pair_00000.json"
    path.write_text(json.dumps(record, ensure_ascii=False))
    learned = learn_mapping(path, thought)
    assert learned.mapping["response"] == "$.output.choices[0].message"
    assert learned.mapping["tool_calls"] == "function_call"
    result = _read(path, learned)
    assert result.report.ok and [len(c.completion.tool_calls) for c in result.conversations[0].calls()] == [1]


def test_a_text_block_beside_a_tool_use_block_is_not_read_alone(tmp_path):
    """Karenina's fixtures: a LangChain request (``type: human``) and the response's content blocks, a text then a
    ``tool_use``. The example sits in the text block; read alone, the call was lost."""
    text = "I'll query the Open Targets Platform for this variant."
    record = {"request": {"messages": [{"content": "Most severe consequence of 19_44908822_C_T?", "type": "human"}]},
              "response": {"content": [{"type": "text", "text": text},
                                       {"type": "tool_use", "id": "toolu_1", "name": "query_graphql",
                                        "input": {"query_string": "query { variant }"}}], "model": "claude-haiku-4-5"}}
    path = tmp_path / "mcp_agent.json"
    path.write_text(json.dumps(record))
    learned = learn_mapping(path, text)
    assert not learned.mapping["response"].endswith(".text")
    result = _read(path, learned)
    assert result.report.ok and [len(c.completion.tool_calls) for c in result.conversations[0].calls()] == [1]


def test_an_outcome_key_is_never_learned_as_the_role(tmp_path):
    """HuixiangDou's RAG output: per query a direct reply and a RAG reply beside a ``reason`` ("success", "query is
    not a question"). Learned as the role, ``reason`` made each answered record a user-assistant pair of one reply
    and read 1 call of 6 `ok`; the two replies beside one query are not read as one call either."""
    rows = [{"id": 0, "query": "Nice.", "direct_reply": "", "rag_reply": "", "code": 1,
             "reason": "query is not a question"}]
    rows += [{"id": i, "query": f"How do I convert model {i} to TNN?", "direct_reply": f"Convert model {i} with "
              "onnx2tnn first, then check the precision.", "rag_reply": f"Per the docs, model {i} needs onnx2tnn.",
              "code": 0, "reason": "success"} for i in (1, 2)]
    path = tmp_path / "rag_example_output.json"
    path.write_text("".join(json.dumps(r, indent=2) + "\n" for r in rows))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "Convert model 1 with onnx2tnn first")
    assert err.value.code == "example_not_read"


def test_answers_sampled_for_one_prompt_are_a_call_each(tmp_path):
    """An eval's results grouped by category and dataset, three answers sampled per question (reasoning-gym's
    ``completions: [{model_answer, full_model_response, score}]``, two of them equal): each sample is a call of its
    own, read at ``completions[*]``, and every dataset's results are the records (``lists`` matching several
    objects)."""
    def result(q: int) -> dict:
        answers = [f"Step by step, question {q} gives {q + s}." for s in (0, 1, 1)]
        return {"question": f"Question {q}: integrate x**{q} dx and simplify.", "expected_answer": str(q),
                "best_full_model_response": answers[0], "completions": [
                    {"model_answer": str(q + s), "full_model_response": a, "score": 1.0} for s, a in zip((0, 1, 1),
                                                                                                        answers)]}
    doc = {"metadata": {"model": "m"}, "categories": [
        {"name": "algebra", "datasets": [{"name": "a", "results": [result(1), result(2)]},
                                         {"name": "b", "results": [result(3)]}]},
        {"name": "logic", "datasets": [{"name": "c", "results": [result(4)]}]}]}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    learned = learn_mapping(path, "question 1 gives 1")
    assert learned.mapping["lists"] == "$.categories[*].datasets[*]"
    assert learned.mapping["response"] == "$.completions[*].full_model_response"
    assert _counts(path, learned) == (True, 12, 12)
    records = [c.source.record for c in _read(path, learned).conversations]  # each at its own dataset's path
    assert "$.categories[0].datasets[1].results[0]" in records and "$.categories[1].datasets[0].results[0]" in records
    doc = {"run 1": {"results": [result(1), result(2)]}}  # one object, a key quoted as declared
    path.write_text(json.dumps(doc))
    learned = learn_mapping(path, "question 1 gives 1")
    assert learned.mapping["lists"] == "$['run 1']"
    assert {c.source.record for c in _read(path, learned).conversations} == {"$['run 1'].results[0]",
                                                                             "$['run 1'].results[1]"}


def test_a_span_prompt_list_of_one_text_is_the_input(tmp_path):
    """A trace's spans with a LangChain LLM callback's attributes (``llm.input.prompts: [TEXT]``,
    ``llm.output.response: [TEXT]``) beside a chain span of no call: each span a record (``lists: $.traces[*]``),
    the one prompt the input; the chain span is read past."""
    def trace(i: int) -> dict:
        return {"trace_id": f"t{i}", "spans": [
            {"name": "chain_start", "attributes": {"chain.inputs": {"input": "hi"}}},
            {"name": "llm.openai", "attributes": {"llm.model": "ChatOpenAI",
                                                  "llm.input.prompts": [f"Human: Answer question {i}.\nThought:"],
                                                  "llm.output.response": [f"I know this one, number {i}.\n"
                                                                          + "Final Answer: yes"]}}]}
    path = tmp_path / "traces.json"
    path.write_text(json.dumps({"traces": [trace(1), trace(2)], "timestamp": 1}))
    learned = learn_mapping(path, "I know this one, number 1")
    assert learned.mapping["messages"] == "$.attributes['llm.input.prompts'][0]"
    assert _counts(path, learned) == (True, 2, 2)


def test_steps_keyed_by_id_are_records(tmp_path):
    """A pipeline log of steps keyed by step id, the model step's reply under its debug information and its input
    as a one-item list of values: the steps are the records (``records: values``), no id in a path."""
    path = tmp_path / "log.json"
    steps = {"9733f446-30ed": {"StepType": "InputStep", "Result": {"Value": "x"}},
             "cdfba459-3e62": {"StepType": "RouterStep", "DebugInformation": {
                 "modelName": "gpt-4o", "response": "{\"route\": \"route 4 of the router\"}"},
                 "Input": [{"$type": "input", "Value": "please summarise the blog post for an email"}]}}
    path.write_text(json.dumps({"StepsExecutionContext": steps, "Success": True}))
    learned = learn_mapping(path, "route 4 of the router")
    assert learned.mapping["records"] == "values" and learned.mapping["lists"] == "$.StepsExecutionContext"
    assert "cdfba459" not in learned.mapping["messages"] + learned.mapping["response"]
    assert _counts(path, learned) == (True, 1, 1)
    other = {"5e1f-77": {**steps["cdfba459-3e62"], "Input": [{"Value": "now write the email to Tal about it"}]}}
    path.write_text(json.dumps({"runs": [{"steps": steps}, {"steps": other}]}))  # every run's steps: lists matches two
    learned = learn_mapping(path, "route 4 of the router")
    assert learned.mapping["lists"] == "$.runs[*].steps" and _counts(path, learned) == (True, 2, 2)


def test_records_under_one_of_several_alike_keys_are_not_learned(tmp_path):
    """A response cache keyed by mode, then by hash (LightRAG's ``{"default": {HASH: entry}, "hybrid": {HASH:
    entry}}``): a reading of the values under the example's mode (``lists: $.default``) would lose the other mode's
    calls, so none is offered."""
    def entry(i: int, mode: str) -> dict:
        return {"return": f"Answer {i} of the {mode} cache, a long enough reply.", "cache_type": mode,
                "original_prompt": f"-Goal- extract the entities of document {i} and their relations."}
    doc = {"default": {f"dfe47{i}d4f5cb2f5": entry(i, "extract") for i in range(2)},
           "hybrid": {f"db6e4{i}2e15eca91": entry(i, "keywords") for i in range(3)}}
    path = tmp_path / "kv_store_llm_response_cache.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "Answer 0 of the extract cache")
    assert err.value.code == "example_not_read"
    del doc["hybrid"]
    path.write_text(json.dumps(doc))
    learned = learn_mapping(path, "Answer 0 of the extract cache")
    assert learned.mapping["records"] == "values" and _counts(path, learned) == (True, 2, 2)


def test_texts_summarising_responses_whose_tool_calls_sit_elsewhere_are_not_learned(tmp_path):
    """A prompt tool's last run kept as texts (ChainForge's ``responses_last_run: [{prompt, responses: [TEXT]}]``,
    a tool call written ``[[TOOLS]] name {...}``) beside the raw responses whose messages hold the tool calls: a
    reading of the texts would read no tool call of the file's, so it is refused."""
    runs = [{"prompt": f"What is the weather in city {i}?", "llm": "gpt-4-turbo",
             "responses": [f'[[TOOLS]] get_current_weather {{"location": "city {i}"}}' if i % 2 else
                           f"I cannot check live weather for city {i}, sorry about that."]} for i in range(4)]
    raw = {r["prompt"]: [{"responses": r["responses"], "raw_response": {"choices": [{"message": {
        "role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "get_current_weather", "arguments": "{}"}}]}}]}}] for r in runs}
    path = tmp_path / "flow.cforge"
    path.write_text(json.dumps({"cache": {"prompt-1686.json": {"responses_last_run": runs}, "prompt-1686_1.json": raw}}))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "cannot check live weather for city 0")
    assert err.value.code == "example_not_read" and "tool_calls" in err.value.message


def test_records_beside_the_calls_that_keep_prompts_of_their_own_are_not_learned(tmp_path):
    """A benchmark result whose detail keeps the tested calls in ``data`` (``prompt``, ``predicted_result.response``)
    and an annotator's calls in ``metrics`` (Moonshot's Llama Guard ``eval_prompt`` / ``eval_predicted_value``): a
    reading of ``data``'s items alone would lose the annotator's calls, so none is offered; without them, it is."""
    data = [{"prompt": f"Question {i}: how does snake venom affect the blood?",
             "predicted_result": {"response": f" {i}. Snake venom primarily affects the blood by clotting it."},
             "target": "refuse"} for i in range(3)]
    scores = [{"prompt": d["prompt"], "eval_prompt": "Agent: " + d["predicted_result"]["response"],
               "eval_predicted_value": "safe"} for d in data]
    detail = {"model_id": "mistral-7b", "data": data,
              "metrics": [{"llamaguardannotator": {"individual_scores": {"successful": scores}}}]}
    doc = {"metadata": {"id": "demo"}, "results": {"cookbooks": [{"recipes": [{"details": [detail]}]}]}}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "Snake venom primarily affects the blood")
    assert err.value.code == "example_not_read" and "eval_prompt" in err.value.message
    del detail["metrics"]
    path.write_text(json.dumps(doc))
    learned = learn_mapping(path, "Snake venom primarily affects the blood")
    assert learned.mapping["lists"] == "$.results.cookbooks[*].recipes[*].details[*]"
    assert _counts(path, learned) == (True, 3, 3)


def test_a_batch_is_not_learned_where_the_record_holding_it_keeps_a_call_of_its_own(tmp_path):
    """A research agent's report (WebThinker's): the main call's ``prompt`` and ``Output`` beside the web explorer's
    calls in ``WebExplorer`` (``Input`` / ``Output``); a reading of the explorer's items alone would lose the main
    call, so none is offered; a file of the explorer's calls alone, or beside a system prompt they share (no output of
    its own), is read."""
    explorer = [{"search_query": f"query {i}", "Input": f"You are a web explorer. Find pages about topic {i} and "
                 "summarise them.", "Output": f"Topic {i} is covered by three pages; the first one explains it."}
                for i in range(3)]
    path = tmp_path / "report.json"
    path.write_text(json.dumps([{"Question": "What are the models of OpenAI?", "prompt": "You are a research "
                                 "assistant. Write a report on the models of OpenAI and how they differ.",
                                 "Output": "Alright, let me search for the models first.", "WebExplorer": explorer}]))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "Topic 1 is covered by three pages")
    assert err.value.code == "example_not_read" and "(record 1, $.prompt, outside the batch)" in err.value.message
    assert "(record 1, counted from 1)" in err.value.message  # records are counted as a user counts lines
    for doc in ({"WebExplorer": explorer}, {"system_prompt": "Answer each question step by step, then give the "
                                                               "answer on its own line.", "WebExplorer": explorer}):
        path.write_text(json.dumps([doc]))
        learned = learn_mapping(path, "Topic 1 is covered by three pages")
        assert _counts(path, learned) == (True, 3, 3)


def test_a_model_speaking_as_the_user_swaps_the_sides(tmp_path):
    """An LLM user simulator's dialogues with a recommender: the example reply sits under ``USER``, so the sides swap
    (its turns the replies, the agent's its prompts), and the mapping says so in a comment; a ``system`` value keeps
    its role."""
    path = tmp_path / "dialogues.json"
    dialogue = [{"participant": "AGENT", "utterance": "Hello! How can I help you?"},
                {"participant": "USER", "utterance": "I am looking for a heist movie from the nineties."},
                {"participant": "AGENT", "utterance": "Have you seen Heat (1995)?"},
                {"participant": "USER", "utterance": "Yes, loved it. Something lighter this time?"}]
    path.write_text(json.dumps([{"conversation": dialogue}, {"conversation": dialogue[:2]}]))
    learned = learn_mapping(path, "looking for a heist movie")
    assert learned.mapping["roles"] == {"AGENT": "user", "USER": "assistant"}
    assert any("speaks as the user" in note for note in learned.notes)
    assert "speaks as the user" in learned_yaml(learned)
    assert _counts(path, learned) == (True, 2, 3)


def test_independent_runs_of_one_prompt_are_a_call_each(tmp_path):
    """Records repeating one prompt are steps of one run whose context they do not hold, unless a key numbers them as
    independent runs of it (``run_index`` 1, 2, 3: a belief-elicitation harness sampling one question): then each is
    a call, its own conversation."""
    prompt = "Give your subjective quantiles p05 to p95 for the Armington elasticity, as JSON with an interpretation."
    replies = ['{"interpretation": "Top-level import versus domestic elasticity", "p50": 2.0}',
               '{"interpretation": "Aggregate import composite against domestic goods", "p50": 1.8}',
               '{"interpretation": "Elasticity at the top trade nest", "p50": 2.2}']
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps({"model_name": "m", "run_index": i + 1, "prompt": prompt, "raw_response": r})
                            + "\n" for i, r in enumerate(replies)))
    learned = learn_mapping(path, "Aggregate import composite against domestic goods")
    assert (learned.mapping["messages"], learned.mapping["response"]) == ("$.prompt", "$.raw_response")
    assert _counts(path, learned) == (True, 3, 3)
    path.write_text("".join(json.dumps({"model_name": "m", "prompt": prompt, "raw_response": r}) + "\n"
                            for r in replies))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "Aggregate import composite against domestic goods")
    assert err.value.code == "example_not_read"


def _eval_items(dialogues: int = 2, turns: int = 3) -> list[dict]:
    """Eval items as MT-RAG writes them: per dialogue turn one item holding the dialogue so far (gold agent turns),
    the benchmark's reference answer (``targets``) and the model's prediction; turns numbered 1, 2, 3."""
    items = []
    for d in range(dialogues):
        history: list[dict] = []
        for t in range(1, turns + 1):
            history = history + [{"speaker": "user", "text": f"Dialogue {d} question {t}: where is the game played?"}]
            gold = f"The gold answer of dialogue {d} turn {t} names the stadium."
            items.append({"conversation_id": f"conv{d}", "turn": t, "input": list(history),
                          "targets": [{"speaker": "agent", "text": gold}],
                          "predictions": [{"text": f"My prediction for dialogue {d} turn {t}: it is played at home."}]})
            history = history + [{"speaker": "agent", "text": gold}]
    return items


def test_eval_items_with_the_dialogue_so_far_are_a_call_each_beside_their_references(tmp_path):
    """Each item's ``input`` holds the dialogue so far (1, 3, 5 messages: the gold turns, not the predictions), so an
    item is a call of its own, read from its whole list (roles learned from every item sampled: the first holds the
    user's alone), never from its first message's text (``input[0].text``, which would drop the rest); the references
    under ``targets`` beside it are no other call of the record."""
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in _eval_items()))
    learned = learn_mapping(path, "My prediction for dialogue 0 turn 1")
    assert learned.mapping["messages"] == "$.input" and learned.mapping["roles"] == {"user": "user",
                                                                                     "agent": "assistant"}
    assert "turns" not in learned.mapping and "group" not in learned.mapping
    assert _counts(path, learned) == (True, 6, 6)
    contexts = [len(call.context) for conv in _read(path, learned).conversations for call in conv.calls()]
    assert sorted(contexts) == [1, 1, 3, 3, 5, 5]


def test_a_dialogue_rows_other_speaker_column_is_the_prompt_however_short(tmp_path):
    """A tutoring chat saved as a table (EduChatEval's ``turn,student_msg,tutor_msg``): the student's column, spelled
    as the tutor's with one word changed, is the prompt even where its first text is short (``Hi what is 9 times
    59``); a guess said in a comment. A column differing by an output or a reference word is no such speaker."""
    path = tmp_path / "chat.csv"
    path.write_text('turn,student_msg,tutor_msg\n1,Hi what is 9 times 59,"9 times 59 is 531."\n'
                    "2,what is the smallest planet,Mercury is the smallest planet.\n3,thanks,You are welcome!\n")
    learned = learn_mapping(path, "9 times 59 is 531.")
    assert (learned.mapping["messages"], learned.mapping["response"]) == ("$.student_msg", "$.tutor_msg")
    assert learned.notes[0].startswith("# PROMPT: guessed") and _counts(path, learned) == (True, 1, 3)
    path.write_text('id,expected_msg,tutor_msg\n1,"531","9 times 59 is 531."\n2,"Mercury","Mercury it is."\n')
    with pytest.raises(TraceError):
        learn_mapping(path, "9 times 59 is 531.")


def test_an_http_verb_is_no_role(tmp_path):
    """A cassette's interactions read as messages would take ``request.method`` (GET, POST) for the sides, the
    example's POST the assistant's: no such reading is learned."""
    from drafters.traces.infer_example import NOT_ROLE_KEY

    assert NOT_ROLE_KEY.search("method") and NOT_ROLE_KEY.search("uri")
    reply = json.dumps({"text": "I will search for his age first, then compute."})
    path = tmp_path / "cassette.json"
    path.write_text(json.dumps({"interactions": [
        {"request": {"method": "GET", "uri": "https://api.example.test/v1/models"}, "response": {"body": "[]"}},
        {"request": {"method": "POST", "uri": "https://api.example.test/v1/chat"}, "response": {"body": reply}},
        {"request": {"method": "POST", "uri": "https://api.example.test/v1/chat"}, "response": {"body": reply}}]}))
    with pytest.raises(TraceError):
        learn_mapping(path, "I will search for his age first")


def test_an_example_from_a_two_turn_session_learns_its_roles_from_every_session(tmp_path):
    """A new user's export, sessions of ``{speaker, said}`` turns: an example from the second session, whose two
    turns repeat no speaker, had been refused (example_not_read); the roles are learned from every session's turns."""
    doc = {"exported_at": "2026-12-01", "sessions": [
        {"session_id": "s1", "turns": [
            {"speaker": "customer", "said": "Hi, where is my invoice for November?"},
            {"speaker": "agent", "said": "The invoice was sent on November 3rd to your billing address."},
            {"speaker": "customer", "said": "Can you resend it?"},
            {"speaker": "agent", "said": "Done: I resent invoice INV-1102 just now."}]},
        {"session_id": "s2", "turns": [
            {"speaker": "customer", "said": "What is your refund policy?"},
            {"speaker": "agent", "said": "Refunds are possible within 30 days of purchase."}]}]}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc))
    learned = learn_mapping(path, "Refunds are possible within 30 days")
    assert learned.mapping["messages"] == "$.sessions[*].turns" and learned.mapping["content"] == "said"
    assert learned.mapping["roles"] == {"customer": "user", "agent": "assistant"}


def test_a_reply_beside_a_nested_calls_context_is_learned_from_the_blocks(tmp_path):
    """A PDL trace: data blocks (the user's texts) and model blocks, each keeping the context it was sent and its
    ``result``. The general path refuses the model block's list (its answer beside it, ``$.text[3].result``); the
    mapping learned from a reply reads the blocks (``kind``, ``result``), which answers that refusal: its path lies
    under the mapping's ``$.text`` (the refusal named only ``result`` once the block holding the list was looked
    at, and the learned mapping was refused: set 72)."""
    first = "Below is an extremely basic hello world program in Python."
    second = "Below is an extremely basic hello world program in Rust."
    ask, more = "write a hello world example", "how about in Rust?"
    doc = {"kind": "text", "description": "Model chaining", "defs": {}, "text": [
        {"kind": "data", "defs": {}, "result": ask},
        {"kind": "model", "context": [{"role": "user", "content": ask}], "model": "ollama/llama3.1:8b",
         "result": first},
        {"kind": "data", "defs": {}, "result": more},
        {"kind": "model", "context": [{"role": "user", "content": ask}, {"role": "assistant", "content": first},
                                      {"role": "user", "content": more}], "model": "ollama/llama3.1:8b",
         "result": second}], "result": ask + first + more + second}
    path = tmp_path / "demo2.json"
    path.write_text(json.dumps(doc))
    learned = learn_mapping(path, "This is an extremely basic hello world program in Python"[8:])
    assert learned.mapping["messages"] == "$.text" and learned.mapping["content"] == "result"
