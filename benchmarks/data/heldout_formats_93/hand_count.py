"""Hand counts of the ninety-third held-out set (benchmarks/data/heldout_formats_93/files), computed from the raw
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
- an evaluation harness's run record that keeps the model's messages as the agent SDK streamed them records the
  calls of that run: one run (one scenario execution) is one conversation, whose first context is the task the
  harness gave the agent (its ``user_intent``, written ``user``); the agent's own system prompt is not in the file
  and is not invented;
- the Claude Agent SDK (Claude Code SDK) streams one API reply as several ``AssistantMessage`` records, one per
  content block (a text block, then a tool-use block): consecutive ``AssistantMessage`` records with no ``UserMessage``
  between them are one call (the shared "split reply" rule); a ``UserMessage`` made only of tool results is input
  (context role ``tool``) and closes the open call;
- a tool-use block (``id`` / ``name`` / ``input``) in an ``AssistantMessage`` is one client-executed tool call (the
  SDK's agent ran it, MCP tools included: ``mcp__<server>__<tool>``, and built-ins such as ``TodoWrite``);
- the SDK's ``SystemMessage`` (subtype ``init``: session id, tool names, model, working directory) and
  ``ResultMessage`` (duration, cost, usage, ``num_turns`` and a copy of the last reply's text in ``result``) are run
  metadata, not calls and not context; the harness's own fields (``expected_trajectory``, ``success_criteria``,
  ``tool_calls_summary`` repeating each tool call with its result, ``execution_status``, ``failure_analysis``,
  ``available_tools``, ``mcpproxy_git_info``) are the harness's bookkeeping and are not counted again;
- ids, timestamps, message numbers, model names, durations, token counts and costs are metadata, not context.
Context roles: ``user`` for the task, ``assistant`` for each earlier call, ``tool`` for each tool-result message.

Run: ``python benchmarks/data/heldout_formats_93/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def mcp_eval_detailed_log(path: Path) -> dict:
    """mcp-eval (smart-mcp-proxy/mcp-eval) baseline run record ``detailed_log.json``, written by its scenario runner
    after one scenario ran through the Claude Code SDK against an MCP proxy: a JSON object with the scenario's
    ``user_intent`` (the task sent to the agent) and ``messages``, a list of ``{timestamp, message_number, type,
    content}`` records whose ``content`` is the SDK message serialised with a ``_type`` field (``SystemMessage``,
    ``AssistantMessage`` with ``content`` blocks ``{text}`` or ``{id, name, input}``, ``UserMessage`` with
    ``{tool_use_id, content, is_error}`` tool-result blocks, ``ResultMessage``). One conversation per file. A call
    opens at an ``AssistantMessage`` after the task or after a ``UserMessage`` and takes every following
    ``AssistantMessage`` up to the next ``UserMessage``; its completion is the text of its text blocks (joined with
    no separator, in order), its tool calls the number of its tool-use blocks; its context is ``user`` followed by
    ``assistant`` / ``tool`` for every earlier call and tool-result message."""
    data = json.loads(path.read_text(encoding="utf-8"))
    ctx = ["user"] if data.get("user_intent") else []
    completions, contexts, tools, is_open = [], [], 0, False
    for record in data["messages"]:
        kind = record["type"]
        blocks = record["content"].get("content")
        if kind == "AssistantMessage":
            if not is_open:
                completions.append("")
                contexts.append(list(ctx))
                ctx.append("assistant")
                is_open = True
            for block in blocks:
                if "text" in block:
                    completions[-1] += block["text"]
                elif "name" in block and "input" in block:
                    tools += 1
        elif kind == "UserMessage":
            only_results = isinstance(blocks, list) and all("tool_use_id" in b for b in blocks)
            ctx.append("tool" if only_results else "user")
            is_open = False
        # SystemMessage / ResultMessage: run metadata
    return _result("mcp-eval baseline detailed_log.json (Claude Code SDK messages)", 1 if completions else 0,
                   completions, contexts, tools)


def count(path: Path) -> dict:
    return {"file": path.name, **mcp_eval_detailed_log(path)}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
