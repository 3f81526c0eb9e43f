"""Records of a prompt text and its reply numbered as one dialogue's turns (issue 30; docs/traces.md, "Records of a
prompt and its reply numbered as turns"): a harness's ``{step, prompt, response}`` sent one after another in one chat,
a tutoring table's ``turn`` rows. Each such record continues the one before it (mapping key ``turns``), a number
that does not follow opens a new conversation; records not numbered stay calls of their own. Hand-made files."""

from __future__ import annotations

import json

import pytest

from drafters.traces.infer_example import learn_mapping
from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import mapping_from_dict
from drafters.traces.report import TraceError

from .conftest import codes, totals


def _steps(numbers):
    return [{"step": str(n), "prompt": f"Step {n}: now write the tests for case {k}.",
             "response": f"Here are the tests for case {k}, step {n}."} for k, n in enumerate(numbers)]


def test_a_harness_s_numbered_steps_in_one_chat_are_one_conversation(tmp_path):
    path = tmp_path / "experiment_results.json"
    path.write_text(json.dumps({"model": "o3", "raw_results": {"responses": _steps([1, 2, 3]), "final": "x"}}))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 3, 0)
    calls = list(result.conversations[0].calls())
    assert [[m.role for m in c.context] for c in calls] == [["user"], ["user", "assistant", "user"],
                                                             ["user", "assistant", "user", "assistant", "user"]]
    assert '"turns":"$.step"' in result.report.warnings[0].message  # the inferred mapping says so


def test_a_number_that_does_not_follow_opens_a_new_dialogue_and_unnumbered_records_stay_apart(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _steps([1, 2, 1, 2, 3])))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert [len(list(c.calls())) for c in result.conversations] == [2, 3]
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "step"}) + "\n" for r in _steps([1, 2, 3])))
    result = ingest([plain], scrub=False, dedup=False)
    assert totals(result.conversations) == (3, 3, 0)  # no counter: independent calls, as before


def test_the_learner_chains_numbered_rows_of_a_named_prompt(tmp_path):
    """A table of a dialogue's turns (``turn``, ``question``, ``tutor_reply``): learned from one reply, the rows are
    one conversation, each reply after the turns before it, where the learner used to refuse them."""
    path = tmp_path / "chat.csv"
    rows = [("1", "Hi, what is 9 times 59?", "We multiply: 9 times 59 is 531."),
            ("2", "And the smallest planet?", "Mercury is the smallest planet."),
            ("3", "Thanks!", "You are welcome, ask me anything else.")]
    path.write_text("turn,question,tutor_reply\n" + "".join(f'{t},"{q}","{a}"\n' for t, q, a in rows))
    learned = learn_mapping(path, "9 times 59 is 531", None)
    assert learned.mapping["turns"] == "$.turn" and learned.mapping["messages"] == "$.question"
    result = ingest([path], mapping=mapping_from_dict(learned.mapping), scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 3, 0)
    assert [len(c.context) for c in result.conversations[0].calls()] == [1, 3, 5]


def test_turns_needs_a_response():
    with pytest.raises(TraceError, match="only with response"):
        mapping_from_dict({"name": "m", "messages": "$.messages", "role": "role", "roles": {"user": "user"},
                           "turns": "$.turn"})


def test_an_agent_loop_s_steps_rebuilt_from_one_template_stay_calls_of_their_own(tmp_path):
    """AppAgent's task log (``{step, prompt, response}`` a line): each step's prompt is the whole template again
    with the new screen, opening like the step before it; no step continues another."""
    template = "You are an agent that is trained to perform some basic tasks on a smartphone. " * 4
    path = tmp_path / "log_task.txt"
    path.write_text("".join(json.dumps({"step": n, "prompt": f"{template}\nScreen {n}: what next?",
                                        "response": f"Observation: screen {n}.\nFunction: tap({n})"}) + "\n"
                            for n in (1, 2, 3)))
    result = ingest([path], scrub=False, dedup=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (3, 3, 0)


def test_a_reply_after_a_short_question_is_learned_too(tmp_path):
    """The example reply on a row whose question is three characters (``12?``): a text under a key naming an input is
    the prompt however short (a guessed one needs 40 characters)."""
    path = tmp_path / "tutoring.csv"
    path.write_text('turn,question,answer_text\n1,"What is 3/4 in twelfths?","Multiply both by 3: 9/12."\n'
                    '2,"12?","Exactly. So 3/4 = 9/12."\n1,"And 2/3?","That is 8/12."\n')
    learned = learn_mapping(path, "Exactly. So 3/4 = 9/12.", None)
    assert (learned.mapping["messages"], learned.mapping["turns"]) == ("$.question", "$.turn")
    result = ingest([path], mapping=mapping_from_dict(learned.mapping), scrub=False, dedup=False)
    assert [len(list(c.calls())) for c in result.conversations] == [2, 1]
