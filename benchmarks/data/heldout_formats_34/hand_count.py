"""Hand counts of the thirty-fourth held-out set (benchmarks/data/heldout_formats_34/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; copied from the eighth set's):
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
- in a workflow engine's event history, each completed model-invocation activity is one call: its scheduled input
  is the call's context and its result the reply; payloads are decoded as the history's own metadata says (base64
  of ``json/plain``); the activities that run tools (or sub-workflows) are tool executions, not LLM calls;
- an agent used as a tool by another agent is a tool call of the calling model (it emitted a function call), and the
  inner agent's own model call, whose context starts afresh, is a separate conversation;
- the same thread recorded twice in one file (the same messages with the same ids, once per run instance and once
  as the agent's memory) is one thread;
- a record that the platform marks as a tool response is tool input, whatever role it is filed under;
- a reply made only of tool calls has the empty string as its completion text;
- the same run written by the tool in two layouts (a JSON result and a Markdown trace) is counted in each file on
  its own.
Context roles: written as the file records them (``model`` as ``assistant``); a message or content made only of tool
results is written ``tool``; the model's own earlier function-call items replayed in a context are written
``assistant``; a system prompt kept beside the messages (not in the list) is written ``system`` at the head of every
context.

Run: ``python benchmarks/data/heldout_formats_34/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


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


# --- Temporal workflow histories -------------------------------------------------------------------------------

_MODEL_ACTIVITIES = {"invoke_model_activity", "invoke_model"}


def _payloads(attrs: dict, key: str) -> list:
    """Decodes the payloads under ``attrs[key]`` (each ``{metadata: {encoding}, data}``, both base64; only
    ``json/plain`` occurs in these files)."""
    out = []
    for p in (attrs.get(key) or {}).get("payloads") or []:
        enc = base64.b64decode(p["metadata"]["encoding"]).decode()
        assert enc == "json/plain", enc
        out.append(json.loads(base64.b64decode(p.get("data") or "").decode()))
    return out


def _canon(item) -> str:
    return json.dumps(item, sort_keys=True, ensure_ascii=False)


def _openai_agents_call(inp: dict, res: dict) -> dict:
    """One ``invoke_model_activity`` of Temporal's OpenAI Agents integration: the input is ``{system_instructions,
    input: [items], tools, handoffs, ...}`` (items: ``{role, content}`` messages, ``function_call`` and
    ``function_call_output`` items, earlier assistant ``message`` items), the result ``{output: [items], usage}``
    (``message`` items with ``output_text`` parts; ``function_call`` items are tool calls)."""
    roles = ["system"] if inp.get("system_instructions") else []
    for it in inp["input"]:
        if it.get("type") == "function_call_output":
            roles.append("tool")
        elif it.get("type") == "function_call":
            roles.append("assistant")
        else:
            roles.append(it["role"])
    text, tools = "", 0
    for it in res["output"]:
        if it.get("type") == "function_call":
            tools += 1
        elif it.get("type") == "message":
            text += "".join(c.get("text") or "" for c in it["content"] if c.get("type") == "output_text")
    return {"roles": roles, "text": text, "tools": tools,
            "ctx_items": [_canon(i) for i in inp["input"]], "reply_items": [_canon(i) for i in res["output"]]}


def _adk_call(inp: dict, res: list) -> dict:
    """One ``invoke_model`` activity of Temporal's Google ADK integration: the input is an ``LlmRequest``
    (``{model, contents: [{role, parts}], config: {systemInstruction, tools, ...}}``), the result the list of
    ``LlmResponse`` (``{content: {role: model, parts}}``); a ``functionCall`` part is a tool call, a content made only
    of ``functionResponse`` parts is tool input."""
    roles = ["system"] if (inp.get("config") or {}).get("systemInstruction") else []
    for c in inp["contents"]:
        parts = c.get("parts") or []
        if parts and all(p.get("functionResponse") for p in parts):
            roles.append("tool")
        else:
            roles.append("assistant" if c["role"] == "model" else c["role"])
    text, tools, reply = "", 0, []
    for r in res:
        content = r.get("content") or {}
        reply.append(content)
        for p in content.get("parts") or []:
            if p.get("functionCall"):
                tools += 1
            elif p.get("text") and not p.get("thought"):
                text += p["text"]
    return {"roles": roles, "text": text, "tools": tools,
            "ctx_items": [_canon(c) for c in inp["contents"]], "reply_items": [_canon(c) for c in reply]}


def temporal_history(path: Path) -> dict:
    """Temporal workflow event history JSON (``{events: [{eventId, eventType, ...EventAttributes}]}``, as exported
    for replay tests), here of workflows that run an agent through Temporal's agent integrations (OpenAI Agents SDK,
    Google ADK). Each ``ACTIVITY_TASK_COMPLETED`` whose scheduled activity (``scheduledEventId`` ->
    ``ACTIVITY_TASK_SCHEDULED``) is a model invocation (``invoke_model_activity`` / ``invoke_model``) is one call:
    the scheduled ``input`` payload is the request the model got (its context), the completed ``result`` payload the
    reply. The other activities (``get_weather``) execute the tool calls. Conversations: a call whose context items
    begin with an earlier call's context items followed by that call's reply items continues it (same thread);
    threads are joined transitively, and a call continuing no earlier call opens a new one."""
    events = json.loads(path.read_text(encoding="utf-8"))["events"]
    scheduled = {}
    calls = []
    for e in events:
        if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED":
            a = e["activityTaskScheduledEventAttributes"]
            scheduled[e["eventId"]] = (a["activityType"]["name"], _payloads(a, "input"))
        elif e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_COMPLETED":
            a = e["activityTaskCompletedEventAttributes"]
            name, inp = scheduled[a["scheduledEventId"]]
            if name not in _MODEL_ACTIVITIES:
                continue
            req, res = inp[0], _payloads(a, "result")[0]
            calls.append(_adk_call(req, res) if "contents" in req else _openai_agents_call(req, res))
    parent = list(range(len(calls)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for j, cj in enumerate(calls):
        for i in range(j):
            ci = calls[i]
            prefix = ci["ctx_items"] + ci["reply_items"]
            if cj["ctx_items"][:len(prefix)] == prefix:
                parent[find(j)] = find(i)
    convs = len({find(i) for i in range(len(calls))})
    return _result("Temporal workflow history JSON (agent integration activities)", convs,
                   [c["text"] for c in calls], [c["roles"] for c in calls], sum(c["tools"] for c in calls))


# --- IBM watsonx Orchestrate ADK evaluation records ------------------------------------------------------------


def _wxo_thread(messages: list) -> _Thread:
    t = _Thread()
    for m in messages:
        if m["type"] == "tool_response":
            t.inp("tool")
        elif m["role"] == "assistant" and m["type"] == "tool_call":
            t.out("", 1)
        elif m["role"] == "assistant":
            t.out(m["content"] or "")
        else:
            t.inp(m["role"])
    return t


def wxo_eval_messages(path: Path) -> dict:
    """watsonx Orchestrate ADK evaluation messages JSON (``<case>.messages.json``, written by the ADK's agent
    evaluation for one test case: a list of ``{role, content, type, event, conversational_search_metadata}``; the
    user turns come from the evaluation's simulated user; assistant records are the agent's stream, ``type``
    ``tool_call`` (``content`` a JSON string ``{type, name, args, id}``), ``tool_response`` (the tool's result, filed
    under role ``assistant``) or ``text`` (``event: message.created``)). One file is one run: one conversation. Each
    run of agent output with no input between is one call; every ``tool_call`` record is one tool call and is
    followed here by its ``tool_response`` (tool input), so each tool call is its own call. No system prompt is
    recorded."""
    return _merge("watsonx Orchestrate ADK evaluation messages JSON",
                  [_wxo_thread(json.loads(path.read_text(encoding="utf-8")))])


def wxo_eval_analyze(path: Path) -> dict:
    """watsonx Orchestrate ADK evaluation analysis JSON (``<case>.messages.analyze.json``: the same run's records
    wrapped as ``{message: {...}, reason}`` with the evaluator's verdict per record, and a last ``{meta:
    {expected_tool_calls, actual_tool_calls, missed_tool_calls}}`` entry). The ``message`` records are counted as in
    the messages layout (one conversation); ``reason`` and ``meta`` are the evaluator's annotations, not calls."""
    entries = json.loads(path.read_text(encoding="utf-8"))
    return _merge("watsonx Orchestrate ADK evaluation analysis JSON",
                  [_wxo_thread([e["message"] for e in entries if "message" in e])])


# --- Dapr Agents workflow state ----------------------------------------------------------------------------------


def dapr_agents_state(path: Path) -> dict:
    """Dapr Agents agent state JSON (``<Agent>_state.json``, written by a durable agent run on Dapr Workflows:
    ``{instances: {<workflow instance id>: {input, output, start_time, end_time, messages, last_message,
    tool_history, ...}}, chat_history: [...]}``; messages in the OpenAI layout with ``id`` and ``timestamp``,
    assistant ``tool_calls``, ``tool`` results with ``tool_call_id``). Each instance's ``messages`` is one thread;
    ``chat_history`` (the agent's memory) holds the same messages with the same ids, so it is the same thread and is
    not counted again (a memory thread with other ids would be its own). Each run of assistant messages with no input
    between is one call; each ``tool_calls`` entry is one tool call (``tool_history`` is the record of their
    execution). No system prompt is recorded."""
    d = json.loads(path.read_text(encoding="utf-8"))
    lists = [inst.get("messages") or [] for inst in d["instances"].values()] + [d.get("chat_history") or []]
    seen, threads = set(), []
    for msgs in lists:
        key = tuple(m.get("id") for m in msgs)
        if not msgs or key in seen:
            continue
        seen.add(key)
        t = _Thread()
        for m in msgs:
            if m["role"] == "assistant":
                t.out(m.get("content") or "", len(m.get("tool_calls") or []))
            else:
                t.inp(m["role"])
        threads.append(t)
    return _merge("Dapr Agents workflow state JSON", threads)


# --- GenAIScript run outputs -------------------------------------------------------------------------------------


def genaiscript_batch_result(path: Path) -> dict:
    """GenAIScript batch run result JSON (one file per input file of ``genaiscript batch``, version 1.18: ``{prompt:
    [messages], vars, edits, annotations, changelogs, fileEdits, trace, text, version, fences, frames, genVars}``).
    ``prompt`` is the chat request sent (its messages are the context), ``text`` the model's reply; ``trace`` is the
    same run's Markdown trace (it shows the same request and reply again: not another call), ``edits`` /
    ``fileEdits`` what the tool did with the reply. One call, one conversation, no tool calls. (A result holding an
    ``error`` and no reply would be a failed request.)"""
    d = json.loads(path.read_text(encoding="utf-8"))
    if d.get("error"):
        return _result("GenAIScript batch result JSON", 0, [], [], 0)
    t = _Thread([m["role"] for m in d["prompt"]])
    t.out(d["text"])
    return _merge("GenAIScript batch result JSON", [t])


_GS_REQUEST = re.compile(r'<details id="🧠-llm-request[^"]*" class="genaiscript">')
_GS_MESSAGES = re.compile(r"``````json\n(.*?)\n``````", re.S)
_GS_OUTPUT = re.compile(r'<details id="output" class="genaiscript">\s*<summary>\s*output\s*</summary>\s*'
                        r"```markdown\n(.*?)\n```", re.S)


def genaiscript_trace(path: Path) -> dict:
    """GenAIScript run trace Markdown (``<file>.trace.md``, version 1.18: nested ``<details class="genaiscript">``
    sections: spec, script, prompt (the rendered prompt and system scripts), ``🧠 llm request (N messages)`` with a
    ``✉️ messages`` block (the chat request JSON: ``{temperature, messages, stream}``) and the HTTP status, then
    ``📩 llm response`` with its ``output`` block, a parsed copy of it and the edits). Each ``llm request`` section
    is one call: its messages are the context, the first ``output`` block after it the completion. The ``prompt``
    section shows the same text before it is sent (not a call); the ``json (parsed)`` block is the tool's parse of
    the same reply. One request section here: one call, one conversation, no tool calls."""
    text = path.read_text(encoding="utf-8")
    starts = [m.start() for m in _GS_REQUEST.finditer(text)] + [len(text)]
    threads = []
    for a, b in zip(starts, starts[1:]):
        section = text[a:b]
        req = json.loads(_GS_MESSAGES.search(section).group(1))
        out = _GS_OUTPUT.search(section)
        if out is None:
            continue
        t = _Thread([m["role"] for m in req["messages"]])
        t.out(out.group(1))
        threads.append(t)
    return _merge("GenAIScript trace Markdown", threads)


COUNTERS = {
    "temporal-history": temporal_history,
    "wxo-eval-messages": wxo_eval_messages,
    "wxo-eval-analyze": wxo_eval_analyze,
    "dapr-agents-state": dapr_agents_state,
    "genaiscript-batch-result": genaiscript_batch_result,
    "genaiscript-trace": genaiscript_trace,
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
