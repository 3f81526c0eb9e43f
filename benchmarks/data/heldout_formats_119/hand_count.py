"""Hand counts of the hundred-and-nineteenth held-out set (benchmarks/data/heldout_formats_119/files), computed from
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
- a file that records each request's full message list beside its reply (LlamaIndexTS ``llmEventStart`` /
  ``llmEventEnd`` pairs joined by ``id``, Polly.js HAR entries, NodeLLM VCR ``interactions``) records one call per
  request / reply pair; calls whose message lists continue an earlier call's list plus its reply are one
  conversation; a call whose list starts afresh (another first user message) opens a new conversation;
- a reply's tool calls are the ``toolCall`` entries of the reply's ``options`` (LlamaIndexTS), the ``tool_use``
  blocks (Anthropic) or the ``tool_calls`` entries (OpenAI-style) of the response body; the copies of earlier replies
  inside later requests are context, not new tool calls; the tool definitions sent with a request are not context
  messages;
- a leading ``<thinking>...</thinking>`` span in a Claude reply's text belongs to that reply (one call; the
  completion text kept here is the whole text);
- a NodeLLM ``stream`` interaction whose ``response`` is null and whose reply is recorded as ``chunks`` is one call,
  its completion the chunks' ``content`` joined;
- ids (including LlamaIndexTS's ``PRESERVE_n`` placeholders), timestamps, durations, headers, token counts, costs,
  model names, settings and HAR timings are metadata, not context.
Context roles: as recorded (a message made only of tool results is written ``tool``; a system prompt kept in the
list is written ``system``).

Run: ``python benchmarks/data/heldout_formats_119/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")


def _roles(messages: list) -> list:
    """Roles of a message list; a message made only of tool results is ``tool``."""
    out = []
    for m in messages:
        role = m.get("role")
        opts = m.get("options") or {}
        content = m.get("content")
        if role == "user" and opts.get("toolResult"):
            role = "tool"
        elif role == "user" and isinstance(content, list) and content and all(
                isinstance(p, dict) and p.get("type") == "tool_result" for p in content):
            role = "tool"
        out.append(role)
    return out


def _chains(calls: list) -> int:
    """Number of conversations: a call whose context (role list plus first user text) extends an earlier call's
    context and reply continues that thread; otherwise it opens one. ``calls``: (context messages, key of the first
    user message)."""
    threads: list = []
    for msgs, key in calls:
        for t in threads:
            if t[1] == key and len(msgs) > t[0]:
                t[0] = len(msgs)
                break
        else:
            threads.append([len(msgs), key])
    return len(threads)


def llamaindexts_snapshot(path: Path) -> dict:
    """LlamaIndexTS e2e snapshot (``e2e/node/snapshot/*.snap``, JSON ``{llmEventStart: [{id, messages}],
    llmEventEnd: [{id, response: {raw, message: {content, role, options: {toolCall?}}}}], llmEventStream: [...]}``),
    written by the e2e tests' LLM event recorder from real OpenAI / Anthropic calls (ids normalised to
    ``PRESERVE_n``). One call per ``llmEventStart`` entry, its reply the ``llmEventEnd`` entry with the same id; tool
    calls the reply's ``options.toolCall`` entries. ``llmEventStream`` is empty in the three files kept."""
    d = json.loads(path.read_text(encoding="utf-8"))
    ends = {e["id"]: e["response"]["message"] for e in d["llmEventEnd"]}
    completions, contexts, tools, calls = [], [], 0, []
    for s in d["llmEventStart"]:
        reply = ends[s["id"]]
        completions.append(_text(reply.get("content")))
        contexts.append(_roles(s["messages"]))
        tools += len((reply.get("options") or {}).get("toolCall") or [])
        first_user = next(_text(m.get("content")) for m in s["messages"] if m.get("role") == "user")
        calls.append((s["messages"], first_user))
    return _result("LlamaIndexTS e2e LLM-event snapshot JSON", _chains(calls), completions, contexts, tools)


def nodellm_polly_har(path: Path) -> dict:
    """NodeLLM core test recording (Polly.js ``persister:fs`` HAR 1.2: ``{log: {_recordingName, creator, entries:
    [{request: {method, url, postData: {text}}, response: {status, content: {mimeType, text}}}]}}``), one entry per
    HTTP request to the provider (Anthropic Messages or Mistral chat completions here). Each entry is one call: its
    context the request body's ``messages`` (plus ``system`` where set), its completion the response body's text,
    its tool calls the response's ``tool_use`` blocks or ``tool_calls`` entries."""
    log = json.loads(path.read_text(encoding="utf-8"))["log"]
    completions, contexts, tools, calls = [], [], 0, []
    for e in log["entries"]:
        req = json.loads(e["request"]["postData"]["text"])
        resp = json.loads(e["response"]["content"]["text"])
        msgs = req["messages"]
        contexts.append((["system"] if req.get("system") else []) + _roles(msgs))
        if "choices" in resp:  # OpenAI-style (Mistral)
            m = resp["choices"][0]["message"]
            completions.append(m.get("content") or "")
            tools += len(m.get("tool_calls") or [])
        else:  # Anthropic Messages
            completions.append(_text(resp["content"]))
            tools += sum(1 for p in resp["content"] if p.get("type") == "tool_use")
        first_user = next(_text(m.get("content")) for m in msgs if m.get("role") == "user")
        calls.append((msgs, first_user))
    return _result("NodeLLM Polly.js HAR recording", _chains(calls), completions, contexts, tools)


def nodellm_vcr(path: Path) -> dict:
    """NodeLLM ``@node-llm/testing`` VCR cassette (JSON ``{name, version?, metadata?: {recordedAt, duration},
    interactions: [{method: chat / stream, request: {model, messages, tools?, max_tokens, headers,
    requestTimeout}, response: {content, usage, reasoning} | null, chunks?: [{content}]}]}``), written by the VCR
    in record mode from real calls. Each interaction is one call: its context ``request.messages``, its completion
    ``response.content`` (or the joined ``chunks`` of a ``stream`` interaction). No tool calls in these files (the
    one request that offers a tool gets a text reply)."""
    d = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts, tools, calls = [], [], 0, []
    for i in d["interactions"]:
        msgs = i["request"]["messages"]
        contexts.append(_roles(msgs))
        if i.get("response") is not None:
            completions.append(i["response"].get("content") or "")
            tools += len(i["response"].get("tool_calls") or [])
        else:
            completions.append("".join(c.get("content") or "" for c in i.get("chunks") or []))
        first_user = next(_text(m.get("content")) for m in msgs if m.get("role") == "user")
        calls.append((msgs, first_user))
    return _result("NodeLLM VCR cassette JSON", _chains(calls), completions, contexts, tools)


COUNTERS = {
    "llamaindexts-snapshot": llamaindexts_snapshot,
    "nodellm-polly-har": nodellm_polly_har,
    "nodellm-vcr": nodellm_vcr,
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
