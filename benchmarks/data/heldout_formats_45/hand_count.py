"""Hand counts of the forty-fifth held-out set (benchmarks/data/heldout_formats_45/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the seventh set's):
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
- a message list saved as the *input* of a request (a request log's input column) records, as calls, every
  assistant turn it holds (each with the messages before it as its context); the reply to that last request is not
  in the file, so that request is not a call;
- a system prompt the tool builds at request time but does not save is not part of the recorded context; one saved
  inside the message list heads the contexts that follow it;
- a message list stored as a JSON string inside a record's field is read as that list;
- tool results the tool elided in its saved history ("content removed ...") change no count;
- an assistant turn made only of tool calls (no text) is still one call; its completion text is empty.
Context roles: a message made only of tool results is written ``tool``; other roles as the file records them.

Run: ``python benchmarks/data/heldout_formats_45/hand_count.py`` (one JSON line per file).
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


def gitauto_llm_request(path: Path) -> dict:
    """GitAuto logged LLM request input (the ``input_content`` column GitAuto writes for every model request to its
    ``llm_requests`` table, ``json.dumps(input_messages, ensure_ascii=False)``: a one-line JSON array of
    ``{role, content}``; roles ``system`` (GitAuto keeps its system prompt inline, first) / ``user`` /
    ``assistant``; ``content`` a string or a list of Anthropic blocks ``text`` / ``tool_use`` / ``tool_result``).
    One file is the context of one request of one agent run: one conversation. Each assistant message (none are
    adjacent) is one recorded call whose context is every message before it; its completion is its ``text`` blocks
    joined, each ``tool_use`` block a tool call. A ``user`` message made only of ``tool_result`` blocks is tool input
    (``tool``). The file ends with tool results: the request it is the input of has no recorded reply and is not a
    call (set rule)."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8")):
        c = m["content"]
        blocks = [{"type": "text", "text": c}] if isinstance(c, str) else c
        if m["role"] == "assistant":
            t.out("".join(b.get("text", "") for b in blocks if b.get("type") == "text"),
                  sum(1 for b in blocks if b.get("type") == "tool_use"))
        elif m["role"] == "user" and blocks and all(b.get("type") == "tool_result" for b in blocks):
            t.inp("tool")
        else:
            t.inp(m["role"])
    return _merge("GitAuto llm_requests input_content JSON", [t])


def holmesgpt_history(path: Path) -> dict:
    """HolmesGPT conversation history JSON (the ``conversation_history`` HolmesGPT returns from its chat API and
    takes back on the next question: a JSON array of LiteLLM / OpenAI-layout messages ``{role, content,
    tool_calls?, tool_call_id?, name?, token_count?, annotations?}``; roles ``user`` / ``assistant`` / ``tool``).
    One file is one chat: one conversation (each user question continues the earlier answers). Each run of
    assistant messages with no input between them is one call (none are adjacent here); its ``content`` (null when
    the turn is only tool calls) is the completion, each ``tool_calls`` entry a tool call (parallel calls in one
    turn counted one by one). ``tool`` messages are tool input. No system prompt is saved in these files (HolmesGPT
    builds it per request): contexts start with the first user message (set rule)."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8")):
        if m["role"] == "assistant":
            t.out(m.get("content") or "", len(m.get("tool_calls") or []))
        else:
            t.inp(m["role"])
    return _merge("HolmesGPT conversation_history JSON", [t])


def selvage_eval_data(path: Path) -> dict:
    """Selvage llm_eval data set JSON (the recorded code reviews its ``llm_eval`` tests evaluate: a JSON array of
    ``{input, actual_output}``; ``input`` is the message list Selvage sent, stored as a JSON string
    ``[{role, content}]`` (one ``system`` prompt, then one or more ``user`` messages of diff / file context);
    ``actual_output`` is the model's reply, a JSON review as text). Each record is one single-shot call: its context
    is the parsed ``input`` roles, its completion ``actual_output``. Records side by side review different files
    and none continues another: one conversation per record (shared rule). No tool calls."""
    threads = []
    for rec in json.loads(path.read_text(encoding="utf-8")):
        t = _Thread([m["role"] for m in json.loads(rec["input"])])
        t.out(rec.get("actual_output") or "")
        threads.append(t)
    return _merge("Selvage llm_eval data set JSON", threads)


COUNTERS = {
    "gitauto-llm-request": gitauto_llm_request,
    "holmesgpt-history": holmesgpt_history,
    "selvage-eval-data": selvage_eval_data,
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
