"""Hand counts of the hundred-and-twenty-fourth held-out set (benchmarks/data/heldout_formats_124/files), computed from
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
- an Echoproxia recording (a JSON list of ``{request, response}`` HTTP exchanges captured by the record / replay
  proxy between a client and an OpenAI-compatible endpoint, OpenRouter here) records one call per exchange whose
  request is a chat-completion request (``messages``) answered with status 2xx; an exchange answered with an error
  status is a failed request, not a call (none in the files kept);
- the request body is kept base64-encoded in ``request.body``; the response either base64-encoded (gzip-compressed
  where the recorded ``content-encoding`` header says ``gzip``) in ``response.body``, or as a list of base64
  ``response.chunks`` (a streamed reply: Server-Sent Events, ``: OPENROUTER PROCESSING`` keep-alive comments,
  ``data:`` chunks, a final usage chunk and ``data: [DONE]``). Recordings written by Echoproxia 1.4 or later also
  keep the decoded bodies as strings in ``request.bodyPlainText`` / ``response.bodyPlainText``; they are copies of
  the same exchange, not further calls (this script reads the base64 bodies and checks the copies agree);
- a streamed reply recorded as chunks is one call, its completion the chunks' ``delta.content`` joined;
- the few-shot example turns aider puts at the head of every request (user / assistant pairs written by aider, not
  by the model in this session) are context messages, not calls;
- a call whose message list holds an earlier call's reply as an assistant message continues that call's
  conversation; a call whose list does not (aider's commit-message request: a new system prompt and one user message
  that quotes the chat as plain text) opens a new conversation;
- headers (the ``authorization`` header is recorded as ``[REDACTED]``), ids, ``created`` times, usage, provider and
  model names, ``system_fingerprint`` and the keep-alive comments are metadata, not content.
Context roles: as recorded in the request's ``messages`` (system, user, assistant).

Run: ``python benchmarks/data/heldout_formats_124/hand_count.py`` (one JSON line per file, as
``benchmarks/heldout_formats.py`` reads them; ``--table`` prints a Markdown table of file, conversations, calls and
tool calls instead).
"""

from __future__ import annotations

import base64
import gzip
import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _response_text(resp: dict) -> str:
    """The response body as recorded: ``body`` (base64) or the joined base64 ``chunks``, gunzipped if gzip."""
    if resp.get("body"):
        raw = base64.b64decode(resp["body"])
    else:
        raw = b"".join(base64.b64decode(c) for c in resp.get("chunks") or [])
    if (resp.get("headers") or {}).get("content-encoding") == "gzip":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8")


def _reply(text: str) -> tuple[str, int]:
    """Completion text and tool-call count of a chat-completion response (SSE stream or one JSON object)."""
    if "data: " in text:
        out, tools = "", 0
        for line in text.splitlines():
            if not line.startswith("data: ") or line[6:].strip() == "[DONE]":
                continue
            for choice in json.loads(line[6:]).get("choices") or []:
                delta = choice.get("delta") or {}
                out += delta.get("content") or ""
                tools += sum(1 for tc in delta.get("tool_calls") or [] if tc.get("id"))
        return out, tools
    msg = json.loads(text.strip())["choices"][0]["message"]
    return msg.get("content") or "", len(msg.get("tool_calls") or [])


def echoproxia_recording(path: Path) -> dict:
    """Echoproxia recording JSON (davidguttman/echoproxia: one file per recorded path and sequence,
    ``<sequence>/_chat_completions.json`` or ``.echo.json``, a list of ``{request: {method, path, originalUrl, headers,
    body, bodyPlainText?}, response: {status, headers, body, chunks?, bodyPlainText?}}``), written in record mode
    while aider (through aider-js, in vibemob's and aider-js's tests) called OpenRouter. One call per exchange
    answered 2xx; its context the base64-decoded request's ``messages``; its completion the reply's ``content``
    (JSON) or the joined ``delta.content`` of the SSE chunks; tool calls the reply's ``tool_calls`` (none here: aider
    edits through SEARCH / REPLACE blocks in the text). Conversations by the continuation rule above."""
    exchanges = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts, tools = [], [], 0
    threads: list = []  # per conversation: the replies seen so far
    for ex in exchanges:
        req, resp = ex["request"], ex["response"]
        body = json.loads(base64.b64decode(req["body"]))
        if "bodyPlainText" in req:
            assert json.loads(req["bodyPlainText"]) == body
        if not 200 <= resp["status"] < 300 or "messages" not in body:
            continue
        text = _response_text(resp)
        if "bodyPlainText" in resp:
            assert resp["bodyPlainText"] == text
        completion, n_tools = _reply(text)
        msgs = body["messages"]
        completions.append(completion)
        contexts.append([m["role"] for m in msgs])
        tools += n_tools
        earlier = {m["content"] for m in msgs if m["role"] == "assistant"}
        for replies in threads:
            if replies & earlier:
                replies.add(completion)
                break
        else:
            threads.append({completion})
    return _result("Echoproxia recording JSON", len(threads), completions, contexts, tools)


COUNTERS = {
    "echoproxia": echoproxia_recording,
}


def count(path: Path) -> dict:
    out = COUNTERS[path.name.split("__", 1)[0]](path)
    return {"file": path.name, **out}


def main() -> int:
    rows = [count(p) for p in sorted(FILES.iterdir())]
    if "--table" in sys.argv[1:]:
        print("| file | conversations | calls | tool calls |")
        print("|---|---|---|---|")
        for r in rows:
            print(f"| {r['file']} | {r['conversations']} | {r['calls']} | {r['tool_calls']} |")
        return 0
    for r in rows:
        print(json.dumps(r, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
