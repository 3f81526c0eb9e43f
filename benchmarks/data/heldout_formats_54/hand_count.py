"""Hand counts of the fifty-fourth held-out set (benchmarks/data/heldout_formats_54/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself (and, where the file does not say it, in the writing code of the tool at the file's commit).

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (two files in this set).

Rules shared by every counter (copied from set 8's script, written before the product was run):
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
- a system prompt the tool sends but does not save in the file is not part of the recorded context (the context is
  what the file records);
- evaluation fields stored beside a reply (reference answer, answer extracted from the reply, score, token count)
  are neither context nor output;
- a conversation file that keeps only the user's query and the final reply records one call (context: the query);
  a tool-calling turn of the same run that the file does not record is not counted, even where another file of the
  run (an event log) shows that a tool ran;
- a run log that records only events (session start / end, a tool's start and end, the length of the reply) and no
  prompt or reply text records no LLM call: 0 / 0 / 0, not readable; a tool call it lists outside any recorded call
  is not counted;
- an agent evaluation report that keeps the agent's actions only as parsed fields (the tool name and input taken
  from the model's structured reply, the final answer taken from its last reply) next to the tool observations
  records its calls only through parsed fields (shared rule): 0 / 0 / 0, not readable;
- in a Markdown export the tool's own headings are its section markers; text under a user heading (here a ``> ``
  quote) is input, text under a response heading is the completion.
Context roles: as the file records them (``user`` for a task or query); no tool results are recorded in this set.

Run: ``python benchmarks/data/heldout_formats_54/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
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


def crystalyse_conversation(path: Path) -> dict:
    """CrystaLyse provenance ``conversation.json`` (ryannduma/CrystaLyse.AI, a materials-discovery agent on the
    OpenAI Agents SDK with MCP chemistry tools; written per run into ``provenance_output/runs/<session>/``): a JSON
    list of ``{role, content, timestamp, type}`` with ``type`` ``query`` (role user) or ``response`` (role
    assistant). One file is one session: one conversation. Each run of assistant records with no input between them
    is one call; its ``content`` is the completion. This run holds one query and one final reply: 1 call, context
    ``[user]``. The run's tool call (``creative_discovery_pipeline``, shown by the run's ``events.jsonl``) happened in
    a turn this file does not record, so it is not counted (set rule). No system prompt is saved."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8")):
        if m["role"] == "assistant":
            t.out(m.get("content") or "")
        else:
            t.inp(m["role"])
    return _merge("CrystaLyse provenance conversation JSON", [t])


_MD_HEAD = re.compile(r"^## (User Query|Crystalyse Response)\s*$")


def crystalyse_conversation_md(path: Path) -> dict:
    """CrystaLyse provenance ``conversation_full.md`` (the Markdown rendering the same provenance writer saves beside
    ``conversation.json``): a ``# Crystalyse Conversation Log`` header with session id and timestamp, then
    ``## User Query`` sections (the query as a ``> `` quote) and ``## Crystalyse Response`` sections (the reply as
    plain text), separated by ``---`` rules, closed by ``*End of conversation log*``. One file is one session: one
    conversation. Each response section not preceded by another response since the last query is one call whose
    completion is the section's text (without the trailing rule and end marker); each query section is user input.
    Here: one query, one response: 1 call, context ``[user]``, no tool calls recorded."""
    t = _Thread()
    section = None
    buf: list = []

    def flush() -> None:
        if section == "Crystalyse Response":
            t.out("\n".join(buf).strip())
        elif section == "User Query":
            t.inp("user")

    for line in path.read_text(encoding="utf-8").splitlines():
        m = _MD_HEAD.match(line)
        if m:
            flush()
            section, buf = m.group(1), []
        elif line.strip() == "---" or line.strip() == "*End of conversation log*":
            flush()
            section, buf = None, []
        elif section:
            buf.append(line)
    flush()
    return _merge("CrystaLyse provenance conversation Markdown", [t])


def crystalyse_events(path: Path) -> dict:
    """CrystaLyse provenance ``events.jsonl`` (the same run's event log: one ``{type, ts, data}`` record a line,
    types ``session_start``, ``user_query`` (the query text), ``tool_start`` / ``tool_end`` (a call id and the MCP
    tool's name and timing), ``ttfb``, ``assistant_output`` (only the reply's ``length``), ``session_end`` (totals,
    ``tool_calls_total`` 1)). No record holds a prompt sent to the model or any text the model wrote: no LLM call is
    recorded (set rule), so 0 / 0 / 0 and not readable; the tool call it lists is outside any recorded call."""
    events = _lines(path)
    assert not any(e["type"] == "assistant_output" and "text" in e.get("data", {}) for e in events)
    return _result("CrystaLyse provenance event log JSONL", 0, [], [], 0)


def deathmath_details(path: Path) -> dict:
    """DeathMath (DOoM) benchmark details JSON (VikhrModels/DeathMath's ``Leaderboard._save_detailed_results``:
    ``{timestamp, model_name, examples: [{index, task, model_response, correct_answer, extracted_answer, score,
    tokens}]}``). Each example is one single-shot chat call: the sampler sends the task as the one user message (a
    configured system prompt, if any, is added at request time and not saved) and ``model_response`` is the reply
    (``convo[1]`` of the evaluation result). The examples are unrelated problems side by side: one conversation per
    example (shared rule). ``correct_answer``, ``extracted_answer``, ``score`` and ``tokens`` are evaluation fields
    (set rule). No tool calls."""
    threads = []
    for ex in json.loads(path.read_text(encoding="utf-8"))["examples"]:
        t = _Thread(["user"])
        t.out(ex["model_response"])
        threads.append(t)
    return _merge("DeathMath benchmark details JSON", threads)


def deathmath_details_md(path: Path) -> dict:
    """DeathMath (DOoM) benchmark details Markdown (written by the same method beside the JSON: ``# Detailed Results
    for <model>``, ``Timestamp:``, then per example ``## Example N`` with ``### Task``, ``### Model Response``,
    ``### Correct Answer``, ``### Extracted Answer``, ``### Score``, ``### Tokens Used`` and a ``---`` rule). Each
    example is one single-shot call and its own conversation; the Task section is the user message, the Model
    Response section the completion (its text up to the next ``### `` heading, stripped); the other sections are
    evaluation fields. No line of the replies in this file starts with ``#`` or is a lone ``---`` (checked), so the
    headings are unambiguous. No tool calls."""
    threads = []
    section = None
    buf: list = []
    t = None

    def flush() -> None:
        if section == "Model Response" and t is not None:
            t.out("\n".join(buf).strip())

    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("## Example "):
            flush()
            t = _Thread(["user"])
            threads.append(t)
            section, buf = None, []
        elif line.startswith("### "):
            flush()
            section, buf = line[4:].strip(), []
        elif line.strip() == "---":
            flush()
            section, buf = None, []
        elif section:
            buf.append(line)
    flush()
    return _merge("DeathMath benchmark details Markdown", threads)


def md_agent_eval(path: Path) -> dict:
    """MD-Agent (later MDCrow, ur-whitelab) individual evaluation report JSON (``mdagent/mainagent/evaluate.py``
    at the file's commit: ``{agent_settings, user_prompt, prompt_success, total_steps, failed_steps, total_time_*,
    final_answer, tools_used, num_skills_*, tools_details: {"Step N": {tool, tool_input, observation, ...}},
    run_id}``), a LangChain structured-chat agent with gpt-4-1106-preview. ``tools_details`` is built from the
    agent's intermediate steps: ``tool`` and ``tool_input`` are parsed out of the model's JSON action blobs (the raw
    reply, ``AgentAction.log``, is not kept), ``observation`` is the tool's output; ``final_answer`` is the parsed
    ``action_input`` of the last reply; the prompt (system prompt, scratchpad) is not kept. The calls are recorded
    only through parsed fields (shared rule; set rule): 0 / 0 / 0, not readable."""
    rep = json.loads(path.read_text(encoding="utf-8"))
    assert "tools_details" in rep and not any("log" in s for s in rep["tools_details"].values())
    return _result("MD-Agent (MDCrow) evaluation report JSON", 0, [], [], 0)


COUNTERS = {
    "crystalyse-conversation": crystalyse_conversation,
    "crystalyse-conversation-md": crystalyse_conversation_md,
    "crystalyse-events": crystalyse_events,
    "deathmath-details": deathmath_details,
    "deathmath-details-md": deathmath_details_md,
    "md-agent-eval": md_agent_eval,
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
