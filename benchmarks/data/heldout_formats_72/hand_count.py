"""Hand counts of the seventy-second held-out set (benchmarks/data/heldout_formats_72/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

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
Rules made explicit for this set (written before anything was measured):
- an execution trace of an LLM program (IBM's Prompt Declaration Language, ``pdl --trace``) is a tree of executed
  blocks; each executed ``model`` block that carries a ``result`` is one call, its context the block's ``context``
  message list (or, where a block has no ``context``, its ``input`` string, written ``user``) and its completion the
  ``result``. A ``model`` block without a ``result`` is part of the program text kept beside the trace (the body of
  a ``repeat`` whose executed iterations sit under ``trace``), not a call. A later call whose context begins with an
  earlier call's context followed by that call's reply as an ``assistant`` message continues it (one conversation);
  the text the program adds between calls (a ``data`` or ``read`` block: the user's typed answer) is new input;
- a saved LMQL playground state (``lmql-editor-contents`` and the ``decoder-graph`` the runtime streamed, a JSON
  string holding token-level decoder nodes) records one query run; the decoder nodes are decoding steps of that run
  (one node per token, each with the OpenAI continuation it came from), not calls. One query run that decodes one
  template variable with the ``argmax`` decoder is one call, its own conversation: the context is the prompt text
  before the variable (written ``user``), the completion the variable's final value (the last node's prompt less the
  root prompt). Logprobs, scores, masks and the constraint graphs are metadata;
- a request/response recording of Instructor for PHP's HTTP recorder (one JSON file per HTTP interaction: the
  request with its JSON ``body`` as a string, the response with its ``body`` as a string or, for a streamed
  response, its raw ``chunks``) is one recorded call and its own conversation. Streamed chunks are joined before
  reading (a chunk boundary may cut an event in two); the server-sent ``data:`` events' text deltas are the reply;
- a function call the model emitted because the request forced it (``tool_choice`` naming the extraction
  function: Instructor's tool mode for structured output) is a function part of the reply and is counted as one tool
  call, whether the client runs the function or only parses its arguments; a JSON object the model writes as text
  (JSON mode) is text, not a tool call;
- provider request / response metadata (headers, ids, token usage, rate limits, timings, trace ids, model names,
  generation parameters, the tool's schema definitions) is metadata, not context.
Context roles: as recorded (``user`` for a bare prompt string); a system prompt kept beside the messages (Anthropic
``system``, Gemini ``systemInstruction``) is written ``system`` at the head of the context; Gemini's ``model`` role is
written ``assistant``; a message made only of tool results is written ``tool``.

Run: ``python benchmarks/data/heldout_formats_72/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


# --- IBM Prompt Declaration Language execution traces ---

def _pdl_model_blocks(node, found: list) -> None:
    """Executed ``model`` blocks (those with a ``result``) in document order, anywhere in the block tree."""
    if isinstance(node, dict):
        if node.get("kind") == "model" and "result" in node:
            found.append(node)
        for value in node.values():
            _pdl_model_blocks(value, found)
    elif isinstance(node, list):
        for item in node:
            _pdl_model_blocks(item, found)


def _message(role: str, content) -> tuple:
    return role, content if isinstance(content, str) else json.dumps(content, sort_keys=True)


def pdl_trace(path: Path) -> dict:
    """PDL execution trace JSON (written by ``pdl --trace FILE``; the React viewer's demos in
    ``pdl-live-react/src/demos/``): one root block ``{kind: text, description, defs, text: [...], result}`` whose
    ``text`` list holds executed blocks (``data`` / ``read`` blocks with the text added, ``model`` blocks, control
    blocks such as ``repeat_until`` with the program body under ``repeat`` and the executed iterations under
    ``trace``), each with timing (``start_nanos``... or ``pdl__timing``). Each ``model`` block with a ``result`` is one
    call (set rule); its context is its ``context`` message list (roles as recorded), or its ``input`` string as one
    ``user`` message; its completion is ``result``. A call continues an earlier one when its context starts with the
    earlier context plus the earlier reply as an ``assistant`` message (set rule): conversations are the chains so
    formed. No tool calls (no tools are declared in these programs)."""
    root = json.loads(path.read_text(encoding="utf-8"))
    blocks: list = []
    _pdl_model_blocks(root, blocks)
    completions, contexts, chains, convs = [], [], [], 0
    for block in blocks:
        if "context" in block:
            msgs = [_message(m.get("role", "user"), m.get("content", "")) for m in block["context"]]
        else:
            msgs = [("user", block.get("input", ""))]
        reply = block["result"] if isinstance(block["result"], str) else json.dumps(block["result"])
        continues = any(msgs[:len(prev) + 1] == prev + [("assistant", prev_reply)] for prev, prev_reply in chains)
        convs += 0 if continues else 1  # a call continuing no earlier call starts a conversation
        completions.append(reply)
        contexts.append([role for role, _ in msgs])
        chains.append((msgs, reply))
    return _result("PDL execution trace JSON", convs, completions, contexts, 0)


# --- LMQL playground saved state ---

def lmql_playground_trace(path: Path) -> dict:
    """LMQL playground saved state JSON (``src/lmql/ui/playground/public/precomputed/*.json``: ``{"lmql-editor-contents":
    query source, "decoder-graph": a JSON string {nodes: [...], edges: [...]}}``; each node is one decoded token with
    ``text``, ``seqtext``, logprobs, scores and ``user_data.head`` (the variable being decoded, the ``prompt`` so far,
    ``program_state``, the ``where`` constraint graph) and, for tokens taken from the API, ``openai-continuations``).
    One run of a query decoding one variable with ``argmax`` is one call and one conversation (set rule); the
    variables decoded are the ``head.variable`` names other than ``__done__``; the context is the root node's prompt
    (``user``); the completion is the final node's ``head.prompt`` less that root prompt. No tool calls."""
    state = json.loads(path.read_text(encoding="utf-8"))
    graph = json.loads(state["decoder-graph"])
    nodes = graph["nodes"]
    root = next(n for n in nodes if n.get("root"))
    root_prompt = root["user_data"]["head"]["prompt"]
    variables = []
    for node in nodes:
        name = node["user_data"]["head"]["variable"]
        if name != "__done__" and name not in variables:
            variables.append(name)
    assert len(variables) == 1, variables  # this set holds single-variable runs only
    final_prompt = nodes[-1]["user_data"]["head"]["prompt"]
    assert final_prompt.startswith(root_prompt)
    completion = final_prompt[len(root_prompt):]
    return _result("LMQL playground saved state (decoder graph) JSON", 1, [completion], [["user"]], 0)


# --- Instructor for PHP HTTP recordings ---

def _sse_events(chunks: list) -> list:
    """The ``data:`` payloads of a server-sent-event stream kept as raw chunks (joined first)."""
    events = []
    for line in "".join(chunks).split("\n"):
        if line.startswith("data:"):
            payload = line[len("data:"):].strip()
            if payload and payload != "[DONE]":
                events.append(json.loads(payload))
    return events


def _request_roles(body: dict) -> list:
    roles = []
    if body.get("system"):
        roles.append("system")
    if body.get("systemInstruction"):
        roles.append("system")
    for msg in body.get("messages", []):
        roles.append(msg["role"])
    for content in body.get("contents", []):
        roles.append({"model": "assistant"}.get(content.get("role", "user"), content.get("role", "user")))
    return roles


def _reply(body: dict) -> tuple:
    """Text and tool-call count of one non-streamed response body: OpenAI Chat Completions, Gemini
    ``generateContent``, Cohere v2 chat or Anthropic Messages."""
    if "choices" in body:
        message = body["choices"][0]["message"]
        return message.get("content") or "", len(message.get("tool_calls") or [])
    if "candidates" in body:
        parts = body["candidates"][0]["content"]["parts"]
        return ("".join(p.get("text", "") for p in parts), sum(1 for p in parts if "functionCall" in p))
    if "message" in body:  # Cohere v2
        message = body["message"]
        text = "".join(c.get("text", "") for c in message.get("content") or [] if c.get("type") == "text")
        return text, len(message.get("tool_calls") or [])
    content = body.get("content") or []
    return ("".join(b.get("text", "") for b in content if b.get("type") == "text"),
            sum(1 for b in content if b.get("type") == "tool_use"))


def instructor_php_recording(path: Path) -> dict:
    """Instructor for PHP HTTP recording JSON (``examples/<group>/<example>/recordings/<hash>.json``, written by the
    http-client's ``RecordingMiddleware``: ``{request: {url, method, headers, body: JSON string, options: {stream}},
    response: {statusCode, headers, body: JSON string}}``, or for a streamed response ``{request, response: {statusCode,
    headers}, chunks: [raw text chunks]}``). One file is one recorded call and one conversation (set rule). Context:
    the roles of the request body (Anthropic ``system`` / Gemini ``systemInstruction`` first as ``system``, then
    ``messages`` or Gemini ``contents``). Completion: the reply text of the response body (OpenAI
    ``choices[0].message.content``, Gemini ``candidates[0].content.parts[].text``, Cohere ``message.content[].text``),
    or for ``chunks`` the Anthropic ``content_block_delta`` / ``text_delta`` texts of the joined stream. Tool calls:
    OpenAI ``tool_calls`` entries (a forced extraction call counts: set rule), Anthropic ``tool_use`` blocks, Gemini
    ``functionCall`` parts, Cohere ``tool_calls``."""
    record = json.loads(path.read_text(encoding="utf-8"))
    request_body = json.loads(record["request"]["body"])
    roles = _request_roles(request_body)
    if "chunks" in record:
        text, tools = "", 0
        for event in _sse_events(record["chunks"]):
            if event.get("type") == "content_block_delta" and event["delta"].get("type") == "text_delta":
                text += event["delta"]["text"]
            if event.get("type") == "content_block_start" and event["content_block"].get("type") == "tool_use":
                tools += 1
    else:
        text, tools = _reply(json.loads(record["response"]["body"]))
    return _result("Instructor for PHP HTTP recording JSON", 1, [text], [roles], tools)


COUNTERS = {
    "pdl-trace": pdl_trace,
    "lmql-playground-trace": lmql_playground_trace,
    "instructor-php-recording": instructor_php_recording,
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
