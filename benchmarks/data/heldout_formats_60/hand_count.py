"""Hand counts of the sixtieth held-out set (benchmarks/data/heldout_formats_60/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
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
- a system prompt (a character definition, an agent's instructions, a prompt file) that the tool builds or loads at
  request time but does not write into the file is not part of the recorded context; where the file names it (a
  prompt file's path) or records one value filled into it (a location), that is written ``system``;
- in the ai-plays-zork run logs the game's output (``GAME`` records) is the user input of the next call (the
  harness sends it as ``Game answers with ...``); the harness's opening ``look`` is its own command, not a reply, and
  is not written as a ``CMD`` record; a ``CMD`` record is the command the harness took from the model's reply (the
  reply's last line): where an ``AI`` text record precedes it, it repeats that reply and is not a further call, and
  where none does, the reply was a single line that the tool did not log as ``AI`` and the ``CMD`` record is that
  reply, one call; ``ROOM`` and ``WARN`` records are the harness's room tracker, not model output; the first ``AI``
  record (``ai: <class ...>``) is the agent's configuration, not a call;
- an ``AI    TOOL call <name>`` record is one model response holding one function call (the tool logs only the
  function name; the harness answers each with a result it does not log, so the next model output is a new call);
- in a role-play interview record the recorded reply is the string the tool saved (its post-processing of the raw
  reply kept); each question was put to the character agent with an emptied dialogue history, so each record is one
  single-shot call and its own conversation;
- each ``Test:`` block of a prompt-variant result file is one single-shot request (one system prompt, one user
  message, no history) and its own conversation; its ``Output:`` text up to the ``Latency:`` line is the reply.
Context roles: as recorded (``tool`` for an unlogged function result the model received).

Run: ``python benchmarks/data/heldout_formats_60/hand_count.py`` (one JSON line per file).
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


def _prefixed_records(path: Path) -> list:
    """The records of an ai-plays-zork log: a 5-character prefix and a space, then the first line of the message;
    each further line of the message is indented by 6 spaces."""
    records: list = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.startswith("      ") and records:
            records[-1][1] += "\n" + line[6:]
        elif line.strip():
            records.append([line[:5].strip(), line[6:]])
    return records


def _zork_log_thread(path: Path) -> _Thread:
    t = _Thread(["system"])  # the agent's instructions (written to the run's system_prompt.md, not to this file)
    prev = None
    for kind, text in _prefixed_records(path):
        if kind == "GAME":
            t.inp("user")
        elif kind == "AI" and text.startswith("TOOL call "):
            t.out("", 1)
            t.inp("tool")
        elif kind == "AI" and not text.startswith("ai: "):
            t.out(text)
        elif kind == "CMD" and not (prev and prev[0] == "AI" and not prev[1].startswith(("TOOL call ", "ai: "))):
            t.out(text)
        prev = (kind, text)
    return t


def ai_plays_zork_log(path: Path) -> dict:
    """ai-plays-zork run log ``log.txt`` (codecop/ai-plays-zork's ``Log`` class, ``src/log.py`` at ``87d26d1``:
    ``START``, ``AI   ``, ``GAME ``, ``CMD  `` prefixes, continuation lines indented by 6 spaces), written by the
    Mistral agent loop with tools (``src/mistral_ai.py``: one Mistral Conversations API conversation per run, the
    game output appended as a user message each turn; a ``function.call`` output is logged as ``TOOL call <name>``
    and answered with a function result, a message output with several lines is logged as ``AI`` and its last line
    becomes the ``CMD``). One run, one conversation. Calls: each ``TOOL call`` record (a response holding one
    function call, no text logged) and each ``AI`` text record (here every ``CMD`` follows one); tool calls: the
    ``TOOL call`` records."""
    return _merge("ai-plays-zork run log (log.txt)", [_zork_log_thread(path)])


def ai_plays_zork_nicelog(path: Path) -> dict:
    """ai-plays-zork run log ``nice_log.txt`` (``src/util/nice_log.py`` at ``8f42736``: the same prefix layout plus
    ``ROOM `` and ``WARN `` records of the room tracker), written by the OpenAI Agents SDK loop
    (``src/ai/openai/openai_loop_ai.py``: each turn re-runs the agent on the previous run's ``to_input_list()`` plus
    the new game output, so one conversation; no tools configured). The model's replies here are all single lines:
    none is logged as ``AI``, each is the ``CMD`` record that follows the game output it answered. One conversation;
    one call per ``CMD`` record; no tool calls."""
    return _merge("ai-plays-zork run log (nice_log.txt)", [_zork_log_thread(path)])


def incharacter_interview(path: Path) -> dict:
    """InCharacter interview results JSON (``code/personality_tests.py`` ``interview()`` at ``0108985``: a JSON array
    of ``{id, question, response_open, query_style}``, one record per questionnaire item put to a ChatHaruhi
    role-playing agent). The agent's dialogue history is emptied before each question, so each record is one
    single-shot call and its own conversation; the context recorded is the question (``user``; the character's
    system prompt and the retrieved story excerpts are not saved); the reply is ``response_open``. No tool calls."""
    threads = []
    for rec in json.loads(path.read_text(encoding="utf-8")):
        t = _Thread()
        t.inp("user")
        t.out(rec["response_open"])
        threads.append(t)
    return _merge("InCharacter interview results JSON", threads)


def tt_zork1_prompt_variants(path: Path) -> dict:
    """tt-zork1 prompt-variant result text (written by ``scripts/test-prompt-variants.sh``: a header naming the
    prompt file and sampling parameters, then per test ``Test: <name>``, ``Input: <user message>`` (translator) or
    ``Location: <value filled into the system prompt>`` (artist), ``Output: <reply, possibly several lines>``,
    ``Latency: <ms>``, a blank line). Each test is one chat-completions request with a system prompt and one user
    message, no history: one single-shot call and its own conversation each. Context recorded: ``user`` (the input)
    for the translator, ``system`` (the location) for the artist, whose fixed user message is not written. No tool
    calls."""
    threads = []
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("Test: "):
            role = "user" if lines[i + 1].startswith("Input: ") else "system"
            j = i + 2
            assert lines[j].startswith("Output:"), lines[j]
            reply = [lines[j][len("Output:"):].removeprefix(" ")]
            j += 1
            while not lines[j].startswith("Latency: "):
                reply.append(lines[j])
                j += 1
            t = _Thread()
            t.inp(role)
            t.out("\n".join(reply).lstrip("\n"))
            threads.append(t)
            i = j
        i += 1
    return _merge("tt-zork1 prompt-variant results text", threads)


COUNTERS = {
    "ai-plays-zork-log": ai_plays_zork_log,
    "ai-plays-zork-nicelog": ai_plays_zork_nicelog,
    "incharacter-interview": incharacter_interview,
    "tt-zork1-prompt-variants": tt_zork1_prompt_variants,
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
