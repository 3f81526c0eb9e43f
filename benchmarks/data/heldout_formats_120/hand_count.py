"""Hand counts of the hundred-and-twentieth held-out set (benchmarks/data/heldout_formats_120/files), computed from
the raw files with the standard library only (this script does not import tracedraft), each by its format's layout as
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
- both tools write WireMock stub mappings recorded from live API traffic, as YAML: one ``---`` document per recorded
  HTTP exchange, ``request.bodyPatterns[0].equalToJson`` (a ``|-`` literal block holding the request body JSON,
  pretty-printed) and ``response.body`` (a literal block ``|`` / ``|+``, or a double-quoted scalar folded over
  several lines with ``\\`` line continuations, holding the response body). Each document is one call: its context
  the request body's ``messages`` (Converse / InvokeModel ``messages`` for Bedrock), its reply the response body;
- a call whose message list continues an earlier call's list plus its reply belongs to that call's conversation; a
  list starting afresh (another first user message) opens a new conversation;
- a reply's tool calls are the OpenAI ``tool_calls`` entries of the response (for a streamed response: the distinct
  ``tool_calls[].index`` values opened with an ``id`` across the SSE chunks), the Converse ``toolUse`` content
  blocks, or the Anthropic ``tool_use`` content blocks; the copies of earlier replies inside later requests are
  context, not new tool calls; the tool definitions sent with a request (``tools``, ``toolConfig``) are not context
  messages;
- a streamed OpenAI reply recorded as ``data:`` SSE chunks in one response body is one call, its completion the
  chunks' ``delta.content`` joined (empty here: the streamed reply is two tool calls);
- a leading ``<thinking>...</thinking>`` span in an Amazon Nova reply's text belongs to that reply (one call; the
  completion text kept here is the whole text);
- WireMock ids, uuids, ``insertionIndex``, ``persistent``, URLs, headers (dates, request ids, rate limits, Cloudflare
  and Bedrock latency headers), usage, ``metrics`` and model names are metadata, not context.
Context roles: as recorded (a message made only of tool results is written ``tool``; OpenAI ``system`` and ``tool``
messages keep their roles).

Run: ``python benchmarks/data/heldout_formats_120/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "/": "/", " ": " ", "0": "\0", "b": "\b",
            "f": "\f", "e": "\x1b", "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


# --- the small part of YAML these WireMock files use ---------------------------------------------------------


def _documents(text: str) -> list:
    """The ``---`` documents of the file, each as its list of lines (empty documents dropped)."""
    docs, cur = [], []
    for line in text.split("\n"):
        if line.rstrip() == "---":
            docs.append(cur)
            cur = []
        else:
            cur.append(line)
    docs.append(cur)
    return [d for d in docs if any(x.strip() for x in d)]


def _block(lines: list, start: int, key_indent: int) -> str:
    """A literal block scalar whose header is on line ``start``: the following lines indented deeper than the key
    (or empty), with the block's indentation removed. Chomping does not matter to the JSON / SSE read here."""
    body, indent = [], None
    for line in lines[start + 1:]:
        if line.strip() == "":
            body.append("")
            continue
        lead = len(line) - len(line.lstrip(" "))
        if lead <= key_indent:
            break
        if indent is None:
            indent = lead
        body.append(line[indent:])
    return "\n".join(body).rstrip("\n") + "\n"


def _double_quoted(lines: list, start: int, col: int) -> str:
    """A double-quoted scalar opening at ``lines[start][col]`` (the quote), folded over lines: an escaped line break
    (a ``\\`` at the end of a line) joins the lines with nothing, an unescaped one folds to a space; the next line's
    leading blanks are dropped; ``\\ `` is a space; the JSON-like escapes are decoded."""
    raw = "\n".join([lines[start][col + 1:]] + lines[start + 1:])
    out, i = [], 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\":
            nxt = raw[i + 1]
            if nxt == "\n":
                i += 2
                while i < len(raw) and raw[i] in " \t":
                    i += 1
                continue
            if nxt == "u":
                out.append(chr(int(raw[i + 2:i + 6], 16)))
                i += 6
                continue
            if nxt == "x":
                out.append(chr(int(raw[i + 2:i + 4], 16)))
                i += 4
                continue
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        if ch == '"':
            return "".join(out)
        if ch == "\n":
            while out and out[-1] in (" ", "\t"):
                out.pop()
            i += 1
            blank = 0
            while True:
                while i < len(raw) and raw[i] in " \t":
                    i += 1
                if i < len(raw) and raw[i] == "\n":
                    blank += 1
                    i += 1
                    continue
                break
            out.append("\n" * blank if blank else " ")
            continue
        out.append(ch)
        i += 1
    raise ValueError("unterminated double-quoted scalar")


def _exchange(doc: list) -> tuple[dict, str, int]:
    """(request body JSON, response body text, response status) of one WireMock mapping document."""
    req_body, resp_body, status, section = None, None, None, None
    for n, line in enumerate(doc):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if indent == 0 and stripped.endswith(":"):
            section = stripped[:-1]
        if section == "request" and stripped.startswith("- equalToJson:") and req_body is None:
            req_body = json.loads(_block(doc, n, indent + 2))  # the key sits after the item's "- "
        if section == "response" and indent == 2 and stripped.startswith("status:"):
            status = int(stripped.split(":", 1)[1])
        if section == "response" and indent == 2 and stripped.startswith("body:"):
            value = line.split("body:", 1)[1].strip()
            if value.startswith("|"):
                resp_body = _block(doc, n, indent)
            elif value.startswith('"'):
                resp_body = _double_quoted(doc, n, line.index('"'))
            else:
                resp_body = value
    return req_body, resp_body, status


# --- chains ------------------------------------------------------------------------------------------------------


def _chains(calls: list) -> int:
    """Number of conversations: a call whose context (first user text) matches an earlier thread and is longer
    than that thread's last context continues it; otherwise it opens one. ``calls``: (context length, key)."""
    threads: list = []
    for length, key in calls:
        for t in threads:
            if t[1] == key and length > t[0]:
                t[0] = length
                break
        else:
            threads.append([length, key])
    return len(threads)


# --- formats -----------------------------------------------------------------------------------------------------


def _openai_text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


def elasticotel_wiremock(path: Path) -> dict:
    """Elastic OpenTelemetry Java (EDOT Java) OpenAI client instrumentation test recordings: WireMock mappings in
    YAML written by the tests' ``OpenAIRecordingExtension`` (``recordSpec`` proxying to api.openai.com, bodies kept
    inline). Request: OpenAI Chat Completions body (``messages`` with ``system`` / ``user`` / ``assistant`` with
    ``tool_calls`` / ``tool`` roles; ``tools``); response: a ``chat.completion`` JSON body, or ``data:`` SSE chunks
    of ``chat.completion.chunk`` when the request has ``stream: true``."""
    docs = _documents(path.read_text(encoding="utf-8"))
    completions, contexts, tools, calls = [], [], 0, []
    for doc in docs:
        req, body, status = _exchange(doc)
        if status != 200:
            continue
        msgs = req["messages"]
        contexts.append([m["role"] for m in msgs])
        if req.get("stream"):
            text, opened = "", set()
            for line in body.split("\n"):
                if not line.startswith("data: ") or line.strip() == "data: [DONE]":
                    continue
                chunk = json.loads(line[len("data: "):])
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    text += delta.get("content") or ""
                    for tc in delta.get("tool_calls") or []:
                        if tc.get("id"):
                            opened.add(tc.get("index"))
            completions.append(text)
            tools += len(opened)
        else:
            message = json.loads(body)["choices"][0]["message"]
            completions.append(_openai_text(message.get("content")))
            tools += len(message.get("tool_calls") or [])
        first_user = next(_openai_text(m.get("content")) for m in msgs if m["role"] == "user")
        calls.append((len(msgs), first_user))
    return _result("Elastic OTel Java WireMock YAML recording (OpenAI Chat Completions)", _chains(calls),
                   completions, contexts, tools)


def _bedrock_roles(msgs: list) -> list:
    roles = []
    for m in msgs:
        role = m["role"]
        content = m.get("content")
        if role == "user" and isinstance(content, list) and content and all(
                isinstance(p, dict) and ("toolResult" in p or p.get("type") == "tool_result") for p in content):
            role = "tool"
        roles.append(role)
    return roles


def _bedrock_first_user(msgs: list) -> str:
    for m in msgs:
        if m["role"] == "user":
            return "".join(p.get("text", "") for p in m["content"] if isinstance(p, dict))
    return ""


def oteljava_wiremock(path: Path) -> dict:
    """OpenTelemetry Java instrumentation AWS SDK 2.2 Bedrock Runtime test recordings: WireMock mappings in YAML
    (the same recorder layout). Request: a Bedrock ``Converse`` body (``messages`` of ``{role, content: [{text} |
    {toolUse} | {toolResult}]}``, ``toolConfig``) or an ``InvokeModel`` body for Anthropic Claude (``anthropic_version``,
    ``messages`` of ``{role, content: [{type: text | tool_use | tool_result}]}``, ``tools``); response: the JSON body
    as a double-quoted YAML scalar folded over lines (Converse ``output.message.content``, or Anthropic ``content``)."""
    docs = _documents(path.read_text(encoding="utf-8"))
    completions, contexts, tools, calls = [], [], 0, []
    for doc in docs:
        req, body, status = _exchange(doc)
        if status != 200:
            continue
        msgs = req["messages"]
        contexts.append(_bedrock_roles(msgs))
        resp = json.loads(body)
        if "output" in resp:  # Converse
            parts = resp["output"]["message"]["content"]
            completions.append("".join(p.get("text", "") for p in parts))
            tools += sum(1 for p in parts if "toolUse" in p)
        else:  # InvokeModel, Anthropic Messages body
            parts = resp["content"]
            completions.append("".join(p.get("text", "") for p in parts if p.get("type") == "text"))
            tools += sum(1 for p in parts if p.get("type") == "tool_use")
        calls.append((len(msgs), _bedrock_first_user(msgs)))
    return _result("OpenTelemetry Java WireMock YAML recording (Bedrock Converse / InvokeModel)", _chains(calls),
                   completions, contexts, tools)


COUNTERS = {
    "elasticotel-wiremock": elasticotel_wiremock,
    "oteljava-wiremock": oteljava_wiremock,
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
