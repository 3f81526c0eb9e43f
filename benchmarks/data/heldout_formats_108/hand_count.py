"""Hand counts of the hundred-and-eighth held-out set (benchmarks/data/heldout_formats_108/files), computed from the
raw files with the standard library only (this script does not import tracedraft), each by its format's layout as
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
- a greger.el chat buffer (Emacs; ``.greger`` / ``.grgr`` files, and the earlier ``## ROLE:`` layout) is one
  conversation: the whole buffer is the thread greger sends back to the model on every step. Its sections are
  level-1 headings ``# SYSTEM``, ``# USER``, ``# THINKING``, ``# ASSISTANT``, ``# TOOL USE``, ``# TOOL RESULT``,
  ``# SERVER TOOL USE``, ``# WEB SEARCH TOOL RESULT`` (``## SYSTEM:`` ... ``## TOOL RESULT:`` in the earlier layout),
  each alone on its line; everything between a ``<tool.ID>`` line and its ``</tool.ID>`` line is opaque content (tool
  parameters and results, which quote files holding the same headings), and ``## name`` / ``### name`` lines inside a
  tool section are parameter names, not sections. Input sections: ``SYSTEM`` (system), ``USER`` (user),
  ``TOOL RESULT`` (tool; the client's tool output). Output sections: ``THINKING``, ``ASSISTANT``, ``TOOL USE`` (one
  client tool call each), ``SERVER TOOL USE`` and ``WEB SEARCH TOOL RESULT`` (the provider's web search, run
  server-side during the same generation: part of that reply, no tool call, no new input). One call is a maximal run
  of output sections with no input section between them (shared rule); a ``USER`` section with no text at the end of
  the buffer (greger appends an empty one when a run finishes) is no input of any call. The completion recorded is
  the text of the call's ``ASSISTANT`` sections; the thinking text and the ``Signature:`` line are part of the same
  reply, not of the completion;
- greger writes a ``TOOL RESULT`` placeholder right after each ``TOOL USE`` it streams in, so two tool uses of one
  reply appear as ``TOOL USE``, ``TOOL RESULT``, ``TOOL USE``, ``TOOL RESULT`` with no ``ASSISTANT`` / ``THINKING``
  between them, indistinguishable from two calls of which the second has no text. Files with that pattern (or with
  two text sections in a row) were left out of the set; every file kept has each ``TOOL USE`` preceded, in the same
  run of output sections, by an ``ASSISTANT`` or ``THINKING`` section, so the count does not depend on that choice.
  This script asserts it. A ``TOOL RESULT`` whose content is greger's ``Loading...`` placeholder (the buffer was
  committed while the tool ran) is still that tool's result section (an input with no following call);
- a HandyLLM ``.hprompt`` file (YAML front matter between ``---`` lines: model, request arguments, the tool schemas;
  then messages, each opened by a ``$role$`` line with optional ``{...}`` attributes) is one conversation. Messages
  ``$system$``, ``$user$`` and ``$tool$`` are inputs (``tool`` the results typed back for the tool calls); an
  ``$assistant$`` message is model output, one call per run of assistant messages with no input between them; an
  ``$assistant$ {tool}`` (or ``{type="tool_calls"}``) message holds a YAML list of tool calls, each ``- function:``
  item one tool call; the front matter is request configuration, not a message of the context;
- ids, signatures, timestamps, model names, token counts, settings and tool schemas are metadata, not context.
Context roles: as recorded (``system``, ``user``, ``tool``, ``assistant``).

Run: ``python benchmarks/data/heldout_formats_108/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"

_ROLES = ("SYSTEM", "USER", "THINKING", "ASSISTANT", "TOOL USE", "TOOL RESULT", "SERVER TOOL USE",
          "SERVER TOOL RESULT", "WEB SEARCH TOOL RESULT", "CITATIONS")
_GREGER_NEW = re.compile(r"^# (" + "|".join(_ROLES) + r")$")
_GREGER_OLD = re.compile(r"^## (" + "|".join(_ROLES) + r"):$")
_TOOL_OPEN = re.compile(r"^<tool\.([A-Za-z0-9_]+)>$")
_INPUTS = {"SYSTEM": "system", "USER": "user", "TOOL RESULT": "tool"}


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
        if text:
            self.completions[-1] = (self.completions[-1] + "\n\n" + text) if self.completions[-1] else text
        self.tools += tools

    def inp(self, role: str) -> None:
        self.ctx.append(role)
        self._open = False


def _merge(fmt: str, threads: list) -> dict:
    kept = [t for t in threads if t.completions]
    return _result(fmt, len(kept), [c for t in kept for c in t.completions],
                   [c for t in kept for c in t.contexts], sum(t.tools for t in kept))


def _greger_sections(text: str, heading: re.Pattern) -> list:
    """``[(role, body)]`` of a greger buffer, headings inside ``<tool.ID>`` ... ``</tool.ID>`` blocks ignored."""
    sections, body, tool = [], None, None
    for line in text.split("\n"):
        if tool is None:
            m = _TOOL_OPEN.match(line)
            if m:
                tool = m.group(1)
            else:
                h = heading.match(line)
                if h:
                    body = []
                    sections.append((h.group(1), body))
                    continue
        elif line == f"</tool.{tool}>":
            tool = None
        if body is not None:
            body.append(line)
    return [(role, "\n".join(lines).strip()) for role, lines in sections]


def greger_buffer(path: Path) -> dict:
    """greger.el chat buffer (Emacs LLM agent by Andreas Jansson; Markdown-like text, rule above). One buffer, one
    conversation; each maximal run of output sections (``THINKING`` / ``ASSISTANT`` / ``TOOL USE`` / ``SERVER TOOL
    USE`` / ``WEB SEARCH TOOL RESULT``) is one call, its context the input sections (``SYSTEM`` / ``USER`` / ``TOOL
    RESULT``) and earlier calls before it; each ``TOOL USE`` section is one tool call; the server-side web search is
    not a tool call. The earlier layout (``## ROLE:`` headings, ``### name`` tool parameters) is read the same way.
    Asserts the condition under which the kept files were chosen: no ``TOOL USE`` opens a run of output sections and
    no two ``ASSISTANT`` sections follow each other."""
    text = path.read_bytes().decode("utf-8")
    heading = _GREGER_OLD if text.startswith("## ") else _GREGER_NEW
    sections = _greger_sections(text, heading)
    t = _Thread()
    prev = None
    for i, (role, body) in enumerate(sections):
        if role in _INPUTS:
            if role == "USER" and not body and i == len(sections) - 1:
                break  # the empty prompt greger leaves at the end of a finished run
            t.inp(_INPUTS[role])
        else:
            assert not (role == "TOOL USE" and prev in _INPUTS), f"{path.name}: tool use right after input"
            assert not (role == "ASSISTANT" and prev == "ASSISTANT"), f"{path.name}: two text sections in a row"
            if role == "ASSISTANT":
                t.out(body)
            elif role == "TOOL USE":
                t.out(tools=1)
            else:
                t.out()
        prev = role
    layout = "## ROLE: headings" if heading is _GREGER_OLD else "# ROLE headings"
    return _merge(f"greger.el chat buffer ({layout})", [t])


_HPROMPT_MSG = re.compile(r"^\$(system|user|assistant|tool)\$(.*)$")


def handyllm_hprompt(path: Path) -> dict:
    """HandyLLM ``.hprompt`` file (prompt-and-result file of the HandyLLM toolkit and its editor extensions: YAML
    front matter, then ``$role$ {attributes}`` messages; rule above). One conversation. ``$user$`` / ``$system$`` /
    ``$tool$`` are inputs; each run of ``$assistant$`` messages is one call, its context the messages before it; an
    ``$assistant$ {tool}`` message lists the tool calls in YAML, one per ``- function:`` item. The completion is the
    assistant message's text (empty for a message made only of tool calls)."""
    text = path.read_bytes().decode("utf-8")
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
        lines = lines[end + 1:]
    messages, cur = [], None
    for line in lines:
        m = _HPROMPT_MSG.match(line)
        if m:
            cur = [m.group(1), m.group(2).strip(), []]
            messages.append(cur)
        elif cur is not None:
            cur[2].append(line)
    t = _Thread()
    for role, attrs, body in messages:
        if role != "assistant":
            t.inp(role)
            continue
        if "tool" in attrs:
            t.out(tools=sum(1 for ln in body if re.match(r"^- function:\s*$", ln)))
        else:
            t.out("\n".join(body).strip())
    return _merge("HandyLLM hprompt", [t])


def count(path: Path) -> dict:
    name = path.name
    if name.endswith(".hprompt"):
        out = handyllm_hprompt(path)
    else:
        out = greger_buffer(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
