"""Hand counts of the seventy-fifth held-out set (benchmarks/data/heldout_formats_75/files), computed from the raw
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
- a search API's response (ranked results, snippets, page contents, related searches, answer boxes scraped by the
  search provider) is retrieved data, not an LLM call, whichever provider returned it;
- an answer a search provider generated with a model (a non-empty ``raw.answer``, as the ``claude_search`` provider's
  Claude-with-web-search reply) is one recorded call whose recorded context is the trace's ``query`` (written
  ``user``); the same text stored again as ``raw.search_response.answer`` is that one call, not two; the provider's
  own server-side web searches are not tool calls; an empty ``raw.answer`` (``""``) or a ``null`` answer field holds
  no call;
- a provider's ``reader_answer`` (the arena's reader model answering the query from that provider's ``evidence``) is
  one single-shot call whose recorded context is the query plus that evidence list (the reader's prompt template is
  not in the file; the context is written ``user``); a ``null`` ``reader_answer`` (a provider that returned no
  evidence) holds no call;
- every recorded call is its own conversation: no call's context continues another call's context and reply (the
  reader calls of different providers see different evidence; a provider's native answer and the reader's answer for
  that provider are independent calls);
- the pairwise judge calls of the run are not in these per-query trace files (only mentioned in the run's other
  artefacts) and are not counted; latencies, result counts, request ids, costs and scores are metadata, not context.
Context roles: as recorded (``user`` for a query or a query with evidence); no system prompt is recorded.

Run: ``python benchmarks/data/heldout_formats_75/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def agentic_search_arena_trace(path: Path) -> dict:
    """Agentic Search Arena per-query trace JSON (``docs/example-run/traces/query_NNNN.json``, written by the arena's
    runner with ``--save-traces``: ``{query, category, repeat, providers: {<provider>: {raw: {answer?,
    search_response, provider_latency}, latency_ms, n_results, evidence: [{url, title, content}] | null,
    reader_answer: str | null}}}``, providers in file order). For each provider, in file order: a non-empty
    ``raw.answer`` is one call (the provider's model-written answer; its copy in ``raw.search_response.answer`` is the
    same call), context ``user`` (the query); then a non-null, non-empty ``reader_answer`` is one call (the arena's
    reader answering from the provider's evidence), context ``user`` (query and evidence). Every call is its own
    conversation; search responses are data, not calls; no tool calls (server-side web searches not counted)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts = [], []
    for provider in data["providers"].values():
        native = (provider.get("raw") or {}).get("answer")
        if isinstance(native, str) and native.strip():
            completions.append(native)
            contexts.append(["user"])
        reader = provider.get("reader_answer")
        if isinstance(reader, str) and reader.strip():
            completions.append(reader)
            contexts.append(["user"])
    return _result("Agentic Search Arena per-query trace JSON", len(completions), completions, contexts, 0)


COUNTERS = {
    "agentic-search-arena": agentic_search_arena_trace,
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
