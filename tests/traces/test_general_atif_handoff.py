"""ATIF trajectories whose context was handed off mid-run (Harbor terminus-2's context summarization: a
``system`` step whose ``observation.results`` refer to the summary, questions and answers sub-agent
trajectories, after which the agent starts again from a handoff prompt those files hold). The calls before the
handoff are read; the calls after it saw a context this file does not record, so they are refused
(``handoff_context_not_recorded``, naming the file and step) and the file is ``partial``, never ``ok``.

The small file below has the layout of Harbor's golden trajectory
``tests/golden/terminus_2/hello-world-context-summarization.trajectory.json`` (the real one is in the corpus,
``fixtures/unknown_formats``). What the model saw after the handoff (Harbor's ``.traces.json`` beside it): the
task prompt, the handoff prompt with the summary, the questions it asked and the answers; this file holds only
the answers."""

from __future__ import annotations

import copy
import json

from drafters.traces.infer import infer_mapping, mapping_yaml
from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import parse_mapping

from .conftest import totals

HANDOFF = {"step_id": 4, "source": "system",
           "message": "Performed context summarization and handoff to continue task.",
           "observation": {"results": [
               {"subagent_trajectory_ref": [{"session_id": "s-summary", "trajectory_path": "trajectory.summary.json"}]},
               {"subagent_trajectory_ref": [{"session_id": "s-questions",
                                             "trajectory_path": "trajectory.questions.json"}]},
               {"subagent_trajectory_ref": [{"session_id": "s-answers", "trajectory_path": "trajectory.answers.json"}]},
           ]}}


def _step(step_id, text, call=None, output=None):
    step = {"step_id": step_id, "source": "agent", "model_name": "openai/gpt-4o", "message": text}
    if call is not None:
        step["tool_calls"] = [{"tool_call_id": call, "function_name": "bash_command",
                               "arguments": {"keystrokes": "ls\n"}}]
        step["observation"] = {"results": [{"content": output}]}
    return step


SUMMARIZED = {
    "schema_version": "ATIF-v1.5",
    "agent": {"name": "terminus-2", "model_name": "openai/gpt-4o"},
    "steps": [
        {"step_id": 1, "source": "user", "message": "Create hello.txt with 'Hello, world!'."},
        _step(2, "Analysis: ready. Plan: make a directory.", "call_0_1", "mkdir test_dir"),
        _step(3, "Analysis: made it. Plan: add a file.", "call_1_1", "echo test1 > test_dir/file1.txt"),
        HANDOFF,
        {"step_id": 5, "source": "user", "message": "Here are the answers the other agent provided.\n\n1. test_dir "
                                                    "holds file1.txt"},
        _step(6, "Analysis: from the handoff. Plan: write hello.txt.", "call_2_1", "printf done"),
        _step(7, "Analysis: done. Plan: finish."),
    ],
}


def _write(tmp_path, doc, name="trajectory.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _refused(result, step="step 4 ($.steps[3])", calls=2):
    errors = [e for e in result.report.errors if e.code == "handoff_context_not_recorded"]
    assert len(errors) == 1, result.report.errors
    assert "trajectory.json" in errors[0].message and step in errors[0].message
    assert f"the {calls} LLM call(s) after it" in errors[0].message
    return errors[0]


def test_calls_after_a_context_summarization_are_refused_not_given_the_earlier_steps(tmp_path):
    path = _write(tmp_path, SUMMARIZED)
    result = ingest([path], scrub=False)
    assert not result.report.ok
    _refused(result)
    assert result.report.to_dict()["files"][str(path)]["status"] == "partial"
    # the calls before the handoff, with the contexts the model saw; none after it
    assert totals(result.conversations) == (1, 2, 2)
    (conv,) = result.conversations
    calls = list(conv.calls())
    assert [c.completion.text for c in calls] == [s["message"] for s in SUMMARIZED["steps"][1:3]]
    assert [len(c.context) for c in calls] == [1, 3]
    texts = [p.text for m in conv.messages for p in m.parts if hasattr(p, "text")]
    assert not any("handoff" in t or "answers" in t for t in texts)


def test_the_inferred_mapping_refuses_them_the_same_way(tmp_path):
    path = _write(tmp_path, SUMMARIZED)
    again = ingest([path], mapping=parse_mapping(mapping_yaml(infer_mapping(path)), "m"), scrub=False)
    _refused(again)
    assert totals(again.conversations) == (1, 2, 2)


def test_a_handoff_in_a_trajectory_of_text_steps_is_found_too(tmp_path):
    # agent steps without calls or observations (the mapping then has no observation key of its own)
    doc = copy.deepcopy(SUMMARIZED)
    for step in doc["steps"]:
        if step["source"] == "agent":
            step.pop("tool_calls", None)
            step.pop("observation", None)
    result = ingest([_write(tmp_path, doc)], scrub=False)
    _refused(result)
    assert totals(result.conversations) == (1, 2, 0)


def test_a_trajectory_that_ends_at_its_handoff_is_read_whole(tmp_path):
    # Harbor's linear-history mode: the trajectory stops at the handoff, the rest is in trajectory.cont-1.json
    doc = copy.deepcopy(SUMMARIZED)
    doc["steps"] = doc["steps"][:4]
    doc["continued_trajectory_ref"] = "trajectory.cont-1.json"
    result = ingest([_write(tmp_path, doc)], scrub=False)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (1, 2, 2)


def test_a_call_whose_result_is_left_to_a_subagent_trajectory_ends_what_is_read(tmp_path):
    # a delegated call whose result content is only a reference: what the agent was shown is in another file
    doc = copy.deepcopy(SUMMARIZED)
    doc["steps"] = [s for s in doc["steps"] if s["step_id"] not in (4, 5)]
    doc["steps"][2]["observation"] = {"results": [{"source_call_id": "call_1_1", "subagent_trajectory_ref": [
        {"session_id": "s-sub", "trajectory_path": "trajectory.sub.json"}]}]}
    result = ingest([_write(tmp_path, doc)], scrub=False)
    _refused(result, step="step 3 ($.steps[2])")
    # the delegating call itself is read (its context precedes it); nothing after it
    assert totals(result.conversations) == (1, 2, 2)


def test_a_delegated_call_whose_result_is_recorded_is_read(tmp_path):
    doc = copy.deepcopy(SUMMARIZED)
    doc["steps"] = [s for s in doc["steps"] if s["step_id"] not in (4, 5)]
    doc["steps"][2]["observation"] = {"results": [{"source_call_id": "call_1_1", "content": "file1.txt made",
                                                   "subagent_trajectory_ref": [{"session_id": "s-sub"}]}]}
    result = ingest([_write(tmp_path, doc)], scrub=False)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (1, 4, 3)
