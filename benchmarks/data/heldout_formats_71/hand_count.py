"""Hand counts of the seventy-first held-out set (benchmarks/data/heldout_formats_71/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
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
Rules made explicit for this set (written before the product was run):
- one cache / cassette entry that stores the request sent and the reply received is one recorded call, its own
  single-shot conversation; a reply stored twice in one entry (ExLLM keeps the provider's body both as
  ``response_data`` and as ``request_metadata.response_body``) is that one call, not two;
- a pipeline step whose prompt quotes an earlier step's reply as text (a "current draft" to update, summaries to
  roll up) is a new single-shot call: its context is a new prompt, not a continuation of the earlier call's context
  and reply, so every cassette entry is its own conversation;
- a prompt recorded only in part (Synix keeps the first 200 characters as ``prompt_preview``) is still the call's
  recorded context, written ``user``; the reply is recorded whole;
- a reply cut off by the token limit (``max_tokens`` / ``length`` stop reasons, replies that end mid-sentence) is
  a call all the same; the completion is the text as saved, leading spaces kept;
- in a table of replies (a pandas DataFrame written with ``to_json``: one column per field, each mapping a row id
  to a value), each model column's cell is one single-shot call whose context is the same row's ``prompt`` cell;
  two models' replies to the same prompt are two calls and two conversations; a judge's score column holds no
  recorded call;
- ids, keys, timestamps, token counts, model names and test metadata are metadata, not context.
Context roles: as recorded (``user`` for a bare prompt string); a system prompt kept beside the messages (not in the
list) is written ``system`` at the head of the context.

Run: ``python benchmarks/data/heldout_formats_71/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_KEY_LINE = re.compile(r"^( *)(?:- )?([A-Za-z_]+):(?: (.*))?$")


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


# --- a reader for the small subset of YAML the Synix cassettes use (block mappings, one sequence, flow scalars) ---

def _fold(lines: list, double_quoted: bool = False) -> str:
    """YAML flow-scalar line folding: a break between two non-empty lines is one space, each empty line a newline;
    in a double-quoted scalar a line ending in an escaping backslash joins the next line with no space."""

    def escaped_break(text: str) -> bool:
        return double_quoted and (len(text) - len(text.rstrip("\\"))) % 2 == 1

    parts = [lines[0].rstrip()] + [line.strip() for line in lines[1:]]
    out, empties = parts[0], 0
    joined = escaped_break(out)
    if joined:
        out = out[:-1]
    for part in parts[1:]:
        if part == "":
            empties += 1
            continue
        out += "\n" * empties if (empties or joined) else " "
        out += part
        empties = 0
        joined = escaped_break(out)
        if joined:
            out = out[:-1]
    return out


_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/", " ": " ", "0": "\0", "r": "\r"}


def _scalar(lines: list) -> str:
    """The value of a (possibly multi-line) plain, single-quoted or double-quoted YAML scalar."""
    head = lines[0].lstrip()
    if head.startswith("'"):
        text = _fold([head] + lines[1:])
        return text[1:-1].replace("''", "'")
    if head.startswith('"'):
        text = _fold([head] + lines[1:], double_quoted=True)[1:-1]
        out, i = [], 0
        while i < len(text):
            c = text[i]
            if c == "\\" and i + 1 < len(text):
                out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
                i += 2
            else:
                out.append(c)
                i += 1
        return "".join(out)
    return _fold([head] + lines[1:])


def _cassette_entries(path: Path) -> list:
    """Each ``- key:`` entry as a flat dict ``{"request.prompt_preview": ..., "response.text": ...}``."""
    entries, current, parents, key, value_lines = [], None, {}, None, []

    def flush() -> None:
        if current is not None and key is not None:
            current[key] = _scalar(value_lines) if value_lines and value_lines[0].strip() else ""

    for line in path.read_text(encoding="utf-8").split("\n"):
        m = _KEY_LINE.match(line)
        indent = len(m.group(1)) if m else None
        if m and (line.startswith("- ") or indent <= 4):
            flush()
            if line.startswith("- "):
                current = {}
                entries.append(current)
                parents = {}
                indent = 2
            name, rest = m.group(2), m.group(3)
            parents = {k: v for k, v in parents.items() if k < indent}
            prefix = ".".join(parents[k] for k in sorted(parents))
            if rest is None or rest == "":
                parents[indent] = name
                key, value_lines = None, []
            else:
                key = (prefix + "." if prefix else "") + name
                value_lines = [rest]
        elif key is not None:
            value_lines.append(line)
    flush()
    return entries


def synix_llm_cassette(path: Path) -> dict:
    """Synix LLM cassette YAML (``templates/*/cassettes/llm.yaml``, written by Synix's cassette layer in record mode:
    a YAML sequence of entries ``{key, meta, request: {model, params, prompt_preview, provider}, response:
    {input_tokens, model, output_tokens, text}}``, flow scalars folded over several lines). Each entry is one recorded
    call, its own conversation (the roll-up and report-update entries quote earlier replies inside a new prompt:
    shared and set rules); its context is the recorded prompt (``prompt_preview``, the prompt's first 200 characters),
    written ``user``; its completion is ``response.text``. No tool calls, no system prompt recorded."""
    completions, contexts = [], []
    for entry in _cassette_entries(path):
        if "response.text" not in entry:
            continue
        completions.append(entry["response.text"])
        contexts.append(["user"] if entry.get("request.prompt_preview") else [])
    return _result("Synix LLM cassette YAML", len(completions), completions, contexts, 0)


def anyscale_llm_router(path: Path) -> dict:
    """Anyscale LLM-router template labeled dataset (``templates/llm-router/assets/labeled_test_dataset.json``: a
    pandas DataFrame written by ``to_json`` with the default column orientation, ``{prompt: {id: text}, source: {id:
    [dataset]}, gpt4: {id: reply}, mixtral: {id: reply}, label: {id: score}}``). Each cell of the ``gpt4`` and
    ``mixtral`` columns is one single-shot call (its own conversation) whose context is the row's ``prompt``
    (``user``); ``label`` is a 1-5 score (a judge's label; no reply of the judge is kept: not a recorded call);
    ``source`` is metadata. Calls listed in file order: the ``gpt4`` column, then the ``mixtral`` column. No tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts = [], []
    for column in ("gpt4", "mixtral"):
        for row, reply in data[column].items():
            completions.append(reply)
            contexts.append(["user"] if data["prompt"].get(row) else [])
    return _result("Anyscale LLM-router labeled DataFrame JSON", len(completions), completions, contexts, 0)


def _reply_text(body) -> tuple:
    """Text and tool-call count of a provider response body as ExLLM stored it: an Anthropic message object, an
    Anthropic SSE stream kept as one string, or an Ollama ``/api/chat`` object."""
    if isinstance(body, str):
        text, tools = "", 0
        for line in body.split("\n"):
            if not line.startswith("data: ") or line.strip() == "data: [DONE]":
                continue
            event = json.loads(line[len("data: "):])
            if event.get("type") == "content_block_delta" and event["delta"].get("type") == "text_delta":
                text += event["delta"]["text"]
            if event.get("type") == "content_block_start" and event["content_block"].get("type") == "tool_use":
                tools += 1
        return text, tools
    if "content" in body and isinstance(body["content"], list):
        text = "".join(b.get("text", "") for b in body["content"] if b.get("type") == "text")
        return text, sum(1 for b in body["content"] if b.get("type") == "tool_use")
    message = body.get("message") or {}
    return message.get("content") or "", len(message.get("tool_calls") or [])


def exllm_test_cache(path: Path) -> dict:
    """ExLLM test-response cache entry JSON (the Elixir ExLLM library's automatic test cache,
    ``test/cache/<provider>/<endpoint>/<hash>/<timestamp>.json``: ``{cached_at, test_context, api_version,
    cache_version, response_data, request_metadata: {..., request_body, ..., response_body, ...}}``). One file is one
    recorded request: one call, one conversation. Its context is ``request_metadata.request_body``: a top-level
    ``system`` string (Anthropic Messages) is written ``system`` at the head, then the roles of ``messages``. Its
    completion is the reply in ``response_data`` (the same body is repeated as ``response_body``: one call): an
    Anthropic message's text blocks, an Anthropic SSE stream string's ``text_delta`` pieces joined, or an Ollama
    ``message.content``. No tool calls in these entries."""
    entry = json.loads(path.read_text(encoding="utf-8"))
    request = entry["request_metadata"]["request_body"]
    context = (["system"] if request.get("system") else []) + [m["role"] for m in request.get("messages", [])]
    text, tools = _reply_text(entry["response_data"])
    return _result("ExLLM test cache entry JSON", 1, [text], [context], tools)


COUNTERS = {
    "synix-llm-cassette": synix_llm_cassette,
    "anyscale-llm-router": anyscale_llm_router,
    "exllm-test-cache": exllm_test_cache,
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
