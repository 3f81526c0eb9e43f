"""Hand counts of the thirty-third held-out set (benchmarks/data/heldout_formats_33/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the seventh and eighth sets'):
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
- an action written only as text in the reply (GeneGPT's bracketed Web-API URL, which its harness then fetched) with
  no structured tool-call record is not a tool call (as set 14 ruled for ReAct text actions);
- a meeting transcript in which several agents speak into one shared message list is one conversation; each agent
  turn is one call whose context is every earlier entry of the transcript (each agent's own system prompt is not
  recorded in the file and is not listed);
- reasoning items that a log writes beside the reply (as Python reprs of Responses API items) belong to that reply;
  they are not part of the completion text.
Context roles are written as the file records them (message class names, agent names, ``prompt``).

Run: ``python benchmarks/data/heldout_formats_33/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"

# one line of the analyst-access ``output``: the repr of a Responses API reasoning or function_call item
_ITEM = re.compile(r"^\{'(?:id|arguments|call_id|name|type|summary|status)': .*'type': '(reasoning|function_call)'.*\}$")
_MD_HEADER = re.compile(r"^## (.+)$")


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def tradingagents_analyst_access(path: Path) -> dict:
    """TradingAgents "analyst access" audit runner ``llm_calls.json`` (written by ``analyst_access/run.py``'s
    ``StageTraceCallbackHandler``, a LangChain callback: a JSON array with one record per chat-model call,
    ``{serialized, messages: [{type, content, tool_calls: [{id, name, args}]}], output, usage}``; ``messages`` is
    the rendered input of the call, ``output`` the reply's content parts joined by newlines, where the Responses API
    reasoning and function_call items appear as one-line Python reprs and the text parts as plain text). Each record
    is one call: its context is its ``messages`` (roles written as the message class names), its completion the
    ``output`` lines that are not item reprs, its tool calls the ``function_call`` item lines (checked against the
    ``AIMessage.tool_calls`` the next record's context holds, where there is one). A record whose ``messages`` begin
    with an earlier record's ``messages`` followed by that record's reply (an ``AIMessage``) continues its thread;
    otherwise it opens a new conversation. One file is one analyst stage."""
    records = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts, tools = [], [], 0
    threads: list = []  # each thread: list of message lists of its calls
    for i, rec in enumerate(records):
        msgs = rec["messages"]
        lines = rec["output"].split("\n")
        items = [_ITEM.match(line) for line in lines]
        n_calls = sum(1 for m in items if m and m.group(1) == "function_call")
        text = "\n".join(line for line, m in zip(lines, items) if not m)
        if i + 1 < len(records):
            nxt = records[i + 1]["messages"]
            if len(nxt) > len(msgs) and nxt[len(msgs)]["type"] == "AIMessage":
                assert len(nxt[len(msgs)]["tool_calls"]) == n_calls, (path.name, i)
        completions.append(text)
        contexts.append([m["type"] for m in msgs])
        tools += n_calls
        for thread in threads:
            prev = thread[-1]
            if (len(msgs) > len(prev) and msgs[:len(prev)] == prev and msgs[len(prev)]["type"] == "AIMessage"):
                thread.append(msgs)
                break
        else:
            threads.append([msgs])
    return _result("TradingAgents analyst-access llm_calls.json", len(threads), completions, contexts, tools)


def _meeting(fmt: str, entries: list) -> dict:
    """One meeting transcript (list of (agent, message)) as one conversation: each run of entries by the same
    non-``User`` agent with no other entry between them is one call whose context is every earlier entry."""
    completions, contexts = [], []
    prev_agent = None
    for k, (agent, message) in enumerate(entries):
        if agent in ("User", "Tool"):
            prev_agent = None
            continue
        if agent == prev_agent:
            completions[-1] += "\n\n" + message
            continue
        completions.append(message)
        contexts.append([a for a, _ in entries[:k]])
        prev_agent = agent
    return _result(fmt, 1 if completions else 0, completions, contexts, 0)


def virtual_lab_discussion(path: Path) -> dict:
    """Virtual Lab meeting discussion JSON (zou-group/virtual-lab's ``run_meeting`` saves ``<name>.json``: a list of
    ``{agent, message}``, ``agent`` being ``User`` for the meeting's own prompts (the agenda, the turn prompts) or
    an agent title such as ``Principal Investigator`` / ``Scientific Critic``). All agents speak into one shared
    message list (each call sends the agent's own system prompt, not recorded here, then that list), so one file is
    one conversation; each agent entry is one call whose context is every earlier entry, its completion the
    ``message``. No ``Tool`` entries (the only tool-call trace the layout keeps) occur in these files: no tool
    calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return _meeting("Virtual Lab discussion JSON", [(e["agent"], e["message"]) for e in data])


def virtual_lab_discussion_md(path: Path) -> dict:
    """Virtual Lab meeting discussion Markdown (the ``<name>.md`` ``run_meeting`` saves beside the JSON: one
    ``## <agent>`` header line per entry, then the entry's text). Read as the JSON: sections headed ``## User`` are
    the meeting's prompts, every other section is one call whose context is every earlier section, its completion
    the section text (surrounding blank lines stripped). In this file every ``## `` line is an entry header (checked
    against the agent titles: User and the five team members). One file is one conversation; no tool calls."""
    entries: list = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        m = _MD_HEADER.match(line)
        if m:
            entries.append([m.group(1).strip(), []])
        elif entries:
            entries[-1][1].append(line)
    return _meeting("Virtual Lab discussion Markdown", [(a, "\n".join(body).strip()) for a, body in entries])


def genegpt_results(path: Path) -> dict:
    """GeneGPT results JSON (ncbi/GeneGPT's ``main.py`` dumps, per task, a JSON list of
    ``[question, gold answer, prediction, log]``; ``log`` is a list of ``[prompt, completion]`` pairs of
    Codex text-completion calls). Each pair is one call: its context is the one text prompt (role ``prompt``), its
    completion the completion text. The harness stops generation at an API URL written in brackets, fetches it and
    appends ``->[result]`` to prompt + completion as the next prompt, so the calls of one question continue each
    other (checked: each later prompt begins with the earlier prompt plus its completion): one conversation per
    question. The bracketed URLs are text actions, not structured tool calls: no tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts, convs = [], [], 0
    for question, _gold, _pred, log in data:
        prev = None
        for prompt, completion in log:
            if prev is None or not prompt.startswith(prev):
                convs += 1
            completions.append(completion)
            contexts.append(["prompt"])
            prev = prompt + completion
    return _result("GeneGPT results JSON", convs, completions, contexts, 0)


COUNTERS = {
    "tradingagents-analyst-access": tradingagents_analyst_access,
    "virtual-lab-discussion": virtual_lab_discussion,
    "virtual-lab-discussion-md": virtual_lab_discussion_md,
    "genegpt-results": genegpt_results,
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
