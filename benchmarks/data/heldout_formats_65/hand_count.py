"""Hand counts of the sixty-fifth held-out set (benchmarks/data/heldout_formats_65/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself and in the code of the tool that wrote it.

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
- a console printout of an agent run (a test script's output saved as a file) is read as the record it prints: each
  model step it shows is a call, and the same step printed twice (a JSON snapshot of the trajectory and then the same
  trajectory formatted as text) is counted once;
- in a ReAct trajectory of ``thought_i`` / ``tool_name_i`` / ``tool_args_i`` / ``observation_i`` entries, each index
  ``i`` is one model step (one call whose output is the thought with the chosen tool and its arguments); the final
  answer a separate extract step writes from the whole trajectory is one more call;
- ``finish`` is the loop's stop signal, not a tool: the workflow does not execute it (it writes the marker
  observation ``Completed.`` itself), so a step that picks ``finish`` is a call with no tool call;
- a summary the test script prints from the workflow state ("Tools used", "Total tools used") only repeats what the
  trajectory holds and adds no call or tool call;
- a reply is the whole string the tool saved (a prefix the parent workflow adds, ``Child workflow result: ``, is kept
  as printed).
Context roles: the user query is written ``user``; an earlier step's output ``assistant``; an observation that is a
tool's result ``tool`` (the ``Completed.`` marker of ``finish`` is not a tool result and is left out).

Run: ``python benchmarks/data/heldout_formats_65/hand_count.py`` (one JSON line per file).
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


def _json_block(text: str, start_marker: str) -> dict:
    """The JSON object printed right after ``start_marker`` (from its first ``{`` to the matching ``}``)."""
    start = text.index("{", text.index(start_marker))
    obj, _ = json.JSONDecoder().raw_decode(text[start:])
    return obj


def durable_ai_agent_run(path: Path) -> dict:
    """durable-ai-agent integration-test printout (retroryan/durable-ai-agent's ``test_ai_tools_endpoint.py`` run
    against the Temporal + DSPy agricultural weather agent, saved as ``Agentic Loop Sample Run.md``): one test query
    ("weather: Are conditions good for planting corn in Ames, Iowa?") sent to one workflow, so one conversation. The
    ``Initial response`` JSON holds the final answer (``last_response.message``, written by the extract agent after
    the loop); the ``Early trajectory snapshot`` JSON holds the ReAct steps (``thought_0..2``, ``tool_name_0..2``,
    ``tool_args_0..2``, ``observation_0..2``), which the ``Final Trajectory`` section prints again as text (``Iteration
    0..2``, counted once). Calls: 3 ReAct steps + 1 extract step = 4. Tool calls: the steps whose tool is not
    ``finish`` (``get_agricultural_conditions``, ``get_weather_forecast``) = 2."""
    text = path.read_text(encoding="utf-8")
    answer = _json_block(text, "Initial response:")["last_response"]["message"]
    traj = _json_block(text, "Early trajectory snapshot:")
    steps = sorted(int(k.rsplit("_", 1)[1]) for k in traj if k.startswith("tool_name_"))
    # the formatted "Final Trajectory" must show the same steps (printed twice, counted once)
    final_part = text[text.index("Final Trajectory:"):]
    assert [int(n) for n in re.findall(r"Iteration (\d+):", final_part)] == steps
    completions, contexts, ctx, tools = [], [], ["user"], 0
    for i in steps:
        completions.append(traj[f"thought_{i}"])
        contexts.append(list(ctx))
        ctx.append("assistant")
        if traj[f"tool_name_{i}"] != "finish":
            tools += 1
            ctx.append("tool")
    completions.append(answer)
    contexts.append(list(ctx))
    return _result("durable-ai-agent test-run printout (Markdown-saved console output)", 1, completions, contexts,
                   tools)


COUNTERS = {
    "durable-ai-agent-run": durable_ai_agent_run,
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
