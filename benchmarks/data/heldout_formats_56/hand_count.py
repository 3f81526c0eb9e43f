"""Hand counts of held-out set 56 (benchmarks/data/heldout_formats_56/files), computed from the raw files with the
standard library only (this script does not import tracedraft), each by its format's layout as read in the file
itself and in the code of the tool that wrote it.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (one file in this set: the A2A evaluation result).

Rules shared by every counter (written before the product was run; copied from set 8's script):
- a thinking / reasoning part belongs to the reply it precedes; a reply streamed or split over several records with
  no new input between them (no user, tool-result or system record) is one call;
- text the model writes after it has seen a tool result is a new call;
- a branch the tool marks as discarded (not on the active path) is not counted;
- tool calls are the client-executed calls the model emitted (function / tool_use / toolCall parts and the like);
  calls the provider ran server-side during generation are not counted;
- LLM calls a file only mentions (a usage-ledger entry, a count printed in a tool result) without recording their
  context and reply are not counted;
- a conversation is a thread of calls in which each later call's context continues an earlier call's context and
  reply; single-shot calls recorded side by side with unrelated contexts are separate conversations;
- an LLM call recorded only through fields parsed out of its reply (a judge's extracted score) counts as mentioned,
  not recorded, and is not counted;
- an assistant record with no content at all whose stop reason is an error (the request failed before the model
  produced anything) is a failed request, not a call, and is left out of later contexts as well.
Rules made explicit for this set:
- an agent framework step whose inner model turns are not written to the file (AI-Trader logs only the final reply
  of each ``agent.ainvoke`` step): the recorded reply is one call; the inner tool-calling turns are neither recorded
  nor mentioned, so they are not counted, and the tools they called are not structured tool calls of this file; the
  harness's own ``Tool results: ...`` message written after the reply is input to the next call;
- a system prompt the tool builds at run time and does not save is not part of the recorded context;
- an action the model wrote as text (``TOOL_CALL: name(args)``) counts as a tool call where the harness recorded it
  as a structured action of that turn (``tool_name`` / ``tool_args`` in the trajectory step), as in set 14;
- a text log that holds the same run twice (a human-readable rendering with replies cut to 100 characters, and a
  machine-readable JSON block with the whole trajectory) is counted once, from the JSON block;
- messages written by an evaluator's code (status lines of an A2A task history, a score summary) are not LLM calls,
  whatever role they carry;
- a benchmark result row whose prompt is not saved but whose question and options (what the prompt was built from)
  are saved is one call with that row as its context (set 51's rule); the parsed answer and score beside the reply
  are evaluation fields, not output.
Context roles: a message made only of tool results is written ``tool``; the harness's ``Tool results:`` messages
are written as the file records them (``user``).

Run: ``python benchmarks/data/heldout_formats_56/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class _Thread:
    """Accumulates one thread: ``out`` adds model output to the open call (opening one if the last record was
    input), ``inp`` adds an input record (closing the open call)."""

    def __init__(self, head: list | None = None) -> None:
        self.ctx: list = list(head or [])
        self.completions: list = []
        self.contexts: list = []
        self.tools = 0
        self._open = False

    def out(self, text: str = "", tools: int = 0) -> None:
        if not self._open:
            self.completions.append("")
            self.contexts.append(list(self.ctx))
            self.ctx.append("assistant")
            self._open = True
        self.completions[-1] += text
        self.tools += tools

    def inp(self, role: str) -> None:
        self.ctx.append(role)
        self._open = False


def _merge(fmt: str, threads: list) -> dict:
    kept = [t for t in threads if t.completions]
    return _result(fmt, len(kept), [c for t in kept for c in t.completions],
                   [c for t in kept for c in t.contexts], sum(t.tools for t in kept))


def ai_trader_log(path: Path) -> dict:
    """AI-Trader (HKUDS/AI-Trader) trading-session log JSONL, ``data/agent_data[_astock]/<signature>/log/<date>/
    log.jsonl``, written by ``BaseAgent._log_message``: one ``{signature, new_messages}`` record per line (the A-share
    agent's records also carry a ``timestamp``), where
    ``new_messages`` is a list of messages (the opening user query, the final reply that carries the stop signal) or
    a single message object (the intermediate ``assistant`` reply and the ``user`` message ``Tool results: ...`` the
    harness builds from that step's tool outputs). One file is one trading session of one model: one conversation.
    Each ``assistant`` message is the final reply of one ``agent.ainvoke`` step and counts as one call (replies are
    never adjacent in these files: calls = assistant messages); every ``user`` message is input. The step's own
    tool-calling turns and tool calls are not recorded (explicit rule): 0 tool calls. The system prompt the agent is
    created with is not saved."""
    t = _Thread()
    for rec in _lines(path):
        msgs = rec["new_messages"]
        for m in msgs if isinstance(msgs, list) else [msgs]:
            if m["role"] == "assistant":
                t.out(m.get("content") or "")
            else:
                t.inp(m["role"])
    return _merge("AI-Trader session log JSONL", [t])


def pharmd_task_log(path: Path) -> dict:
    """AI-PharmD MedAgentBench green agent task log (``src/logs/task_<task>_<time>.log``, written by
    ``src/utils/task_logger.py``): a box-drawn text report of the assessment phases, then ``TECHNICAL METADATA
    (JSON):`` and one JSON object ``{task_id, ..., input: {prompt}, output: {response}, validation, scoring,
    task_details, trajectory: [{round, llm_output, action, tool_name?, tool_args?, tool_result?, result?}]}`` that
    runs to the end of the file. Counted once, from the JSON block (explicit rule). One task is one conversation;
    each trajectory step with an ``llm_output`` is one call (the purple agent re-prompts the model every round with
    the task and the previous actions); a step recorded as ``TOOL_CALL`` with ``tool_name`` / ``tool_args`` is one
    tool call, and its ``tool_result`` is input to the next round."""
    text = path.read_text(encoding="utf-8")
    start = text.index("{", text.index("TECHNICAL METADATA (JSON):"))
    meta = json.loads(text[start:])
    t = _Thread(["user"])  # the task prompt the green agent sent (meta["input"]["prompt"])
    for step in meta["trajectory"]:
        if "llm_output" not in step:
            continue
        t.out(step["llm_output"], 1 if step.get("action") == "TOOL_CALL" and step.get("tool_name") else 0)
        if "tool_result" in step or "tool_error" in step:
            t.inp("tool")
    return _merge("AI-PharmD MedAgentBench task log (text report + JSON trajectory)", [t])


def pharmd_a2a_evaluation(path: Path) -> dict:
    """AI-PharmD MedAgentBench evaluation record JSON (``experiments/subtask1/evaluation_<task>_<time>.json``):
    ``{timestamp, task_id, green_agent_url, purple_agent_url, mcp_server_url, config, result_text, result_data,
    log_path, full_response}``, where ``full_response`` is the A2A JSON-RPC answer of the green agent: a ``task``
    with ``artifacts`` (the score) and a ``history`` of messages (``role`` ``user``: the assessment request;
    ``role`` ``agent``: progress lines such as ``[PHASE 1] ASSESSMENT SETUP ...`` and ``Agent: Connecting to MCP
    server...``, literal strings in the green and purple agents' code). No message is a model's reply and no
    prompt or completion of the purple agent's model is in the file (explicit rule): 0 / 0 / 0, not readable."""
    data = json.loads(path.read_text(encoding="utf-8"))
    history = data["full_response"]["result"]["history"]
    assert all(m["role"] in ("user", "agent") for m in history)
    return _result("AI-PharmD MedAgentBench A2A evaluation record JSON", 0, [], [], 0)


def disc_law_eval_results(path: Path) -> dict:
    """DISC-Law-Eval objective results CSV (FudanDISC/DISC-LawLLM ``eval/stats/objective/<model>/<single|multi>/
    <exam>_results.csv``): header ``input,A,B,C,D,multichoice,model_output,extract_ans,correctness``; one row per
    exam question (quoted cells may span lines), ``model_output`` the model's reply, ``extract_ans`` the letters
    parsed out of it and ``correctness`` the score. Each row is one single-shot call whose recorded context is the
    question and its four options (the few-shot prompt built from them is not saved; explicit rule); rows are
    unrelated questions side by side, so each row is its own conversation (shared rule). No tool calls."""
    threads = []
    for row in csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")):
        t = _Thread(["user"])
        t.out(row["model_output"])
        threads.append(t)
    return _merge("DISC-Law-Eval objective results CSV", threads)


COUNTERS = {
    "ai-trader-log": ai_trader_log,
    "pharmd-task-log": pharmd_task_log,
    "pharmd-a2a-evaluation": pharmd_a2a_evaluation,
    "disc-law-eval-results": disc_law_eval_results,
}


def count(path: Path) -> dict:
    out = COUNTERS[path.name.split("__", 1)[0]](path)
    return {"file": path.name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
