"""Hand counts of the seventy-eighth held-out set (benchmarks/data/heldout_formats_78/files), computed from the raw
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
- a response cache that maps a prompt to the list of replies received for it records one call per list element: the
  tool appends one reply to the prompt's list each time it queries the model for that prompt (LMD's
  ``utils/cache.py``: ``add_cache(key, value)`` appends ``value`` to ``global_cache[key]`` and rewrites the JSON file);
  the call's context is the key (the user's text prompt), written ``user``; its completion is the list element;
- the prompt template and in-context examples the tool wraps around the key before sending it are not recorded in the
  file; they are not part of the recorded context (the key alone is);
- every cached reply is its own single-shot conversation; replies to the same prompt (repeated queries, one list)
  are separate calls and separate conversations, even where two replies are identical (nothing is deduplicated);
- a reply that proposes an empty layout (``[]`` followed by its background / negative prompt lines) is still a reply;
  the completion is the text as saved, a trailing empty ``Negative prompt: `` line included;
- the box lists, ``Frame N:`` lines and ``Reasoning:`` text inside a reply are reply content, not tool calls;
- the model named in the file name (``gpt-4``, ``gpt-3.5-turbo``, ``gpt-4-1106-preview``) and the cache version are
  metadata, not context.
Context roles: ``user`` for the prompt key (no system prompt is recorded).

Run: ``python benchmarks/data/heldout_formats_78/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _pairs(path: Path) -> list:
    """The top-level object as its (key, value) pairs in file order (a repeated key would be kept twice; none is)."""
    return json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=lambda pairs: pairs)


def llm_response_cache(path: Path, fmt: str) -> dict:
    """LLM-grounded Diffusion (LMD) / LLM-grounded Video Diffusion (LVD) LLM response cache JSON
    (``cache/cache_<benchmark>_v0.1_<model>.json``, written in LMD by ``utils/cache.py``'s ``add_cache`` with
    ``json.dump(..., indent=4)``: one object ``{prompt: [reply, reply, ...]}``). Each element of each list is one
    single-shot call (its own conversation) whose context is the key (``user``) and whose completion is the element:
    in LMD an object layout ``[('a cat', [x, y, w, h]), ...]`` with ``Background prompt:`` and ``Negative prompt:``
    lines, in LVD a ``Reasoning:`` paragraph, ``Frame 1:`` to ``Frame 6:`` box lists and a ``Background keyword:``
    line. Calls are listed in file order (keys in order, each list in order). No tool calls, no system prompt
    recorded."""
    completions, contexts = [], []
    for prompt, replies in _pairs(path):
        for reply in replies:
            completions.append(reply)
            contexts.append(["user"] if prompt else [])
    return _result(fmt, len(completions), completions, contexts, 0)


def lmd_cache(path: Path) -> dict:
    """LLM-grounded Diffusion (TonyLianLong/LLM-groundedDiffusion) response cache: see ``llm_response_cache``."""
    return llm_response_cache(path, "LLM-grounded Diffusion LLM response cache JSON")


def lvd_cache(path: Path) -> dict:
    """LLM-grounded Video Diffusion (TonyLianLong/LLM-groundedVideoDiffusion, built on LMD's code, with its
    own ``utils/cache.py``) response cache: the same layout and file naming, see ``llm_response_cache``."""
    return llm_response_cache(path, "LLM-grounded Video Diffusion LLM response cache JSON")


COUNTERS = {
    "lmd-cache": lmd_cache,
    "lvd-cache": lvd_cache,
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
