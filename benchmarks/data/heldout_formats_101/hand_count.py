"""Hand counts of the hundred-and-first held-out set (benchmarks/data/heldout_formats_101/files), computed from the
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
- a log record that keeps the messages sent and the reply received is one call whose context is the messages sent;
  a later record whose messages are an earlier record's messages followed by that record's reply (as an ``assistant``
  message) continues the earlier record's conversation; a record whose messages start afresh, or re-send an earlier
  record's very messages without its reply (a new run of the same task), opens another conversation;
- text a logger appends to the reply it records (myagent's `` Tools: [NAMES]`` suffix naming the tool calls, its
  ``[Tool Call]`` placeholder for an empty reply) is the logger's, not the model's: the completion is the reply text
  without it, and the names in the suffix are the reply's tool calls (one per name);
- a tool the agent runs on the client to end its loop (myagent's ``terminate``) is a tool call like any other;
- a pipeline / workflow step that records the model it called and the model's response (an Airia ``RouterStep``'s
  ``DebugInformation``) is one call; its recorded context is the step's ``Input`` (the user's message, ``user``), the
  platform's own routing prompt being not recorded; other steps (input, output) are not calls;
- in a span-based trace an LLM span (Noveum ``llm.*`` span) is one call per prompt it records
  (``llm.input.prompts``), its completion the matching ``llm.output.response`` entry; a LangChain string prompt
  (``Human: ...``) is one ``user`` message; the agent / chain spans around it repeat its output and are not calls;
  all calls of one trace (one agent run) are one conversation;
- an action the model writes as reply text in a ReAct format (``Action:`` / ``Action Input:``) would be a matter of
  definition: no file of this set holds one (the one Noveum trace kept is the run whose single reply goes straight to
  ``Final Answer``);
- ids, timestamps, durations, token counts, model names, costs and SDK / project metadata are metadata, not context.
Context roles: as recorded (``user`` for a step input or a rendered LangChain string prompt).

Run: ``python benchmarks/data/heldout_formats_101/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_TOOLS_SUFFIX = re.compile(r" Tools: (\[[^\]]*\])$")


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def myagent_llm_log(path: Path) -> dict:
    """myagent LLM call log (``workdir/llm_response.json``, written by ``myagent/llm_logger.py``'s ``log_llm_call``:
    a JSON list of records ``{timestamp, model, messages, response, metadata: {input_tokens, output_tokens, stream,
    temperature, tool_calls, tools_available}, token_count}``). Each record is one call: its context is ``messages``
    (the OpenAI chat messages sent: system, user, the agent's ``next_step_prompt`` as a second user message, then
    assistant messages with ``tool_calls`` and ``tool`` results), its completion ``response`` without the
    `` Tools: [NAMES]`` suffix that ``llm.py`` appends when the reply has tool calls (``[Tool Call]``, written when the
    reply's content is empty, stands for an empty completion); its tool calls are the names in that suffix (the same
    count as ``metadata.tool_calls``; ``terminate`` included). A record continues the conversation of an earlier
    record whose messages it starts with, followed by an ``assistant`` message; otherwise it opens a conversation
    (a new run re-sending the same first messages is a new conversation)."""
    records = json.loads(path.read_text(encoding="utf-8"))
    threads: list[dict] = []  # {"last": messages of the thread's last record, "n": calls}
    completions, contexts, tools = [], [], 0
    for rec in records:
        msgs = rec["messages"]
        owner = None
        for t in reversed(threads):
            last = t["last"]
            if len(msgs) > len(last) and msgs[:len(last)] == last and msgs[len(last)]["role"] == "assistant":
                owner = t
                break
        if owner is None:
            owner = {"last": msgs, "n": 0}
            threads.append(owner)
        owner["last"], owner["n"] = msgs, owner["n"] + 1
        text = rec.get("response") or ""
        m = _TOOLS_SUFFIX.search(text)
        if m:
            tools += len(json.loads(m.group(1).replace("'", '"')))
            text = text[:m.start()]
        if text == "[Tool Call]":
            text = ""
        completions.append(text)
        contexts.append([x["role"] for x in msgs])
    return _result("myagent LLM call log JSON (llm_response.json)", len(threads), completions, contexts, tools)


def airia_execution_log(path: Path) -> dict:
    """Airia agent execution log JSON (the pipeline execution log that agent-execution-log-parser reads, its bundled
    ``sample.json``: ``{StepsExecutionContext: {STEP_ID: {StepId, StepType, DebugInformation: {modelName,
    modelDisplayName, modelId, inputTokens, outputTokens, totalTokens, modelProviderType, streamed, response},
    TimeTrackingData, Input: [{$type, Value, StepId, StepType}], Result, Success}}, Success}``). A step whose
    ``DebugInformation`` records a ``modelName`` and a ``response`` is one single-shot call: context its ``Input``
    values (``user``), completion ``response`` (here the router's JSON choice). Each such step is its own
    conversation (a router call's reply is not sent to a later model call in the log). No tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts = [], []
    for step in data["StepsExecutionContext"].values():
        debug = step.get("DebugInformation") or {}
        if debug.get("modelName") and "response" in debug:
            completions.append(debug["response"])
            contexts.append(["user" for _ in step.get("Input") or []])
    return _result("Airia agent execution log JSON", len(completions), completions, contexts, 0)


def noveum_trace_batch(path: Path) -> dict:
    """Noveum trace batch JSON (noveum-trace-python's export payload ``{traces: [{trace_id, name, start_time,
    end_time, duration_ms, status, span_count, error_count, attributes, metadata, spans: [{span_id, trace_id,
    parent_span_id, name, start_time, end_time, duration_ms, status, attributes, events, links}], sdk, project,
    environment}], timestamp}``, LangChain integration). Each ``llm.*`` span is one call per entry of
    ``llm.input.prompts`` (a rendered LangChain string prompt, ``user``), completion the matching entry of
    ``llm.output.response``. The ``chain_start.*`` span (the AgentExecutor) repeats the final reply in
    ``agent.output.finish.log`` and its ``agent_finish`` event: not a call. One conversation per trace with calls.
    The kept trace's single reply goes straight to ``Final Answer`` (no ReAct action, no tool span): no tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    convs, completions, contexts = 0, [], []
    for trace in data["traces"]:
        before = len(completions)
        for span in trace["spans"]:
            if not span["name"].startswith("llm."):
                continue
            attrs = span["attributes"]
            for prompt, reply in zip(attrs.get("llm.input.prompts") or [], attrs.get("llm.output.response") or []):
                completions.append(reply)
                contexts.append(["user"] if prompt else [])
        convs += len(completions) > before
    return _result("Noveum trace batch JSON (LangChain spans)", convs, completions, contexts, 0)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("myagent__"):
        out = myagent_llm_log(path)
    elif name.startswith("agent-execution-log-parser__"):
        out = airia_execution_log(path)
    else:
        out = noveum_trace_batch(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
