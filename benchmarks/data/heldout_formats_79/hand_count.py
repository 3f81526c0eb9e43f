"""Hand counts of the seventy-ninth held-out set (benchmarks/data/heldout_formats_79/files), computed from the raw
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
Rules made explicit for this set (written before the product was run):
- one recorded HTTP exchange (a cassette / snapshot / replay entry storing the request sent to a model API and the
  reply received) is one recorded call; a file holding one such exchange is one call and one conversation;
- a request / response body kept as a JSON-encoded string inside the recording (ExVCR's ``body``) is read as the JSON
  it encodes; the call's context and reply are taken from it;
- a reply stored twice in one exchange (the Google GenAI SDK replay keeps the wire chunks as ``body_segments`` and
  the SDK's parsed objects as ``sdk_response_segments``) is that one call, not two; the chunks of one streamed reply
  (several ``body_segments``) are one call;
- an ``assistant`` / ``model`` message inside a recorded request's history is context of the recorded call (the test
  wrote it, or an earlier call produced it), not a call of its own: no reply to it is recorded in the file;
- a reply made only of function calls (no text) is a call all the same; its completion text is empty and each
  ``functionCall`` part is one tool call; a ``thoughtSignature`` beside a part is an opaque token, not text;
- a reply's reasoning (an Anthropic ``thinking`` block, a chat-completions ``reasoning_content`` / ``reasoning``
  field) belongs to that reply (shared rule); the completion recorded here is the reply text without it;
- a legacy text-completions request (``prompt`` string) has the context ``user``; its reply is ``choices[0].text``
  as saved, leading spaces and newlines kept;
- headers, ids, keys, test names, timestamps, token counts, model names and generation parameters are metadata,
  not context.
Context roles: as recorded (``model`` written ``assistant``; a message made only of tool results / function
responses written ``tool``); a system prompt kept beside the messages (Anthropic ``system``, Gemini
``systemInstruction``) is written ``system`` at the head of the context (none in this set's files).

Run: ``python benchmarks/data/heldout_formats_79/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def exopenai_exvcr(path: Path) -> dict:
    """ExVCR JSON cassette written by ExOpenAI's tests (``test/fixture/vcr_cassettes/*.json``, Elixir ExVCR with the
    hackney adapter: a JSON list of ``{request: {body, headers, method, options, request_body, url}, response:
    {binary, body, headers, status_code, type}}``, both bodies JSON-encoded strings). Each entry whose request is a
    POST to an OpenAI ``chat/completions`` or ``completions`` endpoint is one recorded call and its own conversation
    (set rule). Context: the roles of the request's ``messages`` (chat) or ``user`` for a ``prompt`` (legacy
    completions). Completion: ``choices[0].message.content`` (chat) or ``choices[0].text`` as saved (completions);
    tool calls: ``choices[0].message.tool_calls`` (none here). Headers, options and usage are metadata."""
    completions, contexts, tools = [], [], 0
    for entry in json.loads(path.read_text(encoding="utf-8")):
        request, response = entry["request"], entry["response"]
        url = request["url"].split("?", 1)[0]
        if request["method"] != "post" or not url.endswith(("/chat/completions", "/completions")):
            continue
        body = json.loads(request["body"])
        reply = json.loads(response["body"])
        choice = reply["choices"][0]
        if "messages" in body:
            contexts.append([m["role"] for m in body["messages"]])
            completions.append(choice["message"].get("content") or "")
            tools += len(choice["message"].get("tool_calls") or [])
        else:
            contexts.append(["user"])
            completions.append(choice["text"])
    return _result("ExVCR JSON cassette (ExOpenAI)", len(completions), completions, contexts, tools)


def poe_snapshotfetch(path: Path) -> dict:
    """Poe AI-SDK provider HTTP snapshot JSON (``.snapshots/<url-path>-<model>-<hash>.json``, written by the
    provider's ``SnapshotFetch`` in record mode: ``{key, test: {name, file}, request: {body}, response: {status,
    headers, body | chunks}}``). One file is one recorded call, one conversation (set rule). Context: the roles of
    ``request.body.messages`` (a top-level ``system`` would be written ``system`` first; none here). Completion: for
    an Anthropic Messages body (``/v1/messages``) the ``text`` blocks of ``response.body.content`` joined (a
    ``thinking`` block belongs to the reply: not completion text), tool calls its ``tool_use`` blocks; for a
    chat-completions body ``choices[0].message.content`` (``reasoning_content`` / ``reasoning`` belong to the reply),
    tool calls ``message.tool_calls``. Neither file in this set is streamed (no ``chunks``) and none holds a tool
    call."""
    data = json.loads(path.read_text(encoding="utf-8"))
    request, body = data["request"]["body"], data["response"]["body"]
    context = (["system"] if request.get("system") else []) + [m["role"] for m in request.get("messages", [])]
    if isinstance(body.get("content"), list):
        text = "".join(b.get("text", "") for b in body["content"] if b.get("type") == "text")
        tools = sum(1 for b in body["content"] if b.get("type") == "tool_use")
    else:
        message = body["choices"][0]["message"]
        text, tools = message.get("content") or "", len(message.get("tool_calls") or [])
    return _result("Poe AI-SDK provider SnapshotFetch JSON", 1, [text], [context], tools)


def _gemini_role(content: dict) -> str:
    parts = content.get("parts") or []
    if parts and all("functionResponse" in p for p in parts):
        return "tool"
    return "assistant" if content.get("role") == "model" else content.get("role", "user")


def genai_sdk_replay(path: Path) -> dict:
    """Google GenAI SDK replay file (``tests/cassettes/gemini/<test module>/<test id>/mldev.json``, written by the
    ``google-genai`` Python SDK's replay client in record mode, as family-assistant's tests configure it: ``{replay_id,
    interactions: [{request: {method, url, headers, body_segments: [{contents, tools?, generationConfig,
    systemInstruction?}]}, response: {status_code, headers, body_segments: [wire chunk, ...], byte_segments,
    sdk_response_segments: [parsed chunk, ...]}}]}``). Each interaction is one recorded call (set rules: the reply is
    kept twice, wire and parsed, and may be streamed over several chunks: still one call). Context: ``system`` first
    where ``systemInstruction`` is set, then one role per ``contents`` item (``model`` -> ``assistant``, a message of
    only ``functionResponse`` parts -> ``tool``). Completion: the ``text`` parts (not ``thought``) of the wire
    ``body_segments`` candidates joined in order; tool calls: their ``functionCall`` parts. Interactions whose
    contents continue an earlier interaction's contents and reply would share a conversation; each file here holds one
    interaction, so one conversation."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts, tools = [], [], 0
    for interaction in data["interactions"]:
        request = interaction["request"]["body_segments"][0]
        context = ["system"] if request.get("systemInstruction") else []
        context += [_gemini_role(c) for c in request.get("contents", [])]
        text = ""
        for chunk in interaction["response"]["body_segments"]:
            for candidate in chunk.get("candidates", [])[:1]:
                for part in (candidate.get("content") or {}).get("parts", []):
                    if "text" in part and not part.get("thought"):
                        text += part["text"]
                    if "functionCall" in part:
                        tools += 1
        completions.append(text)
        contexts.append(context)
    return _result("Google GenAI SDK replay JSON", len(completions), completions, contexts, tools)


COUNTERS = {
    "exopenai-exvcr": exopenai_exvcr,
    "poe-snapshotfetch": poe_snapshotfetch,
    "genai-sdk-replay": genai_sdk_replay,
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
