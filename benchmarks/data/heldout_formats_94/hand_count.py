"""Hand counts of the ninety-fourth held-out set (benchmarks/data/heldout_formats_94/files), computed from the raw
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
- in a multi-agent simulation recording, each agent's decision recorded as a ``plan`` event is one LLM call; the
  ``observation`` event recorded for the same agent just before it is that call's recorded input (the agent's own
  ``system_prompt`` field and the state it observed); the model's context is written ``system`` (the framework's
  system prompt, which embeds the observation and the agent's memory) then ``user`` (the agent's step prompt);
- a reply that is only a tool call, recorded as the printed message object (``Message(content=None, ...,
  tool_calls=[...])``), has an empty completion text and one tool call per ``ChatCompletionMessageToolCall``; a reply
  recorded as text (the recorder prints the message's ``content`` when there is one and drops its tool calls from the
  printout) has that text as its completion, and its tool calls are known from the ``action`` event that follows it
  for the same agent: each ``tool_call_response`` entry there is the result of one tool call the model emitted;
- the recorder appends one newline to every printed plan; it is not part of the reply;
- an ``observation`` event with no ``plan`` after it (the run ended first) records no call;
- ``step_start`` / ``step_end`` / ``simulation_end`` events, ``agent_summaries`` and ``communication_network`` are the
  recorder's own bookkeeping, not calls;
- agents of a one-step run each decide once, from their own system prompt and observation: a later agent's context
  does not continue an earlier agent's context and reply, so each call is its own conversation.
Context roles: as described above (``system``, ``user``) for every call.

Run: ``python benchmarks/data/heldout_formats_94/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_TOOL_CALL = "ChatCompletionMessageToolCall("


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def mesa_llm_recording(path: Path) -> dict:
    """Mesa-LLM simulation recording JSON (``SimulationRecorder.save`` of mesa-llm's early recorder, June 2025:
    ``{metadata: {simulation_id, model_class, recording_config, total_steps, ...}, events: [{event_id, timestamp,
    step, agent_id, event_type, content, metadata: {source}}], agent_summaries, communication_network}``), here a
    one-step run of the negotiation example (buyer agents on a grid, ReAct reasoning with ``gpt-4o-mini``: one
    ``llm.generate`` with the tool schema per decision). Each ``plan`` event is one call; its completion is
    ``content.plan`` without the recorder's trailing newline, or empty where the plan is the printed tool-call-only
    message; its tool calls are the ``tool_call_response`` entries of the ``action`` event that follows it for the same
    agent (for a printed message, also the ``ChatCompletionMessageToolCall`` entries in it, which agree). An agent
    observed but not planned (run ended) holds no call. Each call is its own conversation (one step, one decision per
    agent). Context roles ``system``, ``user``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    events = data["events"]
    completions, contexts, tools = [], [], 0
    for i, ev in enumerate(events):
        if ev["event_type"] != "plan":
            continue
        plan = ev["content"]["plan"]
        if plan.endswith("\n"):
            plan = plan[:-1]
        printed_message = plan.startswith("Message(content=None,")
        completions.append("" if printed_message else plan)
        contexts.append(["system", "user"])
        action = next((e for e in events[i + 1:] if e["agent_id"] == ev["agent_id"]
                       and e["event_type"] == "action"), None)
        n_action = len(action["content"].get("tool_call_response") or []) if action else 0
        if printed_message:
            n_printed = plan.count(_TOOL_CALL)
            if n_printed != n_action:
                raise ValueError(f"{path.name}: {ev['event_id']} prints {n_printed} tool calls, action has {n_action}")
        tools += n_action
    return _result("Mesa-LLM simulation recording JSON", len(completions), completions, contexts, tools)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("mesa-llm__"):
        out = mesa_llm_recording(path)
    else:
        raise ValueError(f"no counter for {name}")
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
