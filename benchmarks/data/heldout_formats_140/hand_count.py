"""Hand counts of the hundred-and-fortieth held-out set (benchmarks/data/heldout_formats_140/files), computed from
the raw files with the standard library only (this script does not import tracedraft), each by its format's layout as
read in the file itself.

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
- a chat store that keys each saved chat by an id (``{chat_id: {title, messages}}``) holds one conversation per key;
  an entry kept in an older layout (a bare message list under its key, here the key ``127.0.0.1``) is a chat too,
  one conversation, when its messages alternate user / model turns of one thread;
- each ``model`` message is the model's output, each ``user`` message an input; a message's text is its ``parts``
  (a list of strings) joined; two ``model`` messages with no ``user`` message between them are one call by the
  shared rule above (its completion the two texts joined), even where the app's own code shows that an input the app
  did not save (an image-only upload) came between them: the file records no input there;
- text the app pasted into a user message (a ``--- PDF DOCUMENT CONTEXT ---`` block of retrieved chunks) is part of
  that user message, not a separate context message or a tool call; no tool calls are recorded in this layout;
- the app's system instruction lives in its code, not in the file: no ``system`` role is written in the contexts;
- titles, chat ids and the timestamps inside titles are metadata, not context.
Context roles: ``user`` as recorded; the model's own earlier turns (``model`` in the file) are written ``assistant``.

Run: ``python benchmarks/data/heldout_formats_140/hand_count.py`` (one JSON line per file).
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

    def __init__(self) -> None:
        self.ctx: list = []
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


def ignite_perplexity_history(path: Path) -> dict:
    """"Let's ignite Perplexity" (Bhoot AI) chat store ``chat_history.json``, written by the Flask app's
    ``save_chat_history`` after each Gemini ``ChatSession.send_message`` (gemini-2.5-flash): a JSON object keyed by
    chat id, each value ``{title, messages: [{role: user / model, parts: [text, ...]}]}``; one older entry is a bare
    message list keyed ``127.0.0.1``. One conversation per key. Each run of ``model`` messages with no ``user``
    message between them is one call, its completion the parts joined (one such run of two messages here); each
    ``user`` message is an input. No tool calls, no system prompt in the file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    threads = []
    for value in data.values():
        messages = value if isinstance(value, list) else value["messages"]
        t = _Thread()
        for m in messages:
            text = "".join(p for p in m.get("parts") or [] if isinstance(p, str))
            if m["role"] == "model":
                t.out(text)
            else:
                t.inp(m["role"])
        threads.append(t)
    return _merge("Let's ignite Perplexity (Bhoot AI) chat_history.json", threads)


COUNTERS = {
    "ignite-perplexity": ignite_perplexity_history,
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
