"""The general path on agent steps with roles (ATIF: ``source``, ``function_name``, ``observation.results``),
on steps copied from another context (refused, ``copied_context``) and on a batch upload whose lists hold the
records (LangSmith ``{"post": [...], "patch": [...]}``: a run posted, then patched, read once)."""

from __future__ import annotations

import json

from drafters.traces.infer import infer_mapping, mapping_yaml
from drafters.traces.ingest import ingest
from drafters.traces.mapping_file import parse_mapping

from .conftest import totals

ATIF = {
    "schema_version": "ATIF-v1.5",
    "steps": [
        {"step_id": 1, "source": "system", "message": "You are an agent."},
        {"step_id": 2, "source": "user", "message": "Make hello.txt"},
        {"step_id": 3, "source": "agent", "message": "no json here",
         "observation": {"results": [{"content": "Previous response had parsing errors"}]}},
        {"step_id": 4, "source": "agent", "message": "Writing it.", "reasoning_content": "easy",
         "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"cmd": "touch a"}},
                        {"tool_call_id": "c2", "function_name": "bash", "arguments": {"cmd": "ls"}}],
         "observation": {"results": [{"source_call_id": "c2", "content": "a"}, {"source_call_id": "c1", "content": ""}]}},
        {"step_id": 5, "source": "agent", "message": "Done."},
    ],
}


def test_atif_steps_read_with_their_observations(tmp_path):
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(ATIF))
    result = ingest([path], scrub=False)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (1, 3, 2)
    (conv,) = result.conversations
    roles = [m.role for m in conv.messages]
    # the complaint about a step without calls is the next user input; results follow their calls by id
    assert roles == ["system", "user", "assistant", "user", "assistant", "tool", "assistant"]
    results = conv.messages[5].parts
    assert [(r.call_id, r.content) for r in results] == [("c2", "a"), ("c1", "")]
    assert [c.completion.text for c in conv.calls()] == ["no json here", "Writing it.", "Done."]
    again = ingest([path], mapping=parse_mapping(mapping_yaml(infer_mapping(path)), "m"), scrub=False)
    assert again.report.ok and totals(again.conversations) == (1, 3, 2)


def test_steps_copied_from_another_context_are_refused(tmp_path):
    doc = json.loads(json.dumps(ATIF))
    doc["steps"][3]["is_copied_context"] = True
    path = tmp_path / "copied.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False)
    assert not result.conversations
    assert [e.code for e in result.report.errors][:1] == ["copied_context"]


def _run(run_id, msgs, answer=None):
    run = {"id": run_id, "run_type": "llm", "inputs": {"model": "m", "messages": msgs}}
    if answer is not None:
        run["outputs"] = {"choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}]}
    return run


def test_batch_upload_reads_each_posted_then_patched_run_once(tmp_path):
    first = [{"role": "user", "content": "hi"}]
    second = first + [{"role": "assistant", "content": "hello"}, {"role": "user", "content": "bye"}]
    doc = {"post": [_run("r1", first), _run("r2", second)],
           "patch": [_run("r1", first, "hello"), _run("r2", second, "ciao")]}
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(doc))
    result = ingest([path], scrub=False)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (1, 2, 0)  # the second call extends the first: one conversation
    assert "run_starts_merged" in {w.code for w in result.report.warnings}
    written = mapping_yaml(infer_mapping(path))
    assert "records: lists" in written
    again = ingest([path], mapping=parse_mapping(written, "m"), scrub=False)
    assert again.report.ok and totals(again.conversations) == (1, 2, 0)


def test_a_posted_run_never_answered_is_an_error(tmp_path):
    first = [{"role": "user", "content": "hi"}]
    doc = {"post": [_run("r1", first)], "patch": [_run("r1", first, "hello")]}
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(doc))
    mapping = parse_mapping(mapping_yaml(infer_mapping(path)), "m")
    doc["post"].append(_run("r2", [{"role": "user", "content": "lost"}]))
    path.write_text(json.dumps(doc))
    result = ingest([path], mapping=mapping, scrub=False)
    assert "mapping_field_missing" in {e.code for e in result.report.errors}
    assert totals(result.conversations) == (1, 1, 0)
