"""More shapes the general path reads by rule (issue 30; docs/traces.md, the general path): an export envelope
holding one message list per item of an array (``history[*].messages``), roles given by a boolean key
(``isCreatedByUser``, ``isUser``), tree nodes whose id is under ``messageId`` / ``nodeId``, nested trees (children
holding the child nodes), and a nil id as a root's parent.

Fixture ``fixtures/shapes/nested_tree_bool_roles.json``: hand-made (a nested tree with a regenerated answer on a
side branch, roles by ``isUser``, ids under ``nodeId``); not a copy of a real file.
"""

from __future__ import annotations

import json

from drafters.traces.ingest import ingest

from .conftest import totals
from .test_bad_input import SHAPES


def _write(tmp_path, doc, name="doc.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_one_conversation_per_item_of_an_export_envelope(tmp_path):
    doc = {"version": 2, "folders": [{"id": "f", "name": "x"}],
           "history": [{"id": "c1", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                                                 {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]},
                       {"id": "c2", "messages": [{"role": "user", "content": "e"},
                                                 {"role": "assistant", "content": "f"}]}]}
    result = ingest([_write(tmp_path, doc)], scrub=False)
    assert result.report.ok and totals(result.conversations) == (2, 3, 0)
    assert sorted(c.completion.text for conv in result.conversations for c in conv.calls()) == ["b", "d", "f"]


def test_lists_at_unrelated_paths_stay_ambiguous(tmp_path):
    doc = {"a": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x"}],
           "b": {"c": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "y"}]}}
    result = ingest([_write(tmp_path, doc)], scrub=False)
    assert not result.report.ok and not result.conversations


def test_roles_given_by_a_boolean_key(tmp_path):
    doc = {"conversationId": "c", "messages": [
        {"messageId": "m1", "parentMessageId": None, "isCreatedByUser": True, "sender": "User", "text": "hi"},
        {"messageId": "m2", "parentMessageId": "m1", "isCreatedByUser": False, "sender": "Some Bot", "text": "hello"}]}
    result = ingest([_write(tmp_path, doc)], scrub=False)
    assert result.report.ok and totals(result.conversations) == (1, 1, 0)
    (call,) = result.conversations[0].calls()
    assert [m.role for m in call.context] == ["user"] and call.completion.text == "hello"


def test_a_branching_flat_list_linked_by_message_ids_is_read_as_a_tree(tmp_path):
    doc = {"messages": [
        {"messageId": "m1", "parentMessageId": "00000000-0000-0000-0000-000000000000", "isCreatedByUser": True,
         "text": "hi"},
        {"messageId": "m2", "parentMessageId": "m1", "isCreatedByUser": False, "text": "hello"},
        {"messageId": "m3", "parentMessageId": "m1", "isCreatedByUser": False, "text": "hey (regenerated)"}]}
    result = ingest([_write(tmp_path, doc)], scrub=False)
    assert result.report.ok and totals(result.conversations) == (1, 2, 0)
    assert all([m.text for m in c.context] == ["hi"] for c in result.conversations[0].calls())


def test_a_nested_tree_each_answer_with_its_own_branch():
    result = ingest([SHAPES / "nested_tree_bool_roles.json"], scrub=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    calls = list(result.conversations[0].calls())
    assert totals(result.conversations) == (1, 3, 0)
    by_answer = {c.completion.text: [m.text for m in c.context] for c in calls}
    assert by_answer["Lunch at a bouchon in Vieux Lyon."] == [
        "Plan a day in Lyon.", "Morning: Fourviere. Afternoon: Vieux Lyon.", "Add a lunch spot."]
    assert by_answer["Regenerated: start at Parc de la Tete d'Or."] == ["Plan a day in Lyon."]
