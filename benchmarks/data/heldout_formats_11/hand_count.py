"""Hand counts of the eleventh held-out set (benchmarks/data/heldout_formats_11/files), computed from the raw files
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
- an assistant turn kept in a recorded history (earlier turns of the chat, stored beside the last call) is a call
  of its own, its context being the history before it, as in any chat log; a history stored newest-first is read
  in time order;
- a tool call the model emitted counts even when the client then failed to run it (its arguments did not parse and
  the client answered with an error result);
- a streamed reply recorded both as chunk events and as one final message event (same message id) is one call;
  the chunks add nothing to the counts.
Context roles: a message made only of tool results is written ``tool`` (one ``tool`` per tool-result record where
the layout keeps one record per result); a system prompt kept beside the messages (not in the list) is written
``system`` at the head of every context. A system prompt the file does not record is not written.

Run: ``python benchmarks/data/heldout_formats_11/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
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


_LC_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def _lc_text(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


def gpt_engineer_ai_cache(path: Path) -> dict:
    """gpt-engineer's test AI cache (``tests/ai_cache.json``, written by its CachingAI: a JSON object whose every
    key is the JSON text of the message list sent to the model and whose value is the JSON text of that list with
    the model's reply appended; messages are LangChain ``messages_to_dict`` records ``{type: system | human | ai,
    data: {content, ...}}``). Each entry is one call: its context is the key's messages (system / human / ai ->
    system / user / assistant), its completion the ``content`` of the value's last message (the appended ``ai``
    reply). No tool calls (no ``tool_calls`` in any ``ai`` message). Conversations: an entry whose key begins with
    the whole value (context and reply) of another entry continues that entry's thread (one such pair here: a
    clarify exchange answered and asked again); every other entry is its own conversation, including entries whose
    key holds earlier assistant turns that are not themselves recorded as entries (those earlier turns are context
    only, not calls: no entry records them as a reply). Calls are listed in the file's key order."""
    data = json.loads(path.read_text(encoding="utf-8"))
    entries = [(json.loads(k), json.loads(v)) for k, v in data.items()]
    parent = list(range(len(entries)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i, (key, _) in enumerate(entries):
        for j, (_, value) in enumerate(entries):
            if i != j and len(value) <= len(key) and key[:len(value)] == value:
                parent[find(i)] = find(j)
    completions, contexts, tools = [], [], 0
    for key, value in entries:
        reply = value[len(key):]
        assert len(reply) == 1 and reply[0]["type"] == "ai", reply
        completions.append(_lc_text(reply[0]["data"]["content"]))
        contexts.append([_LC_ROLES[m["type"]] for m in key])
        tools += len(reply[0]["data"].get("tool_calls") or [])
    convs = len({find(i) for i in range(len(entries))})
    return _result("gpt-engineer AI cache JSON", convs, completions, contexts, tools)


def tarko_event_stream(path: Path) -> dict:
    """Tarko / Agent TARS agent event stream (``event-stream.jsonl`` of its agent snapshots: despite the name, one
    JSON array of events ``{id, type, timestamp, ...}``; types ``agent_run_start``, ``user_message``,
    ``assistant_streaming_message`` / ``assistant_streaming_tool_call`` (chunks), ``assistant_message``
    ``{content, rawContent, toolCalls?, finishReason, messageId}``, ``tool_call`` (the client's execution record of
    a call), ``tool_result``). One file is one agent session (one ``sessionId``): one conversation. Each
    ``assistant_message`` is one call, its ``content`` the completion and each ``toolCalls`` entry a tool call; the
    streaming chunk events before it carry the same ``messageId`` and are that call's stream (not counted again).
    Context: ``user_message`` -> user, earlier ``assistant_message`` -> assistant, each ``tool_result`` -> tool (one
    per result, in order). ``tool_call`` events are the client running a call already counted in its assistant
    message, not context. ``agent_run_start`` is metadata. No two ``assistant_message`` events are adjacent here. In the doubao file one emitted ``write_file`` call has
    no ``tool_call`` event (its arguments failed to parse) but a ``tool_result`` with the error: it is counted as
    emitted, and its result is a tool input. No system prompt is recorded in the stream."""
    t = _Thread()
    for e in json.loads(path.read_text(encoding="utf-8")):
        kind = e["type"]
        if kind == "assistant_message":
            t.out(e.get("content") or "", len(e.get("toolCalls") or []))
        elif kind == "user_message":
            t.inp("user")
        elif kind == "tool_result":
            t.inp("tool")
    return _merge("Tarko / Agent TARS event stream JSON", [t])


def fast_agent_history(path: Path) -> dict:
    """fast-agent saved conversation history JSON (``{messages: [{role: user | assistant, content: [{type: text,
    text}], tool_calls?: {id: {method: tools/call, params: {name, arguments}}}, tool_results?: {id: {content}},
    channels?: {reasoning, fast-agent-timing, ...}, stop_reason?, is_template}]}``). One file is one conversation.
    Each run of assistant messages with no input between them is one call (none are adjacent here); its ``content``
    texts are the completion (the ``reasoning`` channel belongs to the reply, not to its text), each ``tool_calls``
    entry a tool call. A user message holding only ``tool_results`` is tool input (``tool``); one with text is
    ``user``. No system prompt is recorded."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8"))["messages"]:
        text = "".join(c.get("text", "") for c in m.get("content") or [] if c.get("type") == "text")
        if m["role"] == "assistant":
            t.out(text, len(m.get("tool_calls") or {}))
        elif m.get("tool_results") and not text:
            t.inp("tool")
        else:
            t.inp(m["role"])
    return _merge("fast-agent conversation history JSON", [t])


def mentat_sample(path: Path) -> dict:
    """Mentat benchmark sample JSON (written by Mentat's sampler from a real session: ``{title, id, parent_id,
    repo, merge_base, diff_*, message_history: [{role, content}], message_prompt, message_edit, context,
    diff_edit, ...}``). The sampler walks the session's messages newest-first: the trailing assistant text becomes
    ``message_edit`` (the last call's completion, its code edits kept apart in ``diff_edit``), the last user
    message ``message_prompt``, and every earlier user / assistant message is appended to ``message_history``, so
    the history is stored newest-first and is read here in reverse. One file is one conversation. Calls: each
    assistant message of the history (in time order) and the final ``message_edit``; each call's context is the
    user / assistant messages before it (the final call's: the reversed history, then ``message_prompt``). Mentat
    edits files through text blocks in the reply, not tool calls: no tool calls. No system prompt is recorded."""
    d = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for m in reversed(d.get("message_history") or []):
        if m["role"] == "assistant":
            t.out(m["content"])
        else:
            t.inp(m["role"])
    t.inp("user")  # message_prompt
    t.out(d["message_edit"])
    return _merge("Mentat benchmark sample JSON", [t])


COUNTERS = {
    "gpt-engineer-ai-cache": gpt_engineer_ai_cache,
    "tarko-event-stream": tarko_event_stream,
    "fast-agent-history": fast_agent_history,
    "mentat-sample": mentat_sample,
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
