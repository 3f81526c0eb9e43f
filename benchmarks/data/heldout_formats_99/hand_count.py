"""Hand counts of the ninety-ninth held-out set (benchmarks/data/heldout_formats_99/files), computed from the raw
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
Rules made explicit for this set (written before anything was measured):
- a tool-loop step record (one entry of a ``steps`` list that carries the step's own model version, usage and cost)
  is one call: the model's reply in that step is its ``thoughts`` (reasoning, belonging to the reply), its ``text``
  (the completion text; absent in a step that only called tools, then the completion is empty) and its
  ``toolCalls`` (each entry one tool call the model emitted; the ``output`` kept beside it is the tool's result, the
  input of the next step); the steps of one run form one conversation (each step's context is the run's prompt plus
  every earlier step's reply and tool results), even though the run's opening prompt is not saved in the file;
- a run-level summary that repeats the last step's reply (``result.text`` / ``result.thoughts`` equal to the last
  step's ``text`` / ``thoughts``, ``totalCostUsd``) is not a call of its own;
- in an eval results file each task result's ``trace.messages`` is one conversation; every ``assistant`` message in
  it is one call (the harness calls the model once per turn and appends the reply whole), its ``text`` parts the
  completion, its ``tool_use`` parts its tool calls; ``tool_result`` messages are the client's tool results (context
  role ``tool``); the ``trace.tool_calls`` list, ``last_tool_response``, ``turns``, ``tool_call_count``, token counts,
  ``score`` and ``summary`` are the harness's own bookkeeping (copies of what the messages already hold), not calls;
- the system prompt the harness adds when a task's ``system`` is ``null`` (its bash tool's default prompt) is not saved
  in the file: contexts are written with the recorded messages only (``system`` at their head only where the task
  records one);
- ids, timestamps, durations, token counts, model names, costs, scores and expectations are metadata, not context.
Context roles: as recorded; a message made only of tool results is written ``tool``; in a tool-loop step file the
unsaved opening prompt is not written, each earlier step adds ``assistant`` then one ``tool`` per tool call.

Run: ``python benchmarks/data/heldout_formats_99/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def llm_agent_run(path: Path) -> dict:
    """@ljoukov/llm filesystem-agent benchmark run (``benchmarks/agent/traces/latest/workspaces/<run>/agent-run.json``,
    written by ``benchmarks/agent/run.ts``): ``{model, taskId, runIndex, result: {text, thoughts, steps, totalCostUsd}}``.
    Each entry of ``result.steps`` (``step``, ``modelVersion``, ``thoughts``, ``text``, ``toolCalls`` of
    ``{toolName, input, output}``, ``usage``, ``costUsd``) is one call of the tool loop: completion its ``text`` (empty
    for a step that only called tools), tool calls its ``toolCalls`` entries. All steps of the run are one
    conversation. ``result.text`` / ``result.thoughts`` repeat the last step and are not counted again; a file with
    ``error`` / ``partialResult`` instead of ``result`` (a failed run) would be counted from ``partialResult.steps``
    the same way (none in this set)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    result = data.get("result") or data.get("partialResult") or {}
    completions, contexts, tools = [], [], 0
    ctx: list = []
    for step in result.get("steps", []):
        calls = step.get("toolCalls") or []
        completions.append(step.get("text") or "")
        contexts.append(list(ctx))
        tools += len(calls)
        ctx.append("assistant")
        ctx.extend("tool" for _ in calls)
    return _result("@ljoukov/llm agent benchmark run (agent-run.json, tool-loop steps)", 1 if completions else 0,
                   completions, contexts, tools)


def bashkit_eval_results(path: Path) -> dict:
    """bashkit-eval results file (``crates/bashkit-eval/results/eval-<provider>-<model>-<timestamp>.json``, written by
    the ``bashkit-eval`` runner): ``{provider, model, timestamp, max_turns, results: [{task, trace, score}], summary}``.
    Each ``results[i].trace.messages`` list (roles ``user`` / ``assistant`` / ``tool_result``, content a list of
    ``text`` / ``tool_use`` / ``tool_result`` parts) is one conversation; each ``assistant`` message is one call, its
    completion the joined ``text`` parts (empty when it only called tools), its tool calls its ``tool_use`` parts.
    ``task.system`` (``null`` throughout this set) would head every context as ``system``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts, tools, convs = [], [], 0, 0
    for res in data.get("results", []):
        task = res.get("task") or {}
        head = ["system"] if task.get("system") else []
        ctx = list(head)
        had_call = False
        for msg in (res.get("trace") or {}).get("messages", []):
            role = msg.get("role")
            parts = msg.get("content") or []
            if isinstance(parts, str):
                parts = [{"type": "text", "text": parts}]
            if role == "assistant":
                if not parts:
                    continue  # nothing produced: not a call (none in this set)
                completions.append("".join(p.get("text", "") for p in parts if p.get("type") == "text"))
                contexts.append(list(ctx))
                tools += sum(1 for p in parts if p.get("type") == "tool_use")
                had_call = True
                ctx.append("assistant")
            elif role == "tool_result" or (parts and all(p.get("type") == "tool_result" for p in parts)):
                ctx.append("tool")
            else:
                ctx.append(role)
        convs += 1 if had_call else 0
    return _result("bashkit-eval results JSON (per-task trace.messages)", convs, completions, contexts, tools)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("ljoukov-llm__"):
        out = llm_agent_run(path)
    else:
        out = bashkit_eval_results(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
