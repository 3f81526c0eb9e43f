"""Hand counts of the thirty-sixth held-out set (benchmarks/data/heldout_formats_36/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (copied from set 8's script, written before the product was run):
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
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context.

Rules made explicit for this set:
- a record the file types as a tool response is tool input (written ``tool``) whatever role the file gives it;
- the LLM steps a planner records for one session (one session id: the topic classifier, the reasoning step, the
  response checker, the error-message writer) are one conversation, even though each step's prompt is its own
  template; plans of distinct session ids are distinct conversations;
- a tool call recorded twice, once in the model's reply text and once as the harness's record of running it, is
  one tool call; a list of tool names kept beside the messages (expected / actual calls of an evaluation) is not
  a tool call;
- a service response that carries the same completion twice (the intermediate model result and the final result,
  possibly unmasked) is one call, its completion text the final one; an attempt recorded only as an error entry is
  a failed request, not a call;
- a prompt recorded as one string with no role is written ``prompt`` in the context roles.

Run: ``python benchmarks/data/heldout_formats_36/hand_count.py`` (one JSON line per file).
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


def _wxo_message(t: _Thread, m: dict) -> None:
    kind = m.get("type")
    if m["role"] == "assistant" and kind == "tool_call":
        t.out("", 1)
    elif m["role"] == "assistant" and kind == "tool_response":
        t.inp("tool")
    elif m["role"] == "assistant":
        t.out(m.get("content") or "")
    else:
        t.inp(m["role"])


def wxo_eval_messages(path: Path) -> dict:
    """IBM watsonx Orchestrate ADK evaluation messages JSON (``<test>.messages.json`` written by ``orchestrate
    evaluations evaluate``: a list of ``{role, content, type, event, conversational_search_metadata}``). One file is
    one evaluated chat: one conversation. ``user`` records (type ``text``) are input. ``assistant`` records of type
    ``tool_call`` are model output carrying one tool call each (``content`` is a JSON string ``{type, name, args,
    id}``); ``assistant`` records of type ``tool_response`` are the tool's result (``content`` ``{type, content,
    name, tool_call_id}``), i.e. tool input, not model output (explicit rule); ``assistant`` records of type
    ``text`` are the reply text. Each run of model output with no input between it is one call (here every tool
    call is answered by its response before the next output, so each tool call is its own call). No system prompt
    is recorded."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8")):
        _wxo_message(t, m)
    return _merge("watsonx Orchestrate evaluation messages JSON", [t])


def wxo_eval_analyze(path: Path) -> dict:
    """IBM watsonx Orchestrate ADK evaluation analysis JSON (``<test>.messages.analyze.json`` written by
    ``orchestrate evaluations analyze``: a list of ``{message, reason}`` where ``message`` is a record of the
    messages layout above and ``reason`` the analyser's verdict on it or null, then one ``{meta:
    {expected_tool_calls, actual_tool_calls, missed_tool_calls}}`` record). Counted exactly as the messages layout,
    over the ``message`` entries; the ``meta`` lists of tool names are the evaluation's summary, not tool calls
    (explicit rule), and the ``reason`` verdicts are not model output. One conversation."""
    t = _Thread()
    for rec in json.loads(path.read_text(encoding="utf-8")):
        if "message" in rec:
            _wxo_message(t, rec["message"])
    return _merge("watsonx Orchestrate evaluation analysis JSON", [t])


_YAML_CALL = re.compile(r"^- id: ", re.M)


def _plan_threads(plans: list) -> list:
    """One thread per session id; each ``LLMExecutionStep`` is one call (context: its ``promptContent``, one
    string with no role, written ``prompt``; completion: its ``promptResponse``)."""
    by_session: dict = {}
    for plan in plans:
        t = by_session.setdefault(plan["sessionId"], _Thread())
        emitted = 0
        run = 0
        for step in plan["plan"]:
            if step["type"] == "LLMExecutionStep":
                resp = step.get("promptResponse") or ""
                calls = len(_YAML_CALL.findall(resp))
                emitted += calls
                t.completions.append(resp)
                t.contexts.append(["prompt"])
                t.tools += calls
            elif step["type"] == "FunctionStep":
                run += 1
        assert emitted == run, (emitted, run)  # each emitted call has its FunctionStep: counted once
    return list(by_session.values())


def agentforce_plan_trace(path: Path) -> dict:
    """Salesforce Agentforce planner trace JSON (the Agent API's ``PlanSuccessResponse`` for one user input, as
    the @salesforce/agents library stores it: ``{type, planId, sessionId, intent, topic, plan: [steps]}``). Steps:
    ``UserInputStep`` (the user's message), ``LLMExecutionStep`` (one model call: ``promptName``, the whole prompt
    sent as ``promptContent``, the raw reply as ``promptResponse``, latency and times), ``UpdateTopicStep``,
    ``EventStep``, ``FunctionStep`` (the harness running a function: name, input, output or errors),
    ``ReasoningStep`` (the checker's verdict copied out of its reply), ``PlannerResponseStep`` (the message shown
    to the user, a copy of a reply), ``GuardrailsStep`` (an adherence verdict whose prompt is not recorded:
    mentioned, not counted). Calls: the ``LLMExecutionStep`` records. Tool calls: the functions the model emitted,
    written in its reply as a YAML list of ``- id: call_... / function: {name, arguments}`` entries; each is also
    recorded as a ``FunctionStep`` (checked equal; counted once, explicit rule). Conversations: one per session id
    (explicit rule)."""
    plan = json.loads(path.read_text(encoding="utf-8"))
    return _merge("Agentforce planner trace JSON", _plan_threads([plan]))


def agentforce_api_trace(path: Path) -> dict:
    """Salesforce Agentforce planner traces wrapped in an action-result envelope (``{actions: [{id, state, error,
    returnValue: PlanSuccessResponse, ...}], traceId, status, totalExecutionTime, summary}``, as the
    @salesforce/agents library reads them from the org's API). Each ``returnValue`` is a plan counted as in the
    planner-trace layout; ``summary`` (step counts, average safety score) is not counted. The two plans here belong
    to two session ids: two conversations."""
    data = json.loads(path.read_text(encoding="utf-8"))
    plans = [a["returnValue"] for a in data["actions"] if a.get("returnValue")]
    return _merge("Agentforce planner trace envelope JSON", _plan_threads(plans))


def sap_orchestration_response(path: Path) -> dict:
    """SAP AI Core orchestration service completion response JSON (as the SAP Cloud SDK for AI keeps it for its
    tests: ``{request_id, intermediate_results: {templating: [messages], input_masking?, llm: chat completion,
    output_unmasking?, ...}, final_result: chat completion, intermediate_failures?}``). One response is one model
    call: its context is ``intermediate_results.templating`` (the messages after templating, roles as recorded),
    its completion ``final_result.choices[0].message`` (the same completion as ``intermediate_results.llm``, after
    unmasking where masking ran: one call, explicit rule), its tool calls that message's ``tool_calls``.
    ``intermediate_failures`` entries (a request to another model refused with an error, before the fallback
    answered) are failed requests, not calls. One conversation."""
    data = json.loads(path.read_text(encoding="utf-8"))
    ctx = [m["role"] for m in data["intermediate_results"]["templating"]]
    msg = data["final_result"]["choices"][0]["message"]
    t = _Thread(ctx)
    t.out(msg.get("content") or "", len(msg.get("tool_calls") or []))
    return _merge("SAP AI Core orchestration response JSON", [t])


_BOTSHARP_HEAD = re.compile(r"^\d{2}/\d{2}/\d{4} [^|]+\|(?P<role>[a-z]+)\|")


def botsharp_dialogs(path: Path) -> dict:
    """BotSharp file-repository dialog log (``conversations/<id>/dialogs.txt``: per message a header line
    ``MM/dd/yyyy hh:mm:ss.fff AM|role|agentId|messageId|senderId`` then the content on lines starting ``  - ``).
    One file is one conversation. ``assistant`` messages are model output (one call per run of them with no input
    between), the others input with their role. No tool calls; no system prompt recorded."""
    t = _Thread()
    role = None
    text: list = []

    def flush() -> None:
        if role == "assistant":
            t.out("\n".join(text))
        elif role is not None:
            t.inp(role)

    for line in path.read_text(encoding="utf-8").splitlines():
        head = _BOTSHARP_HEAD.match(line)
        if head:
            flush()
            role, text = head.group("role"), []
        elif line.strip():
            text.append(line[4:] if line.startswith("  - ") else line)
    flush()
    return _merge("BotSharp dialogs.txt", [t])


COUNTERS = {
    "wxo-eval-messages": wxo_eval_messages,
    "wxo-eval-analyze": wxo_eval_analyze,
    "agentforce-plan-trace": agentforce_plan_trace,
    "agentforce-api-trace": agentforce_api_trace,
    "sap-orchestration-response": sap_orchestration_response,
    "botsharp-dialogs": botsharp_dialogs,
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
