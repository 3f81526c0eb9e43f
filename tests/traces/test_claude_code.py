"""Claude Code session transcripts: sample counts and the pitfalls of docs/traces.md."""

from __future__ import annotations

import json

import pytest

from drafters.traces.formats.claude_code import parse
from drafters.traces.ingest import ingest
from drafters.traces.model import ReasoningPart, ToolCallPart
from drafters.traces.report import TraceError, ValidationReport

from .conftest import parse_file, sample, totals

# Expected numbers, counted independently of the parser with a python one-liner over the raw lines:
# keep dict lines of type user/assistant whose "message" is an object, drop repeated "uuid"s, then
#   conversations = distinct (sessionId, isSidechain) pairs,
#   assistant messages = distinct message.id among assistant lines (model != "<synthetic>"),
#   calls = assistant messages minus those that open a conversation (no context before them),
#   tool calls = distinct tool_use ids in assistant lines.
# VibeCodingTracker: 2 sessions, 31 assistant messages, the second session opens with an assistant line
# (a resumed session) -> 30 calls; 30 tool_use ids. The mcp one-liner is a lone assistant line: 0 calls.
CASES = [
    ("claude_code_jsonl/VibeCodingTracker__test_conversation.jsonl", 2, 30, 30),
    ("claude_code_jsonl/agentcmd__full-session-two.jsonl", 1, 11, 10),
    ("claude_code_jsonl/claude-code-log__edge_cases.jsonl", 2, 3, 3),
    ("claude_code_jsonl/fasthooks__sample_agent_sidechain.jsonl", 1, 1, 0),
    ("claude_code_jsonl/fasthooks__sample_main_transcript.jsonl", 1, 12, 10),
    ("claude_code_jsonl/fasthooks__studio_sample-transcript.jsonl", 1, 3, 2),
    # loglines wrapper: 33 lines, 15 assistant lines without message ids (each its own message), 12
    # tool_use blocks; counted with: jq -r '.loglines[]|select(.type=="assistant")|.type' | wc -l
    ("claude_code_jsonl/simonw__sample_session.json", 1, 15, 12),
    ("claude_code_jsonl/simonw__sample_session.jsonl", 1, 3, 2),
    ("mcp_in_transcripts/agentcmd__claude_tool-mcp__happy__change_title.jsonl", 1, 0, 1),
]


@pytest.mark.parametrize("rel,n_conv,n_calls,n_tools", CASES)
def test_sample_counts(rel, n_conv, n_calls, n_tools):
    convs, report = parse_file("claude_code", sample(rel))
    assert totals(convs) == (n_conv, n_calls, n_tools)


def test_lines_sharing_message_id_merge_into_one_parallel_call():
    """README: one response is several assistant lines sharing message.id; merged, parallel calls are
    one message with several calls (fasthooks main transcript has two such responses)."""
    convs, _ = parse_file("claude_code", sample("claude_code_jsonl/fasthooks__sample_main_transcript.jsonl"))
    parallel = [m for m in convs[0].messages if m.role == "assistant" and len(m.tool_calls) > 1]
    assert len(parallel) == 2
    # The results of a merged response follow it as tool messages, paired by id.
    ids = [c.id for c in parallel[0].tool_calls]
    i = convs[0].messages.index(parallel[0])
    following = [m.tool_results[0].call_id for m in convs[0].messages[i + 1 : i + 1 + len(ids)]]
    assert sorted(following) == sorted(ids)


def test_merge_synthetic_split_lines():
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "go"}},
        {"type": "assistant", "uuid": "a1", "sessionId": "s", "message": {"id": "msg_1", "role": "assistant",
         "model": "claude-x", "content": [{"type": "thinking", "thinking": "hm", "signature": "SIG=="}]}},
        {"type": "assistant", "uuid": "a2", "sessionId": "s", "message": {"id": "msg_1", "role": "assistant",
         "model": "claude-x", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"c": 1}}]}},
        {"type": "assistant", "uuid": "a3", "sessionId": "s", "message": {"id": "msg_1", "role": "assistant",
         "model": "claude-x", "content": [{"type": "tool_use", "id": "t2", "name": "Read", "input": {}}]}},
        {"type": "user", "uuid": "u2", "sessionId": "s", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
            {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "x"}],
             "is_error": True}]}},
        {"type": "assistant", "uuid": "a3", "sessionId": "s", "message": {"id": "msg_1", "role": "assistant",
         "content": [{"type": "text", "text": "duplicate line (same uuid) must be ignored"}]}},
    ]
    import io

    text = "\n".join(json.dumps(x) for x in lines)
    convs = list(parse(io.StringIO(text), "s.jsonl", ValidationReport()))
    (conv,) = convs
    roles = [m.role for m in conv.messages]
    assert roles == ["user", "assistant", "tool", "tool"]
    a = conv.messages[1]
    assert [type(p).__name__ for p in a.parts] == ["ReasoningPart", "ToolCallPart", "ToolCallPart"]
    assert a.parts[0].signature == "SIG=="  # byte-exact signature
    assert a.tool_calls[0].arguments == {"c": 1} and a.tool_calls[0].raw_arguments == '{"c":1}'
    assert conv.messages[3].tool_results[0].is_error is True
    assert len(list(conv.calls())) == 1


def test_meta_command_and_caveat_lines_are_not_the_human():
    """README: slash-command output, hook output and caveats are user lines that nobody typed."""
    convs, _ = parse_file("claude_code", sample("claude_code_jsonl/claude-code-log__edge_cases.jsonl"))
    conv = next(c for c in convs if c.id.endswith("edge_cases"))
    meta = [m for m in conv.messages if m.meta]
    texts = [m.text for m in meta]
    assert len(meta) == 3
    assert texts[0].startswith("Caveat:") and texts[1].startswith("<command-name>")
    assert texts[2].startswith("<local-command-stdout>")
    assert all(m.role == "user" for m in meta)
    # Meta messages are never completions (never supervised).
    assert all(not c.completion.meta for c in conv.calls())


def test_edge_case_non_object_lines_are_reported_per_line():
    """README: the edge-case fixture holds valid JSON that is not an object, and a bad 'message'."""
    convs, report = parse_file("claude_code", sample("claude_code_jsonl/claude-code-log__edge_cases.jsonl"))
    bad = sorted((p.line, p.code) for p in report.errors)
    # line 11: "message": "error"; 13: a string; 14: {"silly": "this"} (an object of no known type); 15: 42;
    # 16: [1]
    assert bad == [(11, "not_an_object"), (13, "not_an_object"), (14, "unknown_record"),
                   (15, "not_an_object"), (16, "not_an_object")]


def test_edge_case_fail_mode_stops_at_first_bad_line():
    with pytest.raises(TraceError) as exc:
        parse_file("claude_code", sample("claude_code_jsonl/claude-code-log__edge_cases.jsonl"), on_error="fail")
    assert exc.value.code == "not_an_object"
    assert exc.value.where.endswith("edge_cases.jsonl:11 (message)")


def test_compaction_summary_is_meta_in_sample():
    """README: /compact inserts a compact_boundary and a synthetic summary user message (fasthooks main
    transcript ends with one): the summary is not the human."""
    convs, _ = parse_file("claude_code", sample("claude_code_jsonl/fasthooks__sample_main_transcript.jsonl"))
    (conv,) = convs
    summary = next(m for m in conv.messages if m.text.startswith("This session is being continued"))
    assert summary.meta and summary.role == "user"
    # No call follows the boundary in this file, so the history is still append-only.
    assert conv.explicit_calls is None


def test_compaction_boundary_restarts_the_context():
    """After a compact_boundary the model sees only the summary and what follows."""
    import io

    def line(kind, uuid, content, **kw):
        d = {"type": kind, "uuid": uuid, "sessionId": "s", "message": {"role": kind, "content": content}}
        if kind == "assistant":
            d["message"].update(id=f"msg_{uuid}", model="claude-x")
        d.update(kw)
        return json.dumps(d)

    text = "\n".join([
        line("user", "1", "first question"),
        line("assistant", "2", [{"type": "text", "text": "first answer"}]),
        json.dumps({"type": "system", "subtype": "compact_boundary", "uuid": "3", "sessionId": "s"}),
        line("user", "4", "This session is being continued... summary", isCompactSummary=True),
        line("user", "5", "next question"),
        line("assistant", "6", [{"type": "text", "text": "next answer"}]),
    ])
    (conv,) = list(parse(io.StringIO(text), "c.jsonl", ValidationReport()))
    calls = list(conv.calls())
    assert [c.completion.text for c in calls] == ["first answer", "next answer"]
    assert [m.text for m in calls[1].context] == ["This session is being continued... summary", "next question"]
    assert calls[1].context[0].meta
    assert not conv.append_only
    # The whole file is still kept in the transcript.
    assert len(conv.messages) == 5


def test_sidechain_is_its_own_conversation():
    convs, _ = parse_file("claude_code", sample("claude_code_jsonl/fasthooks__sample_agent_sidechain.jsonl"))
    assert [c.id for c in convs] == ["claude_code:c45af7b1-cb7c-4e51-93db-8cbb250a877a:sidechain:af1ff21"]
    assert convs[0].messages[1].model == "claude-haiku-4-5-20251001"


def test_hook_log_is_reported_not_parsed():
    convs, report = parse_file("claude_code", sample("claude_code_jsonl/fasthooks__sample_hook_logs.jsonl"))
    assert convs == []
    assert [p.code for p in report.errors] == ["not_a_transcript"]
    assert "hook-event log" in report.errors[0].message


def test_tool_result_image_is_counted_not_kept():
    """README: a PNG screenshot (base64) inside a tool result: counted placeholder, no base64 text."""
    convs, _ = parse_file("claude_code", sample("claude_code_jsonl/agentcmd__full-session-two.jsonl"))
    kinds = [p.kind for m in convs[0].messages for p in m.parts if type(p).__name__ == "UnsupportedPart"]
    assert kinds == ["image"]
    assert not any("iVBOR" in r.content for m in convs[0].messages for r in m.tool_results)


def test_mcp_client_tool_is_an_ordinary_call():
    convs, _ = parse_file("claude_code", sample("mcp_in_transcripts/agentcmd__claude_tool-mcp__happy__change_title.jsonl"))
    (call,) = convs[0].messages[0].tool_calls
    assert isinstance(call, ToolCallPart) and call.name == "mcp__happy__change_title"
    assert call.arguments == {"title": "New Chat Session"}


def test_thinking_signature_kept_and_models_seen():
    result = ingest([sample("claude_code_jsonl/agentcmd__full-session-two.jsonl")])
    assert result.report.models  # the model names are reported
    assert all(m.startswith("claude-") for m in result.report.models)
    reasoning = [p for c in result.conversations for m in c.messages for p in m.parts if isinstance(p, ReasoningPart)]
    for p in reasoning:
        assert p.signature is None or len(p.signature) > 20


def test_rewound_branch_is_reported():
    """A prompt edited after a response forks the parentUuid tree; refused from the fork on, not merged."""
    import io

    def line(kind, uuid, parent, content, mid=None):
        msg = {"role": kind, "content": content}
        if mid:
            msg.update(id=mid, model="claude-x")
        return json.dumps({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s", "message": msg})

    text = "\n".join([line("user", "u1", None, "q"),
                      line("assistant", "a1", "u1", [{"type": "text", "text": "first"}], "m1"),
                      line("assistant", "a2", "u1", [{"type": "text", "text": "retry"}], "m2")])
    report = ValidationReport()
    convs = list(parse(io.StringIO(text), "b.jsonl", report))
    # an error, the calls from the fork on not read (their context would hold the abandoned branch: was a warning,
    # ok, the retried answer's context holding the first one)
    assert [(p.code, p.line) for p in report.errors] == [("branched_transcript", 3)]
    assert [m.text for m in convs[0].messages] == ["q", "first"]
    # Parallel tool results under one parent are not a fork (VibeCodingTracker has such a pair).
    _, report = parse_file("claude_code", sample("claude_code_jsonl/VibeCodingTracker__test_conversation.jsonl"))
    assert not report.warnings


def test_an_unknown_block_is_located_on_its_line(tmp_path):
    """A content block of a type the reader does not know refuses the session (unknown_content, at the
    session's first line); a warning names the line the block is on, so it can be found in a long log."""
    from drafters.traces.ingest import ingest

    src = sample("claude_code_jsonl/fasthooks__sample_main_transcript.jsonl")
    lines = src.read_text(encoding="utf-8").splitlines()
    k = next(i for i, ln in enumerate(lines) if '"type":"assistant"' in ln.replace(" ", "")
             and '"tool_use"' in ln and i > 2)
    rec = json.loads(lines[k])
    rec["message"]["content"].append({"type": "hologram", "data": "x"})
    lines[k] = json.dumps(rec)
    bad = tmp_path / "session.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = ingest([bad]).report
    assert [e.code for e in report.errors] == ["unknown_content"]
    (warn,) = [w for w in report.warnings if w.code == "unknown_block"]
    assert (warn.line, warn.field) == (k + 1, "message.content") and "hologram" in warn.message
