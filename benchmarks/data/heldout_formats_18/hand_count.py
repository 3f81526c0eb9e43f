"""Hand counts of the eighteenth held-out set (benchmarks/data/heldout_formats_18/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (copied from set 8's script, written before the product was run):
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
- in a Markdown transcript whose records are separated by ``---`` lines, a record is one block between two such
  lines; a ``---`` line the model wrote inside its own reply (a horizontal rule) splits that reply into several
  output records with no input between them, which are still one call (first shared rule);
- a tool-use record holds both the model's tool call and its result; it closes the open call after it, so the next
  output record (a thinking block or text) opens a new call; tool-use records that follow one another with no
  output record between them belong to the same call;
- the completion text recorded here is the visible text of the call (thinking blocks left out);
- where a file marks the model's text only by character ranges (an editor's saved buffer), a marked range that
  starts in the middle of a line inside the user's prompt is text the user copied from a reply into the prompt:
  it is part of that prompt, not a reply, and not a call;
- a tool call the model wrote only as free text (no structured tool-call block that the tool executed) is not a
  tool call.
Context roles: a tool-use record's result is written ``tool``.

Run: ``python benchmarks/data/heldout_formats_18/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_THINK = re.compile(r"<think>.*?</think>", re.S)


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


def specstory_cursor(path: Path) -> dict:
    """SpecStory Markdown history of a Cursor session (the SpecStory extension's ``.specstory/history/*.md``, the
    layout before its Markdown v2: ``<!-- Generated by SpecStory -->``, a ``<!-- cursor Session ID -->`` comment, a
    ``# title``, then records separated by ``---`` lines). A record starting ``_**User ...**_`` is the user's
    message; one starting ``_**Assistant (mode)**_`` opens the model's turn, and the text after that marker line is
    output; inside a turn, a record starting ``Tool use: **NAME**`` is one tool call with its result written below
    it, any other non-empty record (a ``<think>`` thinking block or text) is output. One file is one Cursor session:
    one conversation. Calls: an output record opens a call when the last record was input (a user message or a
    tool-use record with its result), later output records with no input between them join it; a tool-use record
    joins the open call (opening one if none is open) and counts one tool call, then closes it; a tool-use record
    that directly follows another (no output record between them) is a further tool call of the same call. No
    system prompt is recorded."""
    text = path.read_text(encoding="utf-8")
    t = _Thread()
    in_turn = False
    last_tool = False
    for rec in re.split(r"\n---\n", text):
        body = rec.strip("\n")
        if not body:
            continue
        # the header comments and title come before the first user marker in the first record
        user_at = body.find("_**User")
        if user_at > 0 and body.startswith("<!--"):
            body = body[user_at:]
        if body.startswith("_**User"):
            t.inp("user")
            in_turn = last_tool = False
            continue
        if body.startswith("_**Assistant") or body.startswith("_**Agent"):
            in_turn, last_tool = True, False
            rest = body.split("\n", 1)[1] if "\n" in body else ""
            if rest.strip():
                t.out(_THINK.sub("", rest).strip())
            continue
        if not in_turn:
            continue
        if body.startswith("Tool use: **"):
            if last_tool:  # a further tool call of the same reply, no output between: same call
                t.tools += 1
                t.ctx.append("tool")
            else:
                t.out("", 1)
                t.inp("tool")
            last_tool = True
        else:
            last_tool = False
            visible = _THINK.sub("", body).strip()
            t.out(visible if not t.completions or not t._open or not t.completions[-1] else "\n" + visible)
    return _merge("SpecStory Markdown history (Cursor session)", [t])


def gptel_saved_chat(path: Path) -> dict:
    """gptel saved chat, Markdown (Emacs gptel's ``gptel-mode`` buffer saved to a file: the user's prompts after
    ``### `` prefixes and the model's replies as plain text, then a trailing ``<!-- Local Variables: -->`` block whose
    ``gptel--bounds: ((response (BEG END) ...))`` lists the buffer ranges (Emacs character positions, 1-based, END
    exclusive) of the model's text; ``gptel-model`` / ``gptel--backend-name`` name the model). One file is one chat:
    one conversation. gptel sends the whole buffer up to the prompt, text inside a response range as the
    assistant's and the rest as the user's, so each reply range is one call whose context is all the text before
    it. A range starting in the middle of a prompt line is text copied into the prompt (rule above), not a call.
    ``gptel--bounds: nil`` means no reply. No tool calls; no system prompt is recorded in the file."""
    text = path.read_text(encoding="utf-8")
    m = re.search(r"gptel--bounds: (.*?) -->", text)
    ranges = [(int(a) - 1, int(b) - 1) for a, b in re.findall(r"\((\d+)\s+\.?\s*(\d+)\)", m.group(1))] if m else []
    t = _Thread()
    prev = 0
    for beg, end in ranges:
        if beg > 0 and text[beg - 1] != "\n":  # copied into the prompt line: user text
            continue
        if text[prev:beg].strip():
            t.inp("user")
        t.out(text[beg:end].strip())
        prev = end
    return _merge("gptel saved chat (Markdown with gptel--bounds)", [t])


def chatmd_chat_file(path: Path) -> dict:
    """chat.md VS Code extension chat file (``*.chat.md``: an optional ``selectedConfig=...`` line, then sections
    headed ``# %% system`` / ``# %% user`` / ``# %% assistant`` / ``# %% tool_execute``; the model's tool calls are
    fenced ``tool_call`` blocks holding ``<tool_call><tool_name>NAME</tool_name><param ...>...</tool_call>`` inside
    its assistant section; the extension runs each and writes its ``<tool_result>`` (inline, or a link to a
    ``cmdassets/`` file) in the next ``tool_execute`` section). One file is one chat: one conversation. Each
    assistant section after an input section is one call (assistant sections with no input between them would be
    one call; none here); each ``<tool_call>`` in it is one tool call. An empty trailing user section is no
    input."""
    text = path.read_text(encoding="utf-8")
    parts = re.split(r"^# %% (\w+)[ \t]*\n", text, flags=re.M)
    t = _Thread()
    for role, body in zip(parts[1::2], parts[2::2]):
        if role == "assistant":
            t.out(body.strip(), len(re.findall(r"^<tool_call>", body, flags=re.M)))
        elif role == "tool_execute":
            t.inp("tool")
        elif body.strip():
            t.inp(role)
    return _merge("chat.md chat file (# %% sections)", [t])


COUNTERS = {
    "specstory-cursor": specstory_cursor,
    "gptel": gptel_saved_chat,
    "chatmd": chatmd_chat_file,
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
