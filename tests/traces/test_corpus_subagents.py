"""Issue 30 on a real public sample: a Claude Code session whose main agent spawned two Task sub-agents
(marot/spotter's transcript fixtures, provenance in ``fixtures/corpus/SOURCES.tsv``): the session's first 97
lines (up to the first Task's result, its ``agent_progress`` copies of the sub-agent's messages included) and
the two sub-agents' own ``agent-<id>.jsonl`` files.

Expected counts come from ``fixtures/corpus_hand_count.py``, which reads the raw files without importing
tracedraft. One conversation per agent, each sub-agent's calls carrying only its own thread as context.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from drafters.traces.ingest import ingest

from .conftest import DATA, totals

HAND_COUNT = DATA.parent / "corpus_hand_count.py"


def _hand() -> dict[str, dict]:
    out = subprocess.run([sys.executable, str(HAND_COUNT)], capture_output=True, text=True, check=True)
    return {row["file"]: row for row in map(json.loads, out.stdout.splitlines())}


def _threads(hand: dict[str, dict]) -> dict[str, dict]:
    """Thread key (sessionId, or sessionId:agentId for a sub-agent) -> its hand counts, over all files."""
    return {key: t for row in hand.values() for key, t in row["threads"].items()}


def _ids_in_contexts(conv) -> set[str]:
    """The tool-call ids every call of ``conv`` sees in its context (the calls made and the results)."""
    ids = set()
    for call in conv.calls():
        for m in call.context:
            ids.update(tc.id for tc in m.tool_calls)
            ids.update(tr.call_id for tr in m.tool_results)
    return ids


def _check_isolation(convs, threads: dict[str, dict], key_of) -> None:
    """Each conversation's calls see only their own thread: its first prompt, its tool calls, none of another
    thread's."""
    assert sorted(key_of(c) for c in convs) == sorted(threads)
    for conv in convs:
        own = threads[key_of(conv)]
        others = [t for k, t in threads.items() if k != key_of(conv)]
        seen = _ids_in_contexts(conv)
        assert seen <= set(own["tool_use_ids"]), conv.id
        for other in others:
            assert not seen & set(other["tool_use_ids"]), conv.id
        texts = [m.text for call in conv.calls() for m in call.context]
        assert all(call.context[0].role == "user" or call.context[0].role == "system" for call in conv.calls())
        assert any(own["first_prompt"] in t for t in texts), conv.id
        for other in others:
            assert not any(other["first_prompt"] in t for t in texts), conv.id


def test_real_session_with_two_task_subagents_reads_one_conversation_per_agent():
    hand = _hand()
    files = [DATA / name for name in sorted(hand)]
    result = ingest(files, scrub=False)
    assert result.report.ok, result.report.errors
    want = (sum(r["conversations"] for r in hand.values()), sum(r["calls"] for r in hand.values()),
            sum(r["tool_calls"] for r in hand.values()))
    assert totals(result.conversations) == want == (3, 24, 51)
    threads = _threads(hand)

    def key_of(conv):  # claude_code:<session> or claude_code:<session>:sidechain:<agentId>
        return conv.id.removeprefix("claude_code:").replace(":sidechain:", ":")

    for conv in result.conversations:
        t = threads[key_of(conv)]
        assert totals([conv]) == (1, t["calls"], len(t["tool_use_ids"])), conv.id
    _check_isolation(result.conversations, threads, key_of)


def test_the_same_subagents_written_inline_without_agent_id_stay_apart(tmp_path: Path):
    """Built from the same real lines: the session's lines and both sub-agents' lines in one file, the two
    sub-agents' lines alternating (as parallel sub-agents write inline), ``agentId`` removed (as versions that
    wrote Task sub-agents into the session file did on some lines): the threads follow ``parentUuid``."""
    hand = _hand()
    rows = {name: [json.loads(x) for x in (DATA / name).read_text(encoding="utf-8").splitlines() if x.strip()]
            for name in sorted(hand)}
    main = next(v for k, v in rows.items() if not k.split("__")[-1].startswith("agent-"))
    agents = [v for k, v in rows.items() if k.split("__")[-1].startswith("agent-")]
    mixed = [line for pair in zip(*agents) for line in pair]
    longest = max(agents, key=len)
    mixed += longest[min(map(len, agents)):]
    for line in mixed:
        line.pop("agentId", None)
    path = tmp_path / "inline.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in main + mixed), encoding="utf-8")
    result = ingest([path], scrub=False)
    assert result.report.ok, result.report.errors
    assert totals(result.conversations) == (3, 24, 51)
    threads = _threads(hand)
    by_prompt = {t["first_prompt"]: k for k, t in threads.items()}

    def key_of(conv):  # the thread whose first prompt opens this conversation
        return by_prompt[next(m.text for m in conv.messages if m.role == "user")]

    _check_isolation(result.conversations, threads, key_of)


# Issue 30, "ok means the content was understood": the session file alone ran a sub-agent whose thread is not read.
MAIN = "claude_code_jsonl/spotter__fa812bfe__first97.jsonl"
AGENT_A, AGENT_B = "claude_code_jsonl/spotter__fa812bfe__agent-a93ccab.jsonl", \
    "claude_code_jsonl/spotter__fa812bfe__agent-aa84377.jsonl"


def _raw(rel: str) -> list[dict]:
    return [json.loads(x) for x in (DATA / rel).read_text(encoding="utf-8").splitlines() if x.strip()]


def _task_lines(rel: str) -> dict[str, int]:
    """Counted in the raw file: agentId -> the line of the Task call that started it (the tool_use whose id the
    agent's progress lines name as parentToolUseID), and how many agent_progress lines copy its messages."""
    rows = _raw(rel)
    calls = {b["id"]: i for i, x in enumerate(rows, 1) if x.get("type") == "assistant"
             for b in x["message"]["content"] if isinstance(b, dict) and b.get("type") == "tool_use"}
    progress = [x for x in rows if x.get("type") == "progress" and x["data"].get("type") == "agent_progress"]
    return {x["data"]["agentId"]: calls[x["parentToolUseID"]] for x in progress}, len(progress)


def test_the_session_file_alone_is_not_ok_naming_the_sub_agent_its_task_line_and_what_to_upload():
    hand = _hand()
    started, n_progress = _task_lines(MAIN)
    assert (started, n_progress) == ({"a93ccab": 44}, 51)  # only the first Task is inside the 97 lines
    path = DATA / MAIN
    result = ingest([path], scrub=False)
    report = result.report
    assert not report.ok
    (err,) = report.errors
    assert (err.code, err.file, err.line) == ("subagent_not_read", str(path), 44)
    assert "sub-agent a93ccab" in err.message and "51 of its messages" in err.message
    assert "upload fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-a93ccab.jsonl" in err.message
    assert "aa84377" not in err.message
    # the main thread was read exactly and stays usable: the file is partial, not ok
    row = hand[MAIN]
    assert totals(result.conversations) == (row["conversations"], row["calls"], row["tool_calls"]) == (1, 4, 5)
    entry = report.files[str(path)]
    assert (entry["status"], entry["errors"], entry["conversations"]) == ("partial", 1, 1)
    assert report.counts["files_partial"] == 1 and "files_ok" not in report.counts


def test_with_its_sub_agent_files_in_the_batch_in_any_order_the_session_is_ok():
    for rels in ([MAIN, AGENT_A, AGENT_B], [AGENT_B, AGENT_A, MAIN], [MAIN, AGENT_A]):
        report = ingest([DATA / r for r in rels], scrub=False).report
        assert report.ok, (rels, report.errors)
        assert {v["status"] for v in report.files.values()} == {"ok"}
    # the other sub-agent's file does not stand for the one the session ran
    report = ingest([DATA / MAIN, DATA / AGENT_B], scrub=False).report
    assert [(e.code, e.line, "a93ccab" in e.message) for e in report.errors] == [("subagent_not_read", 44, True)]
    assert report.files[str(DATA / MAIN)]["status"] == "partial"
    assert report.files[str(DATA / AGENT_B)]["status"] == "ok"


def test_on_error_fail_raises_at_the_end_of_the_batch():
    import pytest

    from drafters.traces.report import TraceError

    assert ingest([DATA / AGENT_A, DATA / MAIN], on_error="fail", scrub=False).report.ok
    with pytest.raises(TraceError) as exc:
        ingest([DATA / MAIN, DATA / AGENT_B], on_error="fail", scrub=False)
    assert exc.value.code == "subagent_not_read" and exc.value.where.endswith("first97.jsonl:44")


def test_inline_sub_agent_lines_without_agent_id_resolve_it_and_a_missing_one_is_reported(tmp_path: Path):
    """The inline case above is ok (threads matched by their first line's uuid, which the progress copies carry);
    with the first sub-agent's lines left out (only the second written inline) the first is reported."""
    main = _raw(MAIN)
    other = _raw(AGENT_B)
    for line in other:
        line.pop("agentId", None)
    path = tmp_path / "inline.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in main + other), encoding="utf-8")
    report = ingest([path], scrub=False).report
    assert [(e.code, e.line) for e in report.errors] == [("subagent_not_read", 44)]
    assert "a93ccab" in report.errors[0].message
    assert totals(ingest([path], scrub=False).conversations) == (2, 13, 26)


def test_a_task_result_naming_its_agent_without_progress_copies_is_reported(tmp_path: Path):
    """The same session with its agent_progress lines removed: the Task's result still names the sub-agent
    (toolUseResult.agentId) that answered it; the error stands at the Task call (line 44, nothing before it
    removed) and says no message of it is copied."""
    rows = [x for x in _raw(MAIN) if not (x.get("type") == "progress" and x["data"].get("type") == "agent_progress")]
    assert len(rows) == 97 - 51
    path = tmp_path / "no_progress.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in rows), encoding="utf-8")
    (err,) = ingest([path], scrub=False).report.errors
    assert (err.code, err.line) == ("subagent_not_read", 44)
    assert "none of its messages copied" in err.message and "agent-a93ccab.jsonl" in err.message
    assert ingest([path, DATA / AGENT_A], scrub=False).report.ok
