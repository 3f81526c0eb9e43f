"""Hand counts of the twenty-fourth held-out set (benchmarks/data/heldout_formats_24/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself and in the code of the tool that wrote it.

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
- a record of one agent run that lists the run's input messages apart from the messages the run produced (an
  evaluation record of an agent service thread) records the run's calls in its output part only; the messages in its
  input part are context, never counted again, even where the same message is also the output of another record;
- records of successive runs of one service thread (the same thread: each later record's input holds the earlier
  runs' messages) are one conversation;
- a message list stored newest first is read in creation order;
- context roles are written as the file records them (the input part, then the output messages before the call); a
  message made only of tool results is written ``tool``; a system prompt kept outside the file (an assistant's
  stored instructions) is not invented.

Run: ``python benchmarks/data/heldout_formats_24/hand_count.py`` (one JSON line per file).
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


def _merge(fmt: str, threads: list, convs: int | None = None) -> dict:
    kept = [t for t in threads if t.completions]
    return _result(fmt, len(kept) if convs is None else convs, [c for t in kept for c in t.completions],
                   [c for t in kept for c in t.contexts], sum(t.tools for t in kept))


def openai_assistants_messages(path: Path) -> dict:
    """OpenAI Assistants API thread message list, as ``client.beta.threads.messages.list(...).model_dump()`` wrote
    it (tldr-group/Microgpt's ``run_assistant.py``: ``{data: [{id, assistant_id, content: [{text: {annotations,
    value}, type}], created_at, file_ids, metadata, object: "thread.message", role, run_id, thread_id}], object:
    "list", first_id, last_id, has_more}``). The list is newest first: read it by ``created_at``. One thread
    (one ``thread_id``) is one conversation. Each run of assistant messages with no user message between them is one
    call (the run's model turn); its ``text.value`` parts are the completion. The assistant's instructions are kept
    with the assistant, not in this file: no system role is written. No tool calls are recorded in this file (the
    run's steps hold no tool call either)."""
    msgs = sorted(json.loads(path.read_text(encoding="utf-8"))["data"], key=lambda m: m["created_at"])
    threads: dict = {}
    for m in msgs:
        t = threads.setdefault(m["thread_id"], _Thread())
        if m["role"] == "assistant":
            t.out("".join(c["text"]["value"] for c in m["content"] if c.get("type") == "text"))
        else:
            t.inp(m["role"])
    return _merge("OpenAI Assistants thread message list JSON", list(threads.values()))


def _converter_tool_calls(message: dict) -> int:
    return sum(1 for c in message.get("content") or [] if isinstance(c, dict) and c.get("type") == "tool_call")


def _converter_text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(c.get("text", "") for c in content or [] if isinstance(c, dict) and c.get("type") == "text")


def azure_ai_agent_converter(path: Path) -> dict:
    """Azure AI Evaluation ``AIAgentConverter.prepare_evaluation_data`` JSONL (an Azure AI Agent Service thread
    converted for the agent evaluators: one line per agent run, ``{query: [messages before the run], response:
    [messages the run produced], tool_definitions}``; messages ``{createdAt, run_id?, tool_call_id?, role, content}``,
    a system message first, assistant content items ``text`` or ``tool_call`` (either flat ``{type: "tool_call",
    tool_call_id, name, arguments}`` or, in the earlier layout, ``{type: "tool_call", tool_call: {id, type,
    function}}``), ``tool`` messages of ``tool_result`` items). The calls of a line are in its ``response``: each
    run of assistant messages with no tool message between them is one call, each ``tool_call`` item one tool call
    (functions the client ran: ``fetch_weather``, ``send_email``, ``opening_hours``). ``query`` is the call's
    context only (set rule): in the azureai-samples file (five lines), the third line's ``query`` also holds tool-call messages of the
    fourth and fifth runs (an order quirk of the converter), which are not counted there. All lines of a file come
    from one thread (each later ``query`` holds the earlier runs' messages; distinct ``run_id`` per line): one
    conversation per file."""
    threads = []
    for rec in _lines(path):
        t = _Thread([m["role"] for m in rec["query"]])
        for m in rec["response"]:
            if m["role"] == "assistant":
                t.out(_converter_text(m), _converter_tool_calls(m))
            else:
                t.inp(m["role"])
        threads.append(t)
    return _merge("Azure AI Evaluation AIAgentConverter JSONL", threads, convs=1 if threads else 0)


COUNTERS = {
    "openai-assistants-messages": openai_assistants_messages,
    "azure-ai-agent-converter": azure_ai_agent_converter,
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
