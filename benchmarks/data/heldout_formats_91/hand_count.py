"""Hand counts of the ninety-first held-out set (benchmarks/data/heldout_formats_91/files), computed from the raw
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
- a tool's debug trace written as Markdown (one ``### Step N: TITLE`` section per pipeline step, each with a
  ``**Content**:`` block and an optional ``**Details**:`` JSON block) records a call where a step shows the model's
  reply (``### Step N: LLM Response``, ``Details`` ``{"response": ...}``) and an earlier step shows the prompt sent
  for it (``### Step N: LLM Prompt Building``, ``Details`` ``{"full_prompt": ...}``); the prompt is one text sent as
  the request's contents (``user``), recorded cut at 2,000 characters by the tool, which is still that call's
  context; a history of earlier turns the tool pasted into that one prompt text (``conversation_section_length``)
  is part of the prompt, not a recorded earlier call;
- steps that echo the reply (``SQL Validation`` repeats the SQL it checked), retrieval, schema injection, function
  parameters and final statistics are the tool's own records, not calls;
- a text-to-SQL app's query history (a JSON list, one record per generation the user asked for) records one
  single-shot call per record whose query field holds the model's reply: its context is the user's question
  (``user``; the tool's wrapping prompt and the schema it appended are not saved), its completion the query field as
  saved (the reply after the tool's own clean-up, optimisation and dialect conversion); each record is its own
  conversation, two records with the same question and the same saved text are still two calls;
- SQL written by the model as the text of its reply is reply text, not a tool call: this set holds no tool calls;
- ids, timestamps, durations, token counts, lengths, model names, dialects, tags, favourites and validation results
  are metadata, not context.
Context roles: as recorded (``user`` for a prompt string or a bare question).

Run: ``python benchmarks/data/heldout_formats_91/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def sql_rag_debug_log(path: Path) -> dict:
    """SQL RAG demo (kmadhok/Sql_Rag_Demo) debug session log (``SQL_RAG/rag_app/debug_logs.md``, rewritten by the
    app's ``simple_rag_simple_gemini.py`` for each question): a header (``# SQL Validation Debug Session``, session
    start, ``**User Question**``), then ``## Pipeline Trace`` with one ``### Step N: TITLE`` section per step. Each
    ``LLM Response`` step is one single-shot call to Gemini: its completion is ``response`` in the step's ``Details``
    JSON block (the tool cuts it at 1,500 characters; none is cut here), its context the ``full_prompt`` of the
    ``LLM Prompt Building`` step before it (one prompt text: ``user``). The file holds one question's pipeline, so one
    conversation; no tool calls."""
    text = path.read_text(encoding="utf-8")
    completions, contexts = [], []
    prompt_seen = False
    for section in re.split(r"^### Step \d+: ", text, flags=re.M)[1:]:
        title = section.split("\n", 1)[0].strip()
        m = re.search(r"^\*\*Details\*\*:\n```json\n(.*?)\n```$", section, flags=re.S | re.M)
        details = json.loads(m.group(1)) if m else {}
        if title == "LLM Prompt Building":
            prompt_seen = bool(details.get("full_prompt"))
        elif title == "LLM Response" and "response" in details:
            completions.append(details["response"])
            contexts.append(["user"] if prompt_seen else [])
            prompt_seen = False
    return _result("SQL RAG demo debug trace Markdown (pipeline steps with JSON details)", 1 if completions else 0,
                   completions, contexts, 0)


def sqlsage_query_history(path: Path) -> dict:
    """SQL SAGE (HarshMishra-Git/SQLSAGE_AiVERSE) query history (``query_history.json``, written by
    ``utils/query_history.py`` after each press of "Generate SQL Query"): a JSON list of records ``{timestamp,
    natural_query, sql_query, dialect, tags, favorite}``. Each record is one single-shot call (Eden AI text generation,
    provider ``google``): context the ``natural_query`` (``user``), completion the ``sql_query`` as saved. Each record
    is its own conversation; no tool calls."""
    records = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts = [], []
    for record in records:
        if record.get("sql_query") is None:
            continue
        completions.append(record["sql_query"])
        contexts.append(["user"] if record.get("natural_query") else [])
    return _result("SQL SAGE query history JSON (question / generated query records)", len(completions), completions,
                   contexts, 0)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("Sql_Rag_Demo__"):
        out = sql_rag_debug_log(path)
    else:
        out = sqlsage_query_history(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
