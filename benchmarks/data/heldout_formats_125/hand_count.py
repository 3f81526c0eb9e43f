"""Hand counts of the hundred-and-twenty-fifth held-out set (benchmarks/data/heldout_formats_125/files), computed
from the raw files with the standard library only (this script does not import tracedraft), each by its format's
layout as read in the file itself.

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
- a file whose whole text is one JSON array of chat messages (whatever its file name ends with; here ``.md``) is one
  conversation: the messages of one run, each later message continuing the list;
- each run of ``assistant`` messages with no input between them (no ``user``, ``tool`` or ``system`` message) is one
  call; its completion the messages' ``content`` (``null`` is empty text), its tool calls the ``tool_calls`` entries;
  a ``tool`` message is tool input and closes the open call;
- an agent hand-off (a ``transfer_to_...`` / ``transfer_back_to_...`` function the model calls) is a tool call like
  any other; the system prompt of the agent that is active is not in the file, so the context holds only the
  recorded roles;
- ids, ``refusal: null`` and the ``tool_call_id`` links are metadata, not context.
Context roles: as recorded (``user``, ``assistant``, ``tool``); no system prompt is recorded.

Run: ``python benchmarks/data/heldout_formats_125/hand_count.py`` (one JSON line per file, then a table of file,
conversations, calls and tool calls on standard error).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


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


def _merge(fmt: str, threads: list) -> dict:
    kept = [t for t in threads if t.completions]
    return _result(fmt, len(kept), [c for t in kept for c in t.completions],
                   [c for t in kept for c in t.contexts], sum(t.tools for t in kept))


def swarm_js_run(path: Path) -> dict:
    """swarm-js demo run (brngdsn/swarm-js, a JavaScript port of OpenAI's Swarm: its demo runs the triage /
    inventory / refunds agents on one user request and writes the run's messages to ``eg-run.md``): the file's whole
    text is a JSON array of OpenAI chat messages ``{role, content, tool_calls?: [{id, type: function, function:
    {name, arguments}}], refusal?, tool_call_id?}`` despite the ``.md`` name. One run is one conversation. Each
    assistant message here is followed by a ``tool`` message or ends the run, so each assistant message is one call
    (seven in each file: six with one tool call each, hand-offs included, then the final text answer)."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8")):
        if m["role"] == "assistant":
            t.out(m.get("content") or "", len(m.get("tool_calls") or []))
        else:
            t.inp(m["role"])
    return _merge("swarm-js run messages (JSON array in a .md file)", [t])


COUNTERS = {
    "swarm-js": swarm_js_run,
}


def count(path: Path) -> dict:
    out = COUNTERS[path.name.split("__", 1)[0]](path)
    return {"file": path.name, **out}


def main() -> int:
    rows = [count(p) for p in sorted(FILES.iterdir())]
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    print(f"{'file':<28} {'conversations':>13} {'calls':>5} {'tool calls':>10}", file=sys.stderr)
    for row in rows:
        print(f"{row['file']:<28} {row['conversations']:>13} {row['calls']:>5} {row['tool_calls']:>10}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
