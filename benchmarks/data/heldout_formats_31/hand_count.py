"""Hand counts of the thirty-first held-out set (benchmarks/data/heldout_formats_31/files), computed from the raw files
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
Rules made explicit for this set (chat user interfaces' exported conversations, all three formats Markdown):
- a chat UI's export records the conversation as the UI shows it: the system prompt and whatever the service or the
  plugin added to the request (retrieved web pages, the text of shared files) are not recorded; each call's context is
  the turns recorded before it, with roles written as the file records them (``user`` / ``assistant``);
- web search and citations done by the chat service while it answers (Perplexity's sources) are server-side: they are
  not tool calls;
- a part the exporter only names without recording it (a Claude.ai artifact card: a title line, a type line and an
  unresolved ``{{@CAPTURE_ARTIFACT_CONTENT:...}}`` placeholder, with no name, arguments or result of any call) is
  reply content mentioned, not a recorded tool call, and is not counted as one;
- a trailing user section that holds no prompt text (only the plugin's list of shared context) is an unsent draft:
  input with no reply, not a call.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context (none is recorded in this set).

Run: ``python benchmarks/data/heldout_formats_31/hand_count.py`` (one JSON line per file).
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


_PPLX_LOGO = '<img src="https://r2cdn.perplexity.ai/pplx-full-logo-primary-dark%402x.png"'
_PPLX_SEP = re.compile(r"\n---\n\n(?=# )")
_PPLX_NOTE = re.compile(r"^\[\^(\d+)_\d+\]:", re.M)


def perplexity_export(path: Path) -> dict:
    """Perplexity thread exported with Perplexity's own "Export > Markdown" (the web UI writes the logo ``<img>``
    line, then one block per turn: a ``# `` line opening the user's query, the answer, a hidden
    ``<span style="display:none">`` list of further sources, a ``<div align="center">⁂</div>`` line and the turn's
    footnotes ``[^N_k]: url``, N being the turn number; turns are separated by a ``---`` line followed by a blank
    line and the next ``# `` query). One file is one thread, so one conversation; each turn is one call whose
    context is every earlier query and answer plus its own query (Perplexity keeps the thread as context for
    follow-ups). The search Perplexity ran for each answer is server-side: no tool calls. The export does not mark
    where a query of several lines ends (the fourth query pastes a passage below its ``# `` line), so the
    completion text recorded here is everything after the ``# `` line up to the hidden source list; the counts do
    not depend on it. Checked: the turns found by the separator are exactly the turns numbered in the footnotes
    (4 here)."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith(_PPLX_LOGO), path
    body = text.split("\n", 1)[1].lstrip("\n")
    turns = _PPLX_SEP.split(body)
    assert sorted({int(n) for n in _PPLX_NOTE.findall(text)}) == list(range(1, len(turns) + 1)), path
    t = _Thread()
    for turn in turns:
        assert turn.startswith("# "), path
        rest = turn.split("\n", 1)[1]
        answer = rest.split('<span style="display:none">', 1)[0].split('<div align="center">', 1)[0]
        t.inp("user")
        t.out(answer.strip())
    return _merge("Perplexity thread Markdown export", [t])


_SMC_HEADER = re.compile(r"^Exported on .* \[from (?P<service>[^\]]+)\]\(.*\) - with \[SaveMyChatbot\]\(", re.M)


def savemychatbot(path: Path) -> dict:
    """SaveMyChatbot (browser extension, save.hugocollin.com) Markdown export: a ``# title`` line, an
    ``Exported on <date> [from <service>](url) - with [SaveMyChatbot](...)`` line, then the chat as level-2 role
    headings: ``## User`` for the user's turns (pasted attachments inside them under ``##### Content:``) and the
    service's assistant label for its replies (``## Claude`` here, the export being of a Claude.ai chat). Every
    ``## `` line of this file is one of these two headings (checked; the replies' own headings are level 3 and
    deeper). One file is one chat, so one conversation; each assistant section is one call whose context is every
    earlier section. Claude's thinking summary the extension copies at the top of a reply (a one-line title, a
    duration, the thinking text) belongs to that reply. Two replies end with an artifact card the extension failed
    to capture (a title, ``Document · MD`` and ``{{@CAPTURE_ARTIFACT_CONTENT:undefined}}``): nothing of a call is
    recorded there, so no tool call is counted (explicit rule) and no text follows them in their reply."""
    text = path.read_text(encoding="utf-8")
    head = _SMC_HEADER.search(text)
    assert head, path
    assistant = "## " + head.group("service").split()[0]
    t = _Thread()
    role = None
    buf: list = []

    def flush() -> None:
        if role == "assistant":
            t.out("\n".join(buf).strip())

    for line in text[head.end():].split("\n"):
        if line.startswith("## "):
            assert line in ("## User", assistant), (path, line)
            flush()
            role = "user" if line == "## User" else "assistant"
            if role == "user":
                t.inp("user")
            buf = []
        else:
            buf.append(line)
    flush()
    return _merge("SaveMyChatbot Markdown export", [t])


_CC_LLM = re.compile(r"^## CodeCompanion \((?P<adapter>[^)]+)\)$")


def codecompanion_chat(path: Path) -> dict:
    """CodeCompanion (Neovim plugin) chat buffer saved as Markdown: each turn opens with a level-2 heading, the
    user's label for prompts (the configured user name: ``## olimorris`` in one file, the default ``## Me`` in the
    other; the file's first line) and ``## CodeCompanion (<adapter>)`` for the model's replies (Anthropic in both
    files). A user section may start with a ``> Context:`` list of the files and buffers the plugin shared (their
    text went into the request but is not recorded). A reply may hold ``### Reasoning`` and ``### Response``
    parts: the reasoning belongs to the reply (one call); the completion text recorded is the ``### Response``
    part when there is one. The replies' own ``## `` headings (``## Plan:``, ``## Current Issues``...) are reply
    content: only a line equal to the user's heading or matching ``## CodeCompanion (...)`` opens a turn. One file
    is one chat, so one conversation; each reply section is one call whose context is every earlier section. The
    last user section of both files holds only the shared-context list, no prompt: an unsent draft (explicit
    rule), not a call. No tool was used in either chat (no tool output is recorded): no tool calls."""
    text = path.read_text(encoding="utf-8")
    user_heading = text.split("\n", 1)[0]
    assert user_heading.startswith("## ") and not _CC_LLM.match(user_heading), path
    t = _Thread()
    role = None
    buf: list = []

    def flush() -> None:
        if role == "assistant":
            reply = "\n".join(buf)
            if "### Response\n" in reply:
                reply = reply.split("### Response\n", 1)[1]
            t.out(reply.strip())
        elif role == "user":
            prompt = [ln for ln in buf if ln.strip() and not ln.startswith(">")]
            if prompt:
                t.inp("user")

    for line in text.split("\n"):
        if line == user_heading or _CC_LLM.match(line):
            flush()
            role = "user" if line == user_heading else "assistant"
            buf = []
        else:
            buf.append(line)
    flush()
    assert "Tool**: Returned" not in text, path
    return _merge("CodeCompanion chat buffer Markdown", [t])


COUNTERS = {
    "perplexity-export": perplexity_export,
    "savemychatbot": savemychatbot,
    "codecompanion-chat": codecompanion_chat,
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
