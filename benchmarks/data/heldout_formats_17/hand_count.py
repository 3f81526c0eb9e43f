"""Hand counts of the seventeenth held-out set (benchmarks/data/heldout_formats_17/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself and in the producing tool's source.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the eighth set's):
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
- a tool call recorded inside an assistant turn (a request the model emitted, with its response) is the output of
  its own LLM call, since the tool's harness sends one function call per model request and feeds its result back
  before the next request; the turn's closing text, written after the last result, is one more call. A turn with k
  recorded requests is therefore k + 1 calls and k tool calls; a request whose result is an exception is still a
  tool call the model emitted;
- a trailing user turn with no assistant reply after it adds no call.
Context roles: a message made only of tool results is written ``tool``; a system prompt the harness builds from the
file's metadata (not stored as a message) is written ``system`` at the head of every context.

Run: ``python benchmarks/data/heldout_formats_17/hand_count.py`` (one JSON line per file).
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


def tooltalk_conversation(path: Path) -> dict:
    """ToolTalk conversation JSON (microsoft/ToolTalk ``data/tooltalk/*.json``: ``{name, conversation_id,
    suites_used, apis_used, scenario, user, metadata, conversation: [{index, role, text, apis?}]}``; roles user /
    assistant; an assistant turn's ``apis`` is the list of ``{request: {api_name, parameters}, response,
    exception}`` the assistant made before writing its ``text``). One file is one conversation. ToolTalk's own
    evaluator (``src/tooltalk/evaluation/evaluate_openai.py``) replays each ``apis`` entry as an assistant message
    with a ``function_call`` followed by a ``function`` result message, one model request per function call, so each
    entry is one call emitting one tool call (completion text empty), whose result is then tool input, and the
    turn's ``text`` is one more call after the last result. No turn is a discarded branch. The system prompt is built
    by the harness from ``metadata`` (location, timestamp, username), so every context starts with ``system``. A
    trailing user turn with no reply adds no call."""
    t = _Thread(["system"])
    for m in json.loads(path.read_text(encoding="utf-8"))["conversation"]:
        if m["role"] == "assistant":
            for _ in m.get("apis") or []:
                t.out("", 1)
                t.inp("tool")
            t.out(m.get("text") or "")
        else:
            t.inp(m["role"])
    return _merge("ToolTalk conversation JSON", [t])


COUNTERS = {
    "tooltalk-conversation": tooltalk_conversation,
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
