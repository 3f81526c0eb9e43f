"""``infer-mapping FILE`` without ``--reply`` where no shape fits (``drafters/traces/infer_named_reply.py``): the text
under a key naming the model's output taken as the example reply, offered only with a prompt under a key naming an
input; references, bare answers and guessed prompts are not."""

from __future__ import annotations

import json

import pytest

from drafters.traces.infer_named_reply import candidates, learn_from_named_reply, reply_key
from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import mapping_from_dict


def _counts(path, learned):
    result = ingest([str(path)], mapping=mapping_from_dict(learned.mapping), scrub=False, dedup=False)
    convs = result.conversations
    return result.report.ok, len(convs), sum(len(list(c.calls())) for c in convs)


@pytest.mark.parametrize(("steps", "named"), [
    (("model_output",), True), (("response", "text"), True), (("completions", 0, "text"), True),
    (("llm_answer",), True), (("benchmarks", 0, "requests", "successful", 0, "output"), True),
    (("answer",), False),  # a benchmark's answer: the reference, not the model's
    (("expected_output",), False), (("gold_response",), False), (("response_id",), False),
    (("response", "prompt"), False), (("tool_output",), False), (("question",), False),
])
def test_a_key_names_the_models_output(steps, named):
    assert reply_key(steps) is named


def test_an_eval_log_of_questions_and_model_outputs_is_learned_from_the_output_key(tmp_path):
    """One call a line: ``question`` / ``model_output`` beside a reference ``answer``; the reply is the model's
    output (not the reference), the prompt the question, and the mapping says it guessed."""
    path = tmp_path / "eval.jsonl"
    rows = [{"idx": i, "question": f"What is {i} + {i}? Answer with a number.", "answer": str(2 * i),
             "model_output": f"Adding {i} and {i} gives {2 * i}, so the answer is {2 * i}."} for i in range(5)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [h.steps for h, _ in candidates(rows)] == [("model_output",)]
    learned = learn_from_named_reply(path)
    assert learned is not None
    assert (learned.mapping["messages"], learned.mapping["response"]) == ("$.question", "$.model_output")
    assert learned.notes[0].startswith("# REPLY: no example given") and "$.model_output" in learned.notes[0]
    assert _counts(path, learned) == (True, 5, 5)


def test_a_request_with_langchain_messages_and_a_response_object_is_learned(tmp_path):
    """A captured call: LangChain messages (``type: system / human``) as the request, the reply under
    ``response.content``; the request's texts are the input's, not other calls."""
    path = tmp_path / "capture.json"
    path.write_text(json.dumps({
        "metadata": {"model": "m", "prompt_hash": "ab" * 16},
        "request": {"messages": [{"content": "You judge answers.", "type": "system"},
                                 {"content": "Is 'Paris' right for the capital of France?", "type": "human"}]},
        "response": {"content": "Yes, Paris is the capital of France.", "id": "run-1"}}))
    learned = learn_from_named_reply(path)
    assert learned is not None
    assert (learned.mapping["messages"], learned.mapping["response"]) == ("$.request.messages", "$.response.content")
    assert learned.mapping["roles"] == {"system": "system", "human": "user"}
    assert _counts(path, learned) == (True, 1, 1)


def test_nothing_is_offered_without_a_named_prompt_or_with_a_reference_only(tmp_path):
    """A dataset of questions and reference answers holds no model output; a response beside no key naming an input
    would need its prompt guessed too: neither is offered."""
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text("".join(json.dumps({"question": f"What is {i} squared, in words?",
                                           "answer": f"It is {i * i}, the square of {i}."}) + "\n" for i in range(4)))
    assert learn_from_named_reply(dataset) is None
    assert candidates([json.loads(line) for line in dataset.read_text().splitlines()]) == []
    unnamed = tmp_path / "unnamed.jsonl"
    unnamed.write_text("".join(json.dumps({"text": f"Summarise the report number {i} for the board, briefly.",
                                           "response": f"Report {i} shows steady growth in every region."}) + "\n"
                               for i in range(4)))
    assert learn_from_named_reply(unnamed) is None


def test_a_markdown_log_is_learned_from_the_text_below_a_heading_naming_the_reply(tmp_path):
    """Text, not JSON: ``## Task`` / ``## Model Response`` sections; the first line below the heading naming the
    model's side is the example, the heading the assistant's marker; a heading naming no side is not tried."""
    path = tmp_path / "runs.md"
    runs = [f"## Task\n\nList the files changed by commit {i} and say why.\n\n## Model Response\n\n"
            f"Commit {i} changed setup.py and the README to pin the version.\n" for i in range(3)]
    path.write_text("# Agent runs\n\n" + "\n".join(runs))
    learned = learn_from_named_reply(path)
    assert learned is not None and learned.notes[0].startswith("# REPLY: no example given")
    assert learned.mapping["text"]["markers"] == {"## Task": "user", "## Model Response": "assistant"}
    assert _counts(path, learned) == (True, 1, 3)  # one conversation: each reply sees what came before it
    assert any('conversation: "## Task"' in n for n in learned.notes)  # the line to add, if the tasks are independent
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\n## Setup\n\nInstall the package with pip first.\n\n## Usage\n\n"
                     "Run the command with the file as its argument.\n")
    assert learn_from_named_reply(notes) is None


def test_a_trace_of_spans_one_of_whose_llm_calls_is_a_tool_call_is_not_guessed(tmp_path):
    """A trace (deepeval's) of an agent's spans: one LLM span's output a tool call, the other's the text
    answer, the tool span's output and the tool's result in the second span's input. No reading from one key may
    read one call of the two: not the text answer alone (with the trace's input as its prompt, 1 call for 2), not
    the tool's output inside a request's messages, not the tool span's list of calls as a request; nothing is
    offered."""
    system = {"role": "system", "content": "You are a helpful assistant. Use tools when needed."}
    user = {"role": "user", "content": "What's the weather in San Francisco in celsius? Then give a travel tip."}
    call = {"id": "call_1", "call_id": "call_1", "name": "get_weather", "type": "function",
            "arguments": {"location": "San Francisco", "unit": "c"}}
    result = {"call_id": "call_1", "type": "tool", "output": "{\"location\": \"San Francisco\", \"temperature\": 18}"}
    answer = "It is 18 degrees and partly cloudy in San Francisco: bring a light jacket for the evening."
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({
        "baseSpans": [{"name": "run_main", "type": "base", "toolsCalled": [
            {"name": "get_weather", "type": "FUNCTION", "output": {"temperature": 18, "condition": "cloudy"}}]}],
        "llmSpans": [{"name": "llm_generation", "input": [system, user, call, result], "output": answer},
                     {"name": "llm_generation", "input": [system, user], "output": [call]}],  # as the file orders them
        "input": user["content"], "output": None}))
    assert learn_from_named_reply(path) is None


PREFIX = "2025-04-16 21:58:{s:02d},510 - prover - INFO - "


def test_a_log_is_guessed_from_its_first_marker_naming_an_output_only(tmp_path):
    """A prover's log (CLEVER's): a planner's, an implementer's and a proof planner's calls, each prompt a logged
    message list; the first marker naming an output (the planner's plan) reads no reading, and a later one (the
    check's output, the implementer's) would read one step of several calls as the conversation: nothing is
    offered."""
    steps = [(17, "---Starting Run---"), (17, "Starting to solve problem:"), None, (17, "[PLANNER] Raw prompt used:"),
             None, (29, "Implementation planner generated implementation plan:"), None,
             (30, "[IMPLEMENTER] Raw prompt used:"), None, (32, "Implementer generated implementation:"), None,
             (36, "Check implementation output:"), None]
    texts = iter(["def truncate_number(number: float) -> float",
                  "[{'role': 'system', 'content': 'Plan it in Lean 4.'}, {'role': 'user', 'content': 'truncate'}]",
                  "To implement truncate_number, subtract the floor of the number from the number itself.",
                  "[{'role': 'system', 'content': 'Write it in Lean 4.'}, {'role': 'user', 'content': 'the plan'}]",
                  "def implementation (number: Rat) : Rat := number - number.floor",
                  "All test cases passed for the implementation above."])
    path = tmp_path / "prover.log"
    path.write_text("\n".join(next(texts) if step is None else PREFIX.format(s=step[0]) + step[1]
                               for step in steps) + "\n")
    assert learn_from_named_reply(path) is None


def test_a_transcript_whose_tool_calls_the_product_refuses_is_not_guessed(tmp_path):
    """A demo's Markdown printing each request and response as JSON (Ollama Bash Lib's): the product refuses it
    (``content_not_mapped``: tool calls printed as JSON); a text mapping from ``--- Model Response ---`` would read
    the tool call as text, so nothing is offered."""
    user = [{"role": "user", "content": "What is the current date and time?"}]
    first = {"model": "gpt-oss:20b", "message": {"role": "assistant", "content": "", "thinking": "Use the tool.",
             "tool_calls": [{"function": {"name": "datetime", "arguments": {}}}]}, "done": True}
    final = {"model": "gpt-oss:20b", "message": {"role": "assistant", "content": "It is Monday, 20:56 UTC."}}
    path = tmp_path / "demo.md"
    path.write_text("# ollama_tools demo\n\n--- User Prompt ---\n" + json.dumps(user, indent=2)
                    + "\n-------------------\n--- Model Response (first pass) ---\n" + json.dumps(first, indent=2)
                    + "\n----------\nRunning tool: datetime with args: {}\n--- Final Model Response ---\n"
                    + json.dumps(final, indent=2) + "\n----------\n")
    assert ingest([str(path)], scrub=False, dedup=False).report.errors[0].code == "content_not_mapped"
    assert learn_from_named_reply(path) is None


def test_replies_in_a_script_written_without_spaces_are_words(tmp_path):
    """A Chinese interview's results (``question`` / ``response_open``): a reply with no space is still text of
    words, not an identifier; a code of letters and digits with no space is not."""
    path = tmp_path / "interview.json"
    rows = [{"id": str(i), "question": f"你经常交新朋友吗？第{i}题", "response_open": f"当然了，我是一个非常有魅力的人，所以交朋友很容易。第{i}次"}
            for i in range(4)]
    path.write_text(json.dumps(rows, ensure_ascii=False))
    learned = learn_from_named_reply(path)
    assert learned is not None
    assert (learned.mapping["messages"], learned.mapping["response"]) == ("$.question", "$.response_open")
    assert _counts(path, learned) == (True, 4, 4)
    codes = tmp_path / "codes.json"
    codes.write_text(json.dumps([{"question": f"Which build is broken today, number {i}?",
                                  "response_hash": "x", "response": f"build_{i}_4f9a2c1e7b3d"} for i in range(3)]))
    assert candidates(json.loads(codes.read_text())) == []


def test_a_task_of_a_prompts_length_names_the_input_and_a_benchmarks_name_does_not(tmp_path):
    """An eval's details (``task`` / ``model_response`` under ``examples``): a task text of a prompt's length is the
    input, named (no guess); a ``task`` holding a benchmark's name beside another long text is no named prompt, and
    nothing is offered."""
    path = tmp_path / "details.json"
    examples = [{"task": f"Solve step by step: a progression has a4 = {i}; find a1. Answer on the last line.",
                 "model_response": f"Let d be the difference; then a1 = {i} - 3d, and the answer is {i}.",
                 "correct_answer": str(i)} for i in range(5)]
    path.write_text(json.dumps({"model": "gpt-4o", "examples": examples}))
    learned = learn_from_named_reply(path)
    assert learned is not None
    assert (learned.mapping["messages"], learned.mapping["response"]) == ("$.task", "$.model_response")
    assert _counts(path, learned) == (True, 5, 5)
    named = tmp_path / "named.jsonl"
    named.write_text("".join(json.dumps({"task": "gsm8k", "full_text": f"Solve the following problem {i} and give "
                                         "the answer on its own line at the end.",
                                         "model_response": f"The answer to problem {i} is {i * 3}."}) + "\n"
                             for i in range(4)))
    assert learn_from_named_reply(named) is None


def test_a_markdown_file_some_of_whose_lines_parse_as_json_is_text(tmp_path):
    """A results Markdown whose answers are numbers on lines of their own (``-12``: valid JSON) is still text: the
    reply is guessed below ``### Model Response``."""
    path = tmp_path / "details.md"
    runs = [f"## Example {i}\n\n### Task\nFind a1 of the progression with a4 = {i}.\n\n### Model Response\n"
            f"Let d be the difference, so a1 = {i} - 3d and the answer follows.\n\n-12\n\n### Correct Answer\n-12\n"
            for i in range(1, 4)]
    path.write_text("# Detailed Results\n\n-12\n\n" + "\n".join(runs))
    learned = learn_from_named_reply(path)
    assert learned is not None and learned.mapping["text"]["markers"]["### Model Response"] == "assistant"
    assert _counts(path, learned) == (True, 3, 3)


def test_a_key_naming_an_input_comes_before_a_task_description(tmp_path):
    """A generator's calls (``prompt_kwargs.input`` beside a long ``task_desc_str`` shared by every call): the input
    is the prompt, not the longer task description (which would merge the calls as repeats of one prompt)."""
    path = tmp_path / "generator_call.jsonl"
    task = "Classify the question into one of six classes: abbreviation, entity, description, human, location, number."
    path.write_text("".join(json.dumps({"prompt_kwargs": {"input": f"Who wrote book number {i}?", "task_desc_str": task},
                                        "output": {"raw_response": f"thought: it asks for a person.\nclass_name: Human {i}"}})
                            + "\n" for i in range(4)))
    learned = learn_from_named_reply(path)
    assert learned is not None and learned.mapping["messages"] == "$.prompt_kwargs.input"
    assert _counts(path, learned) == (True, 4, 4)


def test_a_heading_naming_the_reply_s_format_is_not_the_reply(tmp_path):
    """A task log printing the prompt sent (``## Question``, ``## Response Format``, ``## Instructions``): the
    heading about the reply's format opens no reply, and nothing is guessed."""
    path = tmp_path / "task.log"
    path.write_text("TASK LOG\n\n## Instructions\nAnswer as the clinician's assistant.\n\n## Question\n"
                    "What is the patient's latest potassium level?\n\n## Response Format\n"
                    "Reply with a JSON object holding the value and its unit, nothing else.\n")
    assert learn_from_named_reply(path) is None


def test_a_recorded_responses_headers_are_no_reply_and_a_uri_no_prompt(tmp_path):
    """A cassette of a provider no reader knows (Cohere v1 in langchain-cohere's tests): the response's headers
    (``Alt-Svc``: ``h3=":443"; ma=2592000``) sit under ``response`` but are the server's, and the request's ``uri`` is
    no prompt; the reply is in the body, in a spelling no reading takes: no mapping is guessed."""
    assert not reply_key(("interactions", 0, "response", "headers", "Alt-Svc", 0))
    exchange = {"request": {"uri": "https://api.example.test/v1/chat", "method": "POST",
                            "body": json.dumps({"message": "Find Obama's age", "chat_history": []})},
                "response": {"headers": {"Alt-Svc": ['h3=":443"; ma=2592000,h3-29=":443"; ma=2592000']},
                             "body": {"string": json.dumps({"text": "He is 60 years old now.", "id": "g1"})}}}
    path = tmp_path / "cassette.json"
    path.write_text(json.dumps({"interactions": [exchange, exchange]}))
    assert learn_from_named_reply(path) is None


def test_a_requests_model_name_is_no_prompt(tmp_path):
    """A client's cassette whose messages no reading takes: under ``request`` the one text is the model's name
    (``request.model``), a setting, not what the model was sent; no mapping reads it as the prompt."""
    interaction = {"method": "chat", "request": {"model": "google/gemini-2.0-flash-001", "parts": [{"x": 1}]},
                   "response": {"content": "I can only search the HR documents, not the staff list.", "usage": {}}}
    path = tmp_path / "cassette.json"
    path.write_text(json.dumps({"name": "flow", "interactions": [interaction]}))
    assert learn_from_named_reply(path) is None
