"""Evaluation exports read by the general path (issue 30; docs/traces.md, "A prompt and an answer as two
texts"): a call's prompt and answer each held one level down in an object (HELM's request states:
``request: {prompt, model, ...}`` beside ``result: {completions: [{text}]}``; promptfoo's results: ``prompt:
{raw, label}`` beside ``response: {output}``), and the lists of records one object down (``{"results":
{"prompts": [...], "results": [...]}}``). Documents are hand-made in those layouts, not copies of real files."""

from __future__ import annotations

import json

import pytest

from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import parse_mapping
from drafters.traces.report import TraceError

from .conftest import codes, inferred_mapping_totals, totals


def _state(prompt, *answers):
    return {"instance": {"input": {"text": prompt[-5:]}, "references": [{"output": {"text": "ref"}}], "id": "i"},
            "request": {"model": "m", "prompt": prompt, "temperature": 0.0, "max_tokens": 1},
            "result": {"success": True, "completions": [{"text": a, "logprob": 0.0} for a in answers],
                       "cached": True}}


def _write(tmp_path, doc, name="doc.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_request_states_with_the_prompt_and_the_completion_one_level_down(tmp_path):
    doc = {"adapter_spec": {"method": "generation", "instructions": "Answer."},
           "request_states": [_state("Q1: 2+2? A:", "4"), _state("Q2: 3+3? A:", "6")]}
    path = _write(tmp_path, doc)
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 2, 0)
    calls = [c for conv in result.conversations for c in conv.calls()]
    assert [(c.context[0].role, c.context[0].text, c.completion.text) for c in calls] == [
        ("user", "Q1: 2+2? A:", "4"), ("user", "Q2: 3+3? A:", "6")]
    assert inferred_mapping_totals(path, "request_response", tmp_path) == (2, 2, 0)


def test_several_completions_of_one_request_are_not_guessed(tmp_path):
    doc = {"request_states": [_state("Q1", "a", "b")]}
    result = ingest([_write(tmp_path, doc)], scrub=False)
    assert not result.report.ok and not result.conversations


def test_results_whose_lists_sit_one_object_down(tmp_path):
    rows = [{"prompt": {"raw": f"Solve: riddle {i}", "label": "Solve: {{riddle}}"}, "promptIdx": 0,
             "response": {"output": f"answer {i}", "tokenUsage": {"total": 3}}, "score": 1,
             "testCase": {"vars": {"riddle": f"riddle {i}"}}} for i in range(3)]
    doc = {"evalId": "eval-1", "results": {"version": 3, "prompts": [{"raw": "Solve: {{riddle}}", "label": "t"}],
                                           "results": rows}, "config": {"providers": ["p"]}}
    path = _write(tmp_path, doc)
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 3, 0)
    calls = [c for conv in result.conversations for c in conv.calls()]
    assert (calls[0].context[0].text, calls[0].completion.text) == ("Solve: riddle 0", "answer 0")
    assert "records_not_calls" in codes(result, "warnings")  # the prompt template: no call
    assert inferred_mapping_totals(path, "request_response", tmp_path) == (3, 3, 0)


def test_a_mapping_names_where_the_lists_are():
    base = {"name": "t", "messages": "$.prompt.raw", "role": "role", "roles": {"user": "user"},
            "content": "content", "response": "$.response.output"}
    mapping = parse_mapping(json.dumps({**base, "records": "lists", "lists": "$.results"}))
    assert mapping.lists == "$.results" and mapping.to_dict()["lists"] == "$.results"
    with pytest.raises(TraceError, match="lists") as e:
        parse_mapping(json.dumps({**base, "lists": "$.results"}))  # without records: lists
    assert e.value.code == "bad_mapping"


def test_a_prompted_document_and_its_responses_text_are_one_call(tmp_path):
    """TopicGPT's assignment output: each line the document as prompted (``prompted_docs``) and the model's answer
    as one text under ``responses``: one call a line."""
    rows = [{"id": f"doc-{i}", "text": f"Bill {i} text.", "label": "Public Lands", "prompted_docs": f"Bill {i} text.",
             "responses": f"[1] Environment: bill {i} manages land."} for i in range(3)]
    path = tmp_path / "assignment.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 3, 0)
    call = next(result.conversations[0].calls())
    assert call.context[-1].text == "Bill 0 text." and call.completion.text == "[1] Environment: bill 0 manages land."


def test_a_checkers_raw_replies_beside_the_checked_pair_are_not_dropped(tmp_path):
    """FactReasoner's assessor output: the checked prompt and response (``input`` / ``output``) and, under
    ``results.raw_outputs``, the verifier's raw reply per claim, whose prompts the file does not keep: reading the
    pair alone would drop those calls, so the file is refused naming both (``ambiguous_shape``); a copy of the
    response beside it (``results.response``) is no other answer."""
    doc = {"input": "Tell me a biography of Lanny Flaherty", "output": "Lanny Flaherty is an American actor.",
           "atoms": [{"id": "a0", "text": "He is an actor."}, {"id": "a1", "text": "He was born in 1949."}],
           "results": {"factuality_score": 0.5, "response": "Lanny Flaherty is an American actor.",
                       "raw_outputs": {"a0": "###Supported### The page says so.", "a1": "###Contradicted### 1942."}}}
    path = tmp_path / "factscore_output.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False, format="generic")
    assert result.conversations == [] and "ambiguous_shape" in codes(result)
    assert "$.results.raw_outputs" in result.report.errors[0].message
    del doc["results"]["raw_outputs"]
    doc["results"]["response_source"] = "live"  # a label under an answer's word: no answer
    path.write_text(json.dumps(doc))
    assert totals(ingest([path], scrub=False, format="generic").conversations) == (1, 1, 0)
    # VideoLingo's call log: the reply's JSON text and, under resp, its parse: a copy, no other answer
    parsed = {"ipa": "/ˈmɒd.ən/", "usage_note": 'as in "modern art"', "example": "She prefers modern music."}
    log = [{"model": "gpt-4.1", "prompt": "Explain the word modern as JSON.",
            "resp_content": "```json\n" + json.dumps(parsed, ensure_ascii=False, indent=2) + "\n```", "resp": parsed}]
    path.write_text(json.dumps(log))
    result = ingest([path], scrub=False)
    assert result.report.ok and totals(result.conversations) == (1, 1, 0), codes(result)


def _evals_log(prompts: list[list[dict]], answers: list[list[str]]) -> str:
    """An OpenAI evals (``oaieval``) record log: a spec line, then a ``sampling`` event (the prompt's messages, the
    answers sampled) and a ``match`` event (the answer graded) per sample, then the final report."""
    lines = [{"spec": {"completion_fns": ["gpt-3.5-turbo"], "eval_name": "crossword.dev.v0"}}]
    for i, (prompt, sampled) in enumerate(zip(prompts, answers, strict=True)):
        lines += [{"run_id": "r1", "event_id": 2 * i, "sample_id": f"s{i}", "type": "sampling",
                   "data": {"prompt": prompt, "sampled": sampled}},
                  {"run_id": "r1", "event_id": 2 * i + 1, "sample_id": f"s{i}", "type": "match",
                   "data": {"correct": True, "expected": "TACK", "sampled": sampled[0]}}]
    lines.append({"final_report": {"accuracy": 1.0}})
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_an_evals_record_log_is_one_call_per_sampling_event(tmp_path):
    few_shot = [{"role": "system", "content": "Answer with one word."},
                {"role": "system", "content": "Fasten (4)", "name": "example_user"},
                {"role": "system", "content": "TACK", "name": "example_assistant"}]
    prompts = [[*few_shot, {"role": "user", "content": f"Clue {i} (4)"}] for i in range(3)]
    path = tmp_path / "crossword.jsonl"
    path.write_text(_evals_log(prompts, [["TACK"], ["NAIL"], ["PEGS"]]))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 3, 0)
    assert [c.completion.text for conv in result.conversations for c in conv.calls()] == ["TACK", "NAIL", "PEGS"]
    several = tmp_path / "sampled_twice.jsonl"  # two answers sampled for one prompt: which is the call's, not guessed
    several.write_text(_evals_log(prompts[:1], [["TACK", "NAIL"]]))
    assert not ingest([several], scrub=False).report.ok


def test_an_answer_beside_the_models_token_usage_is_the_models(tmp_path):
    """simple-evals' results: ``instruction`` and ``answer`` with the call's ``usage`` (and a judge's grade); without
    a usage an ``answer`` stays a reference answer, no output."""
    rows = [{"id": i, "instruction": f"What is {i} + {i}?", "answer": f"{i} + {i} = {2 * i}.",
             "usage": {"prompt_tokens": 9, "completion_tokens": 7}, "judge_answer": "A\n", "is_correct": True}
            for i in range(4)]
    path = _write(tmp_path, rows, "results.jsonl")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (4, 4, 0)
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "usage"}) + "\n" for r in rows))
    assert not ingest([path], scrub=False).conversations
