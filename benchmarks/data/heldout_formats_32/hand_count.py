"""Hand counts of the thirty-second held-out set (benchmarks/data/heldout_formats_32/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the seventh and eighth sets'):
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
- reasoning written inline in the reply text as a leading ``<think>...</think>`` span belongs to that reply (it is
  one call); the completion text recorded here is the reply without that span.
Rules made explicit for this set (recorded HTTP exchanges, batch outputs):
- each recorded request / response exchange with a successful status (HTTP 200) and a model reply is one call whose
  context is the request's message list and whose completion is the reply (for a streamed reply, the text of all
  its chunks joined); an exchange answered with an error status (4xx) and an error body, or a response that holds no
  reply content at all because the provider withheld it (a candidate with no content whose finish reason is an
  error or a block such as ``RECITATION``, no output tokens counted), is a failed request, not a call;
- a later request continues an earlier call's thread when its message list starts with the earlier request's whole
  message list followed by more messages (the earlier reply and what came after it); otherwise it opens a new
  conversation; identical requests recorded side by side (the same single message sent again) are separate
  conversations, not continuations;
- exchanges that are not LLM calls (none are kept in this set's subsets) are not counted.
Context roles: as the request writes them (``system``, ``user``, ``assistant``, ``tool``; Gemini ``user`` /
``model``); a message made only of tool results is written ``tool``.

Run: ``python benchmarks/data/heldout_formats_32/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_THINK = re.compile(r"^\s*<think>.*?</think>", re.S)
_DECODER = json.JSONDecoder()


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _sse_events(body: str) -> list:
    """The JSON payloads of a server-sent-events body (``data:`` lines, with or without a space; ``[DONE]``
    skipped). The first JSON value of each line is read: one recorded Cerebras chunk carries a stray ``"`` after its
    object."""
    events = []
    for line in body.splitlines():
        line = line.strip()
        if not line.startswith("data:"):
            continue
        payload = line[len("data:"):].strip()
        if not payload or payload == "[DONE]":
            continue
        events.append(_DECODER.raw_decode(payload)[0])
    return events


def _chat_reply(body: str) -> tuple[str, int] | None:
    """The reply text and the number of tool calls of a Chat Completions response body (plain JSON or a streamed
    SSE body), or None where the body holds no choice (an error body)."""
    text = body.lstrip()
    if text.startswith("data:"):
        parts: list = []
        tool_ids: set = set()
        seen = False
        for ev in _sse_events(body):
            for ch in ev.get("choices") or []:
                seen = True
                delta = ch.get("delta") or {}
                parts.append(delta.get("content") or "")
                for tc in delta.get("tool_calls") or []:
                    tool_ids.add(tc.get("index", tc.get("id")))
        if not seen:
            return None
        return _THINK.sub("", "".join(parts), count=1), len(tool_ids)
    doc = json.loads(body)
    choices = doc.get("choices") if isinstance(doc, dict) else None
    if not choices:
        return None
    msg = choices[0].get("message") or {}
    return _THINK.sub("", msg.get("content") or "", count=1), len(msg.get("tool_calls") or [])


class _Threads:
    """Groups calls into conversations: a request whose message list starts with an earlier request's whole list
    followed by more messages continues that request's thread; anything else opens a new thread."""

    def __init__(self) -> None:
        self.threads: list = []  # each: {"last": messages list, "n": calls}

    def add(self, messages: list) -> None:
        key = [json.dumps(m, sort_keys=True, ensure_ascii=False) for m in messages]
        for t in self.threads:
            last = t["last"]
            if len(last) < len(key) and key[:len(last)] == last:
                t["last"] = key
                t["n"] += 1
                return
        self.threads.append({"last": key, "n": 1})

    def count(self) -> int:
        return len(self.threads)


def _msg_key(m: dict) -> dict:
    # compare messages by role and content only (a resent assistant message may spell an empty content as "" where
    # the reply had null; its tool calls are compared by id)
    return {"role": m.get("role"), "content": m.get("content") or "",
            "tool_calls": [tc.get("id") for tc in m.get("tool_calls") or []]}


def huggingface_js_tapes(path: Path) -> dict:
    """huggingface.js ``@huggingface/inference`` VCR tapes (``packages/inference/test/tapes.json``, written by the
    package's test recorder ``test/vcr.ts``: one JSON object, key = SHA-256 of the request's url / method / body,
    value = ``{url, init: {headers, method, body}, response: {body, status, statusText, headers}}``; ``init.body``
    is the request body as a JSON string, ``response.body`` the response text). This set's files keep only the
    tapes whose url ends in ``/chat/completions`` (see SOURCES.md). Each tape is one recorded request: with status
    200 and a body holding choices it is one call, its context the request's ``messages`` (all single user
    messages here), its completion ``choices[0].message.content`` or, for a streamed SSE body, the joined
    ``delta.content`` of its chunks (a leading ``<think>...</think>`` span, written by the DeepSeek-R1 models,
    belongs to the reply and is left out of the text). Tapes answered with 4xx and an error body (a gated or
    missing model, no key, a bad request) are failed requests, not calls. Every call is single-shot; the same
    prompt recorded under several tapes (different models, providers, stream flags) gives separate conversations.
    No tools are offered and no tool calls are made."""
    tapes = json.loads(path.read_text(encoding="utf-8"))
    threads = _Threads()
    completions, contexts, tools = [], [], 0
    for tape in tapes.values():
        if tape["response"]["status"] != 200:
            continue
        reply = _chat_reply(tape["response"]["body"])
        if reply is None:
            continue
        req = json.loads(tape["init"]["body"])
        messages = req["messages"]
        threads.add([_msg_key(m) for m in messages])
        completions.append(reply[0])
        contexts.append([m["role"] for m in messages])
        tools += reply[1]
    return _result("huggingface.js inference VCR tapes JSON", threads.count(), completions, contexts, tools)


def php_vcr_phpllm(path: Path) -> dict:
    """php-vcr cassette in its JSON storage (written by php-vcr for PHPLLM's recorded tests: a JSON list of
    recorded exchanges ``{request: {method, url, headers, body}, response: {status: {code, message}, headers,
    body}}``; ``request.body`` is the Chat Completions request as a JSON string, ``response.body`` the response
    text, plain JSON or a streamed SSE body). Each exchange with status 200 is one call: its context the request's
    ``messages``, its completion ``choices[0].message.content`` (or the joined ``delta.content`` of the stream), its
    tool calls the reply's ``tool_calls``. A request whose messages start with an earlier request's messages
    followed by the earlier reply (and, in the tool-calling file, the tool result) continues that thread: both
    two-exchange files are one conversation of two calls (in the tool-calling file the first call emits one
    ``get_weather`` tool call, the second answers after the ``tool`` message); the streaming file is one call."""
    threads = _Threads()
    completions, contexts, tools = [], [], 0
    for ex in json.loads(path.read_text(encoding="utf-8")):
        if ex["response"]["status"]["code"] != 200:
            continue
        reply = _chat_reply(ex["response"]["body"])
        if reply is None:
            continue
        messages = json.loads(ex["request"]["body"])["messages"]
        threads.add([_msg_key(m) for m in messages])
        completions.append(reply[0])
        contexts.append(["tool" if m["role"] == "tool" else m["role"] for m in messages])
        tools += reply[1]
    return _result("php-vcr JSON cassette (PHPLLM)", threads.count(), completions, contexts, tools)


def _gemini_parts(parts) -> list:
    # the request writes ``parts`` as one object for a single text part in the text file, as a list in the other
    return parts if isinstance(parts, list) else [parts]


def vertex_batch_prediction(path: Path) -> dict:
    """Vertex AI batch prediction output JSONL for Gemini (``predictions.jsonl`` written by a Vertex AI
    ``BatchPredictionJob`` into the output bucket: one request per line, ``{status, processed_time, request:
    {contents: [{role, parts}]}, response: {candidates: [{content: {role: "model", parts}, finishReason, ...}],
    modelVersion, usageMetadata}}``; lines are in completion order, not input order). Each line with an empty
    ``status`` and a candidate holding content is one single-shot call: its context the request's ``contents``
    (one ``user`` turn of text, with image / video ``file_data`` parts in the multimodal file), its completion the
    text parts of ``candidates[0].content``. One line of the text file (the lemon-cake prompt) has a candidate with
    no content, ``finishReason`` ``RECITATION`` and no output tokens in ``usageMetadata``: the reply was withheld,
    so it is a failed request, not a call (explicit rule). Every line is its own conversation (unrelated prompts
    side by side). No tools are offered and no ``functionCall`` parts occur."""
    completions, contexts, tools, convs = [], [], 0, 0
    for rec in _lines(path):
        if rec.get("status"):
            continue
        cands = (rec.get("response") or {}).get("candidates") or []
        if not cands or not (cands[0].get("content") or {}).get("parts"):
            continue
        parts = _gemini_parts(cands[0]["content"]["parts"])
        completions.append("".join(p.get("text") or "" for p in parts if "functionCall" not in p))
        tools += sum(1 for p in parts if p.get("functionCall"))
        req = rec["request"]
        ctx = ["system"] if req.get("systemInstruction") or req.get("system_instruction") else []
        contexts.append(ctx + [c.get("role") or "user" for c in req["contents"]])
        convs += 1
    return _result("Vertex AI batch prediction output JSONL (Gemini)", convs, completions, contexts, tools)


COUNTERS = {
    "huggingface-js-tapes": huggingface_js_tapes,
    "php-vcr-phpllm": php_vcr_phpllm,
    "vertex-batch-prediction": vertex_batch_prediction,
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
