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
