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


def test_the_whole_tree_beside_its_current_branch_and_the_chats_system_prompt(tmp_path):
    """Open WebUI's "Export All Chats": each chat keeps its whole message tree (``chat.history.messages``, keyed by
    id) beside the current branch's copy (``chat.messages``) and its system prompt in ``chat.params.system``. The
    tree that holds the other's nodes is read (a regenerated answer is a call too), every context under the system
    prompt."""
    def node(i, parent, children, role, content):
        return {"id": i, "parentId": parent, "childrenIds": children, "role": role, "content": content}
    tree = {"u1": node("u1", None, ["a1", "a1r"], "user", "Name a grey cat."),
            "a1": node("a1", "u1", [], "assistant", "Smokey?"),
            "a1r": node("a1r", "u1", ["u2"], "assistant", "Ash or Earl Grey."),
            "u2": node("u2", "a1r", ["a2"], "user", "And her black sister?"),
            "a2": node("a2", "u2", [], "assistant", "Lapsang.")}
    branch = [tree[k] for k in ("u1", "a1r", "u2", "a2")]
    chats = [{"id": f"chat-{n}", "title": "Cats", "chat": {"params": {"system": "Keep answers short."},
                                                           "history": {"messages": tree, "currentId": "a2"},
                                                           "messages": branch}} for n in (1, 2)]
    chats[1]["chat"]["history"]["messages"] = {k: v for k, v in tree.items() if k != "a1"}  # its branch is all
    chats[1]["chat"]["history"]["messages"]["u1"] = {**tree["u1"], "childrenIds": ["a1r"]}
    chats[1]["chat"]["messages"] = [chats[1]["chat"]["history"]["messages"][k] for k in ("u1", "a1r", "u2", "a2")]
    path = tmp_path / "chats.json"
    path.write_text(json.dumps(chats))
    result = ingest([path], scrub=False)
    assert result.report.ok, [e.code for e in result.report.errors]
    assert totals(result.conversations) == (2, 5, 0)
    calls = list(result.conversations[0].calls())
    assert [c.completion.text for c in calls] == ["Smokey?", "Ash or Earl Grey.", "Lapsang."]
    assert all(c.context[0].role == "system" and c.context[0].text == "Keep answers short." for c in calls)
    # a reply whose Responses items (a tool call and its output) sit under "output" beside its text: not read
    tree["a1"]["output"] = [{"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"},
                            {"type": "function_call_output", "call_id": "c1", "output": "ok"}]
    path.write_text(json.dumps(chats))
    result = ingest([path], scrub=False)
    assert not result.report.ok and result.conversations == []
