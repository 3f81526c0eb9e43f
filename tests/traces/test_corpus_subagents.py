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
