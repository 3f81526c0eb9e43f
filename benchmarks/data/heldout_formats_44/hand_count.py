"""Hand counts of held-out set 44 (benchmarks/data/heldout_formats_44/files), computed from the raw files with the
standard library only (this script does not import tracedraft), each by its format's layout as read in the file
itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as set 8's):
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
- an action the model writes only as text in its reply (AppAgent's ``Function: tap(4)`` line, the ``action`` list
  inside browser-use's JSON reply) is part of the reply, not a tool call: no structured tool-call record (a call
  name / id / arguments object of the API) is recorded in either format, so both formats have 0 tool calls;
- a prompt the agent rebuilds from its template at every step (the same instructions, a new screenshot, no earlier
  reply in it) does not continue the earlier step's call: each such step is its own single-call conversation, even
  when two prompts are identical text (they went with different screenshots);
- a file that records one request as its message list followed by the model's response is one conversation; every
  assistant message in that list (a reply the model gave at an earlier step, recorded with the messages before it
  as its context) and the response are its calls, in file order;
- an image the prompt refers to only by file name (not embedded in the file) is not part of the recorded context;
  the context roles are the recorded messages only.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context.

Run: ``python benchmarks/data/heldout_formats_44/hand_count.py`` (one JSON line per file).
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


def appagent_task_log(path: Path) -> dict:
    """AppAgent task log (TencentQQGYLab/AppAgent's ``scripts/task_executor.py`` writes
    ``tasks/task_<app>_<time>/log_<app>_task_<app>_<time>.txt``: one JSON object per line, ``{step, prompt, image,
    response}``; ``prompt`` is the whole text prompt sent with the labeled screenshot named in ``image``,
    ``response`` the model's reply text). Each line is one call: its context is the one user prompt (the screenshot is
    referred to by file name only), its completion ``response``. The prompt is rebuilt from the template at every step
    and holds no earlier reply (in these runs of the fork the step prompts carry no past-action summary; some add a
    list of "possible action paths" from the fork's graph store), so each line is its own conversation (rule above).
    The reply ends with a ``Function: tap(4)`` / ``text("...")`` line written as text: 0 tool calls. No system
    prompt is recorded."""
    threads = []
    for rec in _lines(path):
        t = _Thread(["user"])
        t.out(rec.get("response") or "")
        threads.append(t)
    return _merge("AppAgent task log JSONL", threads)


_BU_HEADER = re.compile(r"^ (SystemMessage|HumanMessage|AIMessage|ToolMessage) $|^ RESPONSE$")
_BU_ROLES = {"SystemMessage": "system", "HumanMessage": "user", "ToolMessage": "tool"}


def browser_use_conversation(path: Path) -> dict:
    """browser-use saved conversation text (browser-use 0.1.x ``Agent(save_conversation_path=P)`` writes
    ``P_<step>.txt`` at every step: the message list sent to the model, each message under a header line
    `` <MessageClass> `` (``SystemMessage`` / ``HumanMessage`` / ``AIMessage``, with the body below it), then a
    `` RESPONSE`` header and the model's reply as indented JSON ``{current_state, action}``). One file is one
    request, so one conversation (rule above). Calls: each ``AIMessage`` section (the JSON reply the model gave at an
    earlier step, kept in the history as message content) and the ``RESPONSE`` section, in file order; each call's
    context is the roles of the sections before it (SystemMessage ``system``, HumanMessage ``user``). No two
    ``AIMessage`` / ``RESPONSE`` sections are adjacent here. The ``action`` list in each JSON reply is reply text
    (browser-use's controller actions, no tool-call record): 0 tool calls."""
    t = _Thread()
    sections: list = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = _BU_HEADER.match(line)
        if m:
            sections.append([m.group(1) or "RESPONSE", []])
        elif sections:
            sections[-1][1].append(line)
    for kind, body in sections:
        if kind in ("AIMessage", "RESPONSE"):
            t.out("\n".join(body).strip())
        else:
            t.inp(_BU_ROLES[kind])
    return _merge("browser-use saved conversation text", [t])


COUNTERS = {
    "appagent": appagent_task_log,
    "browser-use": browser_use_conversation,
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
