"""Hand counts of the fifth held-out set (benchmarks/data/heldout_formats_5/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

Per file: the conversations (one per distinct agent thread / session / sample that holds at least one LLM call),
the LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those
turns, the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call
with a readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the fourth set's):
- a thinking / reasoning part belongs to the reply it precedes; a reply streamed or split over several records with
  no new input between them (no user, tool-result or system record) is one call;
- text the model writes after it has seen a tool result is a new call;
- a branch the tool marks as discarded (not on the active path) is not counted;
- tool calls are the client-executed calls the model emitted (function / tool_use / toolCall parts and the like);
  calls the provider ran server-side during generation are not counted.
One rule added for this set: LLM calls a file only mentions (a usage-ledger entry, a count printed in a tool
result) without recording their context and reply are not counted.

Run: ``python benchmarks/data/heldout_formats_5/hand_count.py`` (one JSON line per file).
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


def _merge(fmt: str, threads: list) -> dict:
    kept = [t for t in threads if t.completions]
    return _result(fmt, len(kept), [c for t in kept for c in t.completions],
                   [c for t in kept for c in t.contexts], sum(t.tools for t in kept))


def _text_of(content) -> str:
    """A message ``content`` that is a string or a list of ``{type: text, text}`` blocks."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def alpaca_eval_outputs(path: Path) -> dict:
    """AlpacaEval ``model_outputs.json``: a list of records ``{dataset, instruction, output, generator}``. Each
    record is one single-turn sample: one conversation, one call whose context is the instruction (a user turn) and
    whose completion is ``output``. No tools."""
    threads = []
    for rec in json.loads(path.read_text(encoding="utf-8")):
        t = _Thread()
        t.inp("user")
        t.out(rec["output"])
        threads.append(t)
    return _merge("AlpacaEval model_outputs JSON", threads)


def amp_thread(path: Path) -> dict:
    """Amp thread JSON (``messages`` of ``{role, messageId, content: [blocks]}``, ``usageLedger.events``). Each
    assistant message is a call (no two are adjacent); its ``text`` blocks are the completion and each ``tool_use``
    block is a tool call (here the block carries only a description in ``text``, which is not reply text). The
    usage ledger's ``title-generation`` event is an LLM call of the app outside the thread (context and reply not
    recorded): not counted; its three ``conversation`` events are the three assistant messages. One thread."""
    d = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for m in d["messages"]:
        blocks = m.get("content") or []
        if m["role"] == "assistant":
            t.out("".join(b.get("text", "") for b in blocks if b.get("type") == "text"),
                  sum(b.get("type") == "tool_use" for b in blocks))
        else:
            t.inp(m["role"])
    return _merge("Amp thread JSON", [t])


def buddy_session(path: Path, fmt: str) -> dict:
    """CodeBuddy / WorkBuddy session JSONL: ``session_start``, then ``message`` records (role user / assistant,
    ``content`` a string or text blocks), ``function_call`` and ``function_call_result`` records. The assistant
    message and the function_call after it are one call; the function_call_result is tool input; the assistant
    message after it is a new call. One file is one session."""
    t = _Thread()
    for d in _lines(path):
        typ = d["type"]
        if typ == "message":
            if d["role"] == "assistant":
                t.out(_text_of(d["content"]))
            else:
                t.inp(d["role"])
        elif typ == "function_call":
            t.out("", 1)
        elif typ == "function_call_result":
            t.inp("tool")
    return _merge(fmt, [t])


def codebuddy_session(path: Path) -> dict:
    """CodeBuddy session JSONL (see ``buddy_session``)."""
    return buddy_session(path, "CodeBuddy session JSONL")


def workbuddy_session(path: Path) -> dict:
    """WorkBuddy session JSONL (same layout as CodeBuddy's; see ``buddy_session``)."""
    return buddy_session(path, "WorkBuddy session JSONL")


def deepseek_web_raw(path: Path) -> dict:
    """DeepSeek web app raw chat JSON (the ``/chat/history_messages`` API body: ``data.biz_data.chat_session`` with
    ``current_message_id``, ``chat_messages`` of ``{message_id, parent_id, role USER / ASSISTANT, fragments}``).
    The messages form a tree: regenerated replies share a parent, and an edited first prompt starts a new root
    (``parent_id`` null). The active path is the chain from ``current_message_id`` up through ``parent_id``; only it
    is counted (rule: branches off the active path are discarded). Here it is message 10 (USER) -> 11 (ASSISTANT):
    one call; its THINK fragment belongs to the reply, the RESPONSE fragment is the completion. One chat session."""
    d = json.loads(path.read_text(encoding="utf-8"))["data"]["biz_data"]
    by_id = {m["message_id"]: m for m in d["chat_messages"]}
    path_ids = []
    cur = d["chat_session"]["current_message_id"]
    while cur is not None:
        path_ids.append(cur)
        cur = by_id[cur]["parent_id"]
    t = _Thread()
    for mid in reversed(path_ids):
        m = by_id[mid]
        if m["role"] == "ASSISTANT":
            t.out("".join(f["content"] for f in m["fragments"] if f["type"] == "RESPONSE"))
        else:
            t.inp(m["role"].lower())
    return _merge("DeepSeek web raw chat JSON", [t])


def kiro_ide_session(path: Path) -> dict:
    """Kiro IDE workspace session JSON (``history`` of ``{message: {role, content, id}}``, content a string or
    text blocks). Each assistant message is a call; each user message is input, an empty one included (the edge
    file's msg-3 is a recorded user turn with empty content, so msg-4 is a second call). One file is one session."""
    d = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for h in d["history"]:
        m = h["message"]
        if m["role"] == "assistant":
            t.out(_text_of(m["content"]))
        else:
            t.inp(m["role"])
    return _merge("Kiro IDE workspace session JSON", [t])


def verifiers_eval_results(path: Path) -> dict:
    """verifiers ``vf-eval`` results JSONL (one rollout per line: ``prompt`` and ``completion`` message lists,
    ``tool_calls`` as JSON strings, reward and metric columns). One line is one conversation: ``prompt`` then
    ``completion`` in order (this environment's completion starts by repeating the user prompt, kept as recorded).
    Each assistant message is a call (none adjacent); tool calls: the entries of its ``tool_calls``. The sub-LLM
    calls the python tool made (``llm_batch``, reported only as counts in a tool result and in
    ``sub_llm_call_count``) are not recorded as messages: not counted."""
    threads = []
    for row in _lines(path):
        t = _Thread()
        for m in row["prompt"] + row["completion"]:
            if m["role"] == "assistant":
                t.out(_text_of(m.get("content")), len(m.get("tool_calls") or []))
            else:
                t.inp(m["role"])
        threads.append(t)
    return _merge("verifiers eval results JSONL", threads)


COUNTERS = {
    "alpaca-eval-outputs": alpaca_eval_outputs,
    "amp-thread": amp_thread,
    "codebuddy-session": codebuddy_session,
    "workbuddy-session": workbuddy_session,
    "deepseek-web-raw": deepseek_web_raw,
    "kiro-ide-session": kiro_ide_session,
    "verifiers-eval-results": verifiers_eval_results,
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
