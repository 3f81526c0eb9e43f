"""Hand counts of the hundred-and-thirty-seventh held-out set (benchmarks/data/heldout_formats_137/files), computed
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
- an evaluation harness's per-sample record that holds the prompt sent for one sample beside the model's reply to it
  is one call; samples are independent single-shot calls (no sample's prompt holds another sample's reply), so each
  sample is its own conversation;
- the context is what the file records as sent: a message list as its roles (OpenAI evals: few-shot examples sent
  as ``system`` messages named ``example_user`` / ``example_assistant`` are context messages, not earlier calls of
  this run), a bare prompt string as one ``user`` message; a system prompt the harness's code may add but the file
  does not record is not counted in the context;
- records a harness writes about a call after the fact (OpenAI evals ``match`` events, which repeat the sampled text
  beside the expected answer; the ``spec`` and ``final_report`` lines; simple-evals-ru ``pred`` / ``is_correct`` /
  ``usage`` / costs; ZeroEval ``configs`` / ``generator`` / ``answer`` / ``puzzle``) are metadata, not calls;
- a grader / extractor call whose prompt the file does not record (simple-evals-ru's answer-extraction call behind
  ``pred``, its SimpleQA judge whose raw reply is kept as ``judge_answer``) has no readable context: it counts as
  mentioned, not recorded, and is not counted;
- a reply recorded as a list of one sampled string (OpenAI evals ``sampled``, ZeroEval ``output``) is one call with
  that string as its completion (every list here holds exactly one string); a reply's text that itself holds JSON
  (ZeroEval's ``{"reasoning": ..., "answer": ...}`` in a code fence) is text, not a tool call.
Context roles: as recorded (a system prompt kept in the list is written ``system``; a bare prompt string ``user``).
No file in this set records a tool call.

Run: ``python benchmarks/data/heldout_formats_137/hand_count.py`` (one JSON line per file).
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


def openai_evals(path: Path) -> dict:
    """OpenAI evals (``oaieval``) record log JSONL, as written by evals' local recorder to ``/tmp/evallogs/``: a
    ``{"spec": ...}`` line, a ``{"final_report": ...}`` line, then events ``{run_id, event_id, sample_id, type, data,
    created_by, created_at}``. Each ``sampling`` event is one call: its context ``data.prompt`` (a chat message list
    here: ``system`` few-shot messages with ``name`` plus the final ``user`` message in the tort-law file; ``system``
    then ``user`` in the crossword file), its completion ``data.sampled[0]``. ``match`` events are the grader's
    after-the-fact records (no model call). Every sample id has one sampling event: one conversation per event."""
    completions, contexts, samples = [], [], set()
    for rec in _lines(path):
        if rec.get("type") != "sampling":
            continue
        prompt = rec["data"]["prompt"]
        contexts.append([m["role"] for m in prompt] if isinstance(prompt, list) else ["user"])
        sampled = rec["data"]["sampled"]
        completions.append(sampled[0] if isinstance(sampled, list) else sampled)
        samples.add(rec["sample_id"])
    return _result("OpenAI evals record log JSONL", len(samples), completions, contexts, 0)


def simple_evals_ru(path: Path) -> dict:
    """simple-evals-ru results JSONL (kuk/simple-evals-ru ``data/results/<bench>/<model>.jsonl``: one sample per line,
    ``{id, instruction, answer, usage, model_cost, pred | judge_answer + judge_pred, is_correct, bench_cost,
    finished_at}``). ``instruction`` is the prompt, sent as the single user message (the clients build
    ``[{"role": "user", "content": instruction}]``); ``answer`` is the model's reply. One call and one conversation per
    line. The extraction / judge call behind ``pred`` / ``judge_answer`` has no recorded prompt: not counted."""
    completions, contexts, ids = [], [], set()
    for rec in _lines(path):
        completions.append(rec["answer"])
        contexts.append(["user"])
        ids.add(rec["id"])
    return _result("simple-evals-ru results JSONL", len(ids), completions, contexts, 0)


def zeroeval(path: Path) -> dict:
    """ZeroEval result file (yuchenlin/ZeroEval ``result_dirs/<task>/<model>.json``: a JSON list of ``{session_id,
    chat_history: [str], model_input, output: [str], generator, configs, dataset, id, ...}``). ``chat_history`` holds
    the prompt turns as bare strings (one user turn in every entry here; ``model_input`` is ``n/a``), ``output`` the
    reply. One call and one conversation per entry (distinct ``session_id``)."""
    completions, contexts, sessions = [], [], set()
    for rec in json.loads(path.read_text(encoding="utf-8")):
        turns = rec["chat_history"]
        contexts.append(["user" if i % 2 == 0 else "assistant" for i in range(len(turns))])
        completions.append(rec["output"][0])
        sessions.add(rec["session_id"])
    return _result("ZeroEval result JSON", len(sessions), completions, contexts, 0)


COUNTERS = {
    "openai-evals": openai_evals,
    "simple-evals-ru": simple_evals_ru,
    "zeroeval": zeroeval,
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
