"""Hand counts of the sixteenth held-out set (benchmarks/data/heldout_formats_16/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself and in the tool's own code that wrote it.

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
- an action written only as text in the reply (a ReAct-style JSON ``{"thought", "action", "actionInput"}`` object
  in the reply text) with no structured tool-call part is not a tool call (the same rule as the fourteenth set's);
- in a recording of request / response pairs, a request whose message list begins with an earlier request's message
  list followed by that request's reply (as an assistant / model message) continues that request's conversation; a
  request that continues none starts a new conversation; HTTP records that are not LLM calls are not counted;
- where a saved agent memory holds input after the last reply and no reply to it, that input adds no call.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context; other roles as the file records them
(Gemini's ``model`` is written ``assistant``).

Run: ``python benchmarks/data/heldout_formats_16/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
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


def _kaiban_call(rec: dict) -> tuple | None:
    """One recorded HTTP exchange as (context messages as (role, text) pairs, reply text, tool-call parts), or None
    where the exchange is not an LLM call."""
    body, resp = rec.get("body") or {}, rec.get("response") or {}

    def text(content) -> str:
        if isinstance(content, str):
            return content
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))

    if "messages" in body and "choices" in resp:  # OpenAI Chat Completions
        msgs = [(m["role"], text(m.get("content") or "")) for m in body["messages"]]
        reply = resp["choices"][0]["message"]
        return msgs, reply.get("content") or "", len(reply.get("tool_calls") or [])
    if "messages" in body and "content" in resp and resp.get("type") == "message":  # Anthropic Messages
        msgs = ([("system", text(body["system"]))] if body.get("system") else []) + [
            (m["role"], text(m["content"])) for m in body["messages"]]
        parts = resp["content"]
        return (msgs, "".join(p.get("text", "") for p in parts if p.get("type") == "text"),
                sum(p.get("type") == "tool_use" for p in parts))
    if "contents" in body and "candidates" in resp:  # Gemini generateContent
        sys_ = body.get("systemInstruction")
        msgs = ([("system", text(sys_["parts"]))] if sys_ else []) + [
            ("assistant" if m["role"] == "model" else m["role"], text(m["parts"])) for m in body["contents"]]
        parts = resp["candidates"][0]["content"]["parts"]
        return (msgs, "".join(p.get("text", "") for p in parts if "text" in p),
                sum("functionCall" in p for p in parts))
    return None


def kaibanjs_requests(path: Path) -> dict:
    """KaibanJS e2e request recording JSON (``tests/e2e/examples/teams/*/*.requests.json``: a list of
    ``{url, method, body, response}`` HTTP exchanges recorded while a team of agents ran; ``body`` is the provider
    request as sent (OpenAI ``messages``; Anthropic ``system`` + ``messages``; Gemini ``systemInstruction`` +
    ``contents``), ``response`` the provider's reply). Each LLM exchange is one call whose context is its request's
    messages and whose completion is the reply text. Each agent's task runs its own ReAct loop: a request whose
    messages begin with an earlier request's messages plus that request's reply continues its conversation (the
    agent's loop); each agent's first request starts a new one. Replies are ReAct JSON written as text (``thought`` /
    ``action`` / ``finalAnswer``); no reply holds a structured tool-call part, so no tool calls (set rule). No
    exchange in these three files is a non-LLM request."""
    threads: list = []  # (last context + reply as a list of (role, text), _Thread)
    for rec in json.loads(path.read_text(encoding="utf-8")):
        call = _kaiban_call(rec)
        if call is None:
            continue
        msgs, reply, tools = call
        owner = None
        for i, (seen, _t) in enumerate(threads):
            if len(msgs) > len(seen) and msgs[:len(seen)] == seen:
                owner = i
        if owner is None:
            t = _Thread()
            new = msgs
        else:
            seen, t = threads[owner]
            new = msgs[len(seen):]
        for role, _text in new:
            t.inp(role)
        t.out(reply, tools)
        state = msgs + [("assistant", reply)]
        if owner is None:
            threads.append((state, t))
        else:
            threads[owner] = (state, t)
    return _merge("KaibanJS e2e request recording JSON", [t for _s, t in threads])


def agentscope_session(path: Path) -> dict:
    """AgentScope JSON session state (``JSONSession.save_session_state``: ``{agent: {memory: {content: [[Msg,
    marks], ...]}, toolkit, name, _sys_prompt}}``; each ``Msg`` is ``{id, name, role, content, metadata,
    timestamp}`` with content blocks ``text`` / ``tool_use`` / ``tool_result``). The file holds one agent's memory:
    one conversation. ``_sys_prompt`` is the system prompt kept beside the memory (``system`` at the head of every
    context). Each run of ``assistant`` messages with no input between them is one call (each reasoning step of the
    ReAct agent is one assistant message; none are adjacent here); its ``text`` blocks are the completion and each
    ``tool_use`` block a tool call. Messages made only of ``tool_result`` blocks (written with role ``system``,
    name ``system``) are tool input; ``user`` messages are user input. The memory ends with a user input that has
    no reply: it adds no call (set rule)."""
    state = json.loads(path.read_text(encoding="utf-8"))["agent"]
    t = _Thread(["system"] if state.get("_sys_prompt") else [])
    for msg, _marks in state["memory"]["content"]:
        blocks = msg["content"] if isinstance(msg["content"], list) else [{"type": "text", "text": msg["content"]}]
        if msg["role"] == "assistant":
            t.out("".join(b.get("text", "") for b in blocks if b.get("type") == "text"),
                  sum(b.get("type") == "tool_use" for b in blocks))
        elif blocks and all(b.get("type") == "tool_result" for b in blocks):
            t.inp("tool")
        else:
            t.inp(msg["role"])
    return _merge("AgentScope JSON session state", [t])


COUNTERS = {
    "kaibanjs-requests": kaibanjs_requests,
    "agentscope-session": agentscope_session,
}


def count(path: Path) -> dict:
    out = COUNTERS[path.name.split("__", 1)[0]](path)
    return {"file": path.name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
