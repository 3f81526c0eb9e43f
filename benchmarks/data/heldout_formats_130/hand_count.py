"""Hand counts of the hundred-and-thirtieth held-out set (benchmarks/data/heldout_formats_130/files), computed from
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
- an OpenCode event stream captured by opencode.nvim (a JSON list of server events ``{type, properties}``) records
  each message many times over: ``message.updated`` repeats a message's ``info`` as it changes, and
  ``message.part.updated`` repeats a part (same part ``id``) as its text grows or its tool state moves from
  ``pending`` to ``running`` to ``completed``. A message is counted once (by its ``id``) and a part once (by its
  ``id``, its last state); the other event types (``session.*``, ``permission.*``, ``file.edited``,
  ``server.connected``, ``custom.emit_events.finished``) are metadata, not messages;
- in that stream one assistant message holding one ``step-start`` part is one LLM call (one step, one request); its
  completion is its ``text`` parts' last text joined (``reasoning`` parts belong to it, not counted separately), its
  tool calls its ``tool`` parts (each one client-executed tool call, whatever its last status: a call left
  ``running`` while the permission prompt waits was still emitted by the model); the ``tool`` part's ``state.output``
  is the tool result the next call sees; ``step-finish`` and ``patch`` parts are metadata;
- a user message's ``synthetic`` text parts (the ``Called the Read tool ...`` line and the file text opencode adds for
  an ``@file`` mention) and its ``file`` part are part of that user message, not tool calls of the model; all
  messages of one ``sessionID`` are one conversation;
- a file that records each request's full message list beside its reply (Ruby VCR ``http_interactions``, Go httprr
  records) records one call per request / reply pair; calls whose message lists continue an earlier call's list (the
  same first user message, the list grown by the earlier reply and the tool results) are one conversation, even where
  the client rewrote the tool-call ids in the replayed history; tool calls are the ``tool_calls`` entries of the
  response body, not the copies inside later requests; the tool definitions sent are not context messages;
- ids, timestamps, headers, token counts, costs, model names and settings are metadata, not context.
Context roles: as recorded (a tool-result message, or an OpenCode assistant message's tool outputs, is written
``tool``; a Gemini request's ``contents`` entries by their ``role``, ``model`` written ``assistant``; an OpenCode
user message carrying a ``system`` text is preceded by ``system``).

Run: ``python benchmarks/data/heldout_formats_130/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _chains(calls: list) -> int:
    """Number of conversations: a call whose message list (same first user text) is longer than an earlier thread's
    continues that thread; otherwise it opens one. ``calls``: (message count, first user text)."""
    threads: list = []
    for n, key in calls:
        for t in threads:
            if t[1] == key and n > t[0]:
                t[0] = n
                break
        else:
            threads.append([n, key])
    return len(threads)


def opencodenvim_events(path: Path) -> dict:
    """opencode.nvim captured event stream (``debug_helper.save_captured_events``; the plugin's ``tests/data/*.json``,
    replayed by its renderer tests): a JSON list of OpenCode server events ``{type, properties}``.
    ``message.updated`` carries ``properties.info`` ``{id, role, sessionID, time, modelID?, providerID?, tokens?,
    system?}``; ``message.part.updated`` carries ``properties.part`` ``{id, messageID, sessionID, type: text /
    reasoning / file / tool / step-start / step-finish / patch, text?, synthetic?, tool?, callID?, state?}`` (newer
    captures also a ``delta``). Messages and parts are kept once each by id (last state), in order of first
    appearance. Each assistant message is one call per ``step-start`` part (one in every message here); context:
    the messages before it (a user message ``user``, preceded by ``system`` where its info carries ``system``; an
    assistant message ``assistant``, followed by ``tool`` where it holds tool parts)."""
    events = json.loads(path.read_text(encoding="utf-8"))
    infos: dict = {}
    parts: dict = {}
    for e in events:
        props = e.get("properties") or {}
        if e.get("type") == "message.updated":
            info = props["info"]
            infos[info["id"]] = info
        elif e.get("type") == "message.part.updated":
            part = props["part"]
            parts[part["id"]] = part
    by_msg: dict = {mid: [] for mid in infos}
    for p in parts.values():
        by_msg.setdefault(p["messageID"], []).append(p)
    sessions: dict = {}
    for mid, info in infos.items():
        sessions.setdefault(info["sessionID"], []).append(mid)
    completions, contexts, tools, convs = [], [], 0, 0
    for mids in sessions.values():
        ctx: list = []
        had_call = False
        for mid in mids:
            info, ps = infos[mid], by_msg.get(mid, [])
            if info["role"] == "user":
                if info.get("system"):
                    ctx.append("system")
                ctx.append("user")
                continue
            steps = sum(1 for p in ps if p["type"] == "step-start")
            n_tools = sum(1 for p in ps if p["type"] == "tool")
            text = "".join(p.get("text") or "" for p in ps if p["type"] == "text")
            for _ in range(steps):
                completions.append(text)
                contexts.append(list(ctx))
                had_call = True
            tools += n_tools if steps else 0
            ctx.append("assistant")
            if n_tools:
                ctx.append("tool")
        convs += had_call
    return _result("opencode.nvim captured OpenCode event stream JSON", convs, completions, contexts, tools)


def _yaml_scalar(lines: list, i: int, indent: int) -> tuple[str, int]:
    """The scalar after ``string:`` on ``lines[i]``: a single-quoted scalar folded over lines (a line break read as a
    space, ``''`` for a quote), a double-quoted one (JSON-style escapes, ``\\`` at a line end joining the lines), or a
    ``|`` literal block (lines indented deeper than ``indent``, their indentation removed). Returns (text, next i)."""
    head = lines[i].split("string:", 1)[1].strip()
    if head.startswith("|"):
        out, i = [], i + 1
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
            out.append(lines[i][indent + 2:])
            i += 1
        return "\n".join(out).rstrip("\n") + "\n", i
    quote = head[0]
    buf = [head[1:]]
    while True:
        joined = " ".join(buf)
        body = joined.replace(quote * 2, "") if quote == "'" else joined.replace('\\"', "")
        if body.rstrip().endswith(quote):
            break
        i += 1
        buf.append(lines[i].strip())
    i += 1
    if quote == "'":
        text = " ".join(buf).rstrip()[:-1].replace("''", "'")
        return text, i
    raw = ""
    for k, piece in enumerate(buf):
        if k and not raw.endswith("\\"):
            raw += " "
        elif raw.endswith("\\"):
            raw = raw[:-1]
        raw += piece
    return json.loads('"' + raw.rstrip()[:-1] + '"'), i


def _vcr_bodies(path: Path) -> list:
    """(request body, response body) of each ``http_interactions`` entry of a Ruby VCR cassette."""
    lines = path.read_text(encoding="utf-8").split("\n")
    pairs, req, side, i = [], None, None, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("- request:"):
            side = "request"
        elif line.startswith("  response:"):
            side = "response"
        if line.strip().startswith("string:") and line.startswith("      string:"):
            text, i = _yaml_scalar(lines, i, 6)
            if side == "request":
                req = text
            else:
                pairs.append((req, text))
            continue
        i += 1
    return pairs


def _openai_roles(messages: list) -> list:
    return [m.get("role") for m in messages]


def raix_vcr(path: Path) -> dict:
    """Raix (Ruby) spec cassette, Ruby VCR 6.2.0 YAML (``http_interactions: [{request: {method, uri, body:
    {encoding, string}, headers}, response: {status, headers, body: {encoding, string}}, recorded_at}],
    recorded_with``), written by VCR when Raix's ``FunctionDispatch`` specs ran against OpenAI Chat Completions.
    Request bodies are single-quoted scalars folded over lines, response bodies ``|`` literal blocks of JSON. Each
    interaction is one call: context the request's ``messages``, completion the response's ``choices[0].message
    .content``, tool calls its ``tool_calls``. The second request replays the first reply with ids Raix rewrote
    (UUID fragments instead of the provider's ``call_...``) and, for parallel tool calls, as one assistant message per
    tool call: the same thread all the same (same first user message, list grown by the reply and the results)."""
    completions, contexts, tools, calls = [], [], 0, []
    for req, resp in _vcr_bodies(path):
        body = json.loads(req)
        out = json.loads(resp)
        msg = out["choices"][0]["message"]
        msgs = body["messages"]
        completions.append(msg.get("content") or "")
        contexts.append(_openai_roles(msgs))
        tools += len(msg.get("tool_calls") or [])
        first_user = next(m.get("content") for m in msgs if m.get("role") == "user")
        calls.append((len(msgs), first_user))
    return _result("Raix Ruby VCR cassette YAML (OpenAI chat completions)", _chains(calls), completions, contexts,
                   tools)


def _httprr_records(path: Path) -> list:
    """(request bytes, response bytes) of each record of an httprr trace (``httprr trace v1`` then, per record, a
    line ``N M`` and N bytes of request, M bytes of response)."""
    data = path.read_bytes()
    head, _, rest = data.partition(b"\n")
    assert head.strip() == b"httprr trace v1", head
    out = []
    while rest:
        sizes, _, rest = rest.partition(b"\n")
        n, m = (int(x) for x in sizes.split())
        out.append((rest[:n], rest[n:n + m]))
        rest = rest[n + m:]
    return out


def _http_body(raw: bytes) -> str:
    return raw.partition(b"\r\n\r\n")[2].decode("utf-8") if b"\r\n\r\n" in raw else \
        raw.partition(b"\n\n")[2].decode("utf-8")


def oscar_httprr(path: Path) -> dict:
    """golang/oscar (Gaby) ``internal/gcp/gemini`` test trace, Go httprr v1 (``rsc.io``-style record / replay of raw
    HTTP: each record the request as sent, headers and body, then the response with its status line, headers and
    body), recorded against Gemini ``generateContent`` (``gemini-2.5-pro``). Each record is one call: context the
    request's ``contents`` (one ``user`` entry holding two text parts here), completion the first candidate's text
    parts joined. No tools are offered; no tool calls. Each file holds one call, one conversation."""
    completions, contexts, tools, calls = [], [], 0, []
    for req, resp in _httprr_records(path):
        body = json.loads(_http_body(req))
        out = json.loads(_http_body(resp))
        contents = body["contents"]
        roles = (["system"] if body.get("systemInstruction") else []) + [
            "assistant" if c.get("role") == "model" else c.get("role") for c in contents]
        cand = out["candidates"][0]["content"]
        completions.append("".join(p.get("text", "") for p in cand.get("parts", []) if not p.get("thought")))
        contexts.append(roles)
        tools += sum(1 for p in cand.get("parts", []) if "functionCall" in p)
        first_user = next(json.dumps(c["parts"]) for c in contents if c.get("role") == "user")
        calls.append((len(contents), first_user))
    return _result("golang/oscar Go httprr trace (Gemini generateContent)", _chains(calls), completions, contexts,
                   tools)


COUNTERS = {
    "opencodenvim-events": opencodenvim_events,
    "raix-vcr": raix_vcr,
    "oscar-httprr": oscar_httprr,
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
