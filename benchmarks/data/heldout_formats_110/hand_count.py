"""Hand counts of the hundred-and-tenth held-out set (benchmarks/data/heldout_formats_110/files), computed from the
raw files with the standard library only (this script does not import tracedraft), each by its format's layout as
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
- a "wide" benchmark table (one row per input item, one group of columns per model: ``<provider>__<model>__content``,
  ``__finish_reason``, ``__usage_*``, ``__id``, ...) records one call per (row, model) whose content cell is a reply;
  each such call is its own conversation (the models answer the same prompt independently, none sees another's
  reply), so the same prompt sent to four models is four conversations, not one; the row's prompt columns are the
  context of every call in that row;
- repeated samples of one prompt (a run log with one line per ``run_index``, the same prompt every time) are separate
  single-shot calls, one conversation each (no sample's context holds another's reply);
- a reply the harness kept as raw text next to fields it parsed out of that text (``raw_response`` beside
  ``point_estimate``, ``quantiles``, ``interpretation``, ``reasoning_summary``, ...) is one call whose completion is the
  raw text; the parsed fields are the same reply, not further calls; a line whose raw reply is missing (``null``) or
  that carries an ``error`` would be a failed request, not a call (no such line in this set);
- a reply whose text is JSON (structured output requested through a response format) is text, not a tool call;
- an image sent with the prompt is part of the user input; the file records its URL elsewhere or not at all, and
  that does not change the count; ids, timestamps, latencies, token counts, costs, provider names, finish reasons
  and prompt hashes are metadata, not context.
Context roles: as recorded (``system`` where the row keeps the system prompt sent, then ``user``).

Run: ``python benchmarks/data/heldout_formats_110/hand_count.py`` (one JSON line per file, the form
``benchmarks/heldout_formats.py`` reads); ``--table`` prints a table file -> conversations / calls / tool calls instead.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_CONTENT = "__content"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _is_reply(text) -> bool:
    """A model column's cell holds a reply: non-empty text that is not the harness's ``[ERROR] ...`` marker."""
    return isinstance(text, str) and bool(text.strip()) and not text.startswith("[ERROR]")


def _wide_rows(fmt: str, rows: list) -> dict:
    """Shared reading of the alt-text benchmark's wide rows (JSONL objects or CSV dicts, same columns)."""
    completions, contexts = [], []
    for row in rows:
        roles = (["system"] if (row.get("system_prompt") or "").strip() else []) + ["user"]
        for key in row:  # column order as written: one group of columns per model
            if key.endswith(_CONTENT) and _is_reply(row[key]):
                completions.append(row[key])
                contexts.append(list(roles))
    # each (row, model) call is its own single-shot conversation (rule above)
    return _result(fmt, len(completions), completions, contexts, 0)


def alt_text_wide_jsonl(path: Path) -> dict:
    """Seeing-History-Unseen alt-text benchmark run table, wide JSONL (maehr/chr2025-seeing-history-unseen, the
    OpenRouter VLM runner's ``runs/<run>/alt_text_runs_<ts>.jsonl``: one line per collection object ``{objectid,
    prompt, <provider>__<model>__content, __finish_reason, __usage_prompt_tokens, __usage_completion_tokens,
    __usage_total_tokens, __usage_cost, __provider, __created, __id, __request_started_utc, __request_ended_utc,
    __latency_seconds (per model), created_utc, system_prompt, user_prompt}``; ``prompt`` repeats ``user_prompt``,
    the object's metadata as JSON; the image went with the user message). Each non-empty ``__content`` cell is one
    call with context ``system`` (``system_prompt``) + ``user`` and its own conversation: 3 objects x 4 models = 12
    conversations, 12 calls. No tool calls."""
    return _wide_rows("alt-text benchmark wide JSONL", _lines(path))


def alt_text_wide_csv(path: Path) -> dict:
    """Seeing-History-Unseen alt-text benchmark run table, wide CSV (the same run's ``alt_text_runs_<ts>.csv``: the
    same 53 columns as the JSONL beside it, one row per object, multi-line prompts and replies in quoted fields).
    Counted as the JSONL: 12 conversations, 12 calls, no tool calls."""
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    return _wide_rows("alt-text benchmark wide CSV", rows)


def econ_beliefs_runs(path: Path) -> dict:
    """llm-econ-beliefs run log JSONL (PolicyEngine/llm-econ-beliefs ``results/<model>-<prompt>-batch15/runs.jsonl``:
    one line per sample ``{provider, model_name, quantity_id, run_index, prompt_version, tool_regime, prompt,
    raw_response, parsed_ok, point_estimate, interpretation, lower_bound, upper_bound, confidence_level, quantiles,
    citations, reasoning_summary, error, quantiles_repaired}``; written by ``experiment.py``; for the ``anthropic``
    provider the request was the single user message ``prompt`` with a JSON-schema output format, no system prompt,
    no tools). Each line with a ``raw_response`` and no ``error`` is one call (context ``user``, completion the raw
    JSON text); the parsed fields are the same reply. 15 samples of one prompt: 15 conversations, 15 calls, no tool
    calls (``tool_regime`` ``none``)."""
    completions, contexts = [], []
    for rec in _lines(path):
        if rec.get("error") or not _is_reply(rec.get("raw_response")):
            continue
        completions.append(rec["raw_response"])
        contexts.append(["user"])
    return _result("llm-econ-beliefs runs JSONL", len(completions), completions, contexts, 0)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("chr2025-seeing-history-unseen__") and name.endswith(".jsonl"):
        out = alt_text_wide_jsonl(path)
    elif name.startswith("chr2025-seeing-history-unseen__") and name.endswith(".csv"):
        out = alt_text_wide_csv(path)
    elif name.startswith("llm-econ-beliefs__"):
        out = econ_beliefs_runs(path)
    else:
        raise ValueError(f"no counter for {name}")
    return {"file": name, **out}


def main(argv: list) -> int:
    results = [count(p) for p in sorted(FILES.iterdir()) if p.is_file()]
    if "--table" in argv:
        print("| file | conversations / calls / tool calls |")
        print("|---|---|")
        for r in results:
            print(f"| `{r['file']}` | {r['conversations']} / {r['calls']} / {r['tool_calls']}"
                  f"{'' if r['readable'] else ' (not readable)'} |")
        return 0
    for r in results:
        print(json.dumps(r, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
