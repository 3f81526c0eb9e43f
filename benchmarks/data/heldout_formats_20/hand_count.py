"""Hand counts of the twentieth held-out set (benchmarks/data/heldout_formats_20/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself and in the writing tool's source at the commit named in SOURCES.md.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the eighth set's):
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
Rules made explicit for this set:
- records that are identical byte for byte are each counted: the file holds them as separate records and the
  measurement reads with ``--no-dedup`` (dropping a duplicate is a dataset's choice after reading, not a reading);
- a reply the tool failed to parse (its parsed ``data`` empty, an ``error`` set) is still a call when the raw reply
  text is recorded: the model produced it;
- a call logged with the variables of its prompt template (not the rendered messages) has its context recorded as
  those variables; the context role is then written ``prompt`` (the file names no role).
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context.

Run: ``python benchmarks/data/heldout_formats_20/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


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


def agentuniverse_llm_invocation(path: Path) -> dict:
    """agentUniverse monitor LLM-invocation JSONL (written by ``Monitor.trace_llm_invocation`` through the
    ``@trace_llm`` decorator into ``monitor/llm_invocation/llm_<date-hour>.jsonl``; this file is one such trace kept
    as the dataflow demo's input): one traced invocation per line, ``{source, date, llm_input: {messages, kwargs},
    llm_output}``. Each line is one call: its context is ``llm_input.messages`` (system, user), its completion the
    ``llm_output`` string (the whole reply text; streamed replies are joined before they are logged). No line's
    context holds an earlier line's reply (the prompt's own history slot is empty), so each line is a single-shot
    call and its own conversation (shared rule). The two lines are identical (same source, second, prompt and reply)
    and are counted as two records (rule of this set). No tool calls: the calls carry no tools and the replies are
    plain text."""
    threads = []
    for rec in _lines(path):
        t = _Thread([m["role"] for m in rec["llm_input"]["messages"]])
        t.out(rec["llm_output"] if isinstance(rec["llm_output"], str) else json.dumps(rec["llm_output"]))
        threads.append(t)
    return _merge("agentUniverse monitor LLM-invocation JSONL", threads)


def adalflow_generator_call(path: Path) -> dict:
    """AdalFlow generator call log JSONL (``GeneratorCallLogger`` writes ``<generator>_call.jsonl``, one
    ``GeneratorCallRecord`` per line: ``{prompt_kwargs, model_kwargs, output: {data, error, raw_response},
    time_stamp}``). Each line is one call of the classifier's generator: its context is the prompt rendered from
    ``prompt_kwargs`` (task description, few-shot examples, the question; written ``prompt``, rule of this set), its
    completion ``output.raw_response``. Every record here has ``data`` null and an ``error`` from the output parser,
    but each holds the model's raw reply, so each is a call (rule of this set). Lines are single-shot calls with
    their own inputs and examples, none continuing another: one conversation per line. No tool calls."""
    threads = []
    for rec in _lines(path):
        raw = (rec.get("output") or {}).get("raw_response")
        if raw is None:
            continue
        t = _Thread(["prompt"])
        t.out(raw)
        threads.append(t)
    return _merge("AdalFlow generator call log JSONL", threads)


COUNTERS = {
    "agentuniverse-llm-invocation": agentuniverse_llm_invocation,
    "adalflow-generator-call": adalflow_generator_call,
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
