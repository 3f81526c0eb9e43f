"""Hand counts of the ninety-second held-out set (benchmarks/data/heldout_formats_92/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

This set holds no file (see SOURCES.md: no candidate of the area met all conditions of the brief), so the script has
no counter and prints nothing; it is kept so that the set has the same layout as the others.

Per file (none here): the conversations (one per distinct agent thread / session / chat that holds at least one LLM
call), the LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those
turns, the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with
a readable context is recorded.

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
Rules made explicit for this set (written before anything was measured; they decided what was left out):
- a model's raw reply saved without the request that produced it (an API response kept as a parser sample, a
  message-batch result) records a reply but no context: it is not a readable call, and a file made only of such
  replies was not kept;
- a generated artefact (an OpenSCAD / bpy / CadQuery / Manim script, an SVG, a MIDI file, a render) is the product of
  a call, not a recording of it, even where the tool wrote it verbatim from the reply;
- request metadata (URLs, HTTP statuses, body hashes, timings, token counts, file links) records that a call happened,
  not its context or reply: mentioned, not recorded;
- an application's saved state that keeps a reply (the current code) but not the prompt sent, or keeps a review only
  as parsed fields, records no call with a readable context.
Context roles: as recorded (``user`` for a bare task or prompt string).

Run: ``python benchmarks/data/heldout_formats_92/hand_count.py`` (one JSON line per file; none for this set).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"

# format key (the file name's part before the first "__") -> counter; empty: this set holds no file
COUNTERS: dict = {}


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def count(path: Path) -> dict:
    key = path.name.split("__", 1)[0]
    if key not in COUNTERS:
        raise SystemExit(f"no counter for {path.name}: this set's hand counts cover no file")
    return {"file": path.name, **COUNTERS[key](path)}


def main() -> int:
    if not FILES.is_dir():
        return 0
    for p in sorted(FILES.iterdir()):
        if p.is_file():
            print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
