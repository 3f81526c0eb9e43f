"""Hand counts of the hundred-and-twenty-first held-out set (benchmarks/data/heldout_formats_121/files), computed from
the raw files with the standard library only (this script does not import tracedraft), each by its format's layout as
read in the file itself.

This set holds no file: no candidate in its area (Elixir, PHP, Dart / Flutter, Swift, Rust and Haskell LLM client
libraries and agent toolkits, and their committed recordings of real chat / tool-calling calls) met all four
conditions of the collection brief (see SOURCES.md). The script therefore has no per-format counter; it prints
nothing by default (one JSON line per file, none here) and, with ``--table``, an empty Markdown table.

Per file (were there any): the conversations (one per distinct agent thread / session / chat that holds at least one
LLM call), the LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in
those turns, the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call
with a readable context is recorded.

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
Rules for this set (written before the product was run; they would apply to any file added later):
- a file that records each request's full message list beside its reply records one call per request / reply pair;
  calls whose message lists continue an earlier call's list plus its reply are one conversation, a list starting
  afresh opens another;
- a reply's tool calls are the reply's own tool-call entries; copies of earlier replies inside later requests are
  context, and tool definitions sent with a request are not context messages;
- a file that records only a request (no reply) or only a reply (no request) holds no readable call;
- ids, timestamps, durations, headers, token counts, costs, model names and settings are metadata, not context.
Context roles: as recorded (a message made only of tool results is written ``tool``; a system prompt kept beside the
messages is written ``system`` at the head of every context).

Run: ``python benchmarks/data/heldout_formats_121/hand_count.py`` (one JSON line per file; none in this set), or with
``--table`` for a Markdown table of file, conversations, calls, tool calls.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"

# One counter per format, keyed by the file-name prefix before ``__``. None: this set holds no file.
COUNTERS: dict = {}


def count(path: Path) -> dict:
    out = COUNTERS[path.name.split("__", 1)[0]](path)
    return {"file": path.name, **out}


def main(argv: list) -> int:
    rows = [count(p) for p in sorted(FILES.iterdir())] if FILES.is_dir() else []
    if "--table" in argv:
        print("| file | conversations | calls | tool calls |")
        print("|---|---|---|---|")
        for r in rows:
            print(f"| {r['file']} | {r['conversations']} | {r['calls']} | {r['tool_calls']} |")
        return 0
    for r in rows:
        print(json.dumps(r, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
