"""Hand counts of the sixty-eighth held-out set (benchmarks/data/heldout_formats_68/files), computed from the raw
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
- one file is one player's chat: the game engine keeps one message list per player and the file is that list, so a
  file is one conversation, also where two files record the two sides of the same game (the other player's
  messages reach each side as text inside a ``user`` message, never as that side's own replies);
- each ``assistant`` record is one call (no two are adjacent in this set); its ``content`` is the whole reply string,
  ``<message>`` / ``<finalize>`` tags included; a ``<finalize>`` reply holding a JSON split is text, not a tool call;
  ``is_error`` (false throughout), ``is_finalization``, ``round_nb`` and ``score`` (the return credited to the reply
  for training) are metadata;
- a trailing record with role ``system`` that carries ``game_info`` and ``agent_name`` and no ``content`` is the
  game's outcome written after the last turn: it is metadata, neither a call nor part of any call's context.
Context roles: as recorded (``user`` and ``assistant``; no system prompt is sent).

Run: ``python benchmarks/data/heldout_formats_68/hand_count.py`` (one JSON line per file).
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


def _player_chat(records: list) -> _Thread:
    t = _Thread()
    for rec in records:
        if rec["role"] == "system" and "content" not in rec:
            continue  # the end-of-game game_info record: metadata, not context
        if rec["role"] == "assistant":
            t.out(rec["content"])
        else:
            t.inp(rec["role"])
    return t


def llm_negotiation_raw_data(path: Path) -> dict:
    """llm_negotiation (dereckpiche/llm_negotiation, the ``mllm`` negotiation self-play framework) per-player match
    log ``{player}/raw_data/match_{n}.json``: a JSON array of that player's chat records ``{role, content, is_error,
    round_nb, is_finalization?}`` (``user`` = the game's prompt to the player, ``assistant`` = the player's reply),
    closed by one ``{role: "system", game_info: {...}, agent_name}`` record with no ``content``. One file is one
    conversation; each ``assistant`` record is one call whose context is every earlier ``user`` / ``assistant``
    record (the end record is left out); no tool calls."""
    records = json.loads(path.read_text(encoding="utf-8"))
    return _merge("llm_negotiation per-player raw_data match JSON", [_player_chat(records)])


def llm_negotiation_training_data(path: Path) -> dict:
    """llm_negotiation per-player training file ``{player}/training/training_data_{n}.json``: the same chat records
    as the match log, each ``assistant`` record carrying a ``score`` (its credited return), and no end-of-game
    record. One file is one conversation; each ``assistant`` record is one call whose context is every earlier
    record; ``score`` is metadata; no tool calls."""
    records = json.loads(path.read_text(encoding="utf-8"))
    return _merge("llm_negotiation per-player training_data JSON", [_player_chat(records)])


COUNTERS = {
    "raw_data": llm_negotiation_raw_data,
    "training": llm_negotiation_training_data,
}


def count(path: Path) -> dict:
    tool, rest = path.name.split("__", 1)
    assert tool == "llm-negotiation", path.name
    kind = rest.split("__")[2]
    out = COUNTERS[kind](path)
    return {"file": path.name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
