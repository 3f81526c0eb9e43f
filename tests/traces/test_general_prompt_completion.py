"""Records holding a prompt and its completion as two message lists (issue 30; docs/traces.md, "A completion
that continues the prompt"): TRL's conversational prompt/completion rows and RL rollout results (verifiers'
``vf-eval`` output) write the input under ``prompt`` and everything after it, answers and tool results
between them, under ``completion``, with a reference ``answer`` (the dataset's, not the model's) beside them.
The general path reads the completion as the conversation's continuation: each assistant message is a call.
It never reads a text field as the answer while a list of answers goes unread, decodes tool calls written as
JSON text, and links a tool result without an id to the one call right before it only when the result's
record holds no id the reading missed. A record holding no message but a prompt and the model's answer as two
texts (instruction/output rows, AlpacaEval's outputs) is one call; two prompts, or an eval's reference
``answer``, are not read.

Fixture ``fixtures/shapes/prompt_completion_rollouts.jsonl``: hand-made, not a copy of a real file.
"""

from __future__ import annotations

import json

from drafters.traces.formats._turns import link_lone_results
from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import mapping_from_dict
from drafters.traces.model import Message, ToolCallPart, ToolResultPart

from .conftest import codes, totals
from .test_bad_input import SHAPES

ROLLOUTS = SHAPES / "prompt_completion_rollouts.jsonl"



def test_the_completion_continues_the_prompt_and_the_reference_answer_is_not_read():
    result = ingest([ROLLOUTS], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 4, 2)
    first = list(result.conversations[0].calls())
    assert [[m.role for m in c.context] for c in first] == [
        ["system", "user"], ["system", "user", "assistant", "tool"],
        ["system", "user", "assistant", "tool", "assistant", "tool"]]
    assert [p.name for c in first for p in c.completion.tool_calls] == ["get_temperature"] * 2
    assert [c.completion.tool_calls[0].arguments for c in first[:2]] == [{"city": "Oslo"}, {"city": "Lima"}]
    results = [p for m in first[2].context for p in m.parts if isinstance(p, ToolResultPart)]
    assert [(r.call_id, r.content) for r in results] == [("call_a1", "-3 C"), ("call_a2", "19 C")]
    assert first[2].completion.text == "Lima is warmer: 19 C against -3 C in Oslo."
    texts = [c.completion.text for conv in result.conversations for c in conv.calls()]
    assert "Lima" not in texts and "4" not in texts  # the reference answers are never read as the model's


def test_a_tool_call_that_is_no_object_is_an_error_not_a_quiet_skip(tmp_path):
    rows = [json.loads(line) for line in ROLLOUTS.read_text().splitlines()]
    rows[0]["completion"][0]["tool_calls"] = ["get_temperature(Oslo)"]  # neither an object nor JSON text
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    result = ingest([path], scrub=False)
    assert "not_an_object" in codes(result)
    assert totals(result.conversations) == (1, 1, 0)  # the other row only: the broken one is not kept


def test_a_lone_result_takes_its_calls_id_only_when_its_record_holds_none():
    def msgs():
        return [Message("assistant", [ToolCallPart.from_raw("c1", "f", {})]), Message("tool", [ToolResultPart(None, "x")]),
                Message("assistant", [ToolCallPart.from_raw("c2", "f", {}), ToolCallPart.from_raw("c3", "g", {})]),
                Message("tool", [ToolResultPart(None, "y")])]
    m = msgs()
    link_lone_results(m, [{}, {"role": "tool", "content": "x"}, {}, {"role": "tool", "content": "y"}])
    assert m[1].parts[0].call_id == "c1"  # one call, one result right after it
    assert m[3].parts[0].call_id is None  # two calls: which one it answers is not guessed
    m = msgs()
    link_lone_results(m, [{}, {"role": "tool", "content": "x", "meta": {"call": "c1"}}, {}, {}])
    assert m[1].parts[0].call_id is None  # the record holds the id where the reading did not look
    m = msgs()[:2] + [Message("tool", [ToolResultPart(None, "z")])]
    link_lone_results(m, [{}, {}, {}])
    assert m[1].parts[0].call_id is None  # two results after one call: not linked


def _rows(tmp_path, rows, name="rows.json"):
    path = tmp_path / name
    path.write_text(json.dumps(rows))
    return path


def test_a_prompt_and_an_answer_as_texts_are_one_call_each(tmp_path):
    rows = [{"instruction": "Name a prime above 10.", "output": "11.", "generator": "m1", "dataset": "d"},
            {"instruction": "Spell 'cat' backwards.", "output": "tac", "generator": "m1", "dataset": "d"},
            {"instruction": "What is 3 x 3?", "input": "", "output": "9", "generator": "m1", "dataset": "d"}]
    result = ingest([_rows(tmp_path, rows)], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 3, 0)
    calls = [c for conv in result.conversations for c in conv.calls()]
    assert [[m.role for m in c.context] for c in calls] == [["user"]] * 3  # an empty "input" holds nothing
    assert [c.completion.text for c in calls] == ["11.", "tac", "9"]
    chat = [{"request": "Rename x to y.", "response": "Done: y = 1", "provider": "p", "model": "m2"}]
    result = ingest([_rows(tmp_path, chat, "chat.json")], scrub=False)  # a chat history's request/response
    assert result.report.ok and [c.completion.text for c in result.conversations[0].calls()] == ["Done: y = 1"]
    mixed = rows + chat  # two layouts in one file: the second is not guessed
    assert not ingest([_rows(tmp_path, mixed, "mixed.json")], scrub=False).report.ok


def test_two_prompts_or_a_reference_answer_are_not_read_as_a_call(tmp_path):
    alpaca = [{"instruction": "Translate.", "input": "Bonjour", "output": "Hello"}]
    result = ingest([_rows(tmp_path, alpaca, "alpaca.json")], scrub=False)
    assert not result.report.ok and result.conversations == []  # the second prompt would be lost
    qa = [{"question": "What is 2 + 2?", "answer": "4"}, {"question": "And 3 + 3?", "answer": "6"}]
    result = ingest([_rows(tmp_path, qa, "qa.json")], scrub=False)
    assert not result.report.ok and result.conversations == []  # a reference answer is not the model's


def test_a_prompt_and_an_answer_under_keys_that_say_so(tmp_path):
    # a response cache's entries (LightRAG's original_prompt / return) and a pipeline cache's (GraphRAG's
    # input / result): the key's words say which text is the prompt and which the model's answer
    rows = [{"original_prompt": "Should you start a company with your partner?", "return": "It depends on...",
             "cache_type": "query", "create_time": 1768664944},
            {"original_prompt": "What is a curiosity loop?", "return": "A curiosity loop is...",
             "cache_type": "query", "create_time": 1768664945}]
    result = ingest([_rows(tmp_path, rows, "cache.json")], scrub=False)
    assert result.report.ok, codes(result)
    assert [c.completion.text for conv in result.conversations for c in conv.calls()] == [
        "It depends on...", "A curiosity loop is..."]
    # a pipeline's call log (VideoLingo's): the reply as written under resp_content, parsed beside it (resp, a
    # dict: not a text) with its kind (resp_type: no answer)
    log = [{"model": "m", "prompt": "Split this subtitle.", "resp_content": "```json\n{\"split\": 2}\n```",
            "resp_type": "json", "resp": {"split": 2}, "message": None}]
    result = ingest([_rows(tmp_path, log, "log.json")], scrub=False)
    assert result.report.ok and [c.completion.text for c in result.conversations[0].calls()] == [
        "```json\n{\"split\": 2}\n```"]
    entry = [{"input": "Extract the entities.", "result": "(\"entity\"<|>\"Tata\")", "parameters": {"model": "m"}}]
    result = ingest([_rows(tmp_path, entry, "entry.json")], scrub=False)
    assert result.report.ok and [c.completion.text for c in result.conversations[0].calls()] == [
        "(\"entity\"<|>\"Tata\")"]


def test_keys_naming_a_reference_or_a_template_are_not_the_call(tmp_path):
    rows = [{"user_query": "What is 2 + 2?", "expected_output": "4"},
            {"user_query": "And 3 + 3?", "expected_output": "6"}]
    result = ingest([_rows(tmp_path, rows, "eval.json")], scrub=False)
    assert not result.report.ok and result.conversations == []  # a reference output is not the model's
    rows = [{"prompt_template": "Answer: {q}", "response": "4"}]
    result = ingest([_rows(tmp_path, rows, "tpl.json")], scrub=False)
    assert not result.report.ok and result.conversations == []  # a template is not the prompt sent


def test_an_answer_that_is_json_text_is_read_as_written(tmp_path):
    # a pipeline asked for JSON: the model's answer is that text, indentation and all, never an object re-encoded
    answer = '{\n    "title": "Tata Group",\n    "rating": 7.5\n}'
    entry = {"input": "Write the community report as JSON.", "result": answer, "parameters": {"model": "m"}}
    result = ingest([_rows(tmp_path, entry, "entry.json")], scrub=False)
    assert result.report.ok, codes(result)
    (call,) = result.conversations[0].calls()
    assert call.completion.text == answer
    rows = [{"original_prompt": "Keywords of: start a company?", "return": '{"high_level_keywords": ["company"]}'},
            {"original_prompt": "Should you start a company?", "return": "It depends."}]
    result = ingest([_rows(tmp_path, rows, "cache.json")], scrub=False)
    assert result.report.ok, codes(result)
    assert [c.completion.text for conv in result.conversations for c in conv.calls()] == [
        '{"high_level_keywords": ["company"]}', "It depends."]


def test_a_record_with_no_output_and_an_error_is_a_failed_request(tmp_path):
    # a red-teaming kit's results: the provider refused some prompts (HTTP 400), the record keeps the error
    rows = [{"id": "1", "input": "Summarize the memo.", "response": "The memo says...", "success": True, "error": None},
            {"id": "2", "input": "Summarize the email.", "response": None, "success": False,
             "error": "Error code: 400 - prompt flagged"},
            {"id": "3", "input": "Summarize the note.", "response": "The note says...", "success": True, "error": None}]
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 2, 0)
    assert codes(result, "warnings").count("failed_turn_skipped") == 1
    rows[1]["error"] = None  # no output and no error recorded: the output is missing, not a failed request
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = ingest([path], scrub=False)
    assert not result.report.ok and not codes(result, "warnings").count("failed_turn_skipped")


def test_answers_sampled_for_one_prompt_are_a_call_each(tmp_path):
    # a human-evaluation app's instances (open-instruct's: two models' completions of one prompt) and a sampler's
    # output (several responses per instruction): each answer is its own call and conversation, equal ones too
    rows = [{"id": "t1", "prompt": "Fix the grammar: I would of laughed.",
             "completions": [{"model": "tulu", "completion": "I would have laughed."},
                             {"model": "chatgpt", "completion": "I would have laughed."}]},
            {"id": "t2", "prompt": "Name a prime.", "completions": [{"model": "tulu", "completion": "7"}]}]
    result = ingest([_rows(tmp_path, rows, "instances.json")], scrub=False, dedup=False)  # equal ones kept
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 3, 0)
    assert [c.completion.text for conv in result.conversations for c in conv.calls()] == [
        "I would have laughed.", "I would have laughed.", "7"]
    assert len({conv.id for conv in result.conversations}) == 3
    texts = [{"instruction": "Say hi.", "responses": ["Hi!", "Hello."]}]
    result = ingest([_rows(tmp_path, texts, "samples.json")], scrub=False)
    assert result.report.ok and totals(result.conversations) == (2, 2, 0)
    assert [c.context[0].text for conv in result.conversations for c in conv.calls()] == ["Say hi."] * 2


def test_a_sample_beside_a_long_text_of_its_own_is_not_guessed(tmp_path):
    # UltraFeedback-like: each completion carries its own system prompt; reading only the answers would lose it
    rows = [{"instruction": "Say hi.", "completions": [
        {"model": "a", "custom_system_prompt": "You are a pirate. " * 20, "response": "Arr, hi!"},
        {"model": "b", "custom_system_prompt": "You are a poet. " * 20, "response": "Hi, in rhyme."}]}]
    result = ingest([_rows(tmp_path, rows, "feedback.json")], scrub=False)
    assert not result.report.ok and result.conversations == []


def test_a_response_of_several_choices_is_a_call_per_choice(tmp_path):
    # a span of a request sampled with n = 2 (MLflow's CHAT_MODEL span): each choice is an answer of its own, never
    # the first read and the second dropped
    response = {"object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Smokey"}, "finish_reason": "stop"},
        {"index": 1, "message": {"role": "assistant", "content": "Ash"}, "finish_reason": "stop"}]}
    span = {"name": "Completions", "inputs": {"messages": [{"role": "user", "content": "Name a grey cat."}], "n": 2},
            "outputs": response}
    result = ingest([_rows(tmp_path, [span], "spans.json")], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert [c.completion.text for conv in result.conversations for c in conv.calls()] == ["Smokey", "Ash"]


def test_two_tasks_sending_the_same_prompt_are_two_calls(tmp_path):
    # an eval's results (OntoGPT's reasoner): two tasks, by name, sent the same prompt and got the same answer: two
    # calls, not one call restated (records of one kind naming different requests, neither referring to the other)
    rows = [{"name": f"task-{i}", "method": "basic", "prompt": "Is a vacuole an organelle?", "completion": "Yes."}
            for i in (1, 2)] + [{"name": "task-3", "method": "basic", "prompt": "Is a cell a part?", "completion": "No."}]
    result = ingest([_rows(tmp_path, {"results": rows}, "results.json")], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 3, 0)


def test_one_question_about_two_figures_is_two_calls(tmp_path):
    # a vision benchmark's results (HallusionBench): one question asked about two figures (figure_id: the image the
    # model saw, not in the record) and answered alike: two calls; the records otherwise share every id
    rows = [{"set_id": "0", "figure_id": str(f), "question_id": "0", "question": "Is the right circle the same size "
             "as the left one?", "model_prediction": "Yes, the two circles look the same size."} for f in (0, 1)]
    rows.append({"set_id": "0", "figure_id": "0", "question_id": "1", "question": "Is the left circle red?",
                 "model_prediction": "No, it is orange."})
    path = _rows(tmp_path, rows, "results.json")
    mapping = {"name": "hb", "messages": "$.question", "role": "role", "roles": {"user": "user"},
               "response": "$.model_prediction"}
    result = ingest([path], scrub=False, dedup=False, mapping=mapping_from_dict(mapping))
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 3, 0)
    assert not [w for w in result.report.warnings if w.code == "repeated_calls"]
