"""Hand counts of the seventh held-out set (benchmarks/data/heldout_formats_7/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

Per file: the conversations (one per distinct agent thread / session / sample that holds at least one LLM call),
the LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those
turns, the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call
with a readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the sixth set's):
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
  not recorded, and is not counted.
One rule made explicit for this set:
- an assistant record with no content at all whose stop reason is an error (the request failed before the model
  produced anything) is a failed request, not a call, and is left out of later contexts as well.
Context roles: a user message made only of tool results is written ``tool``; tool results the producer stores inside
the assistant record that issued the call (its tool part's completed state) are written ``tool`` after that
assistant turn; a system prompt kept beside the messages (not in the list) is written ``system`` at the head of
every context.

Run: ``python benchmarks/data/heldout_formats_7/hand_count.py`` (one JSON line per file).
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


def mistral_vibe_session(path: Path) -> dict:
    """Mistral Vibe session ``messages.jsonl`` (one ``{role, content, message_id}`` per line; assistant lines may
    carry OpenAI-style ``tool_calls``; ``tool`` lines carry ``tool_call_id`` and ``name``). Each run of assistant
    lines with no input between them is one call (the basic session has two adjacent assistant lines: one call);
    its ``content`` strings are the completion, each ``tool_calls`` entry a tool call. ``tool`` lines are tool
    input. One file is one session: one conversation. No system prompt in this file (the session's ``meta.json``,
    not included, holds none either)."""
    t = _Thread()
    for m in _lines(path):
        if m["role"] == "assistant":
            t.out(m.get("content") or "", len(m.get("tool_calls") or []))
        else:
            t.inp(m["role"])
    return _merge("Mistral Vibe session messages JSONL", [t])


def qwenpaw_session(path: Path) -> dict:
    """QwenPaw session JSON (``{agent: {memory: {content: [[message, marks], ...]}, name, _sys_prompt}}``; a message
    is ``{id, name, role, content: [blocks], metadata, timestamp}`` with ``text`` / ``thinking`` / ``tool_use`` /
    ``tool_result`` blocks). Each assistant message is a call (no two are adjacent here): its ``text`` blocks are the
    completion (``thinking`` belongs to it), each ``tool_use`` block a tool call. A message (here of role
    ``system``) made only of ``tool_result`` blocks is tool input. ``_sys_prompt`` (present, its value redacted by
    the fixture's author) is the agent's system prompt and heads every context. One file is one agent session: one
    conversation."""
    d = json.loads(path.read_text(encoding="utf-8"))["agent"]
    t = _Thread(["system"] if d.get("_sys_prompt") else [])
    for pair in d["memory"]["content"]:
        m = pair[0]
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        if m["role"] == "assistant":
            t.out("".join(b.get("text", "") for b in blocks if b.get("type") == "text"),
                  sum(b.get("type") == "tool_use" for b in blocks))
        elif blocks and all(b.get("type") == "tool_result" for b in blocks):
            t.inp("tool")
        else:
            t.inp(m["role"])
    return _merge("QwenPaw session JSON", [t])


def posit_assistant_lm_messages(path: Path) -> dict:
    """Posit Assistant ``lm-messages.jsonl`` (one ``{id, message: {role, content, providerOptions}}`` per line;
    ``content`` a string or AI-SDK-style parts ``text`` / ``reasoning`` / ``tool-call``; ``tool`` messages hold
    ``tool-result`` parts). Each run of assistant messages with no input between them is one call; its ``text``
    parts are the completion, each ``tool-call`` part a tool call; ``tool`` messages are tool input. One file is one
    conversation tree (a main session or a subagent's); the two files kept here are linear (the sibling
    ``conversation.json`` marks every message active), so one conversation each. (The tool's main fixture session,
    whose last assistant message is an abandoned branch marked only in the separate ``conversation.json``, was left
    out.)"""
    t = _Thread()
    for rec in _lines(path):
        m = rec["message"]
        parts = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        if m["role"] == "assistant":
            t.out("".join(p.get("text", "") for p in parts if p.get("type") == "text"),
                  sum(p.get("type") == "tool-call" for p in parts))
        else:
            t.inp(m["role"])
    return _merge("Posit Assistant lm-messages JSONL", [t])


def opencode_v2_messages(path: Path) -> dict:
    """OpenCode v2 message rows JSON (a list of ``{id, type, seq, data}``; ``type`` user (``data.text``), assistant
    (``data.content`` parts ``reasoning`` / ``text`` / ``tool``), system (``data.text``, an instruction the tool
    inserts mid-session)). Each assistant row is a call (no two are adjacent here): its ``text`` parts are the
    completion (``reasoning`` belongs to it), each ``tool`` part a tool call. A ``tool`` part's completed ``state``
    holds the tool's result, which the model reads as input before its next call: written ``tool`` after that
    assistant turn. One file is one session: one conversation."""
    t = _Thread()
    for row in json.loads(path.read_text(encoding="utf-8")):
        d = row["data"]
        if row["type"] == "assistant":
            parts = d.get("content") or []
            tools = [p for p in parts if p.get("type") == "tool"]
            t.out("".join(p.get("text", "") for p in parts if p.get("type") == "text"), len(tools))
            for _ in tools:
                t.inp("tool")
        else:
            t.inp(row["type"])
    return _merge("OpenCode v2 message rows JSON", [t])


def tau_session(path: Path) -> dict:
    """Tau (huggingface/tau) session JSONL (records ``{id, parent_id, timestamp, type, ...}`` of type
    ``session_info``, ``model_change``, ``thinking_level_change``, ``message`` and ``leaf`` (a pointer to the current
    entry); ``message.role`` user / assistant / toolResult; assistant ``content`` blocks ``thinking`` / ``text`` /
    ``toolCall``). The records form one linear chain (each ``parent_id`` is the previous entry), so one conversation.
    Each assistant message with content is a call: its ``text`` blocks are the completion (``thinking`` belongs to
    it), each ``toolCall`` block a tool call; ``toolResult`` messages are tool input. The three assistant messages
    with empty ``content`` and ``stopReason: error`` (a missing API key: the request never reached a model) are
    failed requests, not calls (module rule), and are left out of later contexts; the user messages before them
    (including two typed slash commands, ``/loca`` and ``/mode``, that were sent as messages) stay in the context."""
    t = _Thread()
    for rec in _lines(path):
        if rec.get("type") != "message":
            continue
        m = rec["message"]
        content = m.get("content")
        if m["role"] == "assistant":
            if not content and m.get("stopReason") == "error":
                continue
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
            t.out("".join(b.get("text", "") for b in blocks if b.get("type") == "text"),
                  sum(b.get("type") == "toolCall" for b in blocks))
        elif m["role"] == "toolResult":
            t.inp("tool")
        else:
            t.inp(m["role"])
    return _merge("Tau session JSONL", [t])


def evener_transcript(path: Path) -> dict:
    """Evener transcript JSONL (a ``header`` record, then ``entry`` records whose ``turn.kind`` is ``USER_INPUT``,
    ``ASSISTANT`` or ``TOOL_RESULTS``, each with a ``message: {role, content: [parts]}``; assistant parts ``thinking``
    / ``text`` / ``tool_call``). Each ASSISTANT turn is a call: its ``text`` parts are the completion, each
    ``tool_call`` part a tool call; TOOL_RESULTS turns are tool input (the last one is answered by no recorded call).
    One file is one session: one conversation."""
    t = _Thread()
    for rec in _lines(path):
        if rec.get("kind") != "entry":
            continue
        turn = rec["turn"]
        parts = turn["message"]["content"]
        if turn["kind"] == "ASSISTANT":
            t.out("".join(p.get("text", "") for p in parts if p.get("kind") == "text"),
                  sum(p.get("kind") == "tool_call" for p in parts))
        elif turn["kind"] == "TOOL_RESULTS":
            t.inp("tool")
        else:
            t.inp(turn["message"]["role"])
    return _merge("Evener transcript JSONL", [t])


COUNTERS = {
    "mistral-vibe-session": mistral_vibe_session,
    "qwenpaw-session": qwenpaw_session,
    "posit-assistant-lm-messages": posit_assistant_lm_messages,
    "opencode-v2-messages": opencode_v2_messages,
    "tau-session": tau_session,
    "evener-transcript": evener_transcript,
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
