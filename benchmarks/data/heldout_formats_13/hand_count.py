"""Hand counts of the thirteenth held-out set (benchmarks/data/heldout_formats_13/files), computed from the raw files
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
- reasoning written inline in the reply text as a leading ``<think>...</think>`` span belongs to that reply (it is
  one call); the completion text recorded here is the reply without that span (none occur in this set).
Rules made explicit for this set:
- reasoning kept in a field beside the reply (``reasoning_content``) belongs to that reply and is left out of the
  completion text; a call whose only output is tool calls has the empty string as its completion text;
- a file that is one agent's stored message history is one conversation, even where an earlier assistant turn in it
  was produced by another agent and handed over as history: that turn is recorded in the file with a context and a
  reply, so it is counted as a call of this file (its context is the messages before it in this file);
- a non-message header record (session metadata) is not part of any context.
Context roles: a message made only of tool results is written ``tool``; the role names are the file's own mapped to
``system`` / ``user`` / ``assistant`` / ``tool`` (LangChain ``human`` -> ``user``, ``ai`` -> ``assistant``). Where no
system prompt is recorded in the file none is written (DeerFlow's lead-agent prompt and nanobot's prompt are built at
run time and not stored).

Run: ``python benchmarks/data/heldout_formats_13/hand_count.py`` (one JSON line per file).
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


def _text(content) -> str:
    """A message's text: a string as is, a list of parts as its ``text`` parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def deerflow_thread_state(path: Path) -> dict:
    """DeerFlow 2 demo thread (``frontend/public/demo/threads/<id>/thread.json``): a LangGraph thread-state snapshot
    ``{values: {messages, title, thread_data, artifacts, ...}, next, tasks, metadata, created_at, checkpoint, ...}``
    whose ``values.messages`` are serialized LangChain messages ``{type: human | system | ai | tool, content, id,
    additional_kwargs, response_metadata, tool_calls?, tool_call_id?}``. One file is one thread: one conversation.
    Each run of ``ai`` messages with no input between them is one call (no two ``ai`` messages are adjacent in the
    files kept here); its ``content`` is the completion (``additional_kwargs.reasoning_content`` is its reasoning,
    left out), each ``tool_calls`` entry a tool call. ``human`` messages are user input, the ``system`` messages the
    app inserts after each user message (the uploaded-files note) are system input, ``tool`` messages tool input.
    The lead agent's own system prompt is not stored in the file."""
    roles = {"human": "user", "system": "system", "tool": "tool"}
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8"))["values"]["messages"]:
        if m["type"] == "ai":
            t.out(_text(m.get("content")), len(m.get("tool_calls") or []))
        else:
            t.inp(roles[m["type"]])
    return _merge("DeerFlow LangGraph thread state JSON", [t])


def nanobot_session(path: Path) -> dict:
    """nanobot session JSONL (``sessions/<channel>_<chat>.jsonl``: a first ``{_type: "metadata", key, created_at,
    updated_at, metadata, last_consolidated}`` line, then one message per line ``{role, content, timestamp,
    tool_calls?, tool_call_id?, name?}`` with OpenAI-style ``tool_calls``). One file is one session (its ``key``):
    one conversation, every turn sent with the session's history. Each run of assistant lines with no input between
    them is one call; its ``content`` is the completion, each ``tool_calls`` entry a tool call. ``user`` lines (also
    the scheduled-task prompts of a cron session) are user input, ``tool`` lines tool input. The metadata line is
    not a message. No system prompt is stored."""
    t = _Thread()
    for rec in _lines(path):
        if rec.get("_type") == "metadata":
            continue
        if rec["role"] == "assistant":
            t.out(rec.get("content") or "", len(rec.get("tool_calls") or []))
        else:
            t.inp(rec["role"])
    return _merge("nanobot session JSONL", [t])


def ms_agent_memory(path: Path) -> dict:
    """ModelScope ms-agent memory JSON (a financial-research run's ``memory/<agent>.json``: a JSON list of messages
    ``{role: system | user | assistant | tool, content, tool_calls, tool_call_id, name, reasoning_content, id,
    partial, prefix, completion_tokens, prompt_tokens, api_calls}``; ``tool_calls`` entries are ``{id, index, type,
    arguments, tool_name}``). One file is one agent's history: one conversation. Each run of assistant messages
    with no input between them is one call (none are adjacent here); its ``content`` is the completion
    (``reasoning_content`` is its reasoning, left out), each ``tool_calls`` entry a tool call. ``system`` is the
    agent's prompt, ``user`` messages (the task, a file-saved notice) user input, ``tool`` messages tool input. In
    the collector file the first assistant turn is the orchestrator's plan handed over as history (same text and
    token counts as the orchestrator's own reply); it is recorded here with a context and counted (shared rule)."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8")):
        if m["role"] == "assistant":
            t.out(m.get("content") or "", len(m.get("tool_calls") or []))
        else:
            t.inp(m["role"])
    return _merge("ms-agent memory JSON", [t])


COUNTERS = {
    "deerflow-thread-state": deerflow_thread_state,
    "nanobot-session": nanobot_session,
    "ms-agent-memory": ms_agent_memory,
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
