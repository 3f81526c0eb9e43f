"""Hand counts of the hundred-and-seventeenth held-out set (benchmarks/data/heldout_formats_117/files), computed from
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
- an HTTP cassette (R's ``vcr`` package, YAML: ``http_interactions: [{request: {method, uri, body: {string}},
  response: {status, headers, body: {string}}, recorded_at}]``) records one LLM call per interaction whose request
  body sends a conversation (``messages`` / ``input`` / ``contents``) and whose response body holds the model's reply;
  the request body is the call's context, the response body its completion;
- an interaction that sends no conversation and gets no reply (Ollama's ``/api/generate`` with only a ``model``,
  answered ``response: ""`` with ``done_reason: "load"``: the model being loaded) is not an LLM call;
- a later request whose messages repeat an earlier request's messages and that request's reply (then tool results or
  a new user message) continues that call's thread: one conversation per file here; the prefix is compared on each
  message's role and text / tool names, ignoring cache-control markers and signatures the client adds or drops;
- tool calls: OpenAI Chat ``tool_calls`` entries, OpenAI Responses ``function_call`` output items, Anthropic
  ``tool_use`` blocks, Gemini ``functionCall`` parts, in the response bodies only (the same calls repeated in later
  requests' inputs are context, not new tool calls);
- the completion text is the reply's text (``output_text`` / ``text`` blocks / non-thought ``text`` parts /
  ``message.content``); thinking blocks, thought signatures and reasoning items belong to the reply but are not text;
- headers, ids, timestamps, usage, model names, tool declarations and settings are metadata, not context.
Context roles: as recorded; a system prompt kept beside the messages (Anthropic ``system``, Gemini
``systemInstruction``) is written ``system`` at the head; a message made only of tool results (Anthropic
``tool_result`` blocks, Gemini ``functionResponse`` parts, OpenAI Responses ``function_call_output`` items) is written
``tool``; an OpenAI Responses ``function_call`` input item and a Gemini ``model`` turn are written ``assistant``.

Run: ``python benchmarks/data/heldout_formats_117/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


# --- the YAML subset R's vcr writes ------------------------------------------------------------------------------

def _single_quoted(first: str, rest: list) -> str:
    """A YAML single-quoted flow scalar starting on ``first`` (after the opening quote) and continued on the
    lines of ``rest`` until the closing quote; line breaks fold to a space, empty lines to a newline, ``''`` is a
    quote."""
    lines = [first] + rest
    out, closed = [], False
    for i, line in enumerate(lines):
        text = line if i == 0 else line.strip()
        j, buf = 0, []
        while j < len(text):
            if text[j] == "'":
                if j + 1 < len(text) and text[j + 1] == "'":
                    buf.append("'")
                    j += 2
                    continue
                closed = True
                break
            buf.append(text[j])
            j += 1
        out.append("".join(buf))
        if closed:
            break
    value = ""
    for i, piece in enumerate(out):
        if i == 0:
            value = piece.rstrip() if len(out) > 1 else piece
        elif piece == "":
            value += "\n"
        else:
            value += ("" if value.endswith("\n") else " ") + (piece.rstrip() if i < len(out) - 1 else piece)
    return value


def _block(indicator: str, rest: list, parent_indent: int) -> str:
    """A YAML literal block scalar (``|``, ``|-``): the following lines indented deeper than the key."""
    body = []
    indent = None
    for line in rest:
        if line.strip() == "":
            body.append("")
            continue
        cur = len(line) - len(line.lstrip(" "))
        if cur <= parent_indent:
            break
        if indent is None:
            indent = cur
        body.append(line[indent:])
    while body and body[-1] == "":
        body.pop()
    text = "\n".join(body)
    return text if indicator.endswith("-") else text + "\n"


def _scalar(lines: list, i: int, indent: int) -> str:
    value = lines[i].split("string:", 1)[1].strip()
    if value.startswith("'"):
        return _single_quoted(lines[i].split("string:", 1)[1].lstrip()[1:], lines[i + 1:])
    if value.startswith("|"):
        return _block(value, lines[i + 1:], indent)
    return value


def vcr_interactions(path: Path) -> list:
    """[(uri, request body text, response body text)] of a vcr cassette, in file order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out, cur, part = [], None, None
    for i, line in enumerate(lines):
        if line.startswith("- request:"):
            cur = {"uri": None, "request": None, "response": None}
            out.append(cur)
            part = "request"
        elif line.startswith("  response:"):
            part = "response"
        elif cur is not None and re.match(r"^    uri: ", line) and part == "request":
            cur["uri"] = line.split("uri:", 1)[1].strip()
        elif cur is not None and re.match(r"^      string: ", line) and lines[i - 1].strip() in (
                "body:", "file: no", "encoding: ''"):
            cur[part] = _scalar(lines, i, 6)
    return [(c["uri"], c["request"], c["response"]) for c in out]


# --- per provider: (context messages as (role, signature)), completion text, tool calls -------------------------

def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def openai_chat(req: dict, resp: dict):
    msgs = []
    for m in req.get("messages", []):
        names = ",".join(tc["function"]["name"] for tc in m.get("tool_calls") or [])
        msgs.append((m["role"], _text_of(m.get("content")) + names))
    msg = resp["choices"][0]["message"]
    return msgs, msg.get("content") or "", len(msg.get("tool_calls") or [])


def openai_responses(req: dict, resp: dict):
    msgs = []
    for item in req.get("input", []):
        if item.get("type") == "function_call":
            msgs.append(("assistant", item["name"]))
        elif item.get("type") == "function_call_output":
            msgs.append(("tool", str(item.get("output"))))
        else:
            msgs.append((item["role"], _text_of(item.get("content"))))
    text, tools = "", 0
    for item in resp.get("output", []):
        if item.get("type") == "function_call":
            tools += 1
        elif item.get("type") == "message":
            text += "".join(c.get("text", "") for c in item.get("content", []) if c.get("type") == "output_text")
    return msgs, text, tools


def anthropic(req: dict, resp: dict):
    msgs = [("system", _text_of(req["system"]))] if req.get("system") else []
    for m in req.get("messages", []):
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        role = "tool" if blocks and all(b.get("type") == "tool_result" for b in blocks) else m["role"]
        sig = "".join(b.get("text", "") + b.get("name", "") + _text_of(b.get("content")) for b in blocks)
        msgs.append((role, sig))
    text = "".join(b.get("text", "") for b in resp["content"] if b.get("type") == "text")
    return msgs, text, sum(b.get("type") == "tool_use" for b in resp["content"])


def gemini(req: dict, resp: dict):
    msgs = [("system", _text_of(req["systemInstruction"]["parts"]) if isinstance(
        req["systemInstruction"]["parts"], list) else req["systemInstruction"]["parts"].get("text", ""))] \
        if req.get("systemInstruction") else []
    for c in req.get("contents", []):
        parts = c["parts"]
        if parts and all("functionResponse" in p for p in parts):
            role = "tool"
        else:
            role = "assistant" if c["role"] == "model" else c["role"]
        sig = "".join(p.get("text", "") + p.get("functionCall", {}).get("name", "")
                      + json.dumps(p.get("functionResponse", {}).get("response", "")) * ("functionResponse" in p)
                      for p in parts)
        msgs.append((role, sig))
    parts = resp["candidates"][0]["content"]["parts"]
    text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
    return msgs, text, sum("functionCall" in p for p in parts)


def ollama_chat(req: dict, resp: dict):
    msgs = [(m["role"], m.get("content") or "") for m in req.get("messages", [])]
    return msgs, resp["message"].get("content") or "", len(resp["message"].get("tool_calls") or [])


def _provider(uri: str, req: dict):
    if "api.anthropic.com" in uri:
        return anthropic
    if "generativelanguage.googleapis.com" in uri:
        return gemini
    if uri.endswith("/v1/responses"):
        return openai_responses
    if uri.endswith("/chat/completions"):
        return openai_chat
    if uri.endswith("/api/chat"):
        return ollama_chat
    return None  # not a chat call (Ollama /api/generate model load)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def vcr_cassette(path: Path, fmt: str) -> dict:
    """R vcr cassette (see the module rules). Each interaction whose request sends a conversation and whose response
    holds a reply is one call; calls are grouped into threads by the prefix rule: a request continues an earlier
    call when its messages start with that call's messages followed by that call's reply (role ``assistant``)."""
    calls = []  # (msgs, text, tools)
    for uri, req_s, resp_s in vcr_interactions(path):
        req = json.loads(req_s)
        fn = _provider(uri, req)
        if fn is None or not any(k in req for k in ("messages", "input", "contents")):
            continue
        msgs, text, tools = fn(req, json.loads(resp_s))
        calls.append(([(r, _norm(s)) for r, s in msgs], text, tools))
    thread_of = []
    for k, (msgs, _, _) in enumerate(calls):
        parent = None
        for j in range(k):
            prev = calls[j][0]
            if len(msgs) > len(prev) and msgs[:len(prev)] == prev and msgs[len(prev)][0] == "assistant":
                parent = j
        thread_of.append(thread_of[parent] if parent is not None else k)
    return _result(fmt, len(set(thread_of)), [c[1] for c in calls], [[r for r, _ in c[0]] for c in calls],
                   sum(c[2] for c in calls))


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("ellmer__"):
        out = vcr_cassette(path, "ellmer R vcr cassette YAML (VCR-vcr/2.1.0)")
    else:
        out = vcr_cassette(path, "lemur R vcr cassette YAML (vcr/1.2.2, webmockr/0.9.0)")
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
