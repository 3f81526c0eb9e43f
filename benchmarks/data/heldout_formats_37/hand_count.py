"""Hand counts of the thirty-seventh held-out set (benchmarks/data/heldout_formats_37/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself.

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
Rules made explicit for this set:
- one LLM call recorded twice at two levels of the same trace (a framework-level span holding the call's input and
  output as events, and a child HTTP-client span of the same call with no content) is one call: only the span that
  records the content is counted;
- agents handing off to one another over one shared message history (each later call's context holds the earlier
  calls' messages and replies, only the system prompt at its head swapped for the next agent's) are one thread, so
  one conversation; a hand-off is a tool call when the model emitted it as one (``transfer_to_...``);
- two single-shot calls side by side with the same prompt (the same request sent to two providers, in two traces)
  are two conversations: neither context holds the other's reply;
- a completion that is only tool calls has the empty string as its completion text.
Context roles are written as the file records them, one per input entry, with ``human`` written ``user``, ``ai`` /
``model`` written ``assistant``, a function-call item ``assistant`` and a function-call-output item ``tool``.

Run: ``python benchmarks/data/heldout_formats_37/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_ROLE = {"human": "user", "ai": "assistant", "model": "assistant"}


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


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


def _entry_role(raw: str) -> str:
    """The role of one Monocle ``data.input`` entry (a JSON string): a one-key object ``{role: content}``, or a
    Responses-API item (``{tool_function, tool_arguments, call_id}`` a function call the model made earlier,
    ``{call_id, output}`` its result)."""
    item = json.loads(raw)
    if "tool_function" in item:
        return "assistant"
    if "output" in item and "call_id" in item:
        return "tool"
    (key,) = item.keys()
    return _ROLE.get(key, key)


def _monocle_reply(span: dict) -> tuple[str, int]:
    """Completion text and tool-call count of one Monocle inference span: its ``data.output`` event's ``response``
    is a JSON string of one object keyed by the reply's role: ``{"assistant" | "model" | "ai": text}`` for text,
    ``{"tools": [{tool_id, tool_name, tool_arguments}, ...]}`` for tool calls (one per entry), or
    ``{"ai": {name, args, id, type: "tool_call"}}`` for one LangChain tool call (a list of them: one each)."""
    out = next(e.get("attributes", {}) for e in span["events"] if e["name"] == "data.output")
    reply = json.loads(out["response"]) if out.get("response") else {}
    text, tools = "", 0
    for key, value in reply.items():
        if key == "tools":
            tools += len(value)
        elif isinstance(value, str):
            text += value
        elif isinstance(value, dict) and value.get("type") == "tool_call":
            tools += 1
        elif isinstance(value, list):
            tools += sum(1 for v in value if isinstance(v, dict) and v.get("type") == "tool_call")
    return text, tools


def _calls(spans: list, trace_id) -> dict:
    """Groups the content-holding inference spans by trace, in start-time order: {trace: [(context, text, tools)]}.
    A counted span has ``span.type`` ``inference`` or ``inference.framework`` and a ``data.input`` event; the
    ``inference.modelapi`` spans (the same call seen at the HTTP client, no events) are not counted."""
    traces: dict = {}
    for span in sorted(spans, key=lambda s: s["start_time"]):
        kind = span.get("attributes", {}).get("span.type", "")
        inputs = [e for e in span.get("events", []) if e["name"] == "data.input"]
        if kind not in ("inference", "inference.framework") or not inputs:
            continue
        context = [_entry_role(raw) for raw in inputs[0]["attributes"]["input"]]
        text, tools = _monocle_reply(span)
        traces.setdefault(trace_id(span), []).append((context, text, tools))
    return traces


def _from_traces(fmt: str, traces: dict) -> dict:
    completions, contexts, tools = [], [], 0
    for calls in traces.values():
        for context, text, n in calls:
            completions.append(text)
            contexts.append(context)
            tools += n
    return _result(fmt, len(traces), completions, contexts, tools)


def monocle(path: Path) -> dict:
    """Monocle (monocle2ai/monocle, ``monocle_apptrace``) file-exporter trace JSON: a list of OpenTelemetry spans
    as the Python SDK writes them (``name``, ``context.{trace_id, span_id}``, ``parent_id``, ``kind``,
    ``start_time``, ``attributes``, ``events``, ``resource``), with Monocle's own attributes (``span.type``,
    ``entity.N.*``, ``workflow.name``) and events ``data.input`` (``input``: a list of JSON strings, one per context
    message) and ``data.output`` (``response``: a JSON string). One LLM call per ``inference`` /
    ``inference.framework`` span holding a ``data.input`` event (its context is that list; its reply is
    ``data.output``); ``inference.modelapi`` children with no events are the same calls, not counted again. Tool
    calls: the entries of a ``tools`` reply, or a LangChain ``tool_call`` object as the ``ai`` reply. Spans of type
    ``agentic.tool.invocation`` / ``agentic.invocation`` / ``agentic.turn`` / ``workflow`` are the harness's
    records, not calls. Conversations: one per trace id; within each trace of this set every later call's context
    holds the earlier calls' messages (read in each file: the OpenAI Agents SDK run, 2 calls, 3 parallel tool calls;
    the Microsoft Agent Framework run, 2 calls, 1 tool call, the tool result in the second context; the LangGraph
    supervisor run, 10 calls over one shared history, hand-offs included), and the LiteLLM sample holds two
    single-shot calls in two traces (OpenAI and Azure, the same prompt), so two conversations."""
    spans = json.loads(path.read_text(encoding="utf-8"))
    return _from_traces("Monocle file-exporter trace JSON", _calls(spans, lambda s: s["context"]["trace_id"]))


def okahu(path: Path) -> dict:
    """Okahu trace JSON (the Okahu service's trace API layout of Monocle spans, as ``monocle_test_tools``'
    ``JSONSpanLoader`` reads it: ``{trace_id, start_time, end_time, duration_ms, status, spans: [...]}``, each span
    flat: ``span_name``, ``trace_id``, ``span_id``, ``parent_id``, ``start_time``, ``duration_ms``, ``status``,
    ``attributes`` with Monocle's keys and ``scope.*`` test metadata, ``events`` ``data.input`` / ``data.output`` as
    in the Monocle layout). Calls, tool calls and contexts as for ``monocle`` (``inference.framework`` spans with a
    ``data.input`` event, in start-time order, the file's span order being another). Each file is one trace of a
    LangGraph supervisor hand-off run over one shared message history (supervisor and specialists, only the system
    prompt swapped): one conversation. Tool calls include the ``transfer_to_...`` hand-offs the model emitted; the
    ``Transferring back ...`` assistant messages in later contexts are written by the harness, not by a call."""
    trace = json.loads(path.read_text(encoding="utf-8"))
    return _from_traces("Okahu trace JSON (Monocle spans)", _calls(trace["spans"], lambda s: s["trace_id"]))


def invariant_explorer(path: Path) -> dict:
    """Invariant Explorer dataset export JSONL (invariantlabs-ai/explorer's ``download`` of a dataset): a first
    line ``{"metadata": {...}}`` (dataset metadata: ``created_on``, the tool signatures seen), then one trace per
    line ``{index, messages, metadata, annotations}``; ``messages`` are OpenAI-style (system / user / assistant with
    ``tool_calls`` whose ``arguments`` are objects / tool with ``tool_call_id`` and a ``tool_call`` echo). One trace
    is one conversation. Each run of assistant messages with no input between them is one call (none are adjacent
    here: 3 calls); its ``content`` (null for the two tool-call turns) is the completion, each ``tool_calls`` entry
    a tool call. The ``tool_call`` echo on tool messages is the harness's record of the call, not another call."""
    threads = []
    for row in _lines(path):
        if "messages" not in row:
            continue
        t = _Thread()
        for m in row["messages"]:
            if m["role"] == "assistant":
                t.out(m.get("content") or "", len(m.get("tool_calls") or []))
            else:
                t.inp(m["role"])
        threads.append(t)
    return _merge("Invariant Explorer dataset export JSONL", threads)


COUNTERS = {
    "monocle": monocle,
    "okahu": okahu,
    "invariant-explorer": invariant_explorer,
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
