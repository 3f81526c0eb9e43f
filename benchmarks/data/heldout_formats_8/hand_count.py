"""Hand counts of the eighth held-out set (benchmarks/data/heldout_formats_8/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

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
One rule made explicit for this set:
- reasoning written inline in the reply text as a leading ``<think>...</think>`` span belongs to that reply (it is
  one call); the completion text recorded here is the reply without that span.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context.

Run: ``python benchmarks/data/heldout_formats_8/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_THINK = re.compile(r"^\s*<think>.*?</think>", re.S)


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


def llamacpp_webui_conversation(path: Path) -> dict:
    """llama.cpp server web UI conversation JSON (the legacy web UI's stored / exported conversation:
    ``{demo, id, lastModified, messages: [{id, role, content, timings?, tool_calls?}]}``; roles user / assistant /
    tool; assistant ``tool_calls`` in the OpenAI layout). One file is one conversation. Each run of assistant messages
    with no input between them is one call (none are adjacent here: 4 calls); its ``content`` is the completion (a
    leading ``<think>...</think>`` span is the reply's reasoning, left out of the completion text), each
    ``tool_calls`` entry a tool call. ``tool`` messages (no ``tool_call_id`` recorded) are tool input. No system
    prompt is recorded."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8"))["messages"]:
        if m["role"] == "assistant":
            t.out(_THINK.sub("", m.get("content") or "", count=1), len(m.get("tool_calls") or []))
        else:
            t.inp(m["role"])
    return _merge("llama.cpp web UI conversation JSON", [t])


def y_cli_chat(path: Path) -> dict:
    """y-cli chat JSONL (the ``chat.jsonl`` store of luohy15's y-cli / y-gui: one chat per line,
    ``{create_time, id, update_time, messages: [{role, content, timestamp, unix_timestamp, model?, provider?,
    reasoning_content?}]}``). Each line is its own chat (distinct ``id``, unrelated first user message): one
    conversation per line. Each run of assistant messages with no input between them is one call; its ``content``
    is the completion (``reasoning_content``, empty here, belongs to it). No tool calls in this file; no system
    prompt is recorded."""
    threads = []
    for chat in _lines(path):
        t = _Thread()
        for m in chat["messages"]:
            if m["role"] == "assistant":
                t.out(m.get("content") or "")
            else:
                t.inp(m["role"])
        threads.append(t)
    return _merge("y-cli chat JSONL", threads)


def deepseek_cli_history(path: Path) -> dict:
    """deepseek-cli chat history JSONL (refiget/deepseek-cli's ``chat_history.jsonl``: one request per line,
    ``{timestamp, messages: [system, user], response, model}``; ``messages`` is the full context sent, ``response``
    the reply text). Each line is one call whose context is its ``messages`` and whose completion is ``response``.
    The two lines share the system prompt but neither continues the other (the second context does not hold the
    first call's reply): two single-shot calls side by side, so two conversations (shared rule). No tool calls."""
    threads = []
    for rec in _lines(path):
        t = _Thread([m["role"] for m in rec["messages"]])
        t.out(rec.get("response") or "")
        threads.append(t)
    return _merge("deepseek-cli chat history JSONL", threads)


COUNTERS = {
    "llamacpp-webui-conversation": llamacpp_webui_conversation,
    "y-cli-chat": y_cli_chat,
    "deepseek-cli-history": deepseek_cli_history,
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
