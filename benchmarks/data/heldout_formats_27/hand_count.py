"""Hand counts of the twenty-seventh held-out set (benchmarks/data/heldout_formats_27/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself and in the writing tool's source.

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
- an action the model writes only as text in its reply (a game move, a ``!command(...)`` the harness parses out of
  the text) with no structured tool-call record is not a tool call;
- where a file records one request (its input messages and its reply), that request is one call; the assistant
  messages inside its input are earlier replies quoted as context, not calls of this file (their own requests are
  recorded elsewhere, if at all);
- in a request log holding several requests of a multi-player game, a request whose input messages start with an
  earlier request's input followed by that request's reply continues that request's conversation (one conversation
  per player thread); requests whose inputs continue no earlier request start a new conversation.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context; other roles are written as the file records
them.

Run: ``python benchmarks/data/heldout_formats_27/hand_count.py`` (one JSON line per file).
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


def _text(content) -> str:
    """A message's text: a string, or the concatenated ``text`` of a list of content blocks."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def mindcraft_prompt_log(path: Path) -> dict:
    """Mindcraft prompter conversation log (kolbytn/mindcraft ``src/models/prompter.js`` ``promptConvo``: one text
    file ``bots/<agent>/logs/<task>/conversation_<timestamp>.txt`` per request, written as ``[<timestamp>] Task ID:
    <task>`` / ``Prompt:`` + the rendered system prompt / a blank line / ``Conversation:`` + the JSON list of
    ``{role, content}`` messages sent / a blank line / ``Response:`` + the generation). Each file is one request:
    one call whose context is the system prompt (``Prompt``, passed to the model as its system message) followed by
    the ``Conversation`` messages, and whose completion is the ``Response`` text; the assistant messages inside
    ``Conversation`` are the agent's earlier replies quoted as context, not calls of this file (this set's rule).
    One conversation. The reply's ``!command(...)`` is a text command the harness parses, not a tool call (this
    set's rule): no tool calls."""
    text = path.read_text(encoding="utf-8")
    _, rest = text.split("\n\nConversation:\n", 1)
    conv, response = rest.split("\n\nResponse:\n", 1)
    t = _Thread(["system"] + [m["role"] for m in json.loads(conv)])
    t.out(response.rstrip("\n"))
    return _merge("Mindcraft prompter conversation log (text)", [t])


def mindcraft_memory(path: Path) -> dict:
    """Mindcraft agent memory JSON (``History.save()`` in kolbytn/mindcraft ``src/agent/history.js`` writes
    ``bots/<agent>/memory.json`` as ``{memory, turns: [{role, content}], self_prompt, last_sender, ...}``; the
    repository's ``evaluation_script.py`` copies it into ``experiments/<run>/<task>_<agent>_<n>.json``). ``turns``
    is the agent's live chat window: ``user`` turns are other players' messages (``<name>: ...``), ``system`` turns
    are command outputs and harness notices, ``assistant`` turns are the agent's replies. ``memory`` is the
    summary of older turns the prompter puts into its system prompt; the system prompt itself is not recorded. One
    agent thread: one conversation; each run of assistant turns with no input between them is one call (none are
    adjacent here), its context the turns before it. ``!command(...)`` in the replies are text commands, not tool
    calls (this set's rule)."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8"))["turns"]:
        if m["role"] == "assistant":
            t.out(m.get("content") or "")
        else:
            t.inp(m["role"])
    return _merge("Mindcraft agent memory JSON", [t])


def clembench_requests(path: Path) -> dict:
    """clembench episode request log ``requests.json`` (clembench / clemcore ``GameRecorder``: a JSON list of
    ``{timestamp, manipulated_prompt_obj, raw_response_obj}``, one per model request in the episode;
    ``manipulated_prompt_obj`` is the message list sent (OpenAI layout with string contents, or Anthropic layout
    with lists of text blocks), ``raw_response_obj`` the backend's raw response (a Chat Completions object, or an
    Anthropic message) with clembench's ``clem_player`` record added). Each entry is one call: context its
    ``manipulated_prompt_obj`` messages, completion the response message's text (``choices[0].message.content`` or
    the ``text`` blocks of ``content``). The players of a game are separate threads: an entry whose messages start
    with an earlier entry's messages plus that entry's reply continues that entry's conversation (this set's rule);
    in a two-player taboo game the describer's and the guesser's requests form two conversations. ``tool_calls``
    are null in the responses: no tool calls."""
    threads: list = []
    keys: list = []  # per thread: the message list (role, text) its next request must start with
    for rec in json.loads(path.read_text(encoding="utf-8")):
        msgs = [(m["role"], _text(m.get("content"))) for m in rec["manipulated_prompt_obj"]]
        resp = rec["raw_response_obj"]
        if "choices" in resp:
            msg = resp["choices"][0]["message"]
            reply, tools = msg.get("content") or "", len(msg.get("tool_calls") or [])
        else:
            reply = _text(resp.get("content"))
            tools = sum(1 for b in resp.get("content") or [] if b.get("type") == "tool_use")
        idx = next((i for i, k in enumerate(keys) if msgs[:len(k)] == k), None)
        if idx is None:
            threads.append(_Thread())
            keys.append([])
            idx = len(threads) - 1
        t = _Thread([m[0] for m in msgs])
        t.out(reply, tools)
        th = threads[idx]
        th.completions += t.completions
        th.contexts += t.contexts
        th.tools += t.tools
        keys[idx] = msgs + [("assistant", reply)]
    return _merge("clembench episode requests.json", threads)


COUNTERS = {
    "mindcraft-prompt-log": mindcraft_prompt_log,
    "mindcraft-memory": mindcraft_memory,
    "clembench-requests": clembench_requests,
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
