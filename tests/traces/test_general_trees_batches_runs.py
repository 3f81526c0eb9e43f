"""The general path reads three more shapes in general (issue 30): message trees, event batches whose LLM calls
sit in one kind of record among others, and saved run states (the run's input text at one path, the model's
output items at another). Each is stated as an inferred mapping that reads the file the same way; a reading
that would be uncertain is refused with a code.

Fixtures (``fixtures/shapes``, hand-made for these tests from the shapes' documented layouts; none is a copy of
a real file): ``tree_current_node.json`` (two conversations of id-keyed nodes with ``parent`` / ``children`` and a
``current_node``; a regenerated answer on a side branch, an edited user turn with no reply, an empty hidden
system message, a root without a message), ``tree_parent_ids.jsonl`` (nodes that are the messages, linked only
by ``parent_id``, no pointer; a tool call and its result, an unanswered side branch, one answer written as two
assistant nodes), ``event_batch.json`` (an ingestion batch: a trace event restating the run's first input and
last output, two generation events of one agent loop, a span and a score without messages, batch metadata) and
``run_state.json`` (an agent SDK's saved state: ``user_input`` text, the model's reasoning and function call in
``last_response.output`` and again in ``responses[0].output``).
"""

from __future__ import annotations

import json

import pytest

from drafters.traces.detect import candidate_formats
from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import parse_mapping
from drafters.traces.report import TraceError

from .conftest import inferred_mapping_totals, totals
from .test_bad_input import SHAPES


def _tree_current():
    convs = json.loads((SHAPES / "tree_current_node.json").read_text())
    calls = sum(1 for c in convs for n in c["mapping"].values()
                if n["message"] and n["message"]["author"]["role"] == "assistant")
    return len(convs), calls, 0


def _tree_parent_ids():
    recs = [json.loads(x) for x in (SHAPES / "tree_parent_ids.jsonl").read_text().splitlines()]
    calls = tools = 0
    for r in recs:
        by_id = {n["id"]: n for n in r["nodes"]}
        for n in r["nodes"]:
            parent = by_id.get(n["parent_id"])
            only_child = parent is not None and sum(m["parent_id"] == parent["id"] for m in r["nodes"]) == 1
            if n["role"] == "assistant" and not (parent and parent["role"] == "assistant" and only_child):
                calls += 1  # an assistant node continuing its parent's answer (its only child) is that answer
            tools += len(n.get("tool_calls") or [])
    return len(recs), calls, tools


def _event_batch():
    events = json.loads((SHAPES / "event_batch.json").read_text())["batch"]
    gens = [e["body"] for e in events if e["type"] == "generation-create"]  # the trace event restates them
    return 1, len(gens), sum(len(g["output"].get("tool_calls") or []) for g in gens)


def _run_state():
    state = json.loads((SHAPES / "run_state.json").read_text())
    return 1, 1, sum(i["type"] == "function_call" for i in state["last_response"]["output"])


@pytest.mark.parametrize("name,shape,walk", [
    ("tree_current_node.json", "tree", _tree_current),
    ("tree_parent_ids.jsonl", "tree", _tree_parent_ids),
    ("event_batch.json", "request_response", _event_batch),
    ("run_state.json", "run_state", _run_state),
])
def test_the_shape_is_read_exactly_and_its_inferred_mapping_reads_it_the_same(tmp_path, name, shape, walk):
    path = SHAPES / name
    result = ingest([path], scrub=False)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == walk()
    assert result.report.files[str(path)]["format"] == "generic"
    assert inferred_mapping_totals(path, shape, tmp_path) == walk()


def _calls(path, **kw):
    result = ingest([path], scrub=False, **kw)
    return result, [c for conv in result.conversations for c in conv.calls()]


def _texts(messages):
    return [" ".join(getattr(p, "text", "") or "" for p in m.parts) for m in messages]


def test_tree_every_answer_is_one_call_with_its_ancestors_as_context():
    result, calls = _calls(SHAPES / "tree_current_node.json")
    first = next(c for c in result.conversations if c.messages and "France" in _texts(c.messages)[0])
    # the transcript is the path to the current node; the edited turn with no reply is in no context
    assert _texts(first.messages) == ["What is the capital of France?", "Paris.", "And of Italy?", "Rome."]
    assert not any("Spain" in t for c in calls for t in _texts(c.context))
    # the regenerated answer is a call of its own, with the same context as the first answer
    regen = next(c for c in calls if _texts([c.completion]) == ["The capital of France is Paris."])
    assert _texts(regen.context) == ["What is the capital of France?"]
    assert all(m.role != "system" for c in calls for m in c.context)  # the empty hidden system message: no turn


def test_tree_without_a_pointer_reads_every_branch_and_the_last_leaf_as_transcript():
    _, calls = _calls(SHAPES / "tree_parent_ids.jsonl")
    split = next(c for c in calls if _texts([c.completion])[0].startswith("Yes."))
    assert _texts([split.completion]) == ["Yes. Rain is expected all day."]  # two nodes, one answer
    assert _texts(split.context)[-1] == "Should I take an umbrella?"
    assert not any("Bergen" in t for c in calls for t in _texts(c.context))


def test_a_declared_tree_mapping_reads_children_links_alone(tmp_path):
    mapping = tmp_path / "tree.yaml"
    mapping.write_text("name: chat-tree\nmessages: $.mapping\nrole: author.role\n"
                       "roles: {user: user, assistant: assistant, system: system}\ncontent: content.parts\n"
                       "tree: {children: children, message: message}\n")
    result = ingest([SHAPES / "tree_current_node.json"], mapping=mapping, scrub=False)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == _tree_current()


@pytest.mark.parametrize("nodes,current,why", [
    ([{"id": "a", "parent": None, "role": "user", "content": "hi"},
      {"id": "b", "parent": "zz", "role": "assistant", "content": "hello"}], None, "names a parent"),
    ([{"id": "a", "parent": "b", "role": "user", "content": "hi"},
      {"id": "b", "parent": "a", "role": "assistant", "content": "hello"}], None, "cycle"),
    ([{"id": "a", "parent": None, "role": "user", "content": "hi"},
      {"id": "b", "parent": "a", "role": "assistant", "content": "hello"}], "nope", "current one"),
])
def test_a_broken_tree_is_refused_with_a_code(tmp_path, nodes, current, why):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"nodes": nodes, "current_node": current}))
    mapping = tmp_path / "m.yaml"
    mapping.write_text("messages: $.nodes\nrole: role\nroles: {user: user, assistant: assistant}\ncontent: content\n"
                       "tree: {parent: parent, current: $.current_node}\n")
    result = ingest([path], mapping=mapping, scrub=False)
    assert not result.report.ok and not result.conversations
    err = next(e for e in result.report.errors if e.code == "tree_broken")
    assert why in err.message


def test_a_tree_mapping_needs_a_link_key():
    with pytest.raises(TraceError) as err:
        parse_mapping("messages: $.n\nrole: role\nroles: {user: user}\ntree: {message: message}\n")
    assert err.value.code == "bad_mapping" and "tree" in err.value.message


def _batch(tmp_path, events):
    path = tmp_path / "batch.json"
    path.write_text(json.dumps({"batch": events, "metadata": {"sdk": "x"}}, indent=1))  # pretty: chat sniffers claim it
    return path


def _event(kind, inp, out=None):
    body = {"input": {"messages": inp}}
    if out is not None:
        body["output"] = out
    return {"type": kind, "body": body}


USER = [{"role": "user", "content": "Hello!"}]
ANSWER = {"role": "assistant", "content": "Hi there."}


def test_a_trace_event_repeating_its_generation_is_one_call(tmp_path):
    path = _batch(tmp_path, [_event("trace-create", USER, ANSWER), _event("generation-create", USER, ANSWER)])
    result, calls = _calls(path)
    assert result.report.ok, result.report.errors
    assert len(calls) == 1
    assert any(w.code == "repeated_calls" for w in result.report.warnings)


def test_an_event_batch_without_any_output_is_refused(tmp_path):
    path = _batch(tmp_path, [_event("trace-create", USER), _event("generation-create", USER)])
    result = ingest([path], scrub=False)
    assert not result.report.ok and not result.conversations and result.report.errors


def test_a_run_state_with_several_different_outputs_is_refused(tmp_path):
    state = json.loads((SHAPES / "run_state.json").read_text())
    second = [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Booked."}]}]
    state["responses"].append({"id": "resp_2", "output": second})
    state["last_response"]["output"] = second  # a second turn: its context (the tool's result) is not in the state
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    result = ingest([path], scrub=False)
    assert not result.report.ok and not result.conversations


def test_a_misdetecting_readers_refusal_hands_the_file_to_the_general_path(tmp_path):
    path = _batch(tmp_path, [_event("generation-create", USER)])  # no output: nobody can read it
    names = [f.name for f in candidate_formats(path.read_text(), path.name)]
    assert names[-1] == "generic"
    result = ingest([path], scrub=False)
    assert not result.report.ok
    tried = result.report.files[str(path)]["candidates"]
    assert [c["format"] for c in tried] == names and all(c["declined"] for c in tried)
    if len(names) > 1:
        warning = next(w for w in result.report.warnings if w.code == "candidates_declined")
        assert "generic (" in warning.message


def test_a_trace_event_that_restates_no_generation_refuses_the_batch(tmp_path):
    # the trace's output is a summary no generation wrote: it may be a parent record or a call; not guessed
    path = _batch(tmp_path, [_event("trace-create", USER, {"role": "assistant", "content": "Greeted the user."}),
                             _event("generation-create", USER, ANSWER)])
    result = ingest([path], scrub=False)
    assert not result.report.ok and not result.conversations
    tried = result.report.files[str(path)]["candidates"]
    assert tried[-1]["format"] == "generic" and tried[-1]["declined"].startswith("ambiguous_shape")
