"""Hand counts of the seventy-fourth held-out set (benchmarks/data/heldout_formats_74/files), computed from the raw
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
- a rollout record that keeps the same episode twice, once as per-turn records (``turns``: each with the assistant
  message, its usage and the tool results it got) and once as the final chat list (``messages``: system, user,
  assistant, tool, ...), holds one conversation; each assistant message is one call, counted once (the per-turn
  copy and the list copy are the same call);
- an assistant message with tool calls and empty or absent ``content`` is a call all the same; its
  ``reasoning_content`` belongs to it (not a call of its own); its completion text is ``content`` as saved ("" where
  empty or absent); each entry of its ``tool_calls`` is one tool call;
- a tool result (``role: tool``) is tool input, written ``tool`` in later contexts; an episode that stops at its turn
  limit right after a tool result has no further call (nothing answers that last result);
- the task specification, ``compact_memory``, ``verification`` (rewards, diagnostics, state transitions), usage and
  cost records are metadata, not calls;
- a question-answer cache (an object mapping each question to the answer the model gave) holds one single-shot call
  per entry, each its own conversation: its recorded context is the question (written ``user``; the fixed system
  prompt the agent sent with it is not recorded), its completion is the answer as saved (the ``Answer:`` prefix
  kept); an answer that says it does not know ("Answer: Unknown") is still a call;
- questions that resemble each other (the same task asked with other numbers) are separate entries and separate
  calls: the cache key is the question text.
Context roles: as recorded in the chat list; a cache entry's context is ``["user"]``.

Run: ``python benchmarks/data/heldout_formats_74/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def fle_rollout(path: Path) -> dict:
    """Factorio Learning Environment benchmark rollout trajectory JSON (written by FLE's benchmark runner in
    ``mode: rollout``: ``{mode, run_at, model, model_base_url, ..., task, stop_reason, ..., turns: [{turn,
    elapsed_seconds, finish_reason, assistant: {role, content?, tool_calls, reasoning_content?},
    request_context_chars, usage, tool_results: [{tool_call_id, name, content, raw}]}], messages: [system, user,
    assistant, tool, ...], compact_memory, verification}``; CRLF line ends). One file is one episode: one
    conversation. Each assistant message of ``messages`` is one call (the same message is repeated as
    ``turns[i].assistant``: checked equal, counted once); its context is the roles of the messages before it; its
    completion is ``content`` ("" where empty or absent; ``reasoning_content`` belongs to the call); each
    ``tool_calls`` entry is one tool call. The episode stops at its turn limit after a tool result: no call answers
    that last result."""
    data = json.loads(path.read_text(encoding="utf-8"))
    messages = data["messages"]
    assistants = [m for m in messages if m.get("role") == "assistant"]
    turn_assistants = [t["assistant"] for t in data.get("turns", []) if t.get("assistant")]
    assert assistants == turn_assistants, "turns and messages disagree"
    completions, contexts, tools, roles = [], [], 0, []
    for m in messages:
        if m.get("role") == "assistant":
            completions.append(m.get("content") or "")
            contexts.append(list(roles))
            tools += len(m.get("tool_calls") or [])
        roles.append(m["role"])
    return _result("FLE benchmark rollout trajectory JSON", 1 if completions else 0, completions, contexts, tools)


def voyager_qa_cache(path: Path) -> dict:
    """Voyager curriculum question-answer cache JSON (``ckpt/curriculum/qa_cache.json``, written by Voyager's
    curriculum agent, here in two Voyager-derived projects, after each answered question: one JSON object
    ``{question: answer}`` on one line). Each entry is one single-shot call and its own conversation: context the
    question (``user``; the fixed system prompt is not recorded), completion the answer as saved. No tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions = [answer for answer in data.values()]
    contexts = [["user"] if question else [] for question in data]
    return _result("Voyager curriculum QA cache JSON", len(completions), completions, contexts, 0)


COUNTERS = {
    "fle-rollout": fle_rollout,
    "voyager-qa-cache": voyager_qa_cache,
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
