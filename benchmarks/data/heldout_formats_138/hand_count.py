"""Hand counts of the hundred-and-thirty-eighth held-out set (benchmarks/data/heldout_formats_138/files), computed from
the raw files with the standard library only (this script does not import tracedraft), each by its format's layout as
read in the file itself.

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
- a Ray Assistant experiment-responses file (``{config: {experiment_name, llm, temperature, system_content,
  assistant_content, num_chunks, ...}, results: [{question, sources, document_ids?, answer, llm?}]}``) records one
  single-shot call per ``results`` entry: its context is the run's system prompt (``config.system_content``, kept
  once beside the results, so written ``system`` at the head of every context) and the user message built from the
  entry's ``question`` (written ``user``; the runner sent ``"query: QUESTION, context: []"``, the empty list being the
  zero retrieved chunks of a ``num_chunks: 0`` run); its completion is ``answer``. ``config.assistant_content`` is
  empty in every file kept, so no assistant message precedes the question. Each entry is its own conversation (the
  questions are unrelated; no entry continues another). No tool calls exist in this layout;
- an entry whose ``answer`` is empty would be a failed request (the runner returns ``""`` after its retries) and
  would not be counted; none of the files kept has one;
- ``sources`` / ``document_ids`` (empty lists in these ``without-context`` runs), the embedding model, chunk sizes,
  paths, ``num_samples`` and the per-entry ``llm`` name are metadata, not context.
Context roles: as listed above (``system``, ``user``).

Run: ``python benchmarks/data/heldout_formats_138/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def ray_assistant(path: Path) -> dict:
    """Ray Assistant (ray-project/llm-applications) experiment responses JSON, written by its
    ``rag.generate.generate_responses`` (``{config, results}``): one single-shot chat-completion call per ``results``
    entry, context ``system`` (the config's ``system_content``, when set) + ``user`` (the question), completion the
    entry's ``answer``; every call its own conversation; no tool calls."""
    d = json.loads(path.read_text(encoding="utf-8"))
    cfg = d["config"]
    head = (["system"] if cfg.get("system_content") else []) + (["assistant"] if cfg.get("assistant_content") else [])
    completions, contexts = [], []
    for r in d["results"]:
        if not r.get("answer"):
            continue  # failed request (none in this set)
        completions.append(r["answer"])
        contexts.append(head + ["user"])
    return _result("Ray Assistant experiment responses JSON", len(completions), completions, contexts, 0)


COUNTERS = {
    "ray-assistant": ray_assistant,
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
