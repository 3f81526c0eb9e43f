"""Hand counts of held-out set 50 (benchmarks/data/heldout_formats_50/files), computed from the raw files with the
standard library only (this script does not import tracedraft), each by its format's layout as read in the file
itself (and, where the file alone cannot say which records the model wrote, in the writing tool's source).

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the seventh and eighth sets'):
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
- an assistant message the application writes itself, with no model behind it (a fixed welcome text set in the
  application's code and saved at the head of every chat), is not a call; it is left out of later contexts when the
  application does not send it to the model;
- where an agent turn ran an internal loop (function calls, tool results, further model calls) that the file does not
  record, the turn's recorded final reply is one call and the unrecorded inner steps are neither calls nor tool calls;
- in a simulation between a user simulator and the agent under test, the lines the file gives to the user side are
  the thread's user input; the simulator's own model calls are not counted (their prompts are not recorded as calls);
- a reference dialogue copied from a corpus into the result (human-written turns kept for comparison) holds no LLM
  call;
- a span or step that only wraps a call (no messages in, no reply out of its own) is not a call.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context; a system prompt the application builds at
request time but does not save is not part of the recorded context.

Run: ``python benchmarks/data/heldout_formats_50/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"

# The fixed welcome text myAICommerceBot's chatbot.py puts at the head of every chat (st.session_state.messages)
# before any user input; ConversationChain's memory, which is what the model is sent, never holds it.
_COMMERCE_GREETING = ("🛍️ Welcome to your AI Commerce Assistant! I'm here to help you with product recommendations, "
                      "shopping questions, order support, and finding the best deals. What can I help you shop for "
                      "today?")


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


def aicommercebot_conversation(path: Path) -> dict:
    """myAICommerceBot (janasenthur/myAICommerceBot-janars, a Streamlit shopping assistant on LangChain's
    ConversationChain with a Together-hosted Llama model) saved conversation JSON: ``{timestamp, title, messages:
    [{role, content}], created}``, written by ``save_conversation`` in chatbot.py. One file is one chat: one
    conversation. The first message, an assistant message, is the fixed welcome text chatbot.py sets before any user
    input (identical in both files; ``_COMMERCE_GREETING``): not a call, and not in the model's context (the chain's
    memory holds only the system prompt, which is not saved, and the exchanges). Every later assistant message is the
    reply ``conversation.predict`` returned: one call each (1 in each file). No tool calls."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8"))["messages"]:
        if m["role"] == "assistant":
            if m["content"] == _COMMERCE_GREETING and not t.ctx:
                continue
            t.out(m.get("content") or "")
        else:
            t.inp(m["role"])
    return _merge("myAICommerceBot saved conversation JSON", [t])


def magnet_ai_agent_conversation(path: Path) -> dict:
    """Magnet AI (ideaportriga/magnet-ai) agent conversation document, MongoDB Extended JSON (``$oid`` / ``$date``):
    ``{_id, agent, created_at, client_id, trace_id, messages: [{id, role, content, created_at, run?: {steps: [{type,
    details}]}, action_call_requests?, feedback?, ...}], status}``. One document is one conversation. Each assistant
    message is one call: its ``run.steps`` hold the one ``classification`` step whose ``details.assistant_message``
    is the reply (intent greeting / off_topic / request_not_clear here; 3 calls). Tool calls would be the entries of
    ``action_call_requests`` (null in every message: 0). User messages are input; feedback fields are not calls."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8"))["messages"]:
        if m["role"] == "assistant":
            t.out(m.get("content") or "", len(m.get("action_call_requests") or []))
        else:
            t.inp(m["role"])
    return _merge("Magnet AI agent conversation document (MongoDB Extended JSON)", [t])


def magnet_ai_trace(path: Path) -> dict:
    """Magnet AI trace document, MongoDB Extended JSON: ``{_id, status, cost_details, name, type, channel, source,
    start_time, end_time, latency, spans: [{id, parent_id, name, type, model, input, output, usage_details, ...}]}``.
    A span of type ``chat`` with ``input`` (the message list sent) and ``output`` (the assistant message returned) is
    one call; the ``Executing Prompt Template`` span (type ``span``, no input or output) only wraps it. One chat span
    here (an HR performance-feedback summary, gpt-4o): 1 conversation, 1 call. Tool calls are the entries of the
    output's ``tool_calls`` (null: 0)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    threads = []
    for span in doc["spans"]:
        if span.get("type") != "chat" or not span.get("input") or not span.get("output"):
            continue
        t = _Thread([m["role"] for m in span["input"]])
        out = span["output"]
        t.out(out.get("content") or "", len(out.get("tool_calls") or []))
        threads.append(t)
    return _merge("Magnet AI trace document (MongoDB Extended JSON)", threads)


def autotod_results(path: Path) -> dict:
    """AutoTOD (DaDaMrX/AutoTOD) batch results JSONL: one dialogue per line, ``{dialog_id, status, eval_results,
    cost, run_result, ...}``, written by batch_run.py. SGD layout: ``run_result`` is the list of turns ``[{turn_idx,
    user, agent}]``; MultiWOZ layout: ``run_result`` is ``{cost, dialog_pred: [{turn_idx, user, agent}], goals,
    goal_messages, dialog_refer, finish_status}``. Each line is its own dialogue (distinct ``dialog_id``, its own goal):
    one conversation per line. Each ``agent`` string in the run's turns is one call: the final reply of the LangChain
    function-calling agent for that user turn (its inner function calls and results are not recorded: not counted).
    The ``user`` strings come from AutoTOD's LLM user simulator: the thread's user input, not calls. ``dialog_refer``
    is the MultiWOZ corpus's human dialogue copied in by engine.transform_dialog for reference: no calls. The
    ``eval_results`` hold a judge model's parsed answers: mentioned, not recorded. No tool calls are recorded."""
    threads = []
    for rec in _lines(path):
        run = rec["run_result"]
        turns = run["dialog_pred"] if isinstance(run, dict) else run
        t = _Thread()
        for turn in turns:
            t.inp("user")
            t.out(turn["agent"] or "")
        threads.append(t)
    return _merge("AutoTOD batch results JSONL", threads)


COUNTERS = {
    "aicommercebot-conversation": aicommercebot_conversation,
    "magnet-ai-agent-conversation": magnet_ai_agent_conversation,
    "magnet-ai-trace": magnet_ai_trace,
    "autotod-results": autotod_results,
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
