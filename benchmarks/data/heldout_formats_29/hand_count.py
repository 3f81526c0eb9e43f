"""Hand counts of the twenty-ninth held-out set (benchmarks/data/heldout_formats_29/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself and in the recording tool's source.

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
Rules made explicit for this set (all three formats are recordings of HTTP exchanges with a model provider):
- one recorded request / response exchange with a provider's generation endpoint is one LLM call; its context is
  the request body's message list (plus a system prompt kept beside it), its completion the response body (a
  streamed response's text deltas joined; the deltas of one response are one call);
- within one file, a call joins the thread of the latest earlier call whose whole message list its own message list
  begins with (the earlier context re-sent, followed by that call's reply and new input); otherwise it opens a new
  conversation;
- a reply cut short by the provider's token limit (finish reason ``length``) is still a call;
- a tool call is one ``tool_use`` block (Anthropic), one ``functionCall`` part (Gemini), or one entry of
  ``tool_calls`` (OpenAI-style chat completions; in a stream, one distinct tool-call ``index`` of the choice).
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list: Anthropic ``system``, Gemini ``systemInstruction``) is written ``system`` at the head of the
context; Gemini's ``model`` role is written ``assistant``.

Run: ``python benchmarks/data/heldout_formats_29/hand_count.py`` (one JSON line per file).
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


# --- provider layouts (request context / response reply) -------------------------------------------------------

def _anthropic_context(body: dict) -> tuple[list, list]:
    """Anthropic Messages request: ``system`` beside ``messages``; a user message made only of ``tool_result``
    blocks is tool input."""
    msgs = body["messages"]
    roles = ["system"] if body.get("system") else []
    for m in msgs:
        content = m["content"]
        only_results = isinstance(content, list) and content and all(
            b.get("type") == "tool_result" for b in content)
        roles.append("tool" if only_results else m["role"])
    return msgs, roles


def _anthropic_reply(body: dict) -> tuple[str, int]:
    blocks = body.get("content") or []
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    return text, sum(1 for b in blocks if b.get("type") == "tool_use")


def _gemini_context(body: dict) -> tuple[list, list]:
    """Gemini generateContent request: ``systemInstruction`` beside ``contents``; a ``user`` content made only of
    ``functionResponse`` parts is tool input; ``model`` is the assistant."""
    msgs = body["contents"]
    roles = ["system"] if body.get("systemInstruction") else []
    for c in msgs:
        parts = c.get("parts") or []
        if parts and all("functionResponse" in p for p in parts):
            roles.append("tool")
        else:
            roles.append("assistant" if c.get("role") == "model" else c.get("role", "user"))
    return msgs, roles


def _gemini_reply(body: dict) -> tuple[str, int]:
    parts = body["candidates"][0]["content"].get("parts") or []
    text = "".join(p.get("text", "") for p in parts if "text" in p and not p.get("thought"))
    return text, sum(1 for p in parts if "functionCall" in p)


def _chat_context(body: dict) -> tuple[list, list]:
    """OpenAI-style chat completions request (OpenAI, Mistral): roles as listed in ``messages``."""
    msgs = body["messages"]
    return msgs, [m["role"] for m in msgs]


def _chat_reply(body: dict) -> tuple[str, int]:
    msg = body["choices"][0]["message"]
    return msg.get("content") or "", len(msg.get("tool_calls") or [])


def _chat_sse_reply(stream: str) -> tuple[str, int]:
    """A streamed chat completion (``data: {chunk}`` lines, ``data: [DONE]`` at the end): the text deltas of
    choice 0 joined; one tool call per distinct ``tool_calls[].index``."""
    text, indices = "", set()
    for line in stream.splitlines():
        if not line.startswith("data:"):
            continue
        data = line[len("data:"):].strip()
        if not data or data == "[DONE]":
            continue
        chunk = json.loads(data)
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            text += delta.get("content") or ""
            for tc in delta.get("tool_calls") or []:
                indices.add(tc.get("index", len(indices)))
    return text, len(indices)


def _provider(endpoint: str) -> str:
    if endpoint.endswith("/v1/messages"):
        return "anthropic"
    if ":generateContent" in endpoint or ":streamGenerateContent" in endpoint:
        return "gemini"
    if endpoint.endswith("/chat/completions"):
        return "chat"
    raise ValueError(f"unknown endpoint {endpoint}")


_CONTEXT = {"anthropic": _anthropic_context, "gemini": _gemini_context, "chat": _chat_context}
_REPLY = {"anthropic": _anthropic_reply, "gemini": _gemini_reply, "chat": _chat_reply}


def _threads(fmt: str, calls: list) -> dict:
    """``calls``: (message list, context roles, completion, tool calls) in file order. A call continues the latest
    earlier call whose whole message list its own begins with; otherwise it opens a conversation."""
    convs = 0
    for i, (msgs, _, _, _) in enumerate(calls):
        if not any(len(calls[j][0]) < len(msgs) and msgs[:len(calls[j][0])] == calls[j][0] for j in range(i)):
            convs += 1
    return _result(fmt, convs, [c[2] for c in calls], [c[1] for c in calls], sum(c[3] for c in calls))


# --- the three formats -----------------------------------------------------------------------------------------

def _yaml_docs(text: str) -> list:
    """The httpmock mock-spec YAML that rig's cassette harness writes: documents split by ``---`` lines, each with
    top-level ``when:`` / ``then:`` maps whose two-space-indented ``path`` and ``body`` keys are read here. A body is
    a single-quoted scalar on one line (``''`` is a quote) or a ``|`` / ``|+`` block of lines indented by four
    spaces."""
    docs, cur = [], None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line == "---" or cur is None:
            cur = {"when": {}, "then": {}}
            docs.append(cur)
            section = None
            if line == "---":
                i += 1
                continue
        if line in ("when:", "then:"):
            section = line[:-1]
        elif section and line.startswith("  path: "):
            cur[section]["path"] = line[len("  path: "):].strip()
        elif section and line.startswith("  body: "):
            value = line[len("  body: "):]
            if value.startswith("'"):
                assert len(value) >= 2 and value.endswith("'"), line[:80]  # one-line scalars only
                cur[section]["body"] = value[1:-1].replace("''", "'")
            elif value.startswith("|"):
                block = []
                while i + 1 < len(lines) and (lines[i + 1].startswith("    ") or lines[i + 1] == ""):
                    i += 1
                    block.append(lines[i][4:])
                cur[section]["body"] = "\n".join(block)
            else:
                cur[section]["body"] = value
        i += 1
    return [d for d in docs if d["when"]]


def rig_cassette(path: Path) -> dict:
    """rig provider-test cassette (0xPlaygrounds/rig ``tests/cassettes/<provider>/<suite>/<test>.yaml``: the
    httpmock mock specs rig's test harness writes in record mode, one YAML document per recorded HTTP exchange,
    ``when: {path, method, query_param, header, body}`` / ``then: {status, header, body}``, bodies as strings; a
    streamed response body is the SSE text as a block scalar). Each document is one call: context from the request
    body (Anthropic Messages, Gemini generateContent or Mistral chat completions, by ``when.path``), reply from the
    response body (JSON, or SSE for a streamed Mistral response). In the three files every later request re-sends
    the earlier context plus the reply and the tool results, so each file is one conversation."""
    calls = []
    for doc in _yaml_docs(path.read_text(encoding="utf-8")):
        prov = _provider(doc["when"]["path"])
        msgs, roles = _CONTEXT[prov](json.loads(doc["when"]["body"]))
        body = doc["then"]["body"]
        if body.lstrip().startswith("data:"):
            text, tools = _chat_sse_reply(body)
        else:
            text, tools = _REPLY[prov](json.loads(body))
        calls.append((msgs, roles, text, tools))
    return _threads("rig cassette YAML (httpmock mock specs)", calls)


def req_llm_fixture(path: Path) -> dict:
    """ReqLLM fixture JSON (the Elixir library's recorded provider exchange,
    ``test/support/fixtures/<provider>/<model>/<scenario>.json``: ``{request: {body: {b64}, canonical_json, headers,
    method, url}, response: {body, headers, status}, chunks?: [{b64, decoded}], captured_at?}``). One file is one
    exchange, so one call and one conversation. The context is ``request.canonical_json`` (checked equal to the
    base64 body); the reply is ``response.body`` or, for a streamed response (``body`` null), the SSE text of the
    ``chunks``' ``decoded`` strings joined. Provider layout by ``request.url``."""
    rec = json.loads(path.read_text(encoding="utf-8"))
    req = rec["request"]
    body = req["canonical_json"]
    assert json.loads(base64.b64decode(req["body"]["b64"])) == body
    prov = _provider(req["url"].split("?")[0])
    msgs, roles = _CONTEXT[prov](body)
    if rec["response"]["body"] is None:
        text, tools = _chat_sse_reply("".join(c["decoded"] for c in rec["chunks"]))
    else:
        text, tools = _REPLY[prov](rec["response"]["body"])
    return _threads("ReqLLM fixture JSON", [(msgs, roles, text, tools)])


def symfony_ai_http_cassette(path: Path) -> dict:
    """Symfony AI HTTP cassette JSON (symfony/ai platform's ``CassetteHttpClient`` / ``HttpCassette`` recording,
    ``{interactions: [{request: {method, url, signature, headers, body}, response: {status, headers, body_format,
    body}}]}``, both bodies as JSON strings). Each interaction with a chat-completions endpoint is one call (these
    files: Mistral, one interaction each, so one conversation each); context from the request body's ``messages``,
    reply from the response body's ``choices[0].message`` (``tool_calls`` null or a list)."""
    calls = []
    for it in json.loads(path.read_text(encoding="utf-8"))["interactions"]:
        prov = _provider(it["request"]["url"].split("?")[0])
        msgs, roles = _CONTEXT[prov](json.loads(it["request"]["body"]))
        text, tools = _REPLY[prov](json.loads(it["response"]["body"]))
        calls.append((msgs, roles, text, tools))
    return _threads("Symfony AI HTTP cassette JSON", calls)


COUNTERS = {
    "rig-cassette": rig_cassette,
    "req-llm-fixture": req_llm_fixture,
    "symfony-ai-http-cassette": symfony_ai_http_cassette,
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
