"""Hand counts of the hundred-and-second held-out set (benchmarks/data/heldout_formats_102/files), computed from the
raw files with the standard library only (this script does not import tracedraft), each by its format's layout as
read in the file itself.

This set holds no file (see SOURCES.md: no candidate met all four conditions of the collection brief), so the script
prints no line. It is kept in the shape of the other sets' scripts so that ``benchmarks/heldout_formats.py 102`` runs
and reports an empty table.

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
Rules made explicit for this set (written before the product was run): none beyond the shared ones, as no file was
kept; the one layout examined closely and left out for its licence (Genkit dev-UI trace files, see SOURCES.md) would
have been counted one call per ``model`` action span, the flow / tool spans around it repeating its input and output.
Context roles: as recorded.

Run: ``python benchmarks/data/heldout_formats_102/hand_count.py`` (one JSON line per file; none for this set).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"

COUNTERS: dict = {}  # file-name prefix -> counter; empty: this set holds no file


def count(path: Path) -> dict:
    out = COUNTERS[path.name.split("__", 1)[0]](path)
    return {"file": path.name, **out}


def main() -> int:
    # files/ is empty (git keeps no empty folder, so it may be absent in a checkout)
    for p in sorted(FILES.iterdir()) if FILES.is_dir() else []:
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
