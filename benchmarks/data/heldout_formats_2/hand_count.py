"""Hand counts of the second held-out set (benchmarks/data/heldout_formats_2/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's documented layout.

Per file: the conversations (one per distinct agent thread / session that holds at least one LLM call), the LLM
calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rule for request/response recordings (httprr, Ruby VCR, llama-stack recordings): one call per recorded
model response; calls whose request messages start with an earlier call's request messages followed by that
call's completion belong to the same conversation (the agent loop re-sending its history), otherwise a new one.

Run: ``python benchmarks/data/heldout_formats_2/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


# ----------------------------------------------------------------------------------------------- chat UI exports

def openwebui_export(doc: list) -> dict:
    """Open WebUI chat export (list of chats; ``chat.history.messages`` is a tree by parentId, ``currentId`` the
    shown leaf). Rule: walk from currentId to the root; each assistant message is a model turn. Where an assistant
    message carries ``output`` items (Responses-style), each model generation in it is one call: a run of
    reasoning / function_call / message items up to a ``function_call_output`` is one call (the tool output is
    the next call's context); function_call items are tool calls. Without ``output``, the message is one call."""
    completions, contexts, tools, convs = [], [], 0, 0
    for chat in doc:
        msgs = chat["chat"]["history"]["messages"]
        path, node = [], chat["chat"]["history"]["currentId"]
        while node is not None:
            path.append(msgs[node])
            node = msgs[node]["parentId"]
        path.reverse()
        ctx, here = [], 0
        for m in path:
            if m["role"] != "assistant":
                ctx.append(m["role"])
                continue
            out = m.get("output")
            if not out:
                completions.append(m["content"]); contexts.append(list(ctx)); here += 1
                ctx.append("assistant")
                continue
            cur_text, cur_tools = "", 0
            for item in out:
                if item["type"] == "function_call_output":
                    completions.append(cur_text); contexts.append(list(ctx)); here += 1; tools += cur_tools
                    ctx += ["assistant", "tool"]
                    cur_text, cur_tools = "", 0
                elif item["type"] == "function_call":
                    cur_tools += 1
                elif item["type"] == "message":
                    cur_text += "".join(c.get("text", "") for c in item["content"])
            completions.append(cur_text); contexts.append(list(ctx)); here += 1; tools += cur_tools
            ctx.append("assistant")
        convs += 1 if here else 0
    return _result("Open WebUI chat export (message tree, Responses-style output items)", convs, completions,
                   contexts, tools)


def librechat_export(doc: dict) -> dict:
    """LibreChat conversation export. ``messagesTree`` (nested children) or flat ``messages`` linked by
    parentMessageId. Rule: each root-to-leaf path is a thread (here every node has at most one child, so one
    thread); each message not created by the user is one call, its context the messages before it."""
    completions, contexts = [], []
    if "messagesTree" in doc:
        paths = []

        def walk(node, acc):
            acc = acc + [node]
            if node.get("children"):
                for ch in node["children"]:
                    walk(ch, acc)
            else:
                paths.append(acc)
        for root in doc["messagesTree"]:
            walk(root, [])
    else:
        paths = [doc["messages"]]
    convs = 0
    for path in paths:
        here = 0
        for i, m in enumerate(path):
            if not m["isCreatedByUser"]:
                completions.append(m["text"]); here += 1
                contexts.append(["user" if x["isCreatedByUser"] else "assistant" for x in path[:i]])
        convs += 1 if here else 0
    return _result("LibreChat conversation export", convs, completions, contexts, 0)


def chatbotui_export(doc: dict) -> dict:
    """Chatbot UI export v4 (``history`` of conversations, each with ``prompt`` as system prompt and
    ``messages`` role/content). Rule: one conversation per history entry; each assistant message one call."""
    completions, contexts, convs = [], [], 0
    for conv in doc["history"]:
        ctx = ["system"] if conv.get("prompt") else []
        here = 0
        for m in conv["messages"]:
            if m["role"] == "assistant":
                completions.append(m["content"]); contexts.append(list(ctx)); here += 1
            ctx.append(m["role"])
        convs += 1 if here else 0
    return _result("Chatbot UI export (v4)", convs, completions, contexts, 0)


def grok_export(doc: dict) -> dict:
    """Grok data export (``conversations[].responses[]`` with sender human/assistant). Rule: one conversation
    per entry; each assistant response one call."""
    completions, contexts, convs = [], [], 0
    for conv in doc["conversations"]:
        ctx, here = [], 0
        for r in conv["responses"]:
            role = "assistant" if r["sender"] == "assistant" else "user"
            if role == "assistant":
                completions.append(r["message"]); contexts.append(list(ctx)); here += 1
            ctx.append(role)
        convs += 1 if here else 0
    return _result("Grok conversation export", convs, completions, contexts, 0)


def aistudio_chunked(doc: dict) -> dict:
    """Google AI Studio saved prompt (``chunkedPrompt.chunks`` with role user/model; ``isThought`` chunks are the
    model's thinking). Rule: a run of consecutive model chunks is one model turn = one call (its thought chunk is
    part of it); the context is the turns before it."""
    completions, contexts, ctx = [], [], []
    cur = None
    for ch in doc["chunkedPrompt"]["chunks"]:
        if ch["role"] == "model":
            if cur is None:
                cur = ""
            if not ch.get("isThought"):
                cur += ch.get("text", "")
        else:
            if cur is not None:
                completions.append(cur); contexts.append(list(ctx)); ctx.append("assistant"); cur = None
            ctx.append("user")
    if cur is not None:
        completions.append(cur); contexts.append(list(ctx))
    return _result("Google AI Studio chunkedPrompt", 1 if completions else 0, completions, contexts, 0)


# ------------------------------------------------------------------------------------------ eval / observability

def promptfoo_export(doc: dict) -> dict:
    """promptfoo eval export (``results.results[]``: prompt.raw sent to provider, response.output). Rule: each
    result with a response output is one single-turn call (one conversation each). The llm-rubric grader calls
    are recorded only as token counts (no text), so they are not readable calls."""
    completions, contexts = [], []
    for r in doc["results"]["results"]:
        if r.get("response") and r["response"].get("output") is not None:
            completions.append(r["response"]["output"]); contexts.append(["user"])
    return _result("promptfoo eval export (results v3)", len(completions), completions, contexts, 0)


def atof_jsonl(lines: list) -> dict:
    """NeMo Relay ATOF v0.1 event stream (scope start/end pairs; category llm: start ``data.content`` is the
    request, end ``data.assistant_message`` the reply). Rule: one call per llm scope whose end carries an
    assistant_message; one conversation per metadata.session_id."""
    completions, contexts, sessions = [], [], set()
    for ev in lines:
        if ev.get("category") == "llm" and ev.get("scope_category") == "end" and \
                "assistant_message" in (ev.get("data") or {}):
            completions.append(ev["data"]["assistant_message"]); contexts.append(["user"])
            sessions.add(ev["metadata"]["session_id"])
    return _result("NeMo Relay ATOF v0.1 event stream (Hermes agent)", len(sessions), completions, contexts, 0)


# ------------------------------------------------------------------------------------- HTTP recordings

def _openai_req(body: dict) -> list:
    return [json.dumps({k: m.get(k) for k in ("role", "content", "tool_calls", "tool_call_id", "name")},
                       sort_keys=True) for m in body["messages"]]


def _openai_completion(msg: dict) -> tuple[list, str, int]:
    item = json.dumps({"role": "assistant", "content": msg.get("content"), "tool_calls": msg.get("tool_calls"),
                       "tool_call_id": None, "name": None}, sort_keys=True)
    return [item], msg.get("content") or "", len(msg.get("tool_calls") or [])


def _httprr_records(raw: bytes) -> list[tuple[bytes, bytes]]:
    assert raw.startswith(b"httprr trace v1\n")
    pos, out = len(b"httprr trace v1\n"), []
    while pos < len(raw):
        nl = raw.index(b"\n", pos)
        a, b = map(int, raw[pos:nl].split())
        pos = nl + 1
        out.append((raw[pos:pos + a], raw[pos + a:pos + a + b]))
        pos += a + b
    return out


def _http_split(msg: bytes) -> tuple[str, dict, bytes]:
    head, _, body = msg.partition(b"\r\n\r\n") if b"\r\n\r\n" in msg else msg.partition(b"\n\n")
    lines = head.decode().replace("\r\n", "\n").split("\n")
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if hdrs.get("transfer-encoding") == "chunked":
        out, rest = b"", body
        while True:
            rest = rest.lstrip(b"\r\n")
            size_line, _, rest = rest.partition(b"\n")
            size = int(size_line.strip(), 16)
            if size == 0:
                break
            out += rest[:size]
            rest = rest[size:]
        body = out
    return lines[0], hdrs, body


def httprr(raw: bytes) -> dict:
    """Go httprr trace (``httprr trace v1``, then per record ``<request bytes> <response bytes>`` and the raw
    HTTP/1.1 request and response). Calls: requests to OpenAI /chat/completions, Gemini generateContent /
    streamGenerateContent and Ollama /api/chat with a 2xx response; other traffic (a search API) is not a call.
    Streamed bodies (Gemini JSON array of chunks, Ollama NDJSON with chunked transfer encoding) are joined."""
    calls, completions, contexts, tools = [], [], [], 0
    for req, resp in _httprr_records(raw):
        start, _, body = _http_split(req)
        status, _, rbody = _http_split(resp)
        if " 2" not in status[:13]:
            continue
        url = start.split()[1]
        if url.endswith("/chat/completions"):
            b = json.loads(body)
            msg = json.loads(rbody)["choices"][0]["message"]
            comp, text, n = _openai_completion(msg)
            calls.append((_openai_req(b), comp)); completions.append(text); tools += n
            contexts.append([m["role"] for m in b["messages"]])
        elif "generateContent" in url or "GenerateContent" in url:
            b = json.loads(body)
            r = json.loads(rbody)
            chunks = r if isinstance(r, list) else [r]
            parts = [p for c in chunks for cand in c.get("candidates", []) for p in cand["content"]["parts"]]
            text = "".join(p.get("text", "") for p in parts)
            n = sum(1 for p in parts if "functionCall" in p)
            req_items = [json.dumps(c, sort_keys=True) for c in b["contents"]]
            comp_item = json.dumps({"parts": [{k: v for k, v in p.items() if k in ("text", "functionCall")}
                                              for p in parts], "role": "model"}, sort_keys=True)
            calls.append((req_items, [comp_item])); completions.append(text); tools += n
            contexts.append([c["role"] for c in b["contents"]])
        elif url.endswith("/api/chat"):
            b = json.loads(body)
            text, n = "", 0
            for ln in rbody.decode().splitlines():
                if ln.strip():
                    d = json.loads(ln)
                    text += d["message"].get("content", "")
                    n += len(d["message"].get("tool_calls") or [])
            calls.append((_openai_req(b), [])); completions.append(text); tools += n
            contexts.append([m["role"] for m in b["messages"]])
    return _result("Go httprr trace (langchaingo)", _threads_loose(calls), completions, contexts, tools)


def ruby_vcr(text: str) -> dict:
    """Ruby VCR cassette (``http_interactions`` with request/response ``body.string``; bodies VCR could not store
    as UTF-8 text are written ``!binary`` base64). Parsed with a small line reader for exactly this layout (no YAML
    library in the standard library): a body ``string:`` is either a single-quoted scalar (possibly folded over
    lines, '' = '), a literal block (``|``), or ``!binary |-`` base64 lines. Calls: requests to an Anthropic
    /v1/messages or OpenAI-style /chat/completions endpoint with a 2xx response."""
    lines = text.split("\n")
    bodies = []  # (kind, value) in file order: request, response, request, response...
    uris, codes = [], []
    i = 0
    while i < len(lines):
        ln = lines[i]
        m = re.match(r"^(\s*)string: (.*)$", ln)
        if re.match(r"^\s+uri: ", ln):
            uris.append(ln.split("uri:", 1)[1].strip().strip('"'))
        if re.match(r"^\s+code: ", ln):
            codes.append(int(ln.split("code:", 1)[1]))
        if not m:
            i += 1
            continue
        ind, rest = len(m.group(1)), m.group(2)
        if rest.startswith("!binary"):
            j, b64 = i + 1, ""
            while j < len(lines) and (len(lines[j]) - len(lines[j].lstrip()) > ind) and lines[j].strip():
                b64 += lines[j].strip(); j += 1
            bodies.append(base64.b64decode(b64).decode("utf-8")); i = j
        elif rest.startswith("|"):
            j, buf = i + 1, []
            block_ind = len(lines[j]) - len(lines[j].lstrip())
            while j < len(lines) and (lines[j].startswith(" " * block_ind) or not lines[j].strip()):
                buf.append(lines[j][block_ind:]); j += 1
            bodies.append("\n".join(buf)); i = j
        elif rest.startswith("'"):
            # YAML single-quoted scalar: '' is a quote; a line break folds to a space, an empty line to "\n";
            # it ends at the first quote not doubled.
            buf, j, k = rest[1:], i, 0
            while True:
                pos = buf.find("'", k)
                while pos != -1 and buf[pos + 1:pos + 2] == "'":
                    pos = buf.find("'", pos + 2)
                if pos != -1:
                    break
                k = len(buf)
                j += 1
                nxt = lines[j].strip()
                if not nxt:
                    buf += "\n"
                    while not lines[j + 1].strip():
                        j += 1; buf += "\n"
                    j += 1; nxt = lines[j].strip(); buf += nxt
                elif buf.endswith("\n"):
                    buf += nxt
                else:
                    buf += " " + nxt
            bodies.append(buf[:pos].replace("''", "'")); i = j + 1
        else:
            bodies.append(rest.strip('"')); i += 1
    calls, completions, contexts, tools = [], [], [], 0
    for k, uri in enumerate(uris):
        req, resp = json.loads(bodies[2 * k]), json.loads(bodies[2 * k + 1])
        if not 200 <= codes[k] < 300:
            continue
        if uri.endswith("/v1/messages"):
            blocks = resp["content"]
            text = "".join(b.get("text", "") for b in blocks if b["type"] == "text")
            n = sum(1 for b in blocks if b["type"] == "tool_use")
            req_items = [json.dumps(m, sort_keys=True) for m in req["messages"]]
            comp = [json.dumps({"role": "assistant", "content": blocks}, sort_keys=True)]
            ctx = (["system"] if req.get("system") else []) + [m["role"] for m in req["messages"]]
        else:
            msg = resp["choices"][0]["message"]
            comp, text, n = _openai_completion(msg)
            req_items = _openai_req(req)
            ctx = [m["role"] for m in req["messages"]]
        calls.append((req_items, comp)); completions.append(text); tools += n; contexts.append(ctx)
    return _result("Ruby VCR cassette (ruby_llm; !binary base64 bodies)", _threads_loose(calls), completions,
                   contexts, tools)


def _threads_loose(calls: list) -> int:
    """Thread rule: a call continues an earlier thread when its request messages extend that thread's last request
    plus completion, compared by role and by the text of user / system messages (providers re-send the assistant
    turn in their own request shape, so the echoed completion is compared by role only); else a new thread."""
    def norm(items):
        out = []
        for it in items:
            d = json.loads(it)
            role, c = d.get("role"), d.get("content")
            if role in ("user", "system") and isinstance(c, str):
                out.append((role, c))
            elif role == "user" and "parts" in d:
                out.append((role, "".join(p.get("text", "") for p in d["parts"])))
            else:
                out.append((role, None))
        return out
    seen, n = [], 0
    for req, comp in calls:
        r = norm(req)
        for i, prev in enumerate(seen):
            if len(r) > len(prev) and r[:len(prev)] == prev:
                seen[i] = r + norm(comp); break
        else:
            n += 1; seen.append(r + norm(comp))
    return n


def llama_stack_recording(doc: dict) -> dict:
    """llama-stack integration-test recording (``request`` {method, url, body = the OpenAI chat request},
    ``response`` {body: a ChatCompletion, or a list of ChatCompletionChunk, each as {__type__, __data__}},
    is_streaming}). Rule: the file is one call; streamed tool-call deltas are joined by index."""
    body = doc["request"]["body"]
    resp = doc["response"]["body"]
    if isinstance(resp, list):
        text, idx = "", set()
        for ch in resp:
            for c in ch["__data__"]["choices"]:
                text += c["delta"].get("content") or ""
                for tc in c["delta"].get("tool_calls") or []:
                    idx.add(tc.get("index", 0))
        n = len(idx)
    else:
        msg = resp["__data__"]["choices"][0]["message"]
        text, n = msg.get("content") or "", len(msg.get("tool_calls") or [])
    return _result("llama-stack test recording (OpenAI chat request + __type__/__data__ response)", 1, [text],
                   [[m["role"] for m in body["messages"]]], n)


def count(path: Path) -> dict:
    name = path.name
    raw = path.read_bytes()
    if name.startswith("openwebui-export__"):
        res = openwebui_export(json.loads(raw))
    elif name.startswith("librechat"):
        res = librechat_export(json.loads(raw))
    elif name.startswith("chatbotui-export__"):
        res = chatbotui_export(json.loads(raw))
    elif name.startswith("grok-export__"):
        res = grok_export(json.loads(raw))
    elif name.startswith("aistudio-chunked-prompt__"):
        res = aistudio_chunked(json.loads(raw))
    elif name.startswith("promptfoo-eval-export__"):
        res = promptfoo_export(json.loads(raw))
    elif name.startswith("atof-hermes__"):
        res = atof_jsonl([json.loads(x) for x in raw.decode().splitlines() if x.strip()])
    elif name.startswith("langchaingo-httprr__"):
        res = httprr(raw)
    elif name.startswith("ruby-vcr__"):
        res = ruby_vcr(raw.decode("utf-8"))
    elif name.startswith("llama-stack-recording__"):
        res = llama_stack_recording(json.loads(raw))
    else:
        raise SystemExit(f"no rule for {name}")
    return {"file": name, **res}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
