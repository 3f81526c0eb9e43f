"""Codex CLI rollouts and exec streams."""

from __future__ import annotations

import json

import pytest

from drafters.traces.model import ReasoningPart

from .conftest import parse_file, sample, totals

# Counted independently: over the response_item payloads, assistant messages = maximal runs of
# model-side items (reasoning, function_call, assistant message), tool calls = function_call items;
# the first item is a user message, so every assistant message is a call. Exec streams: read by eye
# (one command_execution each; two assistant turns, the first opening the stream -> 1 call).
CASES = [
    ("codex_cli_rollout/agentcmd__rollout-2025-09-25T08-02-05-0199812e.jsonl", (1, 58, 57)),
    ("codex_cli_rollout/agentcmd__rollout-2025-09-25T15-12-14-019982b8.jsonl", (1, 35, 34)),
    ("codex_cli_rollout/agentcmd__codex-exec-json__stream-output-2.jsonl", (1, 1, 1)),
    ("codex_cli_rollout/agentcmd__codex-exec-json__stream-output-5.jsonl", (1, 1, 1)),
]


@pytest.mark.parametrize("rel,expected", CASES)
def test_sample_counts(rel, expected):
    convs, _ = parse_file("codex_cli", sample(rel))
    assert totals(convs) == expected


def test_event_msg_copies_are_not_used():
    """README: everything is written twice; event_msg is the UI copy."""
    path = sample("codex_cli_rollout/agentcmd__rollout-2025-09-25T08-02-05-0199812e.jsonl")
    n_user_items = sum(1 for line in open(path) if (d := json.loads(line))["type"] == "response_item"
                       and d["payload"].get("role") == "user")
    convs, _ = parse_file("codex_cli", path)
    assert sum(1 for m in convs[0].messages if m.role == "user") == n_user_items == 4


def test_arguments_json_inside_json_and_argv_command():
    convs, _ = parse_file("codex_cli", sample("codex_cli_rollout/agentcmd__rollout-2025-09-25T08-02-05-0199812e.jsonl"))
    call = next(m for m in convs[0].messages if m.tool_calls).tool_calls[0]
    assert call.name == "shell"
    assert isinstance(call.arguments["command"], list) and call.arguments["command"][0] in ("zsh", "bash")
    assert json.loads(call.raw_arguments) == call.arguments  # the raw string is the logged JSON string
    assert call.id.startswith("call_")


def test_encrypted_reasoning_kept_with_summary():
    convs, _ = parse_file("codex_cli", sample("codex_cli_rollout/agentcmd__rollout-2025-09-25T08-02-05-0199812e.jsonl"))
    reasoning = [p for m in convs[0].messages for p in m.parts if isinstance(p, ReasoningPart)]
    assert len(reasoning) == 58
    assert all(p.signature and p.signature.startswith("gAAAA") for p in reasoning)
    assert any(p.text.startswith("**") for p in reasoning)  # readable summaries


def test_injected_environment_context_is_meta():
    convs, _ = parse_file("codex_cli", sample("codex_cli_rollout/agentcmd__rollout-2025-09-25T08-02-05-0199812e.jsonl"))
    users = [m for m in convs[0].messages if m.role == "user"]
    assert users[0].meta and users[0].text.startswith("<environment_context>")
    assert not users[1].meta and "My request for Codex" in users[1].text  # the human's request
    assert {m.model for m in convs[0].messages if m.role == "assistant"} == {"gpt-5-codex"}


def test_exec_stream_warns_missing_prompt():
    convs, report = parse_file("codex_cli", sample("codex_cli_rollout/agentcmd__codex-exec-json__stream-output-5.jsonl"))
    assert [p.code for p in report.warnings] == ["missing_context"]
    (call,) = [p for m in convs[0].messages for p in m.tool_calls]
    assert call.arguments == {"command": "zsh -lc ls"}
    assert "hello.txt" in convs[0].messages[1].tool_results[0].content


def test_an_item_type_of_a_newer_codex_is_lost_content_not_ok(tmp_path):
    """A response_item whose payload type the reader does not know (here a renamed function_call) used to
    vanish: the file stayed ok with one tool call fewer. It is now an error (unknown_content), the
    conversation is not trained on (the file, one session, is refused)."""
    from drafters.traces.ingest import ingest

    src = sample("codex_cli_rollout/agentcmd__rollout-2025-09-25T15-12-14-019982b8.jsonl")
    lines = src.read_text(encoding="utf-8").splitlines()
    calls = [i for i, ln in enumerate(lines) if '"type":"function_call"' in ln.replace(" ", "")]
    assert len(calls) == 34  # counted in the raw file
    rec = json.loads(lines[calls[3]])
    rec["payload"]["type"] = "custom_tool_call_v9"
    lines[calls[3]] = json.dumps(rec)
    bad = tmp_path / "rollout.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert ingest([src]).report.files[str(src)]["status"] == "ok"
    report = ingest([bad]).report
    assert report.problem_counts.get("error:unknown_content") == 1
    assert report.files[str(bad)]["status"] == "refused" and report.counts["conversations"] == 0
