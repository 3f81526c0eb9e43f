"""Hand counts of the hundred-and-thirty-third held-out set (benchmarks/data/heldout_formats_133/files), computed from
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
- every file is a vcrpy cassette (YAML ``{interactions: [{request: {body, headers, method, uri}, response: {body:
  {string}, headers, status: {code, message}}}], version: 1}``); this script reads the few YAML forms these files use
  (single-quoted scalars folded over several lines, plain one-line scalars, ``!!binary |`` base64 blocks) by hand;
- one LLM call per interaction whose request goes to a model API (``/v1/chat/completions``, ``/v1/responses``,
  ``/v1/messages``, ``/inference/v1/chat/completions``) and whose response is a model reply; an interaction with
  any other URI (datasette-extract's ``http://localhost/-/extract/progress/...`` poll) is not an LLM call;
- a model-API interaction answered with an HTTP error and no model output (trustcall's three ``503 Service
  Unavailable`` / ``no healthy upstream`` Fireworks requests) is a failed request, not a call;
- a response body stored gzip-compressed as ``!!binary`` is the gzip of the JSON reply (decompressed here);
- a streamed reply (``text/event-stream``: chat-completion ``data:`` chunks, or Responses API ``event:`` / ``data:``
  pairs) is one call; its completion is the concatenated content deltas (``delta.content`` /
  ``response.output_text.delta``); its tool calls are the distinct ``delta.tool_calls`` indexes (or
  ``function_call`` output items);
- the context of a call is its request's ``messages`` (Chat Completions, Anthropic Messages) or ``input`` (Responses
  API), with a top-level Anthropic ``system`` written ``system`` at its head; tool definitions, ``tool_choice``,
  ``response_format`` / ``text.format`` schemas, headers, ids, usage, rate-limit fields and timings are metadata;
- a reply's tool calls are its ``tool_calls`` entries (OpenAI-style, Fireworks included) or ``tool_use`` blocks
  (Anthropic); a function call forced by ``tool_choice`` (datasette-extract's ``extract_data``, trustcall's schema
  functions and ``PatchFunctionParameters``) is a tool call the model emitted; copies of earlier replies inside a
  later request are context, not new tool calls;
- a call whose message list is an earlier recorded call's list plus that call's reply (matched by the reply's
  tool-call id) plus further input continues that call's conversation; any other call opens its own conversation,
  including a retry whose earlier call is not recorded in the file and a call that repeats an earlier call's input
  afresh (another model, another run).
Context roles: as recorded (a message made only of tool results is written ``tool``).

Run: ``python benchmarks/data/heldout_formats_133/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import base64
import gzip
import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
MODEL_PATHS = ("/v1/chat/completions", "/v1/responses", "/v1/messages")


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


# --- a minimal reader for the YAML forms vcrpy writes in these files -------------------------------------------

def _single_quoted(lines: list, i: int, start: str) -> tuple:
    """A single-quoted scalar opening with ``start`` (the text after the quote) on line ``i``; returns (value, next
    line index). Line breaks fold to a space, an empty line to a newline; ``''`` is a quote."""
    parts: list = []
    text = start
    while True:
        j, out = 0, []
        closed = False
        while j < len(text):
            ch = text[j]
            if ch == "'":
                if j + 1 < len(text) and text[j + 1] == "'":
                    out.append("'")
                    j += 2
                    continue
                closed = True
                break
            out.append(ch)
            j += 1
        parts.append("".join(out))
        if closed:
            break
        i += 1
        text = lines[i]
    # fold: first line keeps its leading text; later lines lose leading / trailing blanks
    value = parts[0].rstrip(" ") if len(parts) > 1 else parts[0]
    empties = 0
    for k, p in enumerate(parts[1:], start=1):
        last = k == len(parts) - 1
        p = p.lstrip(" ") if last else p.strip(" ")
        if p == "" and not last:
            empties += 1
            continue
        value += ("\n" * empties if empties else " ") + p
        empties = 0
    return value, i + 1


def _scalar(lines: list, i: int, rest: str, indent: int):
    """The scalar after ``key:`` on line ``i`` (``rest`` is the text after the colon); returns (value, next i)."""
    rest = rest.strip()
    if rest.startswith("'"):
        return _single_quoted(lines, i, lines[i][lines[i].index("'") + 1:])
    if rest.startswith("!!binary"):
        j, chunks = i + 1, []
        while j < len(lines) and (len(lines[j]) - len(lines[j].lstrip(" "))) > indent:
            chunks.append(lines[j].strip())
            j += 1
        return base64.b64decode("".join(chunks)), j
    if rest in ("null", "~", ""):
        return None, i + 1
    return rest, i + 1


def read_cassette(path: Path) -> list:
    """Interactions as dicts {uri, method, body, status, response} (bodies as str / bytes / None)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    out: list = []
    cur: dict | None = None
    side = None
    i = 0
    while i < len(lines):
        line = lines[i]
        s = line.strip()
        ind = len(line) - len(line.lstrip(" "))
        if line.startswith("- request:"):
            cur = {}
            out.append(cur)
            side = "request"
        elif line.startswith("  response:"):
            side = "response"
        elif cur is not None and side == "request" and ind == 4 and s.startswith("body:"):
            cur["body"], i = _scalar(lines, i, s[5:], ind)
            continue
        elif cur is not None and side == "request" and ind == 4 and s.startswith("uri:"):
            cur["uri"] = s[4:].strip()
        elif cur is not None and side == "request" and ind == 4 and s.startswith("method:"):
            cur["method"] = s[7:].strip()
        elif cur is not None and side == "response" and ind == 6 and s.startswith("string:"):
            cur["response"], i = _scalar(lines, i, s[7:], ind)
            continue
        elif cur is not None and side == "response" and ind == 6 and s.startswith("code:"):
            cur["status"] = int(s[5:].strip())
        i += 1
    return out


# --- replies ----------------------------------------------------------------------------------------------------

def _text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")


def _roles(messages: list, system: bool) -> list:
    out = ["system"] if system else []
    for m in messages:
        role = m.get("role")
        c = m.get("content")
        if role == "user" and isinstance(c, list) and c and all(
                isinstance(p, dict) and p.get("type") == "tool_result" for p in c):
            role = "tool"
        out.append(role)
    return out


def _events(body: str) -> list:
    """The JSON payloads of an event-stream body's ``data:`` lines ([DONE] left out)."""
    out = []
    for line in body.split("\n"):
        line = line.strip()
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            out.append(json.loads(line[5:].strip()))
    return out


def _reply(uri: str, body) -> tuple:
    """(completion text, tool calls, tool-call ids) of a model response body."""
    if isinstance(body, bytes):
        body = gzip.decompress(body).decode("utf-8")
    body = body.lstrip()
    if body.startswith("{"):
        r = json.loads(body)
        if "choices" in r:  # OpenAI-style chat completion (OpenAI, Fireworks)
            m = r["choices"][0]["message"]
            tcs = m.get("tool_calls") or []
            return m.get("content") or "", len(tcs), [t["id"] for t in tcs]
        blocks = r["content"]  # Anthropic Messages
        uses = [b for b in blocks if b.get("type") == "tool_use"]
        return _text(blocks), len(uses), [b["id"] for b in uses]
    events = _events(body)
    if uri.endswith("/v1/responses"):
        text = "".join(e.get("delta", "") for e in events if e.get("type") == "response.output_text.delta")
        done = [e for e in events if e.get("type") == "response.completed"]
        calls = [o for o in done[-1]["response"]["output"] if o.get("type") == "function_call"] if done else []
        return text, len(calls), [c.get("call_id") for c in calls]
    text, idx, ids = "", set(), []
    for e in events:
        for ch in e.get("choices") or []:
            d = ch.get("delta") or {}
            text += d.get("content") or ""
            for t in d.get("tool_calls") or []:
                if t.get("index") not in idx:
                    idx.add(t.get("index"))
                    ids.append(t.get("id"))
    return text, len(idx), ids


def _is_model_call(it: dict) -> bool:
    uri = it.get("uri", "")
    return uri.startswith("https://") and uri.endswith(MODEL_PATHS)


def vcr_cassette(path: Path, fmt: str) -> dict:
    completions, contexts, tools = [], [], 0
    threads: list = []  # [message count after the reply, tool-call ids of the last reply]
    for it in read_cassette(path):
        if not _is_model_call(it):
            continue
        if it.get("status", 200) >= 400:  # failed request, no model output
            continue
        req = json.loads(it["body"])
        msgs = req.get("messages") if "messages" in req else req.get("input")
        if isinstance(msgs, str):
            msgs = [{"role": "user", "content": msgs}]
        text, n, ids = _reply(it["uri"], it["response"])
        completions.append(text)
        contexts.append(_roles(msgs, bool(req.get("system"))))
        tools += n
        earlier = {t.get("id") for m in msgs for t in (m.get("tool_calls") or [])}
        earlier |= {p.get("id") for m in msgs if isinstance(m.get("content"), list) for p in m["content"]
                    if isinstance(p, dict) and p.get("type") == "tool_use"}
        for th in threads:
            if th[1] and set(th[1]) <= earlier and len(msgs) > th[0]:
                th[0], th[1] = len(msgs) + 1, ids
                break
        else:
            threads.append([len(msgs) + 1, ids])
    return _result(fmt, len(threads), completions, contexts, tools)


def datasette_extract(path: Path) -> dict:
    """datasette-extract's VCR cassette of its web test ``test_extract_flow`` (pytest-recording, vcrpy YAML). The
    three versions kept: at ``eb8bb20`` one streamed ``gpt-4-0125-preview`` chat completion whose reply is a forced
    ``extract_data`` function call, then a ``GET http://localhost/-/extract/progress/...`` poll of the plugin itself
    (not an LLM call); at ``d1222cd`` that same chat-completion interaction, then a streamed Responses API call
    (``gpt-4.1-mini``, system "Be nice", ``text.format`` JSON schema) answered in text; at ``25c026c`` one streamed
    ``gpt-4.1-mini`` chat completion with a ``response_format`` JSON schema, answered in text. The two calls of the
    ``d1222cd`` file are separate conversations (the second's input does not hold the first's reply)."""
    return vcr_cassette(path, "datasette-extract vcrpy cassette YAML")


def datasette_enrichments_gpt(path: Path) -> dict:
    """datasette-enrichments-gpt's VCR cassette of ``test_enrichments_gpt``: one non-streamed ``gpt-3.5-turbo`` chat
    completion (system "haiku", user "Hearst Castle": the enrichment's prompt for one table row); the response body
    is gzip-compressed, stored as ``!!binary``. One call, no tool call."""
    return vcr_cassette(path, "datasette-enrichments-gpt vcrpy cassette YAML")


def trustcall(path: Path) -> dict:
    """trustcall's evaluation cassette (LangSmith's test cache, vcrpy YAML; all response bodies gzip ``!!binary``):
    18 interactions to OpenAI (``gpt-4o``), Anthropic (``claude-3-5-sonnet-20240620``) and Fireworks
    (``firefunction-v2``) extracting user preferences / profiles / memories from conversations through forced
    function calls. Three Fireworks requests failed with ``503`` (not calls): 15 calls. Three OpenAI calls are
    ``PatchFunctionParameters`` retries after a validation error: the one whose earlier call is recorded (its
    assistant tool-call id is that call's reply) continues that call's conversation; the other two continue calls not
    recorded here and open their own. 14 conversations. Each reply has one tool call except the Anthropic
    ``UserProfile`` call answered in text only."""
    return vcr_cassette(path, "trustcall vcrpy cassette YAML (LangSmith test cache)")


COUNTERS = {
    "datasette-extract": datasette_extract,
    "datasette-extract-d1222cd": datasette_extract,
    "datasette-extract-eb8bb20": datasette_extract,
    "datasette-enrichments-gpt": datasette_enrichments_gpt,
    "trustcall": trustcall,
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
