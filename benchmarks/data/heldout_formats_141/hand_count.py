"""Hand counts of the hundred-and-forty-first held-out set (benchmarks/data/heldout_formats_141/files), computed from
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
- a Playwright HAR entry that POSTs a chat request (``{messages: [{role, content}], context, stream}``) to the
  application's chat endpoint and holds the application's reply records one call: its context the request's
  ``messages`` (roles as recorded), its completion the reply message's ``content`` (non-streamed JSON
  ``{choices: [{message}]}``) or the ``delta.content`` of every NDJSON ``chat.completion.chunk`` line joined (a
  streamed body, base64-encoded in the HAR's ``content.text``; one call however many chunks);
- the reply's ``context`` object (``data_points``: the retrieved source passages; ``thoughts``: an HTML-like
  diagnostic string in which the application renders its search query and the prompts it built) is metadata, not
  context messages and not further calls: the application's internal query-generation step appears only as text
  inside that string, not as a recorded request / reply pair, so it is not counted; the system prompt likewise
  lives only inside that string and is not written into the call's context;
- the application's protocol carries no tool calls (retrieval is run by the application, not emitted by the model):
  0 tool calls; follow-up questions the reply ends with (``<<...>>``) are part of its text;
- HAR headers, timings, cookies, dates, sizes and the browser / creator blocks are metadata.
Context roles: as recorded in the request's ``messages``.

Run: ``python benchmarks/data/heldout_formats_141/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _body(content: dict) -> str:
    text = content.get("text") or ""
    if content.get("encoding") == "base64":
        return base64.b64decode(text).decode("utf-8")
    return text


def _chains(calls: list) -> int:
    """Number of conversations: a call whose message list extends an earlier call's list (same first user message,
    more messages) continues that thread; otherwise it opens one."""
    threads: list = []
    for msgs in calls:
        first = next((m.get("content") for m in msgs if m.get("role") == "user"), None)
        for t in threads:
            if t[1] == first and len(msgs) > t[0]:
                t[0] = len(msgs)
                break
        else:
            threads.append([len(msgs), first])
    return len(threads)


def azure_search_openai_javascript_har(path: Path) -> dict:
    """Playwright HAR 1.2 recorded from the web app of Azure-Samples/azure-search-openai-javascript (``{log: {version,
    creator: {name: Playwright}, browser, entries: [{request: {method, url, postData: {text}}, response: {content:
    {mimeType, encoding?, text}}}]}}``), the "Contoso Real Estate" support chat. One entry here, ``POST /chat``: the
    request body's ``messages`` is the context, the response body (JSON ``chat.completion`` or base64 NDJSON of
    ``chat.completion.chunk`` lines) the reply. No tool calls."""
    log = json.loads(path.read_text(encoding="utf-8"))["log"]
    completions, contexts, calls = [], [], []
    for e in log["entries"]:
        req = e["request"]
        if req["method"] != "POST" or "postData" not in req:
            continue
        body = json.loads(req["postData"]["text"])
        msgs = body.get("messages")
        if not msgs:
            continue
        content = e["response"]["content"]
        text = _body(content)
        if "ndjson" in (content.get("mimeType") or ""):
            reply = ""
            for line in text.splitlines():
                if line.strip():
                    chunk = json.loads(line)
                    reply += (chunk["choices"][0].get("delta") or {}).get("content") or ""
        else:
            reply = json.loads(text)["choices"][0]["message"].get("content") or ""
        completions.append(reply)
        contexts.append([m["role"] for m in msgs])
        calls.append(msgs)
    return _result("azure-search-openai-javascript Playwright HAR of the app's chat API", _chains(calls), completions,
                   contexts, 0)


COUNTERS = {
    "azure-search-openai-javascript-har": azure_search_openai_javascript_har,
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
