"""A mapping learned from one reply (``infer-mapping --reply``) must tell the sides apart: a role key whose values
do not (a notebook's cell type, each markdown cell opening with its speaker's label; a log's entry names, the
entries read as prompts holding only numbers) is no role, and the example is refused rather than read ``ok`` with
the wrong calls (held-out sets 132 and 135's learned mappings). Hand-made files in those layouts."""

from __future__ import annotations

import json

import pytest

from drafters.traces.infer_example import learn_mapping
from drafters.traces.report import TraceError

REPLY = "The Fibonacci sequence adds the two numbers before each number."


def test_cells_whose_labels_name_both_sides_are_not_the_models(tmp_path):
    cells = [{"cell_type": "code", "metadata": {}, "source": ["# Explain the Fibonacci sequence"], "outputs": []},
             {"cell_type": "markdown", "metadata": {}, "source": ["**assistant**\n", "\n", REPLY]},
             {"cell_type": "markdown", "metadata": {}, "source": ["**user**\n", "\n", "Give the last ten below 1e5."]},
             {"cell_type": "markdown", "metadata": {}, "source": ["**assistant**\n", "\n", "They are 1597, 2584."]}]
    path = tmp_path / "chat.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "adds the two numbers before each")
    assert err.value.code == "example_not_read"


def test_entries_read_as_prompts_must_hold_words(tmp_path):
    record = {"query": "What was the profit?", "completion": REPLY}
    entries = [{"key": "search_latency", "value": "0.25"}, {"key": "search_latency", "value": "0.28"},
               {"key": "completion_record", "value": json.dumps(record)},
               {"key": "search_latency", "value": "0.31"}]
    path = tmp_path / "observed.json"
    path.write_text(json.dumps({"logs": {"results": [{"entries": entries}]}}))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "adds the two numbers before each")
    assert err.value.code == "example_not_read"


def test_labels_of_one_side_per_role_are_read(tmp_path):
    """The same labels, each role value's messages opening with its own side's: the roles are learned."""
    turns = [{"speaker": "human", "text": "**user** Explain the Fibonacci sequence."},
             {"speaker": "bot", "text": "**assistant** " + REPLY},
             {"speaker": "human", "text": "**user** And the last ten below 1e5?"},
             {"speaker": "bot", "text": "**assistant** They are 1597 and 2584 among others."}]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"turns": turns}))
    learned = learn_mapping(path, "adds the two numbers before each")
    assert learned.mapping["role"] == "speaker" and learned.mapping["roles"]["bot"] == "assistant"


def test_a_judges_grade_is_no_role(tmp_path):
    """simple-evals' results: the judge's grade (``judge_answer``: "C\\n", "B\\n") beside the answer was taken for the
    role; the learned reading is the row's instruction and answer."""
    rows = [{"id": i, "instruction": f"When was release {i} out?", "answer": f"{REPLY} Release {i}.",
             "judge_answer": "C\n" if i % 2 else "B\n", "is_correct": False} for i in range(4)]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    learned = learn_mapping(path, "adds the two numbers before each")
    assert learned.mapping.get("role") != "judge_answer" and learned.mapping["response"] == "$.answer"


def test_one_chat_of_several_kept_under_their_ids_is_not_learned_alone(tmp_path):
    """Chats kept under their ids, one a bare list and the others ``{title, messages}``: a mapping naming the
    example's key would read one chat and drop the rest, ``ok``."""
    chat = [{"role": "user", "parts": ["Explain Fibonacci."]}, {"role": "model", "parts": [REPLY]},
            {"role": "user", "parts": ["hi"]}, {"role": "model", "parts": ["Hello there, how can I help?"]}]
    doc = {"127.0.0.1": chat, "ed36c1de": {"title": "Chat 1", "messages": chat[:1] + [
        {"role": "model", "parts": ["Another answer, in another chat."]}]}}
    path = tmp_path / "chat_history.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceError) as err:
        learn_mapping(path, "adds the two numbers before each")
    assert err.value.code == "example_not_read"
