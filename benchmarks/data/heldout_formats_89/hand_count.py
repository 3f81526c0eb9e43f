"""Hand counts of the eighty-ninth held-out set (benchmarks/data/heldout_formats_89/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

This set holds no file: no recording in its area (UI and front-end generation agents: screenshot-to-code,
design-to-code, web-page / app builders, component generators, slide and diagram generators) met all the conditions of
the collection brief (see SOURCES.md, "Considered and left out"). The script therefore has no counting function and
prints nothing; it is kept so that the set has the layout of the others and so that any file added later must come with
its own counter and rule.

Per file (none here): the conversations (one per distinct agent thread / session / chat that holds at least one LLM
call), the LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those
turns, the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded.

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
Rules made explicit for this set (written before anything was measured; they were used to judge the candidates listed
in SOURCES.md and would apply to any file of the area):
- a generated artefact saved on its own (an HTML page, a component source file, an SVG, a slide deck, a Mermaid or
  PlantUML text) without the prompt or messages it answered records no call: its context is not recorded;
- an assistant message that the tool wrote itself in place of a reply ("I ran into an issue while generating the
  diagram. Please try again.") after a failed request is not a call;
- a multi-pass generator's stored pass outputs count as calls only where the pass's own input (its messages) is stored
  beside its output; outputs parsed into fields (a design plan, a validation verdict) count as mentioned, not recorded;
- HTML, CSS, JSX, SVG or diagram text written as the reply's text is the reply, not a tool call; an artifact / file
  action emitted as a function or tool-call part is a tool call.
Context roles: as recorded (``user`` for a bare task or query string).

Run: ``python benchmarks/data/heldout_formats_89/hand_count.py`` (one JSON line per file; no line for this set).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


# Counters by file-name prefix: none, since the set holds no file. A file added later needs its own counter here.
COUNTERS: dict = {}


def count(path: Path) -> dict:
    name = path.name
    for prefix, counter in COUNTERS.items():
        if name.startswith(prefix):
            return {"file": name, **counter(path)}
    raise SystemExit(f"no counter for {name}: every file of the set needs its own counting function and rule")


def main() -> int:
    if not FILES.is_dir():
        return 0
    for p in sorted(FILES.iterdir()):
        if p.name.startswith("."):
            continue
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
