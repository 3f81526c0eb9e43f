"""Hand counts of the nineteenth held-out set (benchmarks/data/heldout_formats_19/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself and in the writing tool's source / docs.

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
- several input messages in a row (two user messages with no reply between them) are all context of the next reply;
  they do not make a call of their own;
- an action the model writes only as text in its reply (code for the host library to run) with no structured
  tool-call record is not a tool call (as in set 14);
- a request the log shows answered from the tool's own response cache (no request sent to the model) is not a call;
- one rule per format in each counting function's docstring.
Context roles: a message made only of tool results is written ``tool``; roles are written as the file records them.

Run: ``python benchmarks/data/heldout_formats_19/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import csv
import json
import re
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


def _text(message: dict) -> str:
    """A chat message's text: the ``text`` blocks (current layout) or the flat ``content`` string (older layout)."""
    if "blocks" in message:
        return "".join(b.get("text") or "" for b in message["blocks"] if b.get("block_type") == "text")
    return message.get("content") or ""


def llamaindex_simplechatstore(path: Path) -> dict:
    """LlamaIndex ``SimpleChatStore`` persisted JSON (``SimpleChatStore.persist()``, default name ``chat_store.json``:
    ``{store: {<chat store key>: [ChatMessage]}, class_name: "SimpleChatStore"}``; a ChatMessage is ``{role,
    additional_kwargs, blocks: [{block_type: "text", text}]}``, roles user / assistant / tool; an assistant message's
    OpenAI-style ``additional_kwargs.tool_calls`` are its tool calls, a ``tool`` message carries ``tool_call_id`` and
    ``name`` in ``additional_kwargs``). Each store key is one chat (one conversation: the chat memory the engine sends
    back with every turn, so each reply's context is every message before it in the list). Each run of assistant
    messages with no input between them is one call (an assistant message with tool calls and empty ``blocks``
    followed by the tool result and a text reply is two calls); its text blocks are the completion, each
    ``tool_calls`` entry a tool call. No system prompt is stored (the engine adds it at request time)."""
    threads = []
    for messages in json.loads(path.read_text(encoding="utf-8"))["store"].values():
        t = _Thread()
        for m in messages:
            if m["role"] == "assistant":
                t.out(_text(m), len((m.get("additional_kwargs") or {}).get("tool_calls") or []))
            else:
                t.inp(m["role"])
        threads.append(t)
    return _merge("LlamaIndex SimpleChatStore JSON", threads)


_RECORD = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) \[([A-Z]+)\] ", re.M)


def _log_records(path: Path) -> list:
    """The log's records: each starts with ``<date> <time> [LEVEL] `` at a line start and runs to the next one."""
    text = path.read_text(encoding="utf-8")
    starts = list(_RECORD.finditer(text))
    return [text[m.end():(starts[i + 1].start() if i + 1 < len(starts) else len(text))]
            for i, m in enumerate(starts)]


def pandasai_log(path: Path) -> dict:
    """PandasAI ``pandasai.log`` (the run log PandasAI 2.x writes in the working directory: one record per line
    start, ``<date> <time> [LEVEL] <message>``; a chat request opens with ``Question: ...``, then ``Running PandasAI
    with <llm> LLM...``, ``Prompt ID``, the pipeline steps, ``Using prompt: <the full prompt text>``, ``HTTP Request:
    POST .../chat/completions "HTTP/1.1 <status>"``, and for a request the model answered ``Prompt used: <prompt>``
    and ``Code generated: <the reply, a fenced code block>``, then the host's code run and ``Answer: ...``). Each
    ``Code generated`` record is one call whose context is the single prompt logged before it (one user message) and
    whose completion is that record's text. A request answered with an HTTP error (``401 Unauthorized``) followed by
    ``Pipeline failed on step 3`` has no reply: a failed request, not a call. A request served with ``Using cached
    response`` (code generation skipped) sent nothing to the model: not a call. Every logged prompt holds only the
    dataframe preview, the code template and that one question (no earlier reply), so each call is its own
    conversation (shared rule: single-shot calls side by side). The generated code is run by the library, not emitted
    as a structured tool call: no tool calls."""
    completions, contexts = [], []
    prompt_seen = False
    for rec in _log_records(path):
        if rec.startswith("Question:"):
            prompt_seen = False
        elif rec.startswith(("Using prompt:", "Prompt used:")):
            prompt_seen = True
        elif rec.startswith("Code generated:"):
            assert prompt_seen, "a reply without its prompt"
            completions.append(rec[len("Code generated:"):].strip())
            contexts.append(["user"])
    return _result("PandasAI run log (pandasai.log)", len(completions), completions, contexts, 0)


def gradio_cached_examples(path: Path) -> dict:
    """Gradio cached-examples log (``gradio_cached_examples/<fn id>/log.csv``, written by Gradio's CSV logger when a
    ``gr.ChatInterface`` is built with ``examples`` and ``cache_examples=True``: Gradio runs the chat function once on
    each example message at start-up and stores the output component's value). Header: the chatbot column
    (``component 0``), then ``flag``, ``username``, ``timestamp``; one row per example; the chatbot cell is the JSON
    text of the chat history in Gradio's tuples layout, ``[[user message, bot reply], ...]``. Each row is its own
    chat (every example starts from an empty history): one conversation per row. Each pair with a bot reply is one
    call whose context is the earlier pairs and that user message; its completion is the bot text. Only the chat
    messages are stored (no system prompt the app may add); no tool calls."""
    threads = []
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    for row in rows[1:]:
        t = _Thread()
        for user, bot in json.loads(row[0]):
            if user is not None:
                t.inp("user")
            if bot is not None:
                t.out(bot)
        threads.append(t)
    return _merge("Gradio cached-examples CSV (ChatInterface)", threads)


COUNTERS = {
    "gradio-cached-examples": gradio_cached_examples,
    "llamaindex-simplechatstore": llamaindex_simplechatstore,
    "pandasai-log": pandasai_log,
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
