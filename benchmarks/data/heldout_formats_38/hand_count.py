"""Hand counts of the thirty-eighth held-out set (benchmarks/data/heldout_formats_38/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself.

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
- records the tool itself writes that are neither model input nor model output (a prompt for the next user input, an
  approval request, a welcome / goodbye line, the tool's answer to a local command, an error of the tool) are not
  calls and do not split a call; a user line the tool answers itself (no model reply follows it) is a local command
  and is left out of the contexts, with the tool's answer;
- a tool call the model emitted and the agent framework executed (in the browser or on the server, including the
  framework's own memory tools) is a tool call; its result is tool input, so text the model writes after it is a new
  call;
- an event log exported newest-first is read in event order (oldest first);
- one assistant message whose parts interleave text, tool calls and tool results holds one call per stretch of
  output between tool results.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context; no file here records its system prompt.

Run: ``python benchmarks/data/heldout_formats_38/hand_count.py`` (one JSON line per file).
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


def kubectl_ai_session_history(path: Path) -> dict:
    """kubectl-ai session history (``~/.kubectl-ai/sessions/<id>/history.json`` as kubectl-ai's session store writes
    it: one JSON record per line, ``{ID, Source, Type, Payload, Timestamp}``; ``Source`` is ``user``, ``model`` or
    ``agent``; ``Type`` is ``text``, ``tool-call-request``, ``tool-call-response``, ``user-input-request``,
    ``user-choice-request`` or ``error``). One file is one session, read as one conversation (each file here holds a
    single run of the CLI: the whole 0813 session, and the second of the 0504 session's five runs).
    ``model`` records are the model's output: a ``text`` record is completion text, a ``tool-call-request`` record is
    one tool call (its payload is the shell command the model asked for). Model records with no input record between
    them are one call (the model's text and the tool call it emitted with it). Input: a ``user`` ``text`` record (the
    user's line) and an ``agent`` ``tool-call-response`` record (the command's result, role ``tool``). Everything
    else the agent writes (the ``>>>`` input prompt, the approval request written between the model's text and the
    tool call it approved, welcome / goodbye lines, answers to local commands such as ``model`` or ``exit``) is
    neither a call nor an input. A user line followed (past input prompts) by an agent line rather than a model line
    is a local command the CLI answered itself: left out of the contexts. No system prompt is recorded."""
    recs = _lines(path)
    t = _Thread()
    for i, r in enumerate(recs):
        src, typ = r["Source"], r["Type"]
        if src == "model":
            if typ == "tool-call-request":
                t.out("", 1)
            else:
                t.out(r["Payload"] if isinstance(r["Payload"], str) else "")
        elif src == "user" and typ == "text":
            nxt = next((x for x in recs[i + 1:] if x["Type"] != "user-input-request"), None)
            if nxt is not None and nxt["Source"] == "model":
                t.inp("user")
        elif src == "agent" and typ == "tool-call-response":
            t.inp("tool")
    return _merge("kubectl-ai session history JSONL", [t])


def trpc_agent_go_agui_messages_snapshot(path: Path) -> dict:
    """trpc-agent-go AG-UI messages snapshot (the ``MESSAGES_SNAPSHOT`` event that trpc-agent-go's AG-UI server
    returns from its history endpoint: ``{type, timestamp, messages: [{id, role, content, toolCalls?, name?,
    toolCallId?}]}``, AG-UI message layout; ``toolCalls`` entries ``{id, type, function: {name, arguments}}``). One
    file is one thread: one conversation. Each run of assistant messages with no input between them is one call (none
    are adjacent here: 3 calls); ``content`` is the completion, each ``toolCalls`` entry a tool call. ``user`` and
    ``tool`` messages are input. No system prompt is recorded."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8"))["messages"]:
        if m["role"] == "assistant":
            t.out(m.get("content") or "", len(m.get("toolCalls") or []))
        else:
            t.inp(m["role"])
    return _merge("trpc-agent-go AG-UI MESSAGES_SNAPSHOT JSON", [t])


def tanstack_ai_exported_messages(path: Path) -> dict:
    """TanStack AI code-mode demo export (``{prompt, messages}`` written by the demo's JSON export button; ``messages``
    are TanStack AI UI messages ``{id, role, parts, createdAt}`` whose parts are ``text`` ``{content}``,
    ``tool-call`` ``{id, name, arguments, state, output?}`` and ``tool-result`` ``{toolCallId, content, state}``).
    One file is one chat: one conversation. The user message is input. The single assistant message interleaves the
    agent loop: text and tool-call parts are the model's output, each ``tool-result`` part is tool input, so each
    stretch of output between tool results is one call (3 calls here: text + ``getSchemaInfo``, text +
    ``execute_typescript``, the final answer). A ``tool-call`` part's ``output`` copy of the result is not a second
    input; a ``thinking`` part (none here) would belong to the call it is in. No system prompt is recorded."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8"))["messages"]:
        if m["role"] != "assistant":
            t.inp(m["role"])
            continue
        for p in m["parts"]:
            if p["type"] == "text":
                t.out(p.get("content") or "")
            elif p["type"] == "tool-call":
                t.out("", 1)
            elif p["type"] == "tool-result":
                t.inp("tool")
            elif p["type"] == "thinking":
                t.out("")
    return _merge("TanStack AI exported UI messages JSON", [t])


def copilotkit_inspector_events(path: Path) -> dict:
    """CopilotKit web inspector event export (``copilotkit-events-<epoch ms>.json``, written by the inspector's export
    button with ``JSON.stringify(events, null, 2)``: a list of ``{id: "<agent>:<n>", agentId, type, timestamp,
    payload}``, newest first; payloads are AG-UI events, some wrapped as ``{event, ...buffers}``). Read in event
    order (oldest first, by ``timestamp``). Both runs share one ``threadId``: one conversation. ``RUN_STARTED``
    carries the run's input messages: the user message (run 1) and the result of the browser-executed tool call
    (run 2) are input; assistant messages echoed there are earlier output, not input. ``TOOL_CALL_RESULT`` is tool
    input (the framework ran the model's ``updateWorkingMemory`` call). ``TOOL_CALL_START`` opens one tool call;
    ``TEXT_MESSAGE_END``'s ``textMessageBuffer`` is the completion text (the ``TEXT_MESSAGE_CONTENT`` deltas summed).
    Model output with no input between is one call: 3 calls (``weatherTool``; ``updateWorkingMemory``; the text
    written after its result). ``RUN_FINISHED`` and ``STATE_SNAPSHOT`` are neither. No system prompt is recorded."""
    events = sorted(json.loads(path.read_text(encoding="utf-8")), key=lambda e: e["timestamp"])
    t = _Thread()
    for e in events:
        typ, p = e["type"], e["payload"]
        if typ == "RUN_STARTED":
            for m in p["input"]["messages"]:
                if m["role"] != "assistant":
                    t.inp(m["role"])
        elif typ == "TOOL_CALL_START":
            t.out("", 1)
        elif typ in ("TOOL_CALL_ARGS", "TOOL_CALL_END", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"):
            t.out("")
        elif typ == "TEXT_MESSAGE_END":
            t.out(p.get("textMessageBuffer") or "")
        elif typ == "TOOL_CALL_RESULT":
            t.inp("tool")
    return _merge("CopilotKit inspector event export JSON (AG-UI events)", [t])


COUNTERS = {
    "kubectl-ai": kubectl_ai_session_history,
    "trpc-agent-go": trpc_agent_go_agui_messages_snapshot,
    "tanstack-ai": tanstack_ai_exported_messages,
    "copilotkit": copilotkit_inspector_events,
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
