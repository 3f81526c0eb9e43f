"""Texts rendered by a chat template (issue 30; docs/traces.md, "Prompts rendered by a chat template"): a server's
rendered prompt beside its answer, a fine-tuning row's ``text``, a transcript file. They were read as one user message
holding the template's tokens (``ok``: a drafter trained on it would see the tokens rendered twice) or refused; now
as their turns, and refused where the turns do not cover the text. Every text below is hand-written in the
templates' published layouts (Qwen's ChatML, Llama 3's headers, Gemma's turns, Phi-3, Zephyr, Mistral's [INST]).
"""

from __future__ import annotations

import json

import pytest

from drafters.traces.formats._rendered_chats import rendered_chat
from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import mapping_from_dict

from .conftest import codes, totals

SYSTEM, Q1, A1, Q2, A2 = "You are terse.", "Capital of France?", "Paris.", "And of Italy?", "Rome."
CHATML = (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{Q1}<|im_end|>\n<|im_start|>assistant\n{A1}"
          f"<|im_end|>\n<|im_start|>user\n{Q2}<|im_end|>\n<|im_start|>assistant\n{A2}<|im_end|>\n")
LLAMA3_PROMPT = (f"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n{SYSTEM}<|eot_id|>"
                 f"<|start_header_id|>user<|end_header_id|>\n\n{Q1}<|eot_id|>"
                 "<|start_header_id|>assistant<|end_header_id|>\n\n")
TEMPLATE_TOKENS = ("<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|eot_id|>")


@pytest.mark.parametrize("text, template, turns, prompt", [
    (CHATML, "chatml", ["system", "user", "assistant", "user", "assistant"], False),
    (LLAMA3_PROMPT, "llama3", ["system", "user"], True),
    (f"<bos><start_of_turn>user\n{Q1}<end_of_turn>\n<start_of_turn>model\n{A1}<end_of_turn>\n", "gemma",
     ["user", "assistant"], False),
    (f"<|system|>\n{SYSTEM}<|end|>\n<|user|>\n{Q1}<|end|>\n<|assistant|>\n", "phi3", ["system", "user"], True),
    (f"<|user|>\n{Q1}</s>\n<|assistant|>\n{A1}</s>\n", "zephyr", ["user", "assistant"], False),
    (f"<s>[INST] {Q1} [/INST] {A1}</s>[INST] {Q2} [/INST]", "mistral", ["user", "assistant", "user"], True),
    # variants servers and models write (found by a new user's trial)
    (f"<|im_start|>user\n{Q1}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n", "chatml", ["user"], True),
    (f"<|im_start|>user<|im_sep|>{Q1}<|im_end|><|im_start|>assistant<|im_sep|>", "chatml", ["user"], True),  # Phi-4
    (f"<|start_header_id|>user<|end_header_id|>\n{Q1}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n",
     "llama3", ["user"], True),
    ((f"<|start_header_id|>user<|end_header_id|>\n\n{Q1}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
      "<|python_tag|>search.call(q=1)<|eom_id|><|start_header_id|>ipython<|end_header_id|>\n\n{}<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\nDone.<|eot_id|>"), "llama3",
     ["user", "assistant", "tool", "assistant"], False),
    (CHATML + "<|endoftext|>", "chatml", ["system", "user", "assistant", "user", "assistant"], False),
    (f"<|im_start|>user\n{Q1} (not [INST] tags)<|im_end|>\n<|im_start|>assistant\n", "chatml", ["user"], True),
    (f"<s>[INST] <<SYS>>\n{SYSTEM}\n<</SYS>>\n\n{Q1} [/INST] {A1}</s>", "mistral", ["system", "user", "assistant"],
     False),
    (f"<s>[INST] {Q1} [/INST] {A1} [INST] {Q2} [/INST] {A2}</s>", "mistral", ["user", "assistant"] * 2, False),
    ((f'<s>[INST] {Q1} [/INST][TOOL_CALLS] [{{"name": "f", "arguments": {{}}}}]</s>[TOOL_RESULTS] {{"content": "x"}}'
      f"[/TOOL_RESULTS] {A1}</s>"), "mistral", ["user", "assistant", "tool", "assistant"], False),
    (f"<｜begin▁of▁sentence｜>{SYSTEM}<｜User｜>{Q1}<｜Assistant｜>{A1}<｜end▁of▁sentence｜><｜User｜>{Q2}<｜Assistant｜>",
     "deepseek", ["system", "user", "assistant", "user"], True),
])
def test_each_template_is_read_as_its_turns(text, template, turns, prompt):
    found = rendered_chat(text)
    assert found is not None and found.template == template and found.prompt is prompt
    assert [role for role, _ in found.turns] == turns
    assert found.turns[turns.index("user")][1].startswith(Q1)  # the text as written, no token left in it


@pytest.mark.parametrize("text", [
    f"Notes first. <|im_start|>user\n{Q1}<|im_end|>\n<|im_start|>assistant\n{A1}<|im_end|>",  # text outside the turns
    f"<|im_start|>user\n{Q1}<|im_end|>\n<|im_start|>assistant\n{A1} and then it was cut",  # an answer cut short
    f"<|im_start|>narrator\n{Q1}<|im_end|>\n<|im_start|>assistant\n{A1}<|im_end|>",  # a role no template knows
    f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>assistant\n",  # no user turn
    "A plain sentence that mentions [INST] tags in passing, nothing more.",
])
def test_text_the_turns_do_not_cover_is_not_read_as_a_template(text):
    assert rendered_chat(text) is None


def test_fine_tuning_rows_of_rendered_text_and_a_mapping_naming_them(tmp_path):
    path = tmp_path / "sft.jsonl"
    path.write_text(json.dumps({"text": CHATML}) + "\n" + json.dumps({"text": CHATML.replace("France", "Spain")}) + "\n")
    for kwargs in ({}, {"mapping": mapping_from_dict({"name": "sft", "messages": "$.text", "role": "role",
                                                      "roles": {"user": "user", "assistant": "assistant",
                                                                "system": "system"}, "content": "content"})}):
        result = ingest([path], scrub=False, dedup=False, **kwargs)
        assert result.report.ok and totals(result.conversations) == (2, 4, 0), (kwargs, codes(result))
        last = list(result.conversations[0].calls())[-1]
        assert [m.role for m in last.context] == ["system", "user", "assistant", "user"]
        assert last.completion.text == A2 and last.context[1].text == Q1
        assert "chat_template_read" in [w.code for w in result.report.warnings]
    from drafters.traces.infer import infer_mapping

    assert infer_mapping(path).mapping.messages == "$.text"  # infer-mapping writes the mapping that reads it


def test_a_rendered_prompt_beside_its_answer(tmp_path):
    """The prompt a server was sent, its answer beside it: ChatML with ``completion`` (read before as one user
    message holding the tokens), llama.cpp's ``/completion`` log with ``content``, TGI's ``inputs`` /
    ``generated_text`` and a Completions response's ``choices[0].text`` beside the prompt (refused before)."""
    chatml_prompt = CHATML.split(f"{A1}<|im_end|>")[0]
    rows = {"chatml.jsonl": {"prompt": chatml_prompt, "completion": A1},
            "llamacpp.jsonl": {"prompt": LLAMA3_PROMPT, "content": A1, "tokens_predicted": 2, "model": "m.gguf"},
            "tgi.jsonl": {"inputs": chatml_prompt, "parameters": {"max_new_tokens": 9}, "generated_text": A1},
            "vllm.jsonl": {"model": "m", "prompt": LLAMA3_PROMPT, "choices": [{"index": 0, "text": A1}]}}
    for name, row in rows.items():
        path = tmp_path / name
        path.write_text(json.dumps(row) + "\n")
        result = ingest([path], scrub=False)
        assert result.report.ok and totals(result.conversations) == (1, 1, 0), (name, codes(result))
        (call,) = result.conversations[0].calls()
        assert [m.role for m in call.context] == ["system", "user"] and call.completion.text == A1
        assert not any(t in m.text for m in call.context for t in TEMPLATE_TOKENS)


def test_a_transcript_file_rendered_by_a_template(tmp_path):
    cases = {"chat.txt": (CHATML, None), "prompt.txt": (LLAMA3_PROMPT, "no_assistant_message"),
             "cut.txt": (CHATML + "<|im_start|>assistant\nAnd then", "chat_template_not_read")}
    for name, (text, code) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        result = ingest([path], scrub=False)
        if code is None:
            assert result.report.ok and totals(result.conversations) == (1, 2, 0), codes(result)
        else:
            assert not result.conversations and code in codes(result), (name, codes(result))


def test_qwen_tool_calls_and_responses_in_a_rendered_chat(tmp_path):
    """Qwen 2.5's template: the call as ``<tool_call>`` JSON in the assistant's turn, the result as a user turn holding
    only ``<tool_response>`` (the environment's output, read as the tool's result, not as the user's words)."""
    text = ("<|im_start|>system\nYou can call get_weather.<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
            "</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\nIt is 21 degrees.<|im_end|>\n")
    assert [r for r, _ in rendered_chat(text).turns] == ["system", "user", "assistant", "tool", "assistant"]
    path = tmp_path / "qwen.jsonl"
    path.write_text(json.dumps({"text": text}) + "\n")
    result = ingest([path], scrub=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 1), codes(result)
    first, second = result.conversations[0].calls()
    assert [p.name for p in first.completion.tool_calls] == ["get_weather"]
    assert [m.role for m in second.context][-1] == "tool" and second.context[-1].text == ""  # a result, not text
    assert second.context[-1].parts[0].content == '{"temp": 21}'


def test_a_rendered_prompt_no_template_reads_is_refused_and_an_end_token_is_not_the_answer(tmp_path):
    """Template tokens never reach a message: a prompt ending inside a prefilled answer, or with DeepSeek R1's forced
    ``<think>`` (the answer beside it would begin inside the thinking), is ``chat_template_not_read`` (was one user message holding the tokens, ``ok``); an answer closed
    by the template's end token (a server not skipping special tokens) is read without it."""
    prompt = CHATML.split(f"{A1}<|im_end|>")[0]
    rows = [{"prompt": prompt + "{", "completion": '"a": 1}'},
            {"prompt": f"<｜begin▁of▁sentence｜>{SYSTEM}<｜User｜>{Q1}<｜Assistant｜><think>\n", "completion": A1}]
    path = tmp_path / "refused.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = ingest([path], scrub=False)
    assert not result.conversations and codes(result) == ["chat_template_not_read"] * 2, codes(result)
    path.write_text(json.dumps({"prompt": prompt, "completion": A1 + "<|im_end|>"}) + "\n")
    (call,) = ingest([path], scrub=False).conversations[0].calls()
    assert call.completion.text == A1


def test_a_mapping_reading_a_rendered_prompt_without_its_answer_says_so(tmp_path):
    path = tmp_path / "prompts.jsonl"
    path.write_text(json.dumps({"text": LLAMA3_PROMPT}) + "\n")
    mapping = mapping_from_dict({"name": "p", "messages": "$.text", "role": "role", "content": "content",
                                 "roles": {"user": "user", "assistant": "assistant"}})
    result = ingest([path], scrub=False, mapping=mapping)
    (error,) = result.report.errors
    assert error.code == "no_assistant_message" and "response: PATH" in error.message and "llama3" in error.message


def test_a_templates_tokens_around_an_answer_are_dropped_by_every_reader(tmp_path):
    """A server that does not skip special tokens returns them around the answer; in any file's assistant message
    the template's opening header and closing end-of-turn token are the template's, not the model's text (a
    ``template_tokens_stripped`` warning). ``</s>`` stays: HTML's strike-through ends with it."""
    rows = [{"messages": [{"role": "user", "content": "Is 101 prime?"},
                          {"role": "assistant", "content": "101 is a prime number.<|im_end|>"}]},
            {"messages": [{"role": "user", "content": "Capital of Peru?"}, {"role": "assistant", "content":
                          "<|start_header_id|>assistant<|end_header_id|>\n\nLima is the capital of Peru.<|eot_id|>"}]},
            {"messages": [{"role": "user", "content": "Strike it"}, {"role": "assistant", "content": "<s>old</s>"}]}]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    texts = [next(c.calls()).completion.text for c in result.conversations]
    assert texts == ["101 is a prime number.", "Lima is the capital of Peru.", "<s>old</s>"]
    assert [w.code for w in result.report.warnings].count("template_tokens_stripped") == 2
