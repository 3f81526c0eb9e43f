"""ToolBench DFS answers (legacy function_call / role function)."""

from __future__ import annotations

import json

from ._helpers_b import codes, parse_text, read
from .conftest import parse_file, sample, totals

G1 = "toolbench_dfs_legacy_function_call/G1__10_ChatGPT_DFS_woFilter_w2.json"
G2 = "toolbench_dfs_legacy_function_call/G2__127_ChatGPT_DFS_woFilter_w2.json"


def test_sample_counts():
    # Independent count (python json.load): answer_generation.train_messages has 3 branches of 3, 5, 7
    # (G1) and 3, 6, 8 (G2) messages, each a prefix of the next (checked with b[:len(a)] == a), so one
    # maximal branch per file; it has 3 assistant messages, each with one function_call: 3 calls, 3 calls.
    assert totals(parse_file("toolbench", sample(G1))[0]) == (1, 3, 3)
    assert totals(parse_file("toolbench", sample(G2))[0]) == (1, 3, 3)


def test_prefix_branches_fold_and_finish_is_a_tool_call():
    """README: train_messages holds one list per explored branch, so prefixes repeat; Finish is a
    pseudo-tool the model called."""
    (conv,), report = parse_file("toolbench", sample(G1))
    assert not report.errors
    assert conv.source.record == "$.answer_generation.train_messages[2]"
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    finish = conv.messages[-1].tool_calls[0]
    assert finish.name == "Finish" and finish.arguments["return_type"] == "give_answer"
    # arguments are a JSON string (pretty-printed in the log): raw kept verbatim, object parsed
    assert finish.raw_arguments.startswith('{\n  "return_type": "give_answer"')
    assert [t.name for t in conv.tools] == ["transitaire_for_transitaires", "transitaires_for_transitaires", "Finish"]
    # legacy function results have no ids: paired by position, named after the call
    res = conv.messages[3].tool_results[0]
    assert res.call_id is None and res.name == "transitaires_for_transitaires"
    assert res.content.startswith('{"error": "", "response": "[{\\"id\\":\\"EKVF\\"')  # JSON in a string in a string


def test_crlf_file_parses_identically():
    """README: files may use CRLF line endings."""
    raw = sample(G1).read_bytes()
    assert b"\r\n" in raw
    convs, report = parse_text("toolbench", raw.decode("utf-8"), "g1.json")  # StringIO keeps the \r\n
    assert not report.errors and totals(convs) == (1, 3, 3)
    assert "\r" not in convs[0].messages[1].text
    (g2,), _ = parse_file("toolbench", sample(G2))
    assert g2.messages[4].role == "user" and g2.messages[4].meta  # the DFS re-prompt: context, not the human
    assert not g2.messages[1].meta


def test_diverging_branches_are_separate_conversations():
    sys_ = {"role": "system", "content": "s"}
    user = {"role": "user", "content": "u"}
    call = lambda n: {"role": "assistant", "content": None, "function_call": {"name": n, "arguments": "{}"}}
    doc = {"win": True, "tree": {}, "answer_generation": {"function": [], "train_messages": [
        [sys_, user, call("a")], [sys_, user, call("b")], [sys_, user, call("a"), {"role": "function", "name": "a", "content": "x"}, call("c")],
    ]}}
    convs, report = parse_text("toolbench", json.dumps(doc))
    assert not report.errors
    assert [len(list(c.calls())) for c in convs] == [1, 2]  # branch 0 folds into branch 2


def test_truncated_file_reports_invalid_json_with_line():
    text = read(sample(G1))
    convs, report = parse_text("toolbench", text[: len(text) // 2], "cut.json")
    assert convs == [] and codes(report) == ["invalid_json"]
    assert report.errors[0].file == "cut.json" and report.errors[0].line > 1
