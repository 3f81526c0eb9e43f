"""Hand counts of the ninth held-out set (benchmarks/data/heldout_formats_9/files), computed from the raw files
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
- reasoning written inline in the reply text as a leading ``<think>...</think>`` span belongs to that reply (it is
  one call); the completion text recorded here is the reply without that span (made explicit in set 8; no file of
  this set has such a span).
Rules made explicit for this set:
- a response recorded only as a failure notice in place of a reply (aishell's ``Failed (see log ...)``) is a failed
  request, not a call (the shared failed-request rule, for a text log);
- a user message with no text at all after the last reply (an empty prompt the chat file keeps open for the next
  turn) is no input to any call and is not counted anywhere;
- a ``developer`` message (OpenAI's name for the system prompt) is written ``system`` in the contexts;
- a single record that holds both the model's tool call and the tool's result (LobeChat's ``function`` message, whose
  ``plugin`` is the call and whose ``content`` is the result) counts as the tool call of the call that emitted it,
  followed by a tool-result input;
- in markdown chat files, a delimiter line inside a fenced code block is message text, not a delimiter (no such line
  occurs in this set's ChatVim files); in ChatMD, text inside ``RAW|...|RAW`` is message text, not markup.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context.

Run: ``python benchmarks/data/heldout_formats_9/hand_count.py`` (one JSON line per file).
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


def chatvim_markdown(path: Path) -> dict:
    """ChatVim chat markdown (earthbucks/chatvim.nvim and its CLI: the chat is the markdown file itself). An
    optional TOML front matter between ``+++`` lines (model, and optionally ``userDelimiter`` /
    ``assistantDelimiter`` / ``systemDelimiter``; defaults ``# === USER ===``, ``# === ASSISTANT ===``,
    ``# === SYSTEM ===``), then sections opened by delimiter lines (outside fenced code blocks). Text before the first
    delimiter is a user message. One file is one conversation. Each ASSISTANT section is one call whose context is
    every earlier non-empty section (system / user / assistant) and whose completion is the section's text, stripped.
    A trailing empty USER section is the open prompt for the next turn (not counted). No tool calls in this layout."""
    text = path.read_text(encoding="utf-8")
    delims = {"user": "# === USER ===", "assistant": "# === ASSISTANT ===", "system": "# === SYSTEM ==="}
    if text.startswith("+++"):
        end = text.index("\n+++", 3)
        for line in text[3:end].splitlines():
            m = re.match(r'\s*(user|assistant|system)Delimiter\s*=\s*"(.*)"\s*$', line)
            if m:
                delims[m.group(1)] = m.group(2)
        text = text[end + 4:]
    by_line = {v.strip(): k for k, v in delims.items()}
    sections = [["user", []]]
    fence = False
    for line in text.split("\n"):
        if line.strip().startswith(("```", "~~~")):
            fence = not fence
        if not fence and line.strip() in by_line:
            sections.append([by_line[line.strip()], []])
        else:
            sections[-1][1].append(line)
    t = _Thread()
    for role, lines in sections:
        body = "\n".join(lines).strip()
        if not body:
            continue
        if role == "assistant":
            t.out(body)
        else:
            t.inp(role)
    return _merge("ChatVim chat markdown", [t])


_CHATMD = re.compile(r"<(/?)(user|assistant|reasoning|tool_call|tool_response|developer|system|config|tool|import)"
                     r"(?=[\s>/])([^>]*?)(/?)>")
_RAW = re.compile(r"RAW\|(.*?)\|RAW", re.S)


def ochat_chatmd(path: Path) -> dict:
    """ochat ChatMD (dakotamurphyucf/ochat: the conversation is an XML-like markdown file; ``RAW|...|RAW`` spans are
    literal text). Top-level elements only (elements nested in another one, e.g. ``<summary>`` in ``<reasoning>``
    or ``<doc>`` in ``<tool_call>``, are content): ``config`` / ``tool`` / ``import`` declare settings and tools
    (not messages); ``developer`` / ``system`` are the system prompt, ``user`` the user's turn, ``tool_response`` a
    tool result (inputs); ``reasoning``, ``assistant`` and ``tool_call`` are model output. A run of model output with
    no input between is one call (one Responses-API response: reasoning, message, function calls); each
    ``tool_call`` in the run is one tool call (``custom_tool_call`` ones too); the completion is the ``RAW`` text of
    the run's ``assistant`` elements, stripped and joined. One file is one conversation. A final empty ``<user>`` is
    the open prompt (not counted). Tool arguments and results may live in referenced ``.chatmd/*.json`` files that are
    not part of this file; the calls and their order are recorded here."""
    text = path.read_text(encoding="utf-8")
    raws = [(m.start(), m.end()) for m in _RAW.finditer(text)]
    events, open_name, open_at = [], None, 0
    for m in _CHATMD.finditer(text):
        if any(a <= m.start() < b for a, b in raws):
            continue
        close, name, _attrs, selfclose = m.groups()
        if open_name is not None:
            if close and name == open_name:
                if name not in ("config", "tool", "import"):
                    events.append((name, text[open_at:m.start()]))
                open_name = None
            continue
        if close:
            continue
        if selfclose:
            if name not in ("config", "tool", "import"):
                events.append((name, ""))
            continue
        open_name, open_at = name, m.end()
    t = _Thread()
    for name, body in events:
        if name in ("reasoning",):
            t.out("")
        elif name == "assistant":
            said = "\n".join(m.group(1).strip() for m in _RAW.finditer(body)) or body.strip()
            joined = t._open and t.completions and t.completions[-1]
            t.out("\n" + said if joined else said)
        elif name == "tool_call":
            t.out("", 1)
        elif name in ("developer", "system"):
            t.inp("system")
        elif name == "tool_response":
            t.inp("tool")
        elif name == "user":
            if body.strip():
                t.inp("user")
    return _merge("ochat ChatMD", [t])


def lobechat_export(path: Path) -> dict:
    """LobeChat configuration export (``{exportType: "sessions", state: {messages, sessions, topics}, version}``;
    ``messages`` is a flat list, each with ``sessionId``, ``topicId``, ``parentId`` and ``createdAt``, not in
    chronological order). One topic is one conversation; its messages are taken in ``createdAt`` order (which
    follows the ``parentId`` chain here). A ``user`` message is input; an ``assistant`` message is one call's
    completion; a ``function`` message whose ``plugin`` names the API and arguments is the tool call the model made
    (an output with one tool call and no text), and its ``content`` is the tool's result (an input written
    ``tool``). The session's ``systemRole`` is empty here, so no system prompt is recorded."""
    data = json.loads(path.read_text(encoding="utf-8"))
    systems = {s["id"]: (s.get("config") or {}).get("systemRole") for s in data["state"].get("sessions", [])}
    topics: dict = {}
    for msg in data["state"]["messages"]:
        topics.setdefault((msg.get("sessionId"), msg.get("topicId")), []).append(msg)
    threads = []
    for (session, _topic), msgs in topics.items():
        t = _Thread(["system"] if systems.get(session) else [])
        for msg in sorted(msgs, key=lambda m: m["createdAt"]):
            if msg["role"] == "assistant":
                t.out(msg.get("content") or "")
            elif msg["role"] == "function" and msg.get("plugin"):
                t.out("", 1)
                t.inp("tool")
            else:
                t.inp(msg["role"])
        threads.append(t)
    return _merge("LobeChat export (version 4)", threads)


def aishell_transcript(path: Path) -> dict:
    """aishell ``LLMTranscript.md`` (nborwankar/aishell's markdown log of its LLM queries): entries separated by
    ``---`` lines, each ``**<time> | <PROVIDER> (<model>)**`` with ``**Query:**`` and ``**Response:**``, or
    ``**<time> | COLLATION (<providers>)**`` with ``**Responses:**`` and one ``### <PROVIDER>`` section per provider.
    Every query is sent on its own (the log records no history or system prompt): each recorded reply is one call with
    context ``[user]`` and its own conversation (a collation's replies are side-by-side single-shot calls on the same
    query: separate conversations). ``Failed (see log ...)`` in place of a reply is a failed request, not a call. The
    completion is the reply text without its ``Usage`` line. No tool calls."""
    text = path.read_text(encoding="utf-8")
    threads = []
    for entry in re.split(r"\n---\n?", text):
        if "**Query:**" not in entry:
            continue
        if "**Responses:**" in entry:
            replies = re.split(r"\n### [A-Z]+\n", entry.split("**Responses:**", 1)[1])[1:]
        else:
            replies = [entry.split("**Response:**", 1)[1]]
        for reply in replies:
            body = re.split(r"\n\*?\*?Usage:", reply)[0].strip()
            if not body or body.startswith("Failed (see log"):
                continue
            t = _Thread(["user"])
            t.out(body)
            threads.append(t)
    return _merge("aishell LLM transcript markdown", threads)


COUNTERS = {
    "chatvim-markdown": chatvim_markdown,
    "ochat-chatmd": ochat_chatmd,
    "lobechat-export": lobechat_export,
    "aishell-transcript": aishell_transcript,
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
