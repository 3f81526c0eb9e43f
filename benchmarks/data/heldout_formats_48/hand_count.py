"""Hand counts of held-out set 48 (benchmarks/data/heldout_formats_48/files), computed from the raw files with the
standard library only (this script does not import tracedraft), each by its format's layout as read in the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as set 8's):
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
Rules made explicit for this set:
- a conversation is one thread of calls as the file records it: where a file groups LLM calls by the function /
  agent invocation that made them (NeMo Agent Toolkit's ``function_ancestry.function_id``), the calls of one
  invocation are one conversation, and a different invocation (a planner, a ReAct assistant, a SQL retriever, a code
  generator) is a different conversation even where its prompt quotes an earlier invocation's reply;
- a ReAct action written only as text in the reply (``Action: NAME`` / ``Action Input: ...``) is not by itself a tool
  call; a structured record the harness writes of that tool's execution (a ``TOOL_END`` step, a span of kind
  ``TOOL``) is one tool call per execution; a second record of the same execution (the tool function's own
  ``FUNCTION_START`` / ``CHAIN`` span) is not counted again;
- a game move written as the reply text and answered by the environment as the next user message (ARC-AGI-3's
  ``ACTION1`` ... ``RESET``, copied by the harness into ``parsed_action``) is the reply's content, not a tool call;
- in a per-step record that keeps the whole message list of its thread, every assistant message is one call (its
  context is the messages before it); a reply recorded twice in the same step (as the list's last message and as
  the step's ``assistant_response``) is counted once;
- an eval item with no recorded intermediate step holds no call (its empty answer is not a reply).
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context; LangChain message types are written as roles
(``system``, ``human`` -> ``user``, ``ai`` -> ``assistant``).

Run: ``python benchmarks/data/heldout_formats_48/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_ROLE = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "user": "user",
         "assistant": "assistant"}


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


class _Thread:
    """Accumulates one thread: ``out`` adds model output to the open call (opening one if the last record was
    input), ``inp`` adds an input record (closing the open call)."""

    def __init__(self, head: list | None = None) -> None:
        self.ctx: list = list(head or [])
        self.completions: list = []
        self.contexts: list = []
        self.tools = 0
        self._open = False

    def out(self, text: str = "", tools: int = 0) -> None:
        if not self._open:
            self.completions.append("")
            self.contexts.append(list(self.ctx))
            self.ctx.append("assistant")
            self._open = True
        self.completions[-1] += text
        self.tools += tools

    def inp(self, role: str) -> None:
        self.ctx.append(role)
        self._open = False


def _merge(fmt: str, threads: list) -> dict:
    kept = [t for t in threads if t.completions]
    return _result(fmt, len(kept), [c for t in kept for c in t.completions],
                   [c for t in kept for c in t.contexts], sum(t.tools for t in kept))


def ragaai_catalyst_trace(path: Path) -> dict:
    """RagaAI Catalyst agentic trace JSON (what RagaAI Catalyst's tracer writes for a NeMo Agent Toolkit workflow:
    ``{id, trace_name, project_name, start_time, end_time, metadata, replays, data: [{spans: [...]}],
    network_calls, interactions, workflow, tracer_type: "agentic/nemo-framework"}``; each span
    ``{name, context, kind, parent_id, start_time, end_time, status, attributes, events, links, resource}`` with
    OpenInference / ``aiq.*`` attributes). An LLM call is a span whose ``openinference.span.kind`` is ``LLM``: its
    context is ``input.value`` (a JSON list of LangChain messages, ``type`` system / human / ai) and its completion
    ``output.value`` (4 calls here, one ReAct agent). The calls form one thread: each later call's input is the
    earlier call's input, its reply (``ai``) and the observation (``human``), so one conversation. The replies carry
    no structured ``tool_calls`` (ReAct text actions); the harness records each tool execution as a span of kind
    ``TOOL`` (``TOOL_START`` event, 3 here), counted one per execution; the ``FUNCTION_START`` / ``CHAIN`` span of the
    same tool function is a second record of that execution and is not counted. The ``workflow`` list only logs
    span starts / ends (no contexts)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    threads: list = []  # (messages as (role, stripped content), _Thread)
    tools = 0
    for trace in doc["data"]:
        for span in trace["spans"]:
            attrs = span["attributes"]
            kind = attrs.get("openinference.span.kind")
            if kind == "TOOL":
                tools += 1
            if kind != "LLM":
                continue
            msgs = [(_ROLE[m["type"]], (m.get("content") or "").strip()) for m in json.loads(attrs["input.value"])]
            reply = attrs.get("output.value") or ""
            for seen, t in threads:
                if msgs[:len(seen)] == seen:  # continues that thread's context and reply
                    break
            else:
                seen, t = [], _Thread()
                threads.append((seen, t))
            for role, _text in msgs[len(seen):]:
                t.inp(role)
            t.out(reply)
            seen[:] = msgs + [("assistant", reply.strip())]
    out = _merge("RagaAI Catalyst agentic trace JSON (NeMo Agent Toolkit exporter)", [t for _, t in threads])
    out["tool_calls"] = tools
    return out


def nat_eval_workflow_output(path: Path) -> dict:
    """NeMo Agent Toolkit evaluation output ``workflow_output.json`` (what ``nat eval`` writes: a JSON list of eval
    items ``{id, question, answer, generated_answer, intermediate_steps, expected_intermediate_steps}``; each
    intermediate step ``{parent_id, function_ancestry: {function_id, function_name, parent_id, parent_name},
    payload: {event_type, name, framework, metadata: {chat_responses, ...}, data: {input, output}, usage_info,
    UUID}}``; only ``LLM_END`` and ``TOOL_END`` steps are kept in these files). Each ``LLM_END`` step is one call:
    its completion is ``data.output``, its recorded context ``data.input`` (the newest input text only, written
    ``user``). Conversations: the calls of one function invocation (``function_ancestry.function_id``) within one
    item, in file order (the ReAct assistant's successive calls; the SQL retriever's query-writing and summarising
    calls; the planner's single call); a different invocation is a different conversation. Tool calls: one per
    ``TOOL_END`` step (the harness's record of a tool the ReAct agent ran; the agent's replies hold only text
    actions). Items with no intermediate steps (failed runs, empty answer) hold no call."""
    threads = []
    tools = 0
    for item in json.loads(path.read_text(encoding="utf-8")):
        by_fn: dict = {}
        for step in item["intermediate_steps"]:
            payload = step["payload"]
            if payload["event_type"] == "TOOL_END":
                tools += 1
            if payload["event_type"] != "LLM_END":
                continue
            t = by_fn.setdefault(step["function_ancestry"]["function_id"], _Thread())
            t.inp("user")
            t.out(payload["data"].get("output") or "")
        threads.extend(by_fn.values())
    out = _merge("NeMo Agent Toolkit eval workflow_output.json", threads)
    out["tool_calls"] = tools
    return out


def arc_agi_3_step_record(path: Path) -> dict:
    """ARC-AGI-3 benchmarking harness step record (``recordings/<agent>.<run id>/step_NNN.json`` written by
    arcprize/arc-agi-3-benchmarking's recorder for the conversation-rolling-window agent: ``{step, timestamp,
    duration_seconds, model, messages_sent: [{role, content}], assistant_response, reasoning, parsed_action, usage,
    retries}``). ``messages_sent`` is the whole thread up to this step (system prompt, then a user message with the
    game state and frame and an assistant reply per step) and ends with this step's reply, the same text as
    ``assistant_response``. Every assistant message is one call whose context is the messages before it (3 here:
    steps 1 to 3 of one game); one thread, one conversation. The replies are game moves in text (``ACTION3``,
    ``RESET``...), answered by the game as the next user message: no tool calls. ``reasoning`` is null."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    msgs = doc["messages_sent"]
    t = _Thread()
    for m in msgs:
        if m["role"] == "assistant":
            t.out(m.get("content") or "")
        else:
            t.inp(m["role"])
    if not (msgs and msgs[-1]["role"] == "assistant" and msgs[-1]["content"] == doc["assistant_response"]):
        t.out(doc["assistant_response"])  # not the case in these files: the reply is already the list's last message
    return _merge("ARC-AGI-3 benchmarking step record JSON", [t])


COUNTERS = {
    "ragaai-catalyst-trace": ragaai_catalyst_trace,
    "nat-eval-workflow-output": nat_eval_workflow_output,
    "arc-agi-3-step-record": arc_agi_3_step_record,
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
