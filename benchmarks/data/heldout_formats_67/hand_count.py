"""Hand counts of the sixty-seventh held-out set (benchmarks/data/heldout_formats_67/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself and in the code of the tool that wrote it.

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
- code a model writes inside its reply (a Python function in a fenced block, a plan in PDDL syntax) is reply text,
  not a tool call; no file of this set records a structured tool call, so every tool-call count is 0;
- a line the harness writes into its own log about what it did (AutoToS ``System message:`` blocks: test results,
  iteration counters, the final evaluation) is neither model output nor context sent to the model: the harness's
  feedback to the model, where it is sent, is logged as a further ``AutoToS prompt:`` block;
- a system prompt the tool applies at request time but does not save in the file (AutoToS's coding-assistant system
  message, set in its code) is not part of the recorded context;
- a judge's verdict stored beside a recorded call (the ``classification`` field of the calendar-planning file, the
  one-word answer of a gpt-4o classifier whose prompt is not saved) is a parsed field of another call: mentioned,
  not recorded, not counted; the recorded call is the planner model's;
- a reasoning trace saved beside the reply (``reasoning_output``) belongs to that reply (one call); the completion
  text recorded here is the reply proper (``code_content``);
- in a Markdown results page, each ``## Question N`` section holding one prompt and the model's response to it is one
  single-shot call and its own conversation: every prompt is complete in itself (the same problem and plan restated
  with a different question) and none carries an earlier response;
- a reply is the whole text the tool saved for it, leading and trailing blank lines (and the Markdown page's
  leading tab) left out.
Context roles: ``user`` for a prompt string; the roles of a chat as recorded.

Run: ``python benchmarks/data/heldout_formats_67/hand_count.py`` (one JSON line per file).
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


_AUTOTOS_MARKERS = {"AutoToS prompt:": "user", "Model response:": "assistant", "System message:": "log"}


def autotos_clean_log(path: Path) -> dict:
    """AutoToS clean log text (IBM/AutoToS ``src/clean_logs/<domain>/<model>-<val|noval>_logs/script_log_*.txt``:
    the ``logging`` file of one AutoToS run, where a successor function and a goal test for BlocksWorld are obtained
    from the model and checked by unit tests; the published clean logs keep three kinds of blocks, each opened by a
    marker line: ``AutoToS prompt:`` (a user message sent to the model), ``Model response:`` (the model's reply) and
    ``System message:`` (the harness's own notes: test results, iteration counters, the final evaluation)). One file
    is one run and one chat: ``DomainTestBase.prompt_model`` appends every prompt and reply to the same ``messages``
    list, so each later call's context holds every earlier prompt and reply: one conversation. Each ``Model
    response:`` block is one call, its completion the block's text; its context is the ``AutoToS prompt:`` and
    ``Model response:`` blocks before it (``System message:`` blocks are not sent; the system prompt set in code is
    not saved). Code in a reply is text: no tool calls."""
    t = _Thread()
    role, buf = None, []

    def flush() -> None:
        text = "\n".join(buf).strip("\n")
        if role == "assistant":
            t.out(text)
        elif role == "user":
            t.inp("user")

    for line in path.read_text(encoding="utf-8").split("\n"):
        if line in _AUTOTOS_MARKERS:
            flush()
            role, buf = _AUTOTOS_MARKERS[line], []
        else:
            buf.append(line)
    flush()
    return _merge("AutoToS clean log text", [t])


_SECTION = re.compile(r"^## Question \d+$", re.M)
_DETAILS = re.compile(r"<details><summary>(Prompt|Response)</summary>(.*?)\n</details>", re.S)


def contrastive_planning_md(path: Path) -> dict:
    """Contrastive-Planning LLM reasoning results Markdown (g-nitin/Contrastive-Planning
    ``code/llm_reasoning/outputs/<model>_output.md``, written by ``reason.py``'s ``get_responses``: a ``# <model>``
    title, then per prompt a ``## Question N`` section with a ``<details><summary>Prompt</summary>`` block (the
    prompt text, indented) and a ``<details><summary>Response</summary>`` block (the reply after a blank line and a
    tab)). Each prompt is sent alone as one user message (no system prompt, no history), so each section is one
    single-shot call and its own conversation (3 here): context ``user``, completion the response block's text
    without its leading blank lines and tab. No tool calls."""
    text = path.read_text(encoding="utf-8")
    threads = []
    for section in _SECTION.split(text)[1:]:
        blocks = dict((kind, body) for kind, body in _DETAILS.findall(section))
        t = _Thread(["user"])
        t.out(blocks["Response"].strip("\n").lstrip("\t").strip("\n"))
        threads.append(t)
    return _merge("Contrastive-Planning LLM reasoning results Markdown", threads)


def calendar_planning_spurious(path: Path) -> dict:
    """calendar-planning spurious-reasoning record JSON (rikhil-amonkar/calendar-planning
    ``cleaned/<method>/<model>/<task>/<example_id>_dsr1_py_spurious_reasoning.json``, written with ``json.dump(indent=2,
    ensure_ascii=False)`` by the repository's classification script: ``{model, method, task, example_id,
    source_run_directory, original_prompt, reasoning_output, code_content, classification}``, copied from one run's
    ``conversation.json``: the user prompt, the assistant message's ``reasoning_content`` and ``content``). One file
    is one recorded call of the planner model (DeepSeek-R1 writing a Python trip planner for a Natural Plan task): one
    conversation, context ``user`` (``original_prompt``), completion ``code_content``, ``reasoning_output`` its
    reasoning. ``classification`` is the parsed one-word verdict of a separate gpt-4o judge call whose prompt and reply
    are not saved: not counted. No tool calls."""
    rec = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread(["user"] if rec.get("original_prompt") else [])
    t.out(rec.get("code_content") or "")
    return _merge("calendar-planning spurious-reasoning record JSON", [t])


COUNTERS = {
    "autotos-clean-log": autotos_clean_log,
    "contrastive-planning-md": contrastive_planning_md,
    "calendar-planning-spurious": calendar_planning_spurious,
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
