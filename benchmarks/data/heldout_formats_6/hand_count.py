"""Hand counts of the sixth held-out set (benchmarks/data/heldout_formats_6/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

Per file: the conversations (one per distinct agent thread / session / sample that holds at least one LLM call),
the LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those
turns, the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call
with a readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the fifth set's):
- a thinking / reasoning part belongs to the reply it precedes; a reply streamed or split over several records with
  no new input between them (no user, tool-result or system record) is one call;
- text the model writes after it has seen a tool result is a new call;
- a branch the tool marks as discarded (not on the active path) is not counted;
- tool calls are the client-executed calls the model emitted (function / tool_use / toolCall parts and the like);
  calls the provider ran server-side during generation are not counted;
- LLM calls a file only mentions (a usage-ledger entry, a count printed in a tool result) without recording their
  context and reply are not counted.
Two rules made explicit for this set (both follow from "one conversation per distinct agent thread"):
- a conversation is a thread of calls in which each later call's context continues an earlier call's context and
  reply; single-shot calls recorded side by side with unrelated contexts (an evaluation's samples, a pipeline's
  separate prompts for one task) are separate conversations;
- an LLM call recorded only through fields parsed out of its reply (a judge's extracted score and reasoning, not
  its reply text) counts as mentioned, not recorded, and is not counted.
Context roles: a user message made only of tool results is written ``tool``; a system prompt kept beside the
messages (not in the list) is written ``system`` at the head of every context.

Run: ``python benchmarks/data/heldout_formats_6/hand_count.py`` (one JSON line per file).
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


def _single(prompt_role: str, reply: str, head: list | None = None) -> _Thread:
    t = _Thread(head)
    t.inp(prompt_role)
    t.out(reply)
    return t


def _blocks_text(content) -> str:
    """A ``content`` that is a string or a list of ``{type: text, text}`` blocks."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def cline_sdk_messages(path: Path) -> dict:
    """Cline SDK session messages JSON (``{version, agent, sessionId, messages, system_prompt?}``; ``messages`` of
    ``{role, content: [blocks]}`` with Anthropic-style ``text`` / ``thinking`` / ``tool_use`` blocks, user messages
    of ``text`` / ``file`` blocks or of ``tool_result`` blocks). Each assistant message is a call (no two are
    adjacent); its ``text`` blocks are the completion (``thinking`` belongs to it), each ``tool_use`` block is a
    tool call. A user message of tool results is tool input. One file is one session: one conversation (the
    session file switches model for its last turn; still one thread). ``system_prompt``, when present, heads every
    context."""
    d = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread(["system"] if d.get("system_prompt") else [])
    for m in d["messages"]:
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        if m["role"] == "assistant":
            t.out(_blocks_text(blocks), sum(b.get("type") == "tool_use" for b in blocks))
        elif blocks and all(b.get("type") == "tool_result" for b in blocks):
            t.inp("tool")
        else:
            t.inp(m["role"])
    return _merge("Cline SDK session messages JSON", [t])


def agentless_loc_outputs(path: Path) -> dict:
    """Agentless localization outputs JSONL (one SWE-bench instance per line: ``file_traj``, ``related_loc_traj``,
    ``edit_loc_traj``, each ``{prompt, response, usage}``; ``edit_loc_traj.response`` is a list of sampled replies,
    here one). Each trajectory is a single-shot call: its context is the one prompt (a user turn), its completion
    the response. The three prompts of an instance are separate chats (each prompt is built from scratch, none
    continues another's messages), so by the thread rule each call is its own conversation. No tools."""
    threads = []
    for row in _lines(path):
        for key in ("file_traj", "related_loc_traj", "edit_loc_traj"):
            traj = row.get(key)
            if not traj:
                continue
            replies = traj["response"] if isinstance(traj["response"], list) else [traj["response"]]
            threads.extend(_single("user", r) for r in replies)
    return _merge("Agentless localization outputs JSONL", threads)


def avante_chat_history(path: Path) -> dict:
    """avante.nvim chat history JSON (2024 layout: a list of ``{provider, timestamp, model, request, response}``,
    one file per edited source file). Each entry is a call: context the ``request`` (a user turn), completion the
    ``response``. The files here hold one entry each: one conversation, one call. No tools."""
    entries = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for e in entries:
        t.inp("user")
        t.out(e["response"])
    return _merge("avante.nvim chat history JSON", [t])


def helm_scenario_state(path: Path) -> dict:
    """HELM ``scenario_state.json`` (``adapter_spec`` + ``request_states``; each request state holds the
    ``request`` with its full ``prompt`` string and the ``result`` with ``completions``). Each request state is an
    independent evaluation sample: one conversation, one call per completion (here ``num_completions`` is 1),
    context the prompt (a user turn). The red-team file's ``annotations`` hold a judge prompt and the judges'
    parsed reasoning and score, not their reply text: mentioned, not recorded, not counted. No tools."""
    d = json.loads(path.read_text(encoding="utf-8"))
    threads = []
    for rs in d["request_states"]:
        t = _Thread()
        t.inp("user")
        for c in rs["result"]["completions"]:
            t.out(c["text"])
        threads.append(t)
    return _merge("HELM scenario_state JSON", threads)


def goose_scenario_recording(path: Path) -> dict:
    """Goose scenario-test provider recording JSON (a map from a request hash to ``{input: {system, messages,
    tools}, output: {message, usage}}``; messages of ``{role, created, content: [blocks]}``). Each entry is one
    recorded call: context the system prompt and the input messages, completion the output message's ``text``
    blocks, tool calls its ``toolRequest`` blocks (none here). Threads by the thread rule: the call whose input is
    [user hello, assistant reply, user goodbye] continues the call whose input is [user hello] and whose output is
    that reply, so the two calls are one conversation."""
    d = json.loads(path.read_text(encoding="utf-8"))
    calls = []
    for entry in d.values():
        msgs = entry["input"]["messages"]
        out = entry["output"]["message"]
        calls.append((msgs, out))
    calls.sort(key=lambda c: len(c[0]))

    def key(m):
        return json.dumps([m["role"], m["content"]], sort_keys=True)

    completions, contexts, tools, n_conv = [], [], 0, 0
    seen_prefixes: list = []
    for msgs, out in calls:
        ks = [key(m) for m in msgs]
        if not any(ks[:len(p)] == p for p in seen_prefixes):
            n_conv += 1
        seen_prefixes.append(ks + [key(out)])
        contexts.append(["system"] + [m["role"] for m in msgs])
        completions.append(_blocks_text(out["content"]))
        tools += sum(b.get("type") == "toolRequest" for b in out["content"])
    return _result("Goose scenario recording JSON", n_conv, completions, contexts, tools)


def forge_conversation_dump(path: Path) -> dict:
    """Forge (forgecode) conversation dump JSON (``{id, title, context: {conversation_id, messages, tools?, ...},
    metrics, metadata}``; ``context.messages`` of ``{text: {role System / User / Assistant, content, tool_calls?,
    reasoning_details?}}`` or ``{tool: {name, call_id, output}}``). It is the context Forge sends to the model. Each
    Assistant message is a call (no two are adjacent); ``content`` is the completion (``reasoning_details`` belongs
    to it), each entry of ``tool_calls`` is a tool call; a ``tool`` entry is tool input. One file is one
    conversation. The subset file keeps the first 92 messages, cut after a tool result and before an Assistant
    message, so every kept call is complete."""
    d = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for m in d["context"]["messages"]:
        if "tool" in m:
            t.inp("tool")
            continue
        msg = m["text"]
        if msg["role"] == "Assistant":
            t.out(msg.get("content") or "", len(msg.get("tool_calls") or []))
        else:
            t.inp(msg["role"].lower())
    return _merge("Forge conversation dump JSON", [t])


COUNTERS = {
    "cline-sdk-messages": cline_sdk_messages,
    "agentless-loc-outputs": agentless_loc_outputs,
    "avante-chat-history": avante_chat_history,
    "helm-scenario-state": helm_scenario_state,
    "goose-scenario-recording": goose_scenario_recording,
    "forge-conversation-dump": forge_conversation_dump,
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
