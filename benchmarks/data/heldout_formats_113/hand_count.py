"""Hand counts of the hundred-and-thirteenth held-out set (benchmarks/data/heldout_formats_113/files), computed from
the raw files with the standard library only (this script does not import tracedraft), each by its format's layout as
read in the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (one file in this set: four prompts whose replies never came, the run failing with a
connection error).

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
- an agent's console log that prints, per loop iteration, the function calls the model asked for (``Tool:`` name and
  ``Arguments:``) and the results fed back (``Result:``), or else the model's final text (``AGENT RESPONSE:``), records
  one call per ``--- Iteration N ---``: its context the printed ``User Request`` plus every earlier iteration's reply
  and tool results, its completion the final text (empty for an iteration that only calls tools), one tool call per
  ``Tool:`` line; the status lines the runner prints around the loop (test banners, ``Final Job Status``, the
  screening headers) are not context; each ``AGENTIC WORKFLOW`` block with its own ``User Request`` is its own
  conversation (the loop starts a fresh message list per request);
- a run log that prints each prompt as ``[Agent N] LLM_QUERY #k: <kind>:`` followed by the prompt text and each reply as
  ``[Agent N] LLM_RESPONSE #k: <text>`` records one call per query answered (paired by agent and query number, the
  agents' lines interleaving); every prompt is built afresh from the current state (the runner sends a fixed system
  prompt plus this one user prompt, with no earlier reply), so each call is its own single-shot conversation; the
  ``OBSERVATION``, ``HYPOTHESES_MINED``, ``MSG_SEND`` / ``MSG_RECV``, ``MERGED_OBS`` lines and the RESULTS summary are
  the runner's own records, not LLM calls; a query with no response line (the run stopped on ``ERROR: Connection
  error.``) is a failed request, not a call;
- the system prompts these runners send are not in the files and are not written in the contexts; ids, timestamps,
  job ids, scores and step counters are metadata, not context.
Context roles: ``user`` for the printed request or prompt, ``assistant`` for earlier replies, ``tool`` for each printed
tool result.

Run: ``python benchmarks/data/heldout_formats_113/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_RULE = re.compile(r"^={20,}\s*$")


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


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

    def close(self) -> None:
        """End the open call without adding input (the next iteration is a new request)."""
        self._open = False


def _merge(fmt: str, threads: list) -> dict:
    kept = [t for t in threads if t.completions]
    return _result(fmt, len(kept), [c for t in kept for c in t.completions],
                   [c for t in kept for c in t.contexts], sum(t.tools for t in kept))


def backplane_agent_console_log(path: Path) -> dict:
    """Scientific AI Backplane agent console log, plain text (rick-stevens-ai/Backplane: ``agent.py`` /
    ``agent_apps.py`` ``run_agentic_workflow`` prints ``AGENTIC WORKFLOW STARTED`` or ``COMPUTATIONAL CHEMISTRY AGENTIC
    WORKFLOW``, ``User Request: ...``, then per loop iteration ``--- Iteration N ---`` and either ``Agent is calling k
    tool(s)...`` with ``Tool: <name>`` / ``Arguments: {json}`` / ``Result: ...`` (and ``Simulation Results: {json}``)
    per tool call, or ``AGENT RESPONSE:`` between two ``=`` rules followed by the model's text). One conversation per
    ``User Request``; one call per iteration (rule above); each ``Tool:`` line a tool call, each ``Result:`` a tool
    input; the final text the completion of the last iteration."""
    lines = path.read_text(encoding="utf-8").splitlines()
    threads: list = []
    t = None
    fresh = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("User Request:"):
            t = _Thread()
            t.inp("user")
            threads.append(t)
        elif t is not None and re.match(r"^--- Iteration \d+ ---$", line):
            t.close()
            fresh = True
        elif t is not None and line.startswith("Tool: "):
            if fresh:  # the iteration's first tool call opens its call
                t.out("", 1)
                fresh = False
            else:  # a further tool call of the same reply
                t.tools += 1
        elif t is not None and line.startswith("Result:"):
            t.inp("tool")
        elif t is not None and line.strip() == "AGENT RESPONSE:":
            j = i + 1
            if j < len(lines) and _RULE.match(lines[j]):
                j += 1
            body = []
            while j < len(lines) and not _RULE.match(lines[j]):
                body.append(lines[j])
                j += 1
            t.out("\n".join(body).strip())
            t = None  # the loop ends after a text reply
            i = j
        i += 1
    return _merge("Backplane agent console log (text)", threads)


_AGENT_LINE = re.compile(r"^\[Agent (\d+)\] ([A-Z_]+)(?: #(\d+))?: ?(.*)$")


def rule_discovery_run_log(path: Path) -> dict:
    """agents4science RuleDiscovery run log, plain text (agents4science/agents4science.github.io
    ``Applications/RuleDiscovery/hidden_rule_discovery.py`` with verbose logging: a banner (``Run: <difficulty> | <model>
    | <n> agents``, ``Started:``), the hidden rules, then lines ``[Agent N] <TAG> [#k]: <text>``; ``LLM_QUERY`` is
    followed by the prompt over several lines, ``LLM_RESPONSE`` carries the reply; a ``RESULTS`` block or an ``ERROR:``
    line ends the run). One call per answered query, each its own conversation (rule above); context ``user``
    (the prompt), completion the response text. No tool calls."""
    lines = path.read_text(encoding="utf-8").splitlines()
    queries: dict = {}
    replies: dict = {}
    order: list = []
    cur = None  # (kind, key) of the record whose text continues on the next lines
    for line in lines:
        m = _AGENT_LINE.match(line)
        if m:
            agent, tag, num, text = m.groups()
            key = (agent, num)
            cur = None
            if tag == "LLM_QUERY":
                queries[key] = [text]
                order.append(key)
                cur = (queries, key)
            elif tag == "LLM_RESPONSE":
                replies[key] = [text]
                cur = (replies, key)
            continue
        if _RULE.match(line) or line.startswith("ERROR:") or line.startswith("    Step "):
            cur = None
            continue
        if cur is not None:
            cur[0][cur[1]].append(line)
    threads = []
    for key in order:
        if key in replies:
            t = _Thread(["user"])
            t.out("\n".join(replies[key]).strip())
            threads.append(t)
    return _merge("agents4science RuleDiscovery run log (text)", threads)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("backplane__"):
        out = backplane_agent_console_log(path)
    else:
        out = rule_discovery_run_log(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
