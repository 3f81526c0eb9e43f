"""Hand counts of the twenty-second held-out set (benchmarks/data/heldout_formats_22/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself and in the tool that wrote it.

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
- in a recording of HTTP exchanges, each recorded request to a model endpoint with its recorded response is one
  call: its context is the request body's messages (a system prompt kept beside them is written ``system`` at the
  head), its completion and tool calls are read from the response (a streamed response's chunks are one call);
- a later call joins the thread of an earlier one when its context's roles start with the earlier context's roles
  followed by ``assistant`` (the earlier reply); otherwise it opens a new conversation;
- in a trace of spans, each LLM span is one call; the same call seen again from an enclosing agent span (its message
  list) or listed again beside the span (a ``toolsCalled`` copy of the span's own output) is not counted twice;
  entries in a span's input that are tool definitions or request parameters, not messages, are not context.
Context roles: a message made only of tool results is written ``tool``; ``human`` / ``ai`` / ``model`` are written
``user`` / ``assistant``; a system prompt kept beside the messages (not in the list) is written ``system`` at the
head of every context.

Run: ``python benchmarks/data/heldout_formats_22/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_ROLE = {"human": "user", "ai": "assistant", "model": "assistant", "AI": "assistant"}


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _threads(calls: list) -> int:
    """Number of conversations among ``calls`` (each ``(context_roles, completion, tools)``, in time order): a call
    joins a thread whose last context's roles followed by ``assistant`` are a prefix of its own context's roles."""
    threads: list = []
    for ctx, _, _ in calls:
        for i, last in enumerate(threads):
            head = last + ["assistant"]
            if ctx[:len(head)] == head:
                threads[i] = ctx
                break
        else:
            threads.append(ctx)
    return len(threads)


def _finish(fmt: str, calls: list) -> dict:
    return _result(fmt, _threads(calls), [c for _, c, _ in calls], [x for x, _, _ in calls],
                   sum(t for _, _, t in calls))


# --- go-vcr cassettes -------------------------------------------------------------------------------------------

def _govcr_bodies(path: Path) -> list:
    """(request URL, request body, response body) triples of a go-vcr v2-layout cassette, read with a small reader for the
    only scalar styles its interactions' ``body:`` keys use here: a one-line single-quoted scalar (``''`` is a
    quote) and a literal block (``|``, ``|+``, ``|-``) indented two more spaces than the key."""
    lines = path.read_text(encoding="utf-8").split("\n")
    pairs: list = []
    side = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("- id:"):
            pairs.append({})
        elif line == "  request:":
            side = "request"
        elif line == "  response:":
            side = "response"
        u = re.match(r"^    url: (.*)$", line)
        if u and side == "request":
            pairs[-1]["url"] = u.group(1)
        m = re.match(r"^    body: (.*)$", line)
        if m:
            raw = m.group(1)
            if raw.startswith("'"):
                assert raw.endswith("'") and len(raw) >= 2, "multi-line single-quoted body"
                text = raw[1:-1].replace("''", "'")
            elif raw.startswith("|"):
                block = []
                i += 1
                while i < len(lines) and (lines[i].startswith("      ") or lines[i] == ""):
                    block.append(lines[i][6:])
                    i += 1
                text = "\n".join(block)
                i -= 1
            elif raw in ("", '""'):
                text = ""
            else:
                raise ValueError(f"unexpected body style: {raw[:20]}")
            pairs[-1][side] = text
        i += 1
    return [(p["url"], p["request"], p["response"]) for p in pairs]


def _anthropic_ctx(req: dict) -> list:
    roles = ["system"] if req.get("system") else []
    for m in req["messages"]:
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text"}]
        if m["role"] == "user" and blocks and all(b.get("type") == "tool_result" for b in blocks):
            roles.append("tool")
        else:
            roles.append(m["role"])
    return roles


def _gemini_ctx(req: dict) -> list:
    roles = ["system"] if req.get("systemInstruction") else []
    for c in req["contents"]:
        parts = c.get("parts") or []
        if parts and all("functionResponse" in p for p in parts):
            roles.append("tool")
        else:
            roles.append(_ROLE.get(c.get("role"), c.get("role")))
    return roles


def _sse_chat(body: str) -> tuple:
    """Text and distinct tool calls of an OpenAI Chat Completions SSE stream (``data:`` lines of chunks; deltas
    joined; tool calls told apart by their ``index``)."""
    text, indices = "", set()
    for line in body.split("\n"):
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        for ch in chunk.get("choices") or []:
            delta = ch.get("delta") or {}
            text += delta.get("content") or ""
            for tc in delta.get("tool_calls") or []:
                indices.add(tc["index"])
    return text, len(indices)


def govcr_cassette(path: Path) -> dict:
    """go-vcr cassette YAML written by charmbracelet/fantasy's provider tests (charmbracelet/x/vcr over go-vcr:
    ``version: 2``, ``interactions: [{id, request: {proto..., body, headers, url, method}, response: {proto...,
    body, headers, status, code, duration}}]``; bodies are the raw HTTP bodies as YAML strings). Each interaction is
    one call (rule for HTTP recordings), read by the API in its URL: Anthropic Messages (``system`` beside
    ``messages``; reply ``content`` text / ``tool_use`` blocks; a user message of ``tool_result`` blocks is
    ``tool``), Gemini generateContent (``systemInstruction`` beside ``contents``; reply ``candidates[0].content
    .parts`` text / ``functionCall``; a content of ``functionResponse`` parts is ``tool``; a ``thoughtSignature``
    on a part belongs to that part), OpenAI Chat Completions streamed (``data:`` SSE chunks, one call per
    response). The file's calls form one thread (the second request holds the first request and its reply)."""
    calls = []
    for url, req_text, resp_text in _govcr_bodies(path):
        req = json.loads(req_text)
        if ":generateContent" in url:
            resp = json.loads(resp_text)
            parts = resp["candidates"][0]["content"]["parts"]
            text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
            tools = sum(1 for p in parts if "functionCall" in p)
            calls.append((_gemini_ctx(req), text, tools))
        elif url.endswith("/chat/completions") and req.get("stream"):
            text, tools = _sse_chat(resp_text)
            calls.append(([m["role"] for m in req["messages"]], text, tools))
        elif url.endswith("/v1/messages"):
            resp = json.loads(resp_text)
            text = "".join(b.get("text", "") for b in resp["content"] if b["type"] == "text")
            tools = sum(1 for b in resp["content"] if b["type"] == "tool_use")
            calls.append((_anthropic_ctx(req), text, tools))
        else:
            raise ValueError("unknown API in " + path.name)
    return _finish("go-vcr cassette YAML (charmbracelet/fantasy provider tests)", calls)


# --- Azure SDK test-proxy session records -----------------------------------------------------------------------

def test_proxy_session_record(path: Path) -> dict:
    """Azure SDK test-proxy session record JSON as the openai-dotnet tests keep it (``{Entries: [{RequestUri,
    RequestMethod, RequestHeaders, RequestBody, StatusCode, ResponseHeaders, ResponseBody}], Variables}``; bodies
    are JSON objects). Each entry to ``/chat/completions`` is one call (rule for HTTP recordings): context
    ``RequestBody.messages`` (roles as recorded: user / assistant / tool), completion
    ``ResponseBody.choices[0].message.content``, tool calls its ``tool_calls`` entries. The entries of a file form
    one thread (each request holds the earlier requests' messages and replies)."""
    calls = []
    for e in json.loads(path.read_text(encoding="utf-8"))["Entries"]:
        if not e["RequestUri"].endswith("/chat/completions"):
            continue
        msg = e["ResponseBody"]["choices"][0]["message"]
        calls.append(([m["role"] for m in e["RequestBody"]["messages"]], msg.get("content") or "",
                      len(msg.get("tool_calls") or [])))
    return _finish("Azure SDK test-proxy session record JSON (openai-dotnet)", calls)


# --- DeepEval trace payloads ------------------------------------------------------------------------------------

def _deepeval_role(item: dict) -> str | None:
    role = item.get("role")
    if role in ("Tool Input", "Model Request Parameters"):
        return None  # tool definitions / request parameters, not a message
    if role is None:
        if item.get("type") == "function" or "arguments" in item:
            return "assistant"  # the model's earlier tool call, recorded bare
        if item.get("type") == "tool" or "output" in item:
            return "tool"
        return "?"
    content = item.get("content")
    if isinstance(content, dict) and content.get("type") == "tool_call_response":
        return "tool"
    return _ROLE.get(role, role)


def _deepeval_output(out) -> tuple:
    if out is None:
        return "", 0
    if isinstance(out, str):
        return out, 0
    if isinstance(out, dict):
        return out.get("content") or "", len(out.get("tool_calls") or [])
    text, tools = "", 0
    for item in out:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(item, dict) and item.get("type") == "FUNCTION":
            tools += 1
        elif isinstance(content, dict) and content.get("type") == "tool_call":
            tools += 1
        elif isinstance(content, str):
            text += content
    return text, tools


def deepeval_trace(path: Path) -> dict:
    """DeepEval trace payload JSON (the trace deepeval's tracing sends to Confident AI, captured by its integration
    tests: ``{uuid, baseSpans, agentSpans, llmSpans, retrieverSpans, toolSpans, startTime, endTime, name, input,
    output, ...}``; spans ``{uuid, name, status, type, parentUuid, startTime, endTime, input, output, ...}``). Each
    ``llmSpans`` entry is one call (listed here not in time order: sorted by ``startTime``); its context is its
    ``input`` message list (LangChain roles human / ai / tool; bare function-call and tool-output records in the
    OpenAI integration; PydanticAI ``tool_call`` / ``tool_call_response`` contents, one per item; ``Tool Input`` /
    ``Model Request Parameters`` items are tool definitions, not messages); its completion and tool calls are read
    from its ``output`` (a string, a ``{role, content, tool_calls}`` object, or a list of assistant items / FUNCTION
    records). The agent span's message list and the span's ``toolsCalled`` copy repeat those calls (not counted
    again); tool spans are the executions. One trace per file; its calls form one thread."""
    d = json.loads(path.read_text(encoding="utf-8"))
    calls = []
    for span in sorted(d["llmSpans"], key=lambda s: s["startTime"]):
        inp = span.get("input")
        if isinstance(inp, str):
            ctx = ["user"]
        else:
            ctx = [r for r in (_deepeval_role(i) for i in inp) if r is not None]
        text, tools = _deepeval_output(span.get("output"))
        calls.append((ctx, text, tools))
    return _finish("DeepEval trace payload JSON", calls)


COUNTERS = {
    "go-vcr-cassette": govcr_cassette,
    "test-proxy-session-record": test_proxy_session_record,
    "deepeval-trace": deepeval_trace,
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
