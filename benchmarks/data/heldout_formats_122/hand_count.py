"""Hand counts of the hundred-and-twenty-second held-out set (benchmarks/data/heldout_formats_122/files), computed
from the raw files with the standard library only (this script does not import tracedraft), each by its format's
layout as read in the file itself.

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
- a plain-text chat log whose turns open with a line holding only a speaker label (``User:`` for the researcher,
  ``LLM:`` for the model; CRLF line ends) is one chat, so one conversation: each later ``User:`` turn is sent in the
  same web-interface chat, after the earlier turns and replies;
- each ``LLM:`` block is one call (one reply to the ``User:`` turn before it); its context is every turn above it;
- the numbered sections of a reply (trend identification ... final action) and the Tree-of-Thoughts "branches" a
  reply weighs are the text of that one reply, not separate calls;
- the ``ACTIONS: [...]`` line closing each reply is text the researcher read and applied to a simulator by hand,
  not a client-executed tool call: no tool calls. Any code the web model ran while thinking is not recorded and
  would be server-side anyway;
- the CSV aggregates the researcher attached to each ``User:`` turn are not in the file; the turn text that is
  recorded is the context;
- nothing in these files is metadata (no ids, timestamps or usage are recorded).
Context roles: as recorded (``user`` for a ``User:`` turn, ``assistant`` for an ``LLM:`` block); no system prompt
is recorded (the first ``User:`` turn carries the role instructions).

Run: ``python benchmarks/data/heldout_formats_122/hand_count.py`` (one JSON line per file on stdout; a table of
file, conversations, calls and tool calls on stderr).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_LABEL = re.compile(r"^(User|LLM):\r?\n", re.M)


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def econgoals_chatlog(path: Path) -> dict:
    """rouzbeh-rs/can-llms-balance-competing-economic-goals chat log (``logs/<condition>/<condition>.txt``: the
    researcher's copy of one Gemini (Thinking Mode) web-interface chat in which the model acts as a macroeconomic
    governor of a simulated three-currency economy; plain UTF-8 text with CRLF line ends, turns opened by a line
    ``User:`` or ``LLM:``). The file is one chat: one conversation. Each ``LLM:`` block is one call whose context is
    all turns above it and whose completion is the block's text (surrounding blank lines stripped). The turns
    alternate User / LLM, starting with User and ending with LLM. No tool calls (the closing ``ACTIONS:`` line is
    reply text)."""
    text = path.read_text(encoding="utf-8")
    pieces = _LABEL.split(text)
    assert not pieces[0].strip(), "text before the first label"
    completions, contexts, ctx = [], [], []
    for label, body in zip(pieces[1::2], pieces[2::2]):
        if label == "LLM":
            contexts.append(list(ctx))
            completions.append(body.strip())
            ctx.append("assistant")
        else:
            ctx.append("user")
    return _result("econgoals plain-text web chat log (User: / LLM:)", 1 if completions else 0, completions,
                   contexts, 0)


COUNTERS = {
    "econgoals-chatlog": econgoals_chatlog,
}


def count(path: Path) -> dict:
    out = COUNTERS[path.name.split("__", 1)[0]](path)
    return {"file": path.name, **out}


def main() -> int:
    rows = []
    for p in sorted(FILES.iterdir()):
        row = count(p)
        rows.append(row)
        print(json.dumps(row, ensure_ascii=False))
    print("| file | conversations | calls | tool calls |", file=sys.stderr)
    print("|---|---|---|---|", file=sys.stderr)
    for row in rows:
        print(f"| {row['file']} | {row['conversations']} | {row['calls']} | {row['tool_calls']} |", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
