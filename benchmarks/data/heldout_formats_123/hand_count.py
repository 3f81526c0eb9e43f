"""Hand counts of the hundred-and-twenty-third held-out set (benchmarks/data/heldout_formats_123/files), computed
from the raw files with the standard library only (this script does not import tracedraft), each by its format's
layout as read in the file itself.

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
- a TableBench inference record (one JSONL line) holds one request: its ``instruction`` is the whole prompt, sent as
  one user message (the repository's inference script sends ``instruction`` as the only user turn, no system
  prompt), and its ``prediction`` string is the model's reply; one line is one call;
- the lines are single-shot calls on unrelated tables and questions (54 distinct ``id`` values, no line's prompt holds
  another line's reply): one conversation per line;
- a reply that writes Python in a fenced code block (the ``Visualization`` questions ask for a matplotlib program) is
  reply text, not a tool call: the model emitted no tool-call entry and nothing executed it during the run (the
  benchmark runs the code afterwards when scoring); the files hold no tool calls;
- ``parsed_result`` (the parsed answer and ``Parse@1``, written by the repository's parsing script after the run) is
  derived from the reply, not a second call and not a reply; ``id``, ``qtype``, ``qsubtype``, ``table`` (the table
  the prompt already quotes), ``question``, ``answer`` (the gold answer), ``instruction_type`` and ``model_name`` are
  metadata, not context messages.
Context roles: as sent (``user`` only).

Run: ``python benchmarks/data/heldout_formats_123/hand_count.py`` (one JSON line per file, as
``benchmarks/heldout_formats.py`` reads them); ``--table`` prints a Markdown table of file, conversations, calls and
tool calls instead.
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


def _tablebench(path: Path, fmt: str) -> dict:
    completions, contexts, ids = [], [], set()
    for rec in _lines(path):
        if not rec.get("instruction") or not isinstance(rec.get("prediction"), str):
            continue  # no recorded prompt or reply: not a recorded call (none such in this set)
        completions.append(rec["prediction"])
        contexts.append(["user"])
        ids.add(rec["id"])
    # one single-shot call per line; distinct ids, so each line is its own conversation
    assert len(ids) == len(completions)
    return _result(fmt, len(completions), completions, contexts, 0)


def tablebench_inference(path: Path) -> dict:
    """TableBench inference results JSONL (``eval_examples/inference_results/<model>=TableBench_<type>=<set>.jsonl``
    of TableBench/TableBench: one line per benchmark question, ``{id, qtype, qsubtype, table: {columns, data},
    question, answer, instruction_type, instruction, model_name, prediction}``; here o3-mini-2025-01-31 on 54 example
    questions with the direct-prompting (DP) instruction). Each line is one single-shot call: context the
    ``instruction`` (one user message), completion the ``prediction`` string. 54 conversations, 54 calls, no tool
    calls."""
    return _tablebench(path, "TableBench inference results JSONL")


def tablebench_parsed(path: Path) -> dict:
    """TableBench parsed results JSONL (``eval_examples/parsed_results/...jsonl``): the same 54 lines as the
    inference results with a ``parsed_result`` string added after the run (the Python repr of ``{parsed_prediction,
    Parse@1}``). Counted as the inference results: one call per line (``instruction`` -> ``prediction``);
    ``parsed_result`` is derived from the reply and is neither a call nor a completion."""
    return _tablebench(path, "TableBench parsed results JSONL")


COUNTERS = {
    "tablebench-inference": tablebench_inference,
    "tablebench-parsed": tablebench_parsed,
}


def count(path: Path) -> dict:
    out = COUNTERS[path.name.split("__", 1)[0]](path)
    return {"file": path.name, **out}


def main(argv: list | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    rows = [count(p) for p in sorted(FILES.iterdir())]
    if "--table" in argv:
        print("| file | conversations | calls | tool calls |")
        print("|---|---|---|---|")
        for r in rows:
            print(f"| {r['file']} | {r['conversations']} | {r['calls']} | {r['tool_calls']} |")
        return 0
    for r in rows:
        print(json.dumps(r, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
