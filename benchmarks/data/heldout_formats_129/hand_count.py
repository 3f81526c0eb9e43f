"""Hand counts of the hundred-and-twenty-ninth held-out set (benchmarks/data/heldout_formats_129/files), computed from
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
- a Konveyor Kai LLM-cache entry (one JSON file per request: ``{input: [message, ...], output: message, meta?}``,
  every message a LangChain ``dumpd`` serialisation ``{lc: 1, type: "constructor", id: ["langchain", "schema",
  "messages", "<Class>"], kwargs: {content, type, ...}}``) records exactly one call: its context is ``input`` (the
  full message list sent), its completion the ``output`` AIMessage's ``kwargs.content``. One file is one
  conversation of one call;
- an ``AIMessage`` inside ``input`` (an earlier assistant turn, here a fix the tool formatted from an earlier step)
  is context of the recorded call, not a call of its own: its own context and reply are not recorded in the file
  (it is mentioned, not recorded);
- tool calls are the entries of the output AIMessage's ``kwargs.tool_calls`` (empty in every file kept: the model
  answers in Markdown, with the updated file in a fenced code block; a fenced code block is reply text, not a tool
  call); ``invalid_tool_calls`` are not tool calls;
- context roles: ``SystemMessage`` is ``system``, ``HumanMessage`` ``user``, ``AIMessage`` ``assistant``;
- ``meta`` (task type, task string, file path, analyzer message), ``response_metadata`` (finish reason, model name,
  system fingerprint) and the run ids are metadata, not context or completion.

Run: ``python benchmarks/data/heldout_formats_129/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_ROLES = {"SystemMessage": "system", "HumanMessage": "user", "AIMessage": "assistant", "ToolMessage": "tool"}


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _role(message: dict) -> str:
    return _ROLES[message["id"][-1]]


def kai_llm_cache(path: Path) -> dict:
    """Konveyor Kai LLM cache entry (``kai/data/llm_cache/<model>/...``), written by Kai's caching chat model in
    record mode (``KAI__DEMO_MODE``): the request's LangChain message list in ``input``, the reply AIMessage in
    ``output``; newer entries (task directories ``<TaskType>/<file>/<violation or line>/<n>_<task>.json``) add a
    ``meta`` object, the older flat entries (``<sha256 digest>.json``) have none. One call per file."""
    d = json.loads(path.read_text(encoding="utf-8"))
    out = d["output"]
    assert out["id"][-1] == "AIMessage"
    context = [_role(m) for m in d["input"]]
    completion = out["kwargs"].get("content") or ""
    tools = len(out["kwargs"].get("tool_calls") or [])
    return _result("Konveyor Kai LLM cache entry JSON (LangChain dumpd messages)", 1, [completion], [context], tools)


COUNTERS = {
    "kai-llm-cache": kai_llm_cache,
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
