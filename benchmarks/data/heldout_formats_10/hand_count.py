"""Hand counts of the tenth held-out set (benchmarks/data/heldout_formats_10/files), computed from the raw files
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
Rules made explicit for this set:
- a span / record that stands for exactly one model request (it carries that request's own token usage) is one call,
  even where two such records follow each other with no input between them (none do in this set's files); the
  merging rule above is for one reply split over several records;
- where a trace records the input messages of the first call only and each later call of the same agent run only
  by its reply (any-agent), a later call's context is the earlier call's context, its reply and the tool results
  that followed (``assistant`` once per reply, ``tool`` once per executed tool), and it belongs to the same
  conversation; such a call counts as recorded (its reply and usage are there, its context follows from the run);
- a function-level span that records the arguments the application passed to its generation step and the text the
  model returned (TruLens ``generation`` span) is one call whose context is one ``user`` turn (the prompt template
  that combined those arguments is not recorded);
- the completion text of a call whose reply is only tool calls is the empty string.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context.

Run: ``python benchmarks/data/heldout_formats_10/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class _Thread:
    """Accumulates one thread: ``out`` adds model output to the open call (opening one if the last record was
    input), ``inp`` adds an input record (closing the open call), ``close`` ends the open call without input."""

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

    def close(self) -> None:
        self._open = False


def _merge(fmt: str, threads: list) -> dict:
    kept = [t for t in threads if t.completions]
    return _result(fmt, len(kept), [c for t in kept for c in t.completions],
                   [c for t in kept for c in t.contexts], sum(t.tools for t in kept))


def _promptflow_llm_nodes(calls: list) -> list:
    """The ``type: "LLM"`` nodes of a promptflow ``api_calls`` tree, depth first in recorded order."""
    found = []
    for node in calls or []:
        if node.get("type") == "LLM":
            found.append(node)
        found.extend(_promptflow_llm_nodes(node.get("children")))
    return found


def _promptflow_threads(api_calls: list) -> list:
    threads = []
    for node in _promptflow_llm_nodes(api_calls):
        msg = node["output"]["choices"][0]["message"]
        t = _Thread([m["role"] for m in node["inputs"]["messages"]])
        t.out(msg.get("content") or "", len(msg.get("tool_calls") or []))
        threads.append(t)
    return threads


def promptflow_flow_artifacts(path: Path) -> dict:
    """promptflow batch-run flow artifacts JSONL (``flow_artifacts/000000000_000000024.jsonl`` of a run folder: one
    line per input row, ``{line_number, run_info: {run_id, inputs, output, api_calls: [flow span tree], ...}}``).
    The tree's ``type: "LLM"`` nodes (``openai.resources.chat.completions.Completions.create``, children of the
    ``AzureOpenAI.chat`` tool nodes) are the LLM calls: ``inputs.messages`` is the context,
    ``output.choices[0].message`` the reply (``tool_calls`` null throughout: no tool calls; the flow's own
    ``Tool`` nodes are the flow's Python steps, not calls the model emitted). Each flow line makes two calls
    (summarize, then classify) whose contexts are unrelated (different system prompts; the summary enters the
    second call as text inside its user turn, not as a reply it continues): each call is its own conversation."""
    threads = []
    for rec in _lines(path):
        threads.extend(_promptflow_threads(rec["run_info"]["api_calls"]))
    return _merge("promptflow flow artifacts JSONL", threads)


def promptflow_node_artifacts(path: Path) -> dict:
    """promptflow node artifacts JSONL (``node_artifacts/<node>/<line>.jsonl``: one line ``{node_name, line_number,
    run_info: {node, inputs, output, api_calls: [tool span with an LLM child], ...}}``). Same reading as the flow
    artifacts: each ``type: "LLM"`` node is one call and one conversation."""
    threads = []
    for rec in _lines(path):
        threads.extend(_promptflow_threads(rec["run_info"]["api_calls"]))
    return _merge("promptflow node artifacts JSONL", threads)


def any_agent_trace(path: Path) -> dict:
    """any-agent ``AgentTrace`` JSON (``{spans: [...], final_output}``; spans in order, each
    ``{name, kind, parent, context, attributes, ...}`` with ``gen_ai.operation.name`` call_llm / execute_tool /
    invoke_agent). One file is one agent run: one conversation. Each ``call_llm`` span is one call (own token
    usage); the first carries ``gen_ai.input.messages`` (its context), later ones only their reply (shared rule
    above: context = earlier context + reply + tool results). ``gen_ai.output`` of a call is either a JSON list of
    ``{tool.name, tool.args}`` (each entry a tool call, completion text empty) or the reply text. Each
    ``execute_tool`` span is one tool result (``tool``) in the thread."""
    t = _Thread()
    for span in json.loads(path.read_text(encoding="utf-8"))["spans"]:
        a = span.get("attributes") or {}
        op = a.get("gen_ai.operation.name")
        if op == "call_llm":
            if "gen_ai.input.messages" in a and not t.completions:
                t.ctx = [m["role"] for m in json.loads(a["gen_ai.input.messages"])]
            t.close()
            out = a.get("gen_ai.output")
            try:
                parsed = json.loads(out) if isinstance(out, str) else out
            except json.JSONDecodeError:
                parsed = None
            if isinstance(parsed, list) and parsed and all(isinstance(x, dict) and "tool.name" in x for x in parsed):
                t.out("", len(parsed))
            else:
                t.out(out or "")
        elif op == "execute_tool":
            t.inp("tool")
    return _merge("any-agent AgentTrace JSON", [t])


def tensorzero_chat_inference(path: Path) -> dict:
    """TensorZero ``ChatInference`` rows exported as JSONL (the UI's ClickHouse fixture: ``{id, function_name,
    variant_name, episode_id, input: JSON string {system?, messages: [{role, content: [{type, value|text|...}]}]},
    output: JSON string [content blocks], tool_params, inference_params, processing_time_ms, ...}``). Each row is
    one call: its context is ``system`` (where ``input.system`` is set: template variables of the function's
    system prompt) then the messages' roles; its completion the output's text blocks; ``tool_call`` output blocks
    would be tool calls (none here: every ``tool_params`` is empty). Rows of one ``episode_id`` form one
    conversation: each later row's context is the earlier row's context, its reply and the next user question (the
    reply is replayed lower-cased once: ``Yes.`` becomes ``yes.``, the game's own normalisation). First 27 rows:
    one single-shot ``tensorzero::default`` call and two 21-questions episodes of ``answer_question`` (21 and 5
    rows)."""
    threads: dict = {}
    for row in _lines(path):
        inp = json.loads(row["input"])
        out = json.loads(row["output"]) if row.get("output") else []
        head = (["system"] if inp.get("system") is not None else []) + [m["role"] for m in inp["messages"]]
        text = "".join(b.get("text", "") for b in out if b.get("type") == "text")
        tools = sum(1 for b in out if b.get("type") == "tool_call")
        t = threads.setdefault(row["episode_id"], _Thread())
        t.ctx = head
        t.close()
        t.out(text, tools)
    return _merge("TensorZero ChatInference JSONL", list(threads.values()))


def arena_hard_model_answer(path: Path) -> dict:
    """Arena-Hard-Auto model answer JSONL (``{uid, ans_id, model, messages: [{role: user, content},
    {role: assistant, content: {answer}}], tstamp}``, one benchmark question per line). Each line is one
    single-shot call (unrelated questions): one conversation per line, context ``user``, completion
    ``content.answer``. No tool calls."""
    threads = []
    for rec in _lines(path):
        t = _Thread()
        for m in rec["messages"]:
            if m["role"] == "assistant":
                c = m["content"]
                t.out(c.get("answer", "") if isinstance(c, dict) else (c or ""))
            else:
                t.inp(m["role"])
        threads.append(t)
    return _merge("Arena-Hard-Auto model answer JSONL", threads)


def arena_bench_judgment(path: Path) -> dict:
    """Arena-Hard-Auto (arena-bench v1) single-answer judgment JSONL (``{question_id, model, user_prompt,
    judgment, score}``: the judge's prompt for grading one model's answer, the judge's full reply, and the score
    parsed out of it). Each line is one judge call with context ``user`` (the judge's system prompt is not
    recorded) and completion ``judgment``; one conversation per line. The full reply is recorded, so the call
    counts (it is not a call known only by its parsed score). No tool calls."""
    threads = []
    for rec in _lines(path):
        t = _Thread(["user"])
        t.out(rec["judgment"])
        threads.append(t)
    return _merge("Arena-Hard-Auto judgment JSONL", threads)


def trulens_otel_event(path: Path) -> dict:
    """TruLens OpenTelemetry event row JSON (``{event_id, record, record_attributes: {ai.observability.*},
    record_type: SPAN, resource_attributes, start_timestamp, timestamp, trace}``). The span type ``generation``
    (``RAG.generate_completion``, with ``cost.model`` gpt-4o-mini and its token counts) is one LLM call: context
    one ``user`` turn (the call's ``kwargs`` query and retrieved context strings), completion ``call.return``. One
    conversation, no tool calls."""
    rec = json.loads(path.read_text(encoding="utf-8"))
    attrs = rec["record_attributes"]
    t = _Thread()
    if attrs.get("ai.observability.span_type") == "generation":
        t.inp("user")
        t.out(attrs.get("ai.observability.call.return") or "")
    return _merge("TruLens OTel event row JSON", [t])


COUNTERS = {
    "promptflow-flow-artifacts": promptflow_flow_artifacts,
    "promptflow-node-artifacts": promptflow_node_artifacts,
    "any-agent-trace": any_agent_trace,
    "tensorzero-chat-inference": tensorzero_chat_inference,
    "arena-hard-model-answer": arena_hard_model_answer,
    "arena-bench-judgment": arena_bench_judgment,
    "trulens-otel-event": trulens_otel_event,
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
