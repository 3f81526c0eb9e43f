"""Hand counts of the fourth held-out set (benchmarks/data/heldout_formats_4/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

Per file: the conversations (one per distinct agent thread / session that holds at least one LLM call), the LLM
calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns, the
text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run):
- a thinking / reasoning part belongs to the reply it precedes; a reply streamed or split over several records with
  no new input between them (no user, tool-result or system record) is one call;
- text the model writes after it has seen a tool result is a new call;
- a branch the tool marks as discarded (not on the active path) is not counted;
- tool calls are the client-executed calls the model emitted (function / tool_use / toolCall parts and the like);
  calls the provider ran server-side during generation are not counted.

Run: ``python benchmarks/data/heldout_formats_4/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
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

    def __init__(self) -> None:
        self.ctx: list = []
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


def kimi_cli_wire(path: Path) -> dict:
    """Kimi Code CLI wire log (JSONL events): ``turn.prompt`` / ``context.append_message`` (user input),
    ``context.append_loop_event`` with event types step.begin / content.part (think or text) / tool.call /
    tool.result / step.end, ``llm.request`` per model request. Rule: each loop step (step.begin .. next step) that
    holds at least one content.part or tool.call is one call (steps whose request produced nothing, e.g. the two
    unanswered "hi" turns, are no call); tool calls: every tool.call event. The manual compaction request
    (llm.request kind "compaction", its summary applied as context) is not an assistant turn of the thread and is
    not counted. One file is one session (one agent, "main")."""
    t = _Thread()
    for d in _lines(path):
        typ = d["type"]
        if typ == "context.append_message":
            t.inp(d["message"]["role"])
        elif typ == "context.append_loop_event":
            ev = d["event"]
            et = ev["type"]
            if et == "step.begin":
                t.inp("step")  # a new request: closes any open call
                t.ctx.pop()
            elif et == "content.part":
                part = ev["part"]
                t.out(part.get("text", "") if part["type"] == "text" else "")
            elif et == "tool.call":
                t.out("", 1)
            elif et == "tool.result":
                t.inp("tool")
        elif typ == "context.apply_compaction":
            t.inp("summary")
    return _result("Kimi Code CLI wire JSONL", 1 if t.completions else 0, t.completions, t.contexts, t.tools)


def droid_session_store(path: Path) -> dict:
    """Factory Droid session store JSONL: ``session_start``, then ``message`` records with Anthropic-style
    ``message.content`` blocks (text, tool_use, tool_result). Consecutive assistant records (m2 text, m3 tool_use)
    are one call; a user record holding tool_result blocks is tool input. One file is one session."""
    t = _Thread()
    for d in _lines(path):
        if d.get("type") != "message":
            continue
        m = d["message"]
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        if m["role"] == "assistant":
            t.out("".join(b.get("text", "") for b in blocks if b["type"] == "text"),
                  sum(b["type"] == "tool_use" for b in blocks))
        else:
            t.inp("tool" if any(b["type"] == "tool_result" for b in blocks) else m["role"])
    return _result("Factory Droid session store JSONL", 1 if t.completions else 0, t.completions, t.contexts,
                   t.tools)


def droid_stream_json(path: Path) -> dict:
    """Factory Droid ``--output-format stream-json`` events: system, message (role user / assistant, ``text``),
    tool_call, tool_result, completion (``finalText``). The assistant message and the tool_call after it are one
    call; after the tool result, ``completion.finalText`` is the model's next reply (a call). One session."""
    t = _Thread()
    for d in _lines(path):
        typ = d["type"]
        if typ == "system":
            t.inp("system")
        elif typ == "message":
            if d["role"] == "assistant":
                t.out(d.get("text", ""))
            else:
                t.inp(d["role"])
        elif typ == "tool_call":
            t.out("", 1)
        elif typ == "tool_result":
            t.inp("tool")
        elif typ == "completion" and d.get("finalText"):
            t.out(d["finalText"])
    return _result("Factory Droid stream-json events", 1 if t.completions else 0, t.completions, t.contexts,
                   t.tools)


def cursor_cli_transcript(path: Path) -> dict:
    """Cursor agent CLI transcript JSONL: records ``{role, message: {content: [blocks]}}`` with thinking / text /
    tool_use blocks for the assistant and text / tool_result blocks for the user. Each assistant record is a call
    (no two are adjacent here); tool calls: tool_use blocks. One file is one session."""
    t = _Thread()
    for d in _lines(path):
        blocks = d["message"]["content"]
        if d["role"] == "assistant":
            t.out("".join(b.get("text", "") for b in blocks if b["type"] == "text"),
                  sum(b["type"] == "tool_use" for b in blocks))
        else:
            t.inp("tool" if any(b["type"] == "tool_result" for b in blocks) else d["role"])
    return _result("Cursor agent CLI transcript JSONL", 1 if t.completions else 0, t.completions, t.contexts,
                   t.tools)


def openclaw_session(path: Path) -> dict:
    """OpenClaw session JSONL (pi-style): session / model_change / thinking_level_change / custom /
    custom_message entries, then ``message`` entries whose ``message.role`` is user / assistant / toolResult
    (``toolCall`` parts). The custom_message is injected context. m4 ("Done" + a media note) and m5 (an edit_file
    toolCall) are adjacent assistant records with no input between them: one call. One file is one session."""
    t = _Thread()
    for d in _lines(path):
        if d["type"] == "custom_message":
            t.inp("system")
        if d["type"] != "message":
            continue
        m = d["message"]
        if m["role"] == "assistant":
            parts = m.get("content") or []
            t.out("".join(p.get("text", "") for p in parts if p["type"] == "text"),
                  sum(p["type"] == "toolCall" for p in parts))
        else:
            t.inp("tool" if m["role"] == "toolResult" else m["role"])
    return _result("OpenClaw session JSONL", 1 if t.completions else 0, t.completions, t.contexts, t.tools)


def grok_cli_chat_history(path: Path) -> dict:
    """Grok CLI ``chat_history.jsonl``: records typed system / user / reasoning / assistant (``content`` +
    ``tool_calls``) / tool_result / backend_tool_call. Reasoning belongs to the assistant record after it; the
    backend_tool_call (a web search the provider ran during the next reply) is part of that reply's output and is
    not a client tool call. The last reasoning record, after the second tool result and with no assistant record
    after it, is still model output after a tool result: a call (reasoning only). The final user message (an
    image) has no reply. One file is one session."""
    t = _Thread()
    for d in _lines(path):
        typ = d["type"]
        if typ == "system":
            t.inp("system")
        elif typ == "user":
            t.inp("user")
        elif typ in ("reasoning", "backend_tool_call"):
            t.out("")
        elif typ == "assistant":
            t.out(d.get("content") or "", len(d.get("tool_calls") or []))
        elif typ == "tool_result":
            t.inp("tool")
    return _result("Grok CLI chat_history JSONL", 1 if t.completions else 0, t.completions, t.contexts, t.tools)


def hermes_session_json(path: Path) -> dict:
    """Hermes agent session JSON: top-level ``system_prompt``, ``tools``, ``messages`` (OpenAI-style roles user /
    assistant with ``tool_calls`` / tool, plus a trailing ``session_meta`` marker that is not a message). Each
    assistant message is a call. One file is one session."""
    d = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    if d.get("system_prompt"):
        t.inp("system")
    for m in d["messages"]:
        if m["role"] == "assistant":
            t.out(m.get("content") or "", len(m.get("tool_calls") or []))
        elif m["role"] in ("user", "tool", "system"):
            t.inp(m["role"])
    return _result("Hermes agent session JSON", 1 if t.completions else 0, t.completions, t.contexts, t.tools)


def qwen_code_chat(path: Path) -> dict:
    """Qwen Code chat recording JSONL (uuid / parentUuid chain; type user / assistant / tool_result / system;
    Gemini-style ``message.parts`` with text, ``thought`` text, functionCall, functionResponse). Each assistant
    record is a call (the thought part belongs to it); tool calls: functionCall parts. The trailing system telemetry
    and user notification get no reply. One file is one session."""
    t = _Thread()
    for d in _lines(path):
        typ = d["type"]
        parts = (d.get("message") or {}).get("parts") or []
        if typ == "assistant":
            t.out("".join(p.get("text", "") for p in parts if "text" in p and not p.get("thought")),
                  sum("functionCall" in p for p in parts))
        elif typ == "tool_result":
            t.inp("tool")
        elif typ == "user":
            t.inp("user")
    return _result("Qwen Code chat recording JSONL", 1 if t.completions else 0, t.completions, t.contexts,
                   t.tools)


def vscode_chat_export(path: Path) -> dict:
    """VS Code Chat "Export Chat" JSON (GitHub Copilot agent mode): ``requests[]``, each a user message with the
    rendered ``response`` parts and ``result.metadata.toolCallRounds`` (one entry per model round: its text
    ``response`` and its ``toolCalls``; ``toolCallResults`` hold the results). Rule: each tool-call round is one
    call (a round after tool results is a new call); tool calls: the rounds' toolCalls. One export is one chat
    session."""
    d = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for r in d["requests"]:
        t.inp("user")
        rounds = r["result"]["metadata"]["toolCallRounds"]
        for i, rnd in enumerate(rounds):
            if i:
                t.inp("tool")
            t.out(rnd.get("response", ""), len(rnd.get("toolCalls") or []))
    return _result("VS Code Copilot Chat export JSON", 1 if t.completions else 0, t.completions, t.contexts,
                   t.tools)


def chatdev_log(path: Path) -> dict:
    """ChatDev run log (text, 2023 layout): phases announced by ``System: **[chatting]**`` / ``**[RolePlaying]**``
    tables, ``<Role>: **[Start Chat]**`` with the bracketed system prompt and the instruction, then one
    ``**[OpenAI_Usage_Info Receive]**`` block per model response and one ``<Speaker>: **<A><-><B> on : <Phase>,
    turn N**`` block holding the speaker's system prompt and reply. Rule: each such reply block is one call (13,
    equal to the 13 usage receipts; the rate-limit retries produced no response); conversations: one per (role-play
    session, speaking agent) thread, since each agent of a role play keeps its own context (DemandAnalysis has two
    speakers, every other session one). No tool calls."""
    text = path.read_text(encoding="utf-8")
    starts = [m.start() for m in re.finditer(r"INFO\] [^\n]*: \*\*\[Start Chat\]\*\*", text)]
    replies = list(re.finditer(r"INFO\] ([A-Za-z ]+): \*\*[^\n]*<->[^\n]*turn \d+\*\*\n", text))
    threads, completions, contexts = set(), [], []
    for m in replies:
        session = sum(s < m.start() for s in starts)
        threads.add((session, m.group(1)))
        body = text[m.end():].split("\n[20", 1)[0]
        completions.append(body.split("]\n\n", 1)[-1].strip())
        contexts.append(["system", "user"])
    receipts = text.count("**[OpenAI_Usage_Info Receive]**")
    assert receipts == len(replies), (receipts, len(replies))
    return _result("ChatDev run log (text)", len(threads), completions, contexts, 0)


def metagpt_rsp_cache(path: Path) -> dict:
    """MetaGPT LLM response cache (tests/data/rsp_cache.json): a JSON object mapping the prompt text sent to the
    model to the model's reply text, recorded from real runs and replayed by the tests. Rule: each entry is one
    call whose context is its prompt; the cache keeps no thread links, so each entry is its own conversation."""
    d = json.loads(path.read_text(encoding="utf-8"))
    completions = list(d.values())
    return _result("MetaGPT LLM response cache JSON", len(d), completions, [["user"]] * len(d), 0)


def polylogue_browser_capture(path: Path) -> dict:
    """polylogue browser-extension capture of a ChatGPT conversation (``polylogue_capture_kind``:
    browser_llm_session): ``session.turns`` (a DOM fallback: the user prompt and the final answer only) and
    ``raw_provider_payload`` (the ChatGPT backend conversation: a ``mapping`` tree and ``current_node``). Rule: the
    active path from current_node to the root is the thread (the superseded sibling answer is a discarded branch);
    the DOM turns repeat that thread and add no call. On the path: a thoughts message + an assistant message to
    ``browser.search`` (one call, one tool call), the tool's execution_output, then a reasoning_recap + the final
    answer (one call, after the tool result). One conversation."""
    d = json.loads(path.read_text(encoding="utf-8"))
    conv = d["raw_provider_payload"]
    path_nodes, node = [], conv["current_node"]
    while node is not None:
        path_nodes.append(conv["mapping"][node])
        node = conv["mapping"][node]["parent"]
    t = _Thread()
    for n in reversed(path_nodes):
        m = n.get("message")
        if not m:
            continue
        role = m["author"]["role"]
        if role == "assistant":
            c = m["content"]
            to_tool = m.get("recipient") not in (None, "all")
            text = "" if to_tool or c["content_type"] in ("thoughts", "reasoning_recap") else "".join(
                p for p in c.get("parts", []) if isinstance(p, str))
            t.out(text, 1 if to_tool else 0)
        else:
            t.inp(role)
    return _result("polylogue browser capture (ChatGPT)", 1 if t.completions else 0, t.completions, t.contexts,
                   t.tools)


COUNTERS = {
    "kimi-cli-wire": kimi_cli_wire,
    "droid-session-store": droid_session_store,
    "droid-stream-json": droid_stream_json,
    "cursor-cli-transcript": cursor_cli_transcript,
    "openclaw-session": openclaw_session,
    "grok-cli-chat-history": grok_cli_chat_history,
    "hermes-session-json": hermes_session_json,
    "qwen-code-chat": qwen_code_chat,
    "vscode-chat-export": vscode_chat_export,
    "chatdev-log": chatdev_log,
    "metagpt-rsp-cache": metagpt_rsp_cache,
    "polylogue-browser-capture": polylogue_browser_capture,
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
