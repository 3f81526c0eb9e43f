"""Hand counts of the sixty-second held-out set (benchmarks/data/heldout_formats_62/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
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
Rules made explicit for this set (written before the product was run):
- the files are Python ``logging`` text logs (``<date> <time>,<ms> - clever_prover - INFO - <message>``); a record is
  its first line and every following line up to the next line that starts a record (messages span many lines);
- a record ``[<STAGE>] Raw prompt used:`` followed by a Python-repr list of message dicts is the recorded context of
  one LLM call: the list, read with ``ast.literal_eval``, is the context and its roles are the context roles; few-shot
  examples sent as ``system`` messages with a ``name`` (``example_user``, ``example_assistant``) are written
  ``system``; the raw text the record prints after the list repeats the last message's content (checked below) and is
  not a further message;
- the call's completion is the body of the record its stage writes after ``Got a valid response``: the implementation
  planner's ``Implementation planner generated implementation plan:``, the implementer's ``[IMPLEMENTER] Raw
  implementation generated:`` (the next record, ``Implementer generated implementation:``, is the same reply with its
  code fence stripped: the same call, not a new one), the proof planner's ``Proof planner generated raw proof
  plan:``; ``Got a valid response. Reason: stop`` and ``... generated.`` records are status lines;
- each stage builds its prompt afresh (its own system prompt and few-shot examples) and quotes an earlier stage's
  reply inside its user text (``[PLAN]``, ``[FUNCTION IMPLEMENTATION]``); that does not continue the earlier call's
  context, so every call is its own conversation (single-shot calls of a pipeline);
- the pipeline's own checks (``Check implementation output:`` with ``Unable to find a counter-example``) run on code
  the tool extracted from a reply; they are neither a tool call the model emitted nor an input message of any
  recorded call; code and ``#test`` lines inside a reply are text, not tool calls;
- the model is not named in the files (the directory names say gpt-4o-mini); no system prompt is kept outside the
  recorded message lists.
Context roles: as recorded in each call's message list.

Run: ``python benchmarks/data/heldout_formats_62/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - clever_prover - INFO - ", re.MULTILINE)
_PROMPT = re.compile(r"^\[(?P<stage>[A-Z ]+)\] Raw prompt used:\n")
_REPLY_HEADERS = {
    "IMPLEMENTATION PLANNER": "Implementation planner generated implementation plan:\n",
    "IMPLEMENTER": "[IMPLEMENTER] Raw implementation generated:\n",
    "PROOF PLANNER": "Proof planner generated raw proof plan:\n",
}


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _records(text: str) -> list:
    """The log's record messages (the text after ``- INFO - `` up to the next record line, final newline removed)."""
    starts = list(_RECORD.finditer(text))
    out = []
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        out.append(text[m.end():end].removesuffix("\n"))
    return out


def _message_list(body: str) -> list:
    """The Python-repr message list at the head of a ``Raw prompt used`` body; the shortest prefix ending in ``}]``
    that parses, checked against the raw echo of the last message printed after it."""
    for m in re.finditer(r"\}\]\n", body):
        try:
            msgs = ast.literal_eval(body[:m.start() + 2])
        except (SyntaxError, ValueError):
            continue
        echo = body[m.end():]
        assert echo == msgs[-1]["content"], "the text after the list is not the last message's content"
        return msgs
    raise ValueError("no message list")


def clever_prover_log(path: Path) -> dict:
    """CLEVER prover run log (trishullab/clever-prover ``src/clever_prover/.logs/.../clever_prover.log``, Python
    logging text: one problem solved by a three-stage pipeline, implementation planner -> implementer -> proof
    planner). Each ``[STAGE] Raw prompt used:`` record opens one call whose context is the repr list of messages
    (roles ``system``, ``system`` (example_user), ``system`` (example_assistant), ``user``); its completion is the
    stage's ``... generated ...:`` record after ``Got a valid response``. Each stage's prompt is built afresh: one
    conversation per call (3 / 3 / 0 in each file). No tool calls."""
    records = _records(path.read_text(encoding="utf-8"))
    completions, contexts = [], []
    pending = None
    for rec in records:
        m = _PROMPT.match(rec)
        if m:
            assert pending is None, "a prompt before the previous call's reply"
            pending = m.group("stage")
            contexts.append([msg["role"] for msg in _message_list(rec[m.end():])])
            continue
        if pending is not None and rec.startswith(_REPLY_HEADERS[pending]):
            completions.append(rec[len(_REPLY_HEADERS[pending]):])
            pending = None
    assert pending is None and len(completions) == len(contexts)
    return _result("CLEVER prover run log (Python logging text)", len(completions), completions, contexts, 0)


COUNTERS = {
    "clever-prover": clever_prover_log,
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
