"""Hand counts of the hundred-and-fourth held-out set (benchmarks/data/heldout_formats_104/files), computed from the
raw files with the standard library only (this script does not import tracedraft), each by its format's layout as
read in the file itself.

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
Rules made explicit for this set (written before the product was run):
- a log record that keeps the instruction the agent was given and the reply the model generated for it is one call;
  its recorded context is the instruction (``user``), the prompt template the agent wraps around it (promptimus's
  ``### Instruction: ... ### Response:``) being the agent's and not recorded in the file; records written by
  separate runs of the agent for unrelated instructions, neither holding the other's reply, are separate
  conversations (shared rule);
- a shell command the agent picks out of the reply's free text and runs itself (promptimus's ``action_taken``, a dry
  run of the first line that starts with a known command) is the agent's action, not a tool call: the model emitted
  no tool-call part, and the whole reply text is the completion; ``action_taken`` is not context of any call;
- a reply cut off by the generation limit (promptimus's second reply ends mid-sentence) is still one call;
- a thread's message list returned by a chat API (GigaChat Threads: ``messages`` of ``{message_id, role, content,
  attachments?, created_at, model?, finish_reason?}``) is one conversation; each run of ``assistant`` messages with
  no input between them is one call, its context the messages before it (a ``user`` message with an image
  ``attachments`` entry is one ``user`` message); no system prompt is recorded;
- ids, timestamps, durations, token counts, model names, thread status and file names are metadata, not context.
Context roles: as recorded (``user`` for an agent's instruction).

Run: ``python benchmarks/data/heldout_formats_104/hand_count.py`` (one JSON line per file).
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


def promptimus_trace(path: Path) -> dict:
    """promptimus agent trace JSONL (``logs/trace.jsonl``, appended by ``agent.py``'s ``main`` after each run of the
    CLI agent, a LoRA-tuned TinyLlama-1.1B-Chat that turns an instruction into shell steps: one line per run,
    ``{timestamp, instruction, generated_plan, action_taken}``). Each line is one call: context its ``instruction``
    (``user``; the ``### Instruction:`` / ``### Response:`` template around it is not recorded), completion its
    ``generated_plan`` (the decoded text after ``### Response:``). Each line is a separate run of the agent with its
    own instruction: one conversation per line. ``action_taken`` (``dry-run: <command>`` when a line of the reply
    starts with a known command, else ``no-action``) is the agent's own parsing of the reply text: no tool calls."""
    threads = []
    for rec in _lines(path):
        t = _Thread(["user"])
        t.out(rec.get("generated_plan") or "")
        threads.append(t)
    return _merge("promptimus agent trace JSONL", threads)


def gigachat_thread_messages(path: Path) -> dict:
    """GigaChat Threads API thread messages JSON (the body of ``GET /threads/messages``, saved by the GigaChat Python
    SDK's tests as ``tests/data/threads/get_threads_messages.json``: ``{thread_id, messages: [{message_id, role,
    content, attachments?, created_at, model, finish_reason?}]}``; also the body of ``GET /threads/run``,
    ``get_threads_run.json``: ``{status, thread_id, updated_at, model, messages: [...]}`` with the same messages less
    their ``model``). The thread is one conversation; each run of ``assistant`` messages with no input between them
    is one call (one here), its ``content`` the completion, its context the messages before it (one ``user``
    message with an image attachment). No tool calls, no system prompt."""
    data = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for m in data["messages"]:
        if m["role"] == "assistant":
            t.out(m.get("content") or "", 1 if m.get("function_call") else 0)
        else:
            t.inp(m["role"])
    layout = "thread run result" if "status" in data else "thread messages"
    return _merge(f"GigaChat Threads API {layout} JSON", [t])


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("promptimus__"):
        out = promptimus_trace(path)
    else:
        out = gigachat_thread_messages(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
