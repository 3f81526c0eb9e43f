"""Hand counts of the eightieth held-out set (benchmarks/data/heldout_formats_80/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
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
- one answer record of an evaluation harness that keeps the prompt put to the model and the model's answer (a line
  of an answer file, a line of a response log) is one recorded call and its own single-shot conversation; the same
  question answered again in another run, or by another model, is another call and another conversation (their
  contexts are not continuations of each other's replies);
- a prompt recorded as one string (the benchmark question, or a template already filled with a system text and the
  question) is the call's recorded context, written ``user``; a system prompt the harness may have sent but did not
  record is not guessed;
- a judge's reply recorded together with the request that produced it (an A/B-test verdict) is a recorded call like
  any other; its completion is the reply text as saved (a JSON object inside the string is not parsed); the two
  answers the judge compares are quoted inside its prompt and are not calls of this file;
- a JSONL line holding a two-element array ``[request, response]`` (an OpenAI Chat Completions request body and the
  chat.completion body returned) is one call; the request's ``user`` id, ``temperature`` and ``max_tokens`` are
  request metadata, not context;
- a reply that does not do what was asked (a translation model that translates the question instead of answering
  it) is still the model's reply: a call, its text as saved;
- an empty line in a JSONL file is not a record;
- ids, categories, question ids, run ids, model names, error counters (``ErrorCount``, 0 on every record here),
  timestamps and token counts are metadata, not context.
Context roles: as recorded (``user`` for a bare prompt string); message roles as listed in a request body.

Run: ``python benchmarks/data/heldout_formats_80/hand_count.py`` (one JSON line per file).
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


def shaberi_model_answers(path: Path) -> dict:
    """Shaberi model-answer file (``data/model_answers/<dataset>/<model>.json``: JSON Lines written by Hugging Face
    ``datasets`` ``Dataset.to_json`` in Shaberi's ``generate_answers.py``; one record per benchmark question,
    ``{category, question_id | id, Question, ModelAnswer, ErrorCount, UpdatedAt}``). Each line is one single-shot
    call, its own conversation: the context is the recorded ``Question`` (``user``), the completion is
    ``ModelAnswer`` as saved. A record with ``ErrorCount`` above 0 and an empty answer would be a failed request
    (none here: every ``ErrorCount`` is 0 and every answer is non-empty). No tool calls; no system prompt is
    recorded."""
    completions, contexts = [], []
    for rec in _lines(path):
        answer = rec.get("ModelAnswer") or ""
        if not answer and rec.get("ErrorCount"):
            continue
        completions.append(answer)
        contexts.append(["user"] if rec.get("Question") else [])
    return _result("Shaberi model-answer JSONL", len(completions), completions, contexts, 0)


def h2o_llm_eval_requests_results(path: Path) -> dict:
    """h2o-LLM-eval (EvalGPT) A/B-test requests / results JSONL (``notebooks/requests_results.jsonl``: each line a
    two-element JSON array ``[request, response]`` as OpenAI's parallel request processor saves it: an OpenAI Chat
    Completions request body ``{model, messages, user, temperature, max_tokens}`` and the ``chat.completion`` body
    returned). Each line is one call and its own conversation: the context is the roles of ``request.messages``
    (system, user); the completion is ``choices[0].message.content`` (the judge's verdict, a JSON object inside a
    string, kept as text); ``tool_calls`` in the message, if any, would be tool calls (none here). One choice per
    response here."""
    completions, contexts, tools = [], [], 0
    for request, response in _lines(path):
        roles = [m["role"] for m in request.get("messages", [])]
        for choice in response.get("choices", []):
            message = choice.get("message") or {}
            completions.append(message.get("content") or "")
            contexts.append(list(roles))
            tools += len(message.get("tool_calls") or [])
    return _result("h2o-LLM-eval A/B-test requests_results JSONL", len(completions), completions, contexts, tools)


def decision_judgment_responses(path: Path) -> dict:
    """Decision Judgment Benchmark response log (``data/benchmarks/<benchmark>/responses.jsonl``: one record per
    model-under-test answer, ``{run_id, model_under_test, question_id, prompt, full_prompt, response,
    response_source, model_provider, api_model, timestamp, system_prompt_id, reasoning_effort}``; the file opens
    with an empty line). Each record is one single-shot call, its own conversation (four runs of the same question,
    three by gpt-5-nano and one by gpt-5.2): the context is the recorded ``full_prompt`` (the benchmark's system
    text, the question and the reasoning-effort line in one string), written ``user``; the completion is
    ``response``. ``prompt`` repeats the question (part of ``full_prompt``, not a second context). No tool calls."""
    completions, contexts = [], []
    for rec in _lines(path):
        completions.append(rec.get("response") or "")
        contexts.append(["user"] if (rec.get("full_prompt") or rec.get("prompt")) else [])
    return _result("Decision Judgment Benchmark responses JSONL", len(completions), completions, contexts, 0)


COUNTERS = {
    "shaberi": shaberi_model_answers,
    "h2o-llm-eval": h2o_llm_eval_requests_results,
    "decision-judgment-benchmark": decision_judgment_responses,
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
