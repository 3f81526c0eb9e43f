"""Hand counts of the sixty-sixth held-out set (benchmarks/data/heldout_formats_66/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (three files in this set: the Mobile-Agent step records and the anna agent log).

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
- an AutoTask ``gpt_res`` text file records one request and its reply: the messages sent, each opened by a line
  holding only its role and a colon (``system:``, ``user:``; at the start of the file or after a blank line), then a
  line ``===response===`` and the reply. It is one single-shot call and its own conversation; the role blocks before
  the marker are its context, in order (several ``user:`` blocks are several user messages of the one request, not
  several calls); the completion is the whole text after the marker line;
- a reply's JSON written as text (element scores, a ``next ui element`` / ``status`` object, a ``punishment``
  object) and a GUI action named in text are text, not tool calls; the AutoTask prompts name no tools;
- what a prompt quotes of earlier calls (module scores, a ``GPT answer`` dictionary, an earlier wrong reason) is
  context of this call, not a recorded call;
- a per-step record that keeps only the fields the tool parsed out of the model's reply (Mobile-Agent's
  ``Observation`` / ``Thought`` / ``Action``), with neither the prompt nor the screenshot nor the raw reply, records
  no call with a readable context: the file is not readable and counts 0 / 0 / 0;
- an agent log that keeps only the actions the agent executed and the goals / results it stored (each a timestamped
  string), with no prompt or reply text, records no call: not readable, 0 / 0 / 0;
- where a file holds no readable call, it is 0 conversations, 0 calls and 0 tool calls.
Context roles: as recorded, in the file's order (``system`` then ``user`` messages for AutoTask).

Run: ``python benchmarks/data/heldout_formats_66/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_MARKER = "\n===response===\n"
_ROLE = re.compile(r"(?:\A|\n\n)(system|user|assistant):\n")


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def autotask_gpt_res(path: Path) -> dict:
    """AutoTask ``gpt_res`` text file (BowenBryanWang/AutoTask: one file per request of a module, named
    ``<epoch ms><module><step>.txt``): the messages sent, each opened by a ``system:`` / ``user:`` line, then a
    ``===response===`` line and the model's reply. One file is one single-shot call and one conversation; the role
    blocks before the marker are the context (system first, then each user message); the completion is all the text
    after the marker line. JSON in the reply is text; no tool calls."""
    text = path.read_text(encoding="utf-8")
    prompt, marker, reply = text.partition(_MARKER)
    if not marker:
        return _result("AutoTask gpt_res text", 0, [], [], 0)
    roles = _ROLE.findall(prompt)
    return _result("AutoTask gpt_res text", 1, [reply], [roles], 0)


def mobile_agent_step_record(path: Path) -> dict:
    """Mobile-Agent (v1) result ``data.json`` (X-PLUG/MobileAgent ``results/<app>/<n>/data.json``: an object keyed
    by step number, each ``{Observation, Thought, Action}``, the three fields parsed out of the model's reply at that
    step). No prompt, screenshot or raw reply is recorded: the calls are known only through fields parsed out of their
    replies (shared rule), so nothing is readable: 0 conversations, 0 calls, 0 tool calls."""
    steps = json.loads(path.read_text(encoding="utf-8"))
    assert all(set(s) == {"Observation", "Thought", "Action"} for s in steps.values())
    return _result("Mobile-Agent step record JSON", 0, [], [], 0)


def anna_agent_log(path: Path) -> dict:
    """anna-mobile-llm-agent ``data/logs.json`` (``{"logs": [string, ...]}``, each string a
    ``"current_timestamp": ...`` line the agent wrote when it executed device actions, appended a goal or a result, or
    retrieved goals / results). No model context or reply is recorded (the goals and results are the arguments the
    model passed, kept without the call): nothing is readable, 0 / 0 / 0."""
    logs = json.loads(path.read_text(encoding="utf-8"))["logs"]
    assert all(line.startswith('"current_timestamp": ') for line in logs)
    return _result("anna-mobile-llm-agent log JSON", 0, [], [], 0)


COUNTERS = {
    "autotask": autotask_gpt_res,
    "mobile-agent": mobile_agent_step_record,
    "anna-mobile-llm-agent": anna_agent_log,
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
