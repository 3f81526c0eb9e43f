"""Hand counts of the sixty-third held-out set (benchmarks/data/heldout_formats_63/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself and in the code of the tool that wrote it.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the seventh set's):
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
Rules made explicit for this set (written before the product was run):
- one file is one agent run (a pentest session, a planner run, an evaluation conversation): one conversation;
- a reply the tool asked for as structured output whose schema has a single text field, recorded whole (cochise's
  ``UpdatedPlan.plan``), is the reply text: the call is recorded, not merely mentioned; the structured-output schema
  is not a client-executed tool, so it is not a tool call;
- a tool call written in the reply text in the exact notation the system prompt asks for (AI-OPS's
  ``{"name": ..., "arguments": ...}`` tool prompt), which the client parses and executes, is a clearly notated tool
  call and counts (one per notated call; an empty ``{}`` would be none); an action described only in prose (the
  cyberdiagram Reasoner's "Perform initial host discovery ...", with the recorded ``tool_name`` "none") is not;
- an LLM call of another component whose output is recorded without its context (the cyberdiagram Data Cleaner's
  ``result`` summary, the tool results folded into AI-OPS's user message) is mentioned, not recorded, and is not
  counted; the text it produced is input (context) of the recorded call;
- a prompt a tool sends as one rendered string (a LangChain ``PromptTemplate`` piped into a chat model) is one
  ``user`` message; an observation the tool logs as the input of a step is written ``user``.
Context roles: as recorded (``user`` for a bare prompt string or observation); a system prompt the tool builds but
does not save is not part of the recorded context.

Run: ``python benchmarks/data/heldout_formats_63/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_LOG_HEAD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - my_logger - INFO: (.*)$")
_NOTATED_CALL = re.compile(r'^\s*\{\s*"name"\s*:')


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


def cochise_structlog_json(path: Path) -> dict:
    """cochise structlog JSON-lines run log (andreashappe/cochise, ``src/logger.py``: ``logs/run-<stamp>.json``, one
    structlog ``JSONRenderer`` object per line, ``{event, level, timestamp, ...}``). ``Logger.write_llm_call`` writes
    one line per LLM call, ``{prompt, result, costs, duration, event}``: ``prompt`` is the rendered planner template
    (sent as one user message), ``result`` the reply (the ``plan`` field of the ``UpdatedPlan`` structured output),
    ``costs`` the provider's usage metadata. Lines without ``prompt`` and ``result`` (``starting testrun``; executor
    tool-call lines ``{cmd, exit_code, result}``, none here) are not calls. One file is one run: one conversation.
    Here: one ``strategy_update`` call (o1-2024-12-17; the run was aborted by its author after it); no tool calls."""
    t = _Thread()
    for rec in _lines(path):
        if "prompt" in rec and "result" in rec:
            t.inp("user")
            t.out(rec["result"] or "")
    return _merge("cochise structlog JSON-lines run log", [t])


def cochise_text_log(path: Path) -> dict:
    """cochise plain-text run log (andreashappe/cochise, ``src/logger.py``: ``logs/run-<stamp>.log``, Python
    ``logging`` lines ``<date> <time>,<ms> - my_logger - INFO: <message>``, a message continuing over the following
    lines until the next such header). ``Logger.write_llm_call`` writes three entries per LLM call: ``NAME`` with the
    prompt below it, ``NAME result`` with the reply, ``NAME costs`` with the usage dict and duration. Each
    ``NAME``/``NAME result`` pair is one call whose context is the prompt (one user message) and whose completion is
    the result text. Other entries (``starting testrun``) are not calls. One file is one run: one conversation. Here:
    the same run as the JSON-lines file, one ``strategy_update`` call; no tool calls."""
    entries: list = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        head = _LOG_HEAD.match(line)
        if head:
            entries.append([head.group(1), []])
        elif entries:
            entries[-1][1].append(line)
    t = _Thread()
    for i, (title, body) in enumerate(entries):
        nxt = entries[i + 1][0] if i + 1 < len(entries) else ""
        if nxt == f"{title} result":
            t.inp("user")
            t.out("\n".join(entries[i + 1][1]).strip("\n"))
    return _merge("cochise plain-text run log", [t])


def cyberdiagram_session_jsonl(path: Path) -> dict:
    """cyberdiagram MVP pentest-agent session log (cyberdiagram/mvp, ``src/agent/index.ts`` ``logSessionStep``:
    ``logs/sessions/<session_id>.jsonl``, one ``SessionStep`` per line, ``{session_id, step_index, timestamp, role,
    observation: {last_tool_output, open_ports, target_info?}, thought_process: {analysis, reasoning, plan}, action:
    {tool_name, tool_args}, result, outcome_label}``). Each line is one Reasoner call (Claude): its input is the
    logged ``observation.last_tool_output`` (written ``user``), its reply the ``thought_process`` (``analysis`` then
    ``reasoning``; ``plan`` is composed by the code from ``action``) and ``action``; a ``tool_name`` other than
    ``"none"`` would be one tool call (both lines here say ``"none"``: no tool calls). ``result`` is the Data
    Cleaner's summary (another component's output, its call not recorded) and is not counted. The steps of one
    ``session_id`` continue one Reasoner conversation: one conversation, two calls."""
    threads: dict = {}
    for rec in _lines(path):
        t = threads.setdefault(rec["session_id"], _Thread())
        t.inp("user")
        thought = rec.get("thought_process") or {}
        text = "\n".join(x for x in (thought.get("analysis"), thought.get("reasoning")) if x)
        tool = (rec.get("action") or {}).get("tool_name") or "none"
        t.out(text, 0 if tool == "none" else 1)
    return _merge("cyberdiagram MVP session JSONL", list(threads.values()))


def aiops_eval_checkpoint(path: Path) -> dict:
    """AI-OPS evaluation-pipeline conversation checkpoint (antoninoLorenzo/AI-OPS, ``evaluation/resources/
    checkpoints/<architecture>_<id>_<name>_<ConversationType>.json``: one ``json.dumps`` object ``{conversation_id,
    name, messages: [{role, content, token_length}]}``, the AI-OPS ``Conversation`` after the assistant answered).
    Each run of assistant messages is one call whose context is the messages before it (system: the tool-calling
    prompt; user: the question with the ``additional context`` of an earlier, unrecorded ``search_web`` call folded
    in). The reply here is one tool call in the notation the system prompt asks for (``{"name": "search_web",
    "arguments": {...}}``, with single-quoted argument text as the model wrote it): one clearly notated tool call.
    One file is one conversation: one call, one tool call."""
    data = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for m in data["messages"]:
        if m["role"] == "assistant":
            content = m.get("content") or ""
            t.out(content, 1 if _NOTATED_CALL.match(content) else 0)
        else:
            t.inp(m["role"])
    return _merge("AI-OPS evaluation conversation checkpoint JSON", [t])


COUNTERS = {
    "cochise-log": lambda p: cochise_text_log(p) if p.suffix == ".log" else cochise_structlog_json(p),
    "cyberdiagram-mvp-session": cyberdiagram_session_jsonl,
    "ai-ops-eval-checkpoint": aiops_eval_checkpoint,
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
