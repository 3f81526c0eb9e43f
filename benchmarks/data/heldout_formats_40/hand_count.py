"""Hand counts of the fortieth held-out set (benchmarks/data/heldout_formats_40/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

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
Rules made explicit for this set (the first is the eighth set's own):
- reasoning written inline in the reply text as a leading ``<think>...</think>`` span belongs to that reply (it is
  one call); the completion text recorded here is the reply without that span;
- a red-teaming result line that records the prompt sent and the target model's reply is one single-shot call; lines
  side by side are separate conversations even where they share a system message or a document (no line's context
  holds another line's reply);
- a result line whose reply is missing (null) and whose error field holds the provider's error (a refused or failed
  request) is a failed request: no call and no conversation;
- a human rating, a pass / fail verdict or a success flag stored beside a reply is not a call;
- an input written by an earlier LLM call (a synthetic input) records only that call's output and its source
  properties, not its prompt: that earlier call is mentioned, not recorded, and is not counted.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context; a system prompt only referred to by id (its
text not in the file) is not written.

Run: ``python benchmarks/data/heldout_formats_40/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_THINK = re.compile(r"^\s*<think>.*?</think>", re.S)


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def spikee_results(path: Path) -> dict:
    """spikee (Reversec / WithSecure prompt-injection and jailbreak testing kit) v0.1 results JSONL, as ``spikee
    test`` writes it (``results/results_<target>_<dataset>_<timestamp>.jsonl``: one test entry per line,
    ``{id, long_id, input, response, success, attempts, task_type, jailbreak_type, instruction_type, document_id,
    position, spotlighting_data_markers, injection_delimiters, suffix_id, lang, system_message, plugin, error}``).
    Each line is one request to the target LLM: its context is ``system_message`` (when it is a string, the system
    prompt the target was given) followed by ``input`` (the user prompt, document and injected instruction
    included); its completion is ``response``. ``attempts`` is 1 on every line (no retries or dynamic attacks).
    ``success`` is the canary judge's verdict on the reply (not a call). A line whose ``response`` is null and whose
    ``error`` holds the provider's error (OpenAI's 400 ``invalid_prompt`` refusals, Gemini's 500 internal errors) is
    a failed request: not a call, no conversation. Every other line is its own single-shot conversation (shared
    rule: the lines share documents and system prompts but no line's context holds another's reply). No tool
    calls."""
    completions, contexts = [], []
    for rec in _lines(path):
        if rec.get("response") is None:
            continue  # failed request: the error field holds the provider's error, no reply
        ctx = (["system"] if isinstance(rec.get("system_message"), str) else []) + ["user"]
        completions.append(rec["response"])
        contexts.append(ctx)
    return _result("spikee results JSONL (v0.1)", len(completions), completions, contexts, 0)


def kiln_task_run(path: Path) -> dict:
    """Kiln AI task run (``task_run.kiln``, the JSON file Kiln writes for each run of a task in a project folder:
    ``{v, id, created_at, created_by, input, input_source: {type, properties}, output: {output, source: {type,
    properties: {adapter_name, model_name, model_provider, prompt_id, ...}}, rating}, repair_instructions,
    repaired_output, intermediate_outputs, tags, usage, model_type: "task_run"}``). One file is one run of the task
    by one model: one call, one conversation. Its context is the ``input`` (a user message); the task's system prompt
    is only referred to by ``prompt_id`` and not written in the file, so the context is ``user`` alone. The
    completion is ``output.output``; a leading ``<think>...</think>`` span in it (the fine-tuned reasoning model's
    inline reasoning) belongs to the reply and is left out of the completion text (shared rule). Where the input is
    synthetic (``input_source.type`` "synthetic", written by Kiln's data generator), the generating call records
    neither its prompt nor its own reply apart from this input: mentioned, not counted. ``rating`` is a human rating
    (not a call); ``intermediate_outputs`` is empty and ``repaired_output`` null in these files. No tool calls."""
    rec = json.loads(path.read_text(encoding="utf-8"))
    text = rec["output"]["output"]
    return _result("Kiln task run (task_run.kiln JSON)", 1, [_THINK.sub("", text, count=1)], [["user"]], 0)


COUNTERS = {
    "spikee": spikee_results,
    "kiln": kiln_task_run,
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
