"""Run trees (issue 30; docs/traces.md, "Run trees"): a tracer that keeps a run's child runs inside it (LangSmith's
``Run`` with ``child_runs``: a chain run, its LLM runs and tool runs) is read as those runs, each a record of its
own (mapping key ``nested``), runs of another kind than an LLM call (``run_type: chain | tool``) not read. An LLM
run's messages serialized by LangChain's ``dumpd`` (``{"lc": 1, "type": "constructor", "id": [..., "HumanMessage"],
"kwargs": {...}}``) are the messages they hold, and its output is the message of the one generation of its
``LLMResult`` (``outputs.generations[0][0].message``).

Fixture ``fixtures/shapes/run_tree_langchain.json``: hand-made after LangSmith's ``Run`` schema, not a copy of a
real file.
"""

from __future__ import annotations

import json

import pytest

from drafters.traces.infer import infer_mapping, mapping_yaml
from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import load_mapping
from drafters.traces.mapping_records import nested_key
from drafters.traces.report import TraceError

from .conftest import codes, totals
from .test_bad_input import SHAPES

TREE = SHAPES / "run_tree_langchain.json"


def _calls(result):
    return [c for conv in result.conversations for c in conv.calls()]


def test_a_run_tree_is_read_as_its_llm_runs_chained():
    result = ingest([TREE], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (1, 2, 1)
    first, second = _calls(result)
    assert [m.role for m in first.context] == ["system", "user"]
    assert [(p.name, p.arguments) for p in first.completion.tool_calls] == [("search", {"q": "Oslo"})]
    assert [m.role for m in second.context] == ["system", "user", "assistant", "tool"]
    assert second.completion.text == "It is -3C in Oslo."
    assert "records_not_calls" in codes(result, "warnings")  # the chain run and the tool run
    assert '"nested":"child_runs"' in next(w.message for w in result.report.warnings if w.code == "generic_mapping")


def test_the_inferred_mapping_reads_the_tree_the_same_way(tmp_path):
    inferred = infer_mapping(TREE)
    assert inferred.mapping.nested == "child_runs"
    assert inferred.mapping.response == "$.outputs.generations[0][0].message"
    path = tmp_path / "tree.mapping.yaml"
    path.write_text(mapping_yaml(inferred))
    declared = ingest([TREE], scrub=False, mapping=path)
    assert declared.report.ok, codes(declared)
    general = ingest([TREE], scrub=False)
    assert [(c.completion.text, len(c.context)) for c in _calls(declared)] == \
        [(c.completion.text, len(c.context)) for c in _calls(general)]


def test_runs_nested_two_levels_deep_and_several_trees(tmp_path):
    tree = json.loads(TREE.read_text())
    agent = {**tree, "id": "agent", "run_type": "chain", "child_runs": tree["child_runs"]}
    outer = {**tree, "id": "outer", "child_runs": [agent]}
    other = json.loads(json.dumps(outer).replace("Oslo", "Lima"))
    path = tmp_path / "trees.json"
    path.write_text(json.dumps([outer, other]))
    result = ingest([path], scrub=False)
    assert result.report.ok, codes(result)
    assert totals(result.conversations) == (2, 4, 2)


def test_a_message_tree_is_not_a_run_tree(tmp_path):
    # messages nesting their replies (a chat export's branches) are a message tree, never flattened into one line
    doc = {"id": "c1", "title": "t", "messages": [{"role": "user", "content": "Hi", "children": [
        {"role": "assistant", "content": "Hello", "children": []},
        {"role": "assistant", "content": "Hey", "children": []}]}]}
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(doc))
    assert nested_key([doc]) is None and nested_key([doc["messages"][0]]) is None
    result = ingest([path], scrub=False)
    assert '"nested"' not in " ".join(w.message for w in result.report.warnings)


def test_nested_is_a_key_for_records_read_one_by_one(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("name: m\nrecords: messages\nnested: child_runs\nmessages: $\nrole: role\nroles: {user: user}\n")
    with pytest.raises(TraceError) as err:
        load_mapping(path)
    assert err.value.code == "bad_mapping" and "nested" in str(err.value)


def test_tool_definitions_kept_with_the_calls_settings(tmp_path):
    # LangSmith keeps the tools an LLM run was given in extra.invocation_params (LiteLLM in model_parameters): read
    tree = json.loads(TREE.read_text())
    tool = {"type": "function", "function": {"name": "search", "description": "Search the web",
                                             "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
    for run in tree["child_runs"]:
        if run["run_type"] == "llm":
            run["extra"]["invocation_params"]["tools"] = [tool]
    path = tmp_path / "tree.json"
    path.write_text(json.dumps(tree))
    result = ingest([path], scrub=False)
    assert result.report.ok and "no_tool_definitions" not in codes(result, "warnings")
    assert [[t.name for t in c.tools] for c in _calls(result)] == [["search"], ["search"]]


def _span(span_id, parent, kind, inputs, outputs):
    return {"span_id": span_id, "parent_span_id": parent, "name": kind.title(),
            "attributes": {"mlflow.spanType": json.dumps(kind), "mlflow.spanInputs": json.dumps(inputs),
                           "mlflow.spanOutputs": json.dumps(outputs)}}


def test_traces_of_spans_with_langchain_message_dicts(tmp_path):
    # MLflow 3's LangChain autolog: an array of traces {info, data: {spans}}, the chat model's span holding the
    # messages as [[{type: human, content}]] and an LLMResult; CHAIN and TOOL spans are no calls
    def lc(kind, content, **kw):
        return {"content": content, "additional_kwargs": {}, "type": kind, **kw}
    call = {"name": "convert", "args": {"value": 26.2}, "id": "c1", "type": "tool_call"}
    def result(message):
        return {"generations": [[{"text": message["content"], "type": "ChatGeneration", "message": message}]]}
    first = [lc("system", "Convert units."), lc("human", "26.2 miles in km?")]
    spans = [_span("s1", "", "CHAIN", {"input": "26.2 miles in km?"}, {"output": "About 42.16 km."}),
             _span("s2", "s1", "CHAT_MODEL", [first], result(lc("ai", "", tool_calls=[call]))),
             _span("s3", "s1", "TOOL", {"value": 26.2}, "42.16"),
             _span("s4", "s1", "CHAT_MODEL", [[*first, lc("ai", "", tool_calls=[call]),
                                               lc("tool", "42.16", tool_call_id="c1")]],
                   result(lc("ai", "About 42.16 km.")))]
    other = [_span("t1", "", "CHAT_MODEL", [[lc("human", "5 km in miles?")]], result(lc("ai", "About 3.11 miles.")))]
    doc = [{"info": {"trace_id": "tr-1"}, "data": {"spans": spans}}, {"info": {"trace_id": "tr-2"}, "data": {"spans": other}}]
    path = tmp_path / "traces.json"
    path.write_text(json.dumps(doc))
    result_ = ingest([path], scrub=False)
    assert result_.report.ok, codes(result_)
    assert totals(result_.conversations) == (2, 3, 1)
    assert len({c.id for c in result_.conversations}) == 2
