"""Hand counts of the forty-second held-out set (benchmarks/data/heldout_formats_42/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

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
- reasoning written inline in the reply text as a leading ``<think>...</think>`` span belongs to that reply (it is
  one call); the completion text recorded here is the reply without that span (no such span occurs in this set);
- a system prompt the application adds at request time but does not write into the saved file is not part of the
  recorded context (it is not readable from the file); one the file keeps beside the messages is written ``system``
  at the head of every context;
- roleplay front-ends: every ``assistant`` message is one LLM call whatever persona (narrator or character) the
  ``speaker`` field names; character cards and world-info entries saved beside the chat are prompt material, not
  calls.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context.

Run: ``python benchmarks/data/heldout_formats_42/hand_count.py`` (one JSON line per file).
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


def emile_chat(path: Path) -> dict:
    """Emile-1 saved chat JSON (Baglecake/Emile-1, a Streamlit chat app for local Ollama models; its "Save Chat"
    button writes ``emile_chat_<timestamp>.json`` as ``{timestamp, model_used, file_context, messages: [{role,
    content}]}``). One file is one chat: one conversation. Each run of ``assistant`` messages with no input between
    them is one call (none are adjacent here), its ``content`` the completion; ``user`` messages are input.
    ``file_context`` holds only the name of an uploaded file: the app folds that file and its persona into a system
    message built at request time that the file does not record, so no ``system`` role heads the contexts. No tool
    calls."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8"))["messages"]:
        if m["role"] == "assistant":
            t.out(_THINK.sub("", m.get("content") or "", count=1))
        else:
            t.inp(m["role"])
    return _merge("Emile-1 saved chat JSON", [t])


def neuralrp_chat(path: Path) -> dict:
    """NeuralRP chat JSON (neuralrp/neuralrp, a roleplay front-end for local models through KoboldCpp; its
    ``POST /api/chats`` writes ``app/data/chats/<name>.json`` as ``{messages: [{id, role, content, speaker?, image?,
    summarized?}], summary, activeCharacters, activeWI, settings: {system_prompt, user_persona, ...}}``). One file is
    one chat: one conversation (a fork the tool wrote to another file is that file's own conversation). Every
    ``assistant`` message is one call whatever its ``speaker`` (Narrator or a character), its ``content`` the
    completion; ``user`` messages are input. ``settings.system_prompt`` is kept beside the messages: ``system``
    heads every context. Character cards (``activeCharacters``) and world info (``activeWI``) are prompt material,
    not calls. No tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    head = ["system"] if (data.get("settings") or {}).get("system_prompt") else []
    t = _Thread(head)
    for m in data["messages"]:
        if m["role"] == "assistant":
            t.out(_THINK.sub("", m.get("content") or "", count=1))
        else:
            t.inp(m["role"])
    return _merge("NeuralRP chat JSON", [t])


COUNTERS = {
    "emile-chat": emile_chat,
    "neuralrp-chat": neuralrp_chat,
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
