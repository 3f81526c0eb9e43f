"""Hand counts of the hundred-and-thirty-second held-out set (benchmarks/data/heldout_formats_132/files), computed
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
Rules made explicit for this set (written before anything was measured):
- a RAG question-answer record that keeps the user's question and the model's answer side by side (an evaluation
  result row ``{question, answer, context, ...}``, a completion log record ``{search_query, llm_response, ...}``)
  records one LLM call: its context is the user's question (written ``user``), its completion the answer text;
- the retrieved passages kept beside the question (``context``, ``search_results``) are retrieval output fed into
  that call's prompt, not a separate message and not a call; the system prompt is not recorded in these files;
- records with different, unrelated questions are single-shot calls side by side: one conversation each;
- the ground-truth answer (``truth``), the judge scores (``gpt_groundedness``, ``gpt_relevance``,
  ``citations_matched``) and metrics such as ``answer_length`` / ``latency`` are evaluation data: the judge calls that
  produced the scores are recorded only through their parsed scores (mentioned, not recorded; shared rule), and the
  ground truth is not a model reply of this run;
- other LLM calls the application made internally (query rewriting in the advanced flow) that leave no record in the
  file are not counted;
- ids, timestamps, latencies, token usage, model names, user / collection records and search-latency log entries are
  metadata, not context; an answer with no tool call counts no tool call.
Context roles: as recorded (a question alone is ``user``).

Run: ``python benchmarks/data/heldout_formats_132/hand_count.py`` (one JSON line per file).
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


def rag_postgres_evalresults(path: Path) -> dict:
    """ai-rag-chat-evaluator ``eval_results.jsonl`` written by the evaluation of Azure-Samples'
    rag-postgres-openai-python RAG chat app (one JSON object per line: ``{question, truth, answer, context, latency,
    gpt_groundedness, gpt_relevance, answer_length, citations_matched}``; ``context`` the app's retrieved product rows
    as a JSON string). Each line is one call of the app's chat endpoint: its context the ``question`` (``user``), its
    completion ``answer``. The ten questions are unrelated: ten conversations. No tool calls are recorded (the
    answers are text; the advanced flow's internal search call leaves no record here)."""
    completions, contexts = [], []
    for row in _lines(path):
        completions.append(row["answer"])
        contexts.append(["user"])
    return _result("ai-rag-chat-evaluator eval_results JSONL (RAG chat app evaluation)", len(completions),
                   completions, contexts, 0)


def r2r_regression(path: Path) -> dict:
    """R2R regression-test observed output ``test_observability.json`` (JSON ``{users_overview, logs: {results:
    [{run_id, run_type, entries: [{key, value, timestamp}]}]}, analytics}``), written by R2R's regression runner from
    a live server. Log entries with ``key`` ``completion_record`` hold a JSON string ``{message_id, message_type,
    timestamp, feedback, score, completion_start_time, completion_end_time, search_query, search_results,
    llm_response}``, ``llm_response`` an OpenAI chat completion object (``chatcmpl-`` id, ``gpt-4o-2024-08-06``).
    Each completion record is one call: its context ``search_query`` (``user``), its completion the first choice's
    ``message.content``, its tool calls that message's ``tool_calls`` (null here). The two questions are unrelated:
    two conversations. ``search_latency`` entries, user records and analytics are metadata."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts, tools = [], [], 0
    for run in data["logs"]["results"]:
        for entry in run["entries"]:
            if entry["key"] != "completion_record":
                continue
            rec = json.loads(entry["value"])
            msg = rec["llm_response"]["choices"][0]["message"]
            completions.append(msg.get("content") or "")
            contexts.append(["user"])
            tools += len(msg.get("tool_calls") or [])
    return _result("R2R regression observed output JSON (completion_record log entries)", len(completions),
                   completions, contexts, tools)


COUNTERS = {
    "rag-postgres-evalresults": rag_postgres_evalresults,
    "r2r-regression": r2r_regression,
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
