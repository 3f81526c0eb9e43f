"""Hand counts of held-out set 55 (benchmarks/data/heldout_formats_55/files), computed from the raw files with the
standard library only (this script does not import tracedraft), each by its format's layout as read in the file
itself and in the code of the tool that writes it.

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
Set 8's rule kept for this set:
- reasoning written inline in the reply text as a leading ``<think>...</think>`` span belongs to that reply (it is
  one call); the completion text recorded here is the reply without that span.
Rules made explicit for this set:
- a saved chat file of a terminal chat client is one conversation: the client sends the whole saved history (the
  messages of the file) with each new question, so every later call's context continues the earlier ones;
- a system prompt the client keeps outside the file (a settings file, a named prompt in the configuration) is not
  part of the recorded context; one saved in the file heads every context;
- messages the client says it dropped before the file was written (a history cleared by the user, recorded only as a
  ``history_cleared_at`` time) are not recorded and are not counted; pairs the client keeps but marks as no longer
  sent (a ``forgotten`` list) would be recorded calls left out of later contexts (none in this set);
- a question / answer pair record holds one call: the question is the input, the answer the completion;
- metadata written beside the messages (timestamps, a session id, code blocks the client extracted from replies and
  numbered) is not a call and holds no tool call; code written in a reply is text, not a tool call.
Context roles: a system prompt saved in the file is written ``system`` at the head of every context.

Run: ``python benchmarks/data/heldout_formats_55/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.S)


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


def termi_chat(path: Path) -> dict:
    """termi-chat saved conversation JSON (dperique/termi-chat, ``python/termi-chat.py`` ``save_to_file``:
    ``json.dump(messages, file, indent=2)``): a bare list of ``{role, content, timestamp?}`` messages, roles system /
    user / assistant; the leading system message (the loaded context file) has no timestamp, the others a
    ``YYYY-MM-DD-HH:MM`` one. The client strips ``timestamp`` and sends the whole list with each question
    (``gpt-3.5-turbo-0125`` by default), so one file is one conversation. Each assistant message is one call (none
    are adjacent here); the saved system message heads every context. No tool calls (the client has none)."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8")):
        if m["role"] == "assistant":
            t.out(m.get("content") or "")
        else:
            t.inp(m["role"])
    return _merge("termi-chat saved conversation JSON", [t])


def retrochat_session(path: Path) -> dict:
    """RetroChat session JSON (DefamationStation/retrochat-v3, ``retrochat_app/core/session_manager.py``
    ``save_session``: ``json.dump(self.current_session_data, f, indent=4)``, rewritten after each message):
    ``{conversation_history: [{role, content}], metadata: {created_at, session_id, last_modified,
    history_cleared_at}, code_blocks: {id: code}, next_code_block_global_id}``. One file is one session, one
    conversation. Each assistant message is one call; a leading ``<think>...</think>`` span (empty here: the
    client's system prompt ends with ``/no_think``) belongs to the reply and is left out of the completion text.
    The system prompt lives in the client's ``user_settings.json``, not in the file, so it is not in the recorded
    context; the history before ``history_cleared_at`` was dropped by the user and is not recorded. No tool calls;
    ``code_blocks`` (empty here) only numbers code fences found in replies."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8"))["conversation_history"]:
        if m["role"] == "assistant":
            t.out(_THINK.sub("", m.get("content") or "", count=1))
        else:
            t.inp(m["role"])
    return _merge("RetroChat session JSON", [t])


def j178_chatgpt_history(path: Path) -> dict:
    """j178/chatgpt conversation history JSON (the Go TUI's ``conversations.json``, written by
    ``ConversationManager.Dump`` with a two-space JSON encoder: ``{conversations: [{config: {provider, model, prompt,
    context_length, ...}, forgotten?: [...], context: [{question, answer}]}], last_idx}``), here the copy the
    repository keeps as test data. Each entry of ``conversations`` is one conversation; each ``{question, answer}``
    pair of ``context`` is one call (the question is the user input, the answer the completion), and a later pair's
    context holds the earlier pairs. ``config.prompt`` names a system prompt of the configuration that the file does
    not hold, so it is not in the recorded context. Pairs in ``forgotten`` (no longer sent) would be counted as
    calls left out of later contexts; there is no ``forgotten`` key in this version. No tool calls."""
    threads = []
    for conv in json.loads(path.read_text(encoding="utf-8"))["conversations"]:
        t = _Thread()
        for pair in conv.get("forgotten") or []:
            t.inp("user")
            t.out(pair.get("answer") or "")
        t.ctx = []  # forgotten pairs are not sent again
        for pair in conv.get("context") or []:
            t.inp("user")
            t.out(pair.get("answer") or "")
        threads.append(t)
    return _merge("j178/chatgpt conversation history JSON", threads)


COUNTERS = {
    "termi-chat": termi_chat,
    "retrochat-session": retrochat_session,
    "j178-chatgpt-history": j178_chatgpt_history,
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
