"""Hand counts of the hundred-and-sixteenth held-out set (benchmarks/data/heldout_formats_116/files), computed from the
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
Set 8's rule, kept here:
- reasoning written inline in the reply text as a leading ``<think>...</think>`` span belongs to that reply (it is
  one call); the completion text recorded here is the reply without that span.
Rules made explicit for this set (written before the product was run):
- every file is a recording of HTTP exchanges with a provider's own API (a vcrpy or Ruby VCR cassette, YAML); one
  exchange with a chat endpoint whose request holds the messages sent and whose response holds the model's reply is
  one call, however the reply is delivered (one JSON body, or a stream of NDJSON / event lines in one body: one call);
  an exchange with another endpoint (Cohere's ``GET /v1/models`` look-up) is not an LLM call;
- the request body is the call's context, the response body its reply; the response's echo of the history (Cohere
  v1's ``chat_history``), ids, dates, token counts, durations, headers, cookies and the tool definitions are metadata,
  not further calls or context;
- a call continues the previous call's thread when its messages start with the previous call's messages (same roles,
  same first user message) and add the previous reply and newer input; clients that rewrite the earlier reply when
  they send it back (Cohere v1's ``args`` for ``parameters``, an emptied assistant ``content``) still continue it;
- tool calls are the structured calls in the reply (Cohere v2 ``message.tool_calls``, Cohere v1 top-level
  ``tool_calls``, Ollama ``message.tool_calls`` in any stream line, Z.ai ``choices[0].message.tool_calls``), one per
  entry, whether or not the file holds the tool's result; Cohere v2's ``tool_plan`` and Cohere v1's ``text`` beside
  tool calls are the reply's text; Z.ai's ``reasoning_content`` belongs to the reply (shared rule);
- Cohere v1 context: the ``chat_history`` entries (roles ``System`` / ``User`` / ``Chatbot`` / ``Tool``, written
  system / user / assistant / tool), then ``tool`` where ``tool_results`` is given, then ``user`` where ``message`` is
  not empty.
Context roles: as recorded (lower case).

The YAML is read with a small reader written for these cassettes (quoted and block scalars of the ``body`` and
``string`` keys, and the ``uri`` of each request), not a general YAML parser.

Run: ``python benchmarks/data/heldout_formats_116/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_THINK = re.compile(r"^\s*<think>.*?</think>", re.S)


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


# --- a small reader for the cassettes' YAML -------------------------------------------------------------------------

def _single_quoted(lines: list, i: int, col: int) -> tuple:
    """A single-quoted scalar opening at ``lines[i][col]`` (the quote): its value (folded as YAML folds a flow
    scalar: a line break between text is one space, each empty line one newline, ``''`` one quote) and the index of
    the line after it."""
    pieces: list = []  # the text of each physical line up to the closing quote
    text = lines[i][col + 1:]
    while True:
        j = 0
        out = []
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
        pieces.append("".join(out))
        if closed:
            break
        i += 1
        text = lines[i]
    last = len(pieces) - 1
    cleaned = [(pc if k == 0 else pc.lstrip(" \t")) if k == last else
               (pc if k == 0 else pc.lstrip(" \t")).rstrip(" \t") for k, pc in enumerate(pieces)]
    value, empties = cleaned[0], 0
    for k in range(1, len(cleaned)):
        if cleaned[k] == "" and k != last:
            empties += 1
            continue
        value += ("\n" * empties if empties else " ") + cleaned[k]
        empties = 0
    return value, i + 1


def _block_literal(lines: list, i: int, key_indent: int) -> tuple:
    """A ``|`` block scalar whose key line is ``lines[i]``: its value (clip chomping) and the next line index."""
    body = []
    j = i + 1
    indent = None
    while j < len(lines):
        line = lines[j]
        if line.strip() == "":
            body.append("")
            j += 1
            continue
        ind = len(line) - len(line.lstrip(" "))
        if ind <= key_indent:
            break
        if indent is None:
            indent = ind
        body.append(line[indent:])
        j += 1
    while body and body[-1] == "":
        body.pop()
    return "\n".join(body) + "\n", j


_KEY = re.compile(r"^(\s*)(-\s+)?(body|string|uri|method):\s?(.*)$")


def cassette(path: Path) -> list:
    """The exchanges of a vcrpy or Ruby VCR cassette: a list of ``{method, uri, request, response}`` with the two
    bodies as text (``None`` where empty)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    exchanges: list = []
    side = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^-\s+request:\s*$", line):
            exchanges.append({"method": None, "uri": None, "request": None, "response": None})
            side = "request"
            i += 1
            continue
        if re.match(r"^\s+response:\s*$", line) and exchanges:
            side = "response"
            i += 1
            continue
        m = _KEY.match(line)
        if m and side and exchanges:
            indent, key, rest = len(m.group(1)), m.group(3), m.group(4)
            if key in ("uri", "method"):
                exchanges[-1][key] = rest.strip()
                i += 1
                continue
            if rest.startswith("'"):
                value, i = _single_quoted(lines, i, line.index("'", len(m.group(1)) + len(key) + 1))
                exchanges[-1][side] = value or None
                continue
            if rest.strip() in ("|", "|-", "|+"):
                value, i = _block_literal(lines, i, indent)
                exchanges[-1][side] = value
                continue
            if rest.strip() and rest.strip() not in ("null", "''"):
                exchanges[-1][side] = rest.strip()
        i += 1
    return exchanges


# --- threads ---------------------------------------------------------------------------------------------------------

def _threads(calls: list) -> list:
    """Groups calls ``(roles, first_user, completion, tools)`` into threads: a call continues the last thread when its
    roles start with the last call's roles, add more, and share its first user message."""
    threads: list = []
    for roles, first_user, completion, tools in calls:
        last = threads[-1][-1] if threads else None
        if last and len(roles) > len(last[0]) and roles[:len(last[0])] == last[0] and first_user == last[1]:
            threads[-1].append((roles, first_user, completion, tools))
        else:
            threads.append([(roles, first_user, completion, tools)])
    return threads


def _merge(fmt: str, calls: list) -> dict:
    threads = _threads(calls)
    return _result(fmt, len(threads), [c[2] for c in calls], [c[0] for c in calls], sum(c[3] for c in calls))


# --- counters --------------------------------------------------------------------------------------------------------

_V1_ROLES = {"system": "system", "user": "user", "chatbot": "assistant", "tool": "tool"}


def cohere_v1_chat(path: Path) -> dict:
    """vcrpy cassette (YAML ``interactions: [{request: {body, headers, method, uri}, response: {body: {string},
    headers, status}}]``) of langchain-cohere's integration test ``test_langgraph_react_agent`` against Cohere's v1
    Chat API (``POST https://api.cohere.com/v1/chat``: request ``{message, chat_history, tools, tool_results?,
    stream: false}``, response ``{response_id, text, generation_id, chat_history, finish_reason, meta,
    tool_calls?}``). The first exchange, ``GET /v1/models``, is not an LLM call. Five chat exchanges, one LangGraph
    ReAct agent thread (the fourth adds the user's second question ``who won the premier league`` to the history):
    one conversation, five calls; the reply's ``text`` is the completion, each top-level ``tool_calls`` entry a tool
    call (1, 1, 0, 1, 0). Context roles per the set's Cohere v1 rule."""
    calls = []
    for ex in cassette(path):
        if not (ex["uri"] or "").endswith("/v1/chat"):
            continue
        req, resp = json.loads(ex["request"]), json.loads(ex["response"])
        roles = [_V1_ROLES[h["role"].lower()] for h in req.get("chat_history") or []]
        roles += ["tool"] if req.get("tool_results") else []
        roles += ["user"] if req.get("message") else []
        users = [h["message"] for h in req.get("chat_history") or [] if h["role"].lower() == "user"]
        first_user = users[0] if users else req.get("message")
        calls.append((roles, first_user, resp.get("text") or "", len(resp.get("tool_calls") or [])))
    return _merge("Cohere v1 Chat API vcrpy cassette (langchain-cohere)", calls)


def cohere_v2_chat(path: Path) -> dict:
    """vcrpy cassette of the same test against Cohere's v2 Chat API (``POST https://api.cohere.com/v2/chat``:
    request ``{model, messages: [{role, content?, tool_calls?, tool_plan?, tool_call_id?}], tools, stream: false}``,
    response ``{id, message: {role, tool_plan?, tool_calls?, content?: [{type: text, text}], citations?},
    finish_reason, usage}``). Five exchanges, each request's ``messages`` extending the previous one's with its reply
    and the tool result (or the user's second question): one conversation, five calls. Completion: ``tool_plan``
    then the ``text`` parts; each ``message.tool_calls`` entry is a tool call (1, 1, 0, 1, 0)."""
    calls = []
    for ex in cassette(path):
        if not (ex["uri"] or "").endswith("/v2/chat"):
            continue
        req, resp = json.loads(ex["request"]), json.loads(ex["response"])
        msgs = req["messages"]
        roles = [m["role"] for m in msgs]
        first_user = next((m["content"] for m in msgs if m["role"] == "user"), None)
        msg = resp["message"]
        text = (msg.get("tool_plan") or "") + "".join(p.get("text", "") for p in msg.get("content") or []
                                                     if p.get("type") == "text")
        calls.append((roles, first_user, text, len(msg.get("tool_calls") or [])))
    return _merge("Cohere v2 Chat API vcrpy cassette (langchain-cohere)", calls)


def cohere_v1_stream(path: Path) -> dict:
    """vcrpy cassette of simonw/llm-command-r's ``test_prompt``: one streamed exchange with Cohere's v1 Chat API
    (request ``{message, model: command-r, stream: true}``; response body of newline-separated JSON events
    ``stream-start``, ``text-generation`` (``text`` pieces), ``stream-end`` (the whole ``response`` with ``text`` and
    the echoed ``chat_history``)). One call (the stream is one reply; ``stream-end`` repeats it), context ``user``;
    completion the joined ``text-generation`` pieces. No tool calls."""
    calls = []
    for ex in cassette(path):
        if not (ex["uri"] or "").endswith("/v1/chat"):
            continue
        req = json.loads(ex["request"])
        text = ""
        for line in ex["response"].splitlines():
            if line.strip():
                ev = json.loads(line)
                if ev.get("event_type") == "text-generation":
                    text += ev["text"]
        roles = [_V1_ROLES[h["role"].lower()] for h in req.get("chat_history") or []] + ["user"]
        calls.append((roles, req["message"], text, 0))
    return _merge("Cohere v1 Chat API streamed, vcrpy cassette (llm-command-r)", calls)


def _ollama_calls(path: Path) -> list:
    calls = []
    for ex in cassette(path):
        if not (ex["uri"] or "").endswith("/api/chat"):
            continue
        req = json.loads(ex["request"])
        text, tools = "", 0
        for line in ex["response"].splitlines():  # one JSON body, or NDJSON stream lines: one reply
            if line.strip():
                part = json.loads(line)["message"]
                text += part.get("content") or ""
                tools += len(part.get("tool_calls") or [])
        msgs = req["messages"]
        first_user = next((m["content"] for m in msgs if m["role"] == "user"), None)
        calls.append(([m["role"] for m in msgs], first_user, _THINK.sub("", text, count=1), tools))
    return calls


def ollama_llmrb(path: Path) -> dict:
    """Ruby VCR cassette (YAML ``http_interactions: [{request: {method, uri, body: {encoding, string}, headers},
    response: {status, headers, body: {encoding, string}}, recorded_at}]``) of llm.rb's spec ``llm_function_block``
    against Ollama's native chat API (``POST http://localhost:11434/api/chat``, ``stream: true``; the response body is
    NDJSON, one ``{model, created_at, message: {role, content, tool_calls?}, done, ...}`` per line). Two exchanges:
    the first reply is a ``system`` tool call (``{command: date}``) with no text; the second request sends it back
    (the client writes the assistant message with empty content) with the tool result, and the reply is text with a
    leading ``<think>`` span. One conversation, two calls, one tool call."""
    return _merge("Ollama /api/chat, Ruby VCR cassette (llm.rb)", _ollama_calls(path))


def ollama_langchainrb(path: Path) -> dict:
    """Ruby VCR cassette of langchainrb's spec ``Langchain::LLM::Ollama#chat returns a chat completion``: one
    exchange with Ollama's native chat API (``stream: false``; the response is one JSON object ``{model, created_at,
    message: {role, content}, done_reason, done, ...}``). One conversation, one call, context ``user``; no tool
    calls."""
    return _merge("Ollama /api/chat, Ruby VCR cassette (langchainrb)", _ollama_calls(path))


def zai_llmrb(path: Path) -> dict:
    """Ruby VCR cassette of llm.rb's spec ``llm_function_multiple`` against Z.ai's GLM chat API (``POST
    https://api.z.ai/api/paas/v4/chat/completions``, model ``glm-4.5-flash``; response ``{choices: [{finish_reason,
    message: {content, reasoning_content?, role, tool_calls}}], created, id, model, request_id, usage}``). Three
    exchanges, each request adding the previous reply (content dropped by the client, tool calls kept) and the tool
    result: one conversation, three calls; each reply holds one ``system`` tool call (``date``, ``pwd``, then one with
    empty arguments, whose result is not in the file): three tool calls. Completion: ``content``."""
    calls = []
    for ex in cassette(path):
        if not (ex["uri"] or "").endswith("/chat/completions"):
            continue
        req, resp = json.loads(ex["request"]), json.loads(ex["response"])
        msgs = req["messages"]

        def _text(m: dict) -> str:
            c = m.get("content")
            return c if isinstance(c, str) or c is None else "".join(p.get("text", "") for p in c)

        first_user = next((_text(m) for m in msgs if m["role"] == "user"), None)
        msg = resp["choices"][0]["message"]
        calls.append(([m["role"] for m in msgs], first_user, msg.get("content") or "", len(msg.get("tool_calls") or [])))
    return _merge("Z.ai GLM chat API, Ruby VCR cassette (llm.rb)", calls)


COUNTERS = {
    "langchain-cohere__v1-chat": cohere_v1_chat,
    "langchain-cohere__v2-chat": cohere_v2_chat,
    "llm-command-r": cohere_v1_stream,
    "llmrb-llm__ollama": ollama_llmrb,
    "llmrb-llm__zai": zai_llmrb,
    "langchainrb": ollama_langchainrb,
}


def count(path: Path) -> dict:
    parts = path.name.split("__")
    counter = COUNTERS.get("__".join(parts[:2])) or COUNTERS[parts[0]]
    return {"file": path.name, **counter(path)}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
