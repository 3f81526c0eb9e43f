"""Streamed responses recorded as chunk lists, joined into the one reply they stream (docs/traces.md,
"Streamed responses").

A recording of a streamed LLM response holds the reply in pieces: Server-Sent Events text (``data: {...}``
lines, ``data: [DONE]``), JSON lines (Ollama ``/api/chat``: ``{"message": {"content": delta}, "done": ...}``),
or a list of chunk objects (llama-stack recordings: ``[{"__type__": ..., "__data__": chunk}, ...]``). The
chunks are recognised by their shape, one kind per stream, and joined into the body the same API returns
unstreamed, so the readers that know that body read it:

- OpenAI chat chunks (``choices[*].delta``; also Mistral, Groq, vLLM, Ollama's ``/v1``): text, reasoning
  (``reasoning_content`` / ``reasoning``) and refusal deltas concatenated per choice; tool calls joined by their
  ``index`` (id, type and name from the chunk that has them, ``function.arguments`` fragments concatenated);
  ends with a ``finish_reason``. Joined into a ``chat.completion``.
- Anthropic Messages events (``message_start``, ``content_block_start`` / ``_delta`` / ``_stop``,
  ``message_delta``, ``message_stop``): blocks by ``index``, ``text_delta`` / ``thinking_delta`` /
  ``signature_delta`` concatenated, ``input_json_delta`` fragments concatenated and parsed as the tool input;
  ends with ``message_stop`` or a ``message_delta`` with a ``stop_reason``. Joined into a ``message``.
- Ollama ``/api/chat`` lines (``message`` and ``done``): ``message.content`` / ``message.thinking``
  concatenated, ``message.tool_calls`` appended; ends with ``done: true``. Joined into an OpenAI
  ``chat.completion`` (the request is OpenAI-shaped).
- Gemini ``streamGenerateContent`` chunks (``candidates[*].content.parts``): parts appended per candidate
  (adjacent text parts of the same kind merged); ends with a ``finishReason``.
- OpenAI Responses events (``type: response.*``): the ``response.completed`` event holds the whole response.
- Cohere v1 chat events (``event_type``: ``stream-start``, ``text-generation``, ..., ``stream-end``): the
  ``stream-end`` event's ``response`` is the whole response (else the text pieces joined); ends with ``stream-end``.

A stream that does not end (no finish reason, ``done``, ``message_stop``, ``response.completed`` or ``stream-end``) is
``stream_incomplete``: the reply was cut, and reading what arrived would train on a truncated answer. Chunks of
two kinds, a tool call whose name changes between chunks, or fragments that do not parse are
``stream_not_joined``. Either way the call is refused, never read in part. Standard library only.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 8


class StreamError(ValueError):
    """A recorded stream that cannot be joined into a complete reply; ``code`` is the problem code."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def _unwrap(chunk: Any) -> Any:
    """A chunk serialised with its type (``{"__type__": ..., "__data__": {...}}``) -> its data."""
    if isinstance(chunk, dict) and "__data__" in chunk and set(chunk) <= {"__type__", "__data__", "__module__"}:
        return chunk["__data__"]
    return chunk


def kind(chunk: Any) -> str | None:
    """The kind of one stream chunk, or None when it is not a chunk this module knows."""
    chunk = _unwrap(chunk)
    if not isinstance(chunk, dict):
        return None
    if chunk.get("object") == "chat.completion.chunk" or (
            isinstance(chunk.get("choices"), list) and any(isinstance(c, dict) and "delta" in c
                                                           for c in chunk["choices"])):
        return "openai_chat"
    if chunk.get("choices") == [] and "usage" in chunk:  # the usage chunk that ends an OpenAI stream
        return "openai_chat"
    t = chunk.get("type")
    if isinstance(t, str) and t in ("message_start", "message_delta", "message_stop", "content_block_start",
                                    "content_block_delta", "content_block_stop", "ping"):
        return "anthropic"
    if isinstance(t, str) and t.startswith("response."):
        return "openai_responses"
    if "done" in chunk and isinstance(chunk.get("message"), dict) and "role" in chunk["message"]:
        return "ollama_chat"
    if isinstance(chunk.get("candidates"), list) or ("usageMetadata" in chunk and "modelVersion" in chunk):
        return "gemini"
    if chunk.get("event_type") in _COHERE_EVENTS:
        return "cohere"
    return None


#: Cohere's v1 chat stream events (``{is_finished, event_type, ...}``).
_COHERE_EVENTS = ("stream-start", "text-generation", "tool-calls-generation", "tool-calls-chunk", "citation-generation",
                  "search-queries-generation", "search-results", "stream-end")


def is_chunk_list(value: Any) -> bool:
    """Whether ``value`` is a recorded stream: a list of two or more chunks, all of one known kind (an OpenAI
    usage-only chunk counts with its stream)."""
    if not isinstance(value, list) or len(value) < 2:
        return False
    kinds = {kind(c) for c in value}
    if len(kinds) != 1 or None in kinds:
        return False
    if kinds == {"gemini"}:  # a list of whole responses (each with its finishReason) is not one stream
        return not any(isinstance(c, dict) and c.get("finishReason") for chunk in value[:-1]
                       for c in (_unwrap(chunk).get("candidates") or []))
    if kinds == {"ollama_chat"}:
        return not any(_unwrap(chunk).get("done") is True for chunk in value[:-1])
    return True


def sse_events(text: str) -> list[Any] | None:
    """The JSON payloads of a Server-Sent Events body (``data:`` lines; ``[DONE]`` kept as the string
    ``"[DONE]"``), or None when ``text`` is not such a body. A multi-line event's data lines are joined."""
    if not isinstance(text, str) or "data:" not in text[:2000]:
        return None
    lines = text.replace("\r\n", "\n").split("\n")
    if not any(line.startswith("data:") for line in lines[:50]):
        return None
    out: list[Any] = []
    data: list[str] = []

    def flush() -> bool:
        if data:
            payload = "\n".join(data).strip()
            data.clear()
            if payload == "[DONE]":
                out.append("[DONE]")
                return True
            try:
                out.append(json.loads(payload))
            except ValueError:
                return False
        return True

    for line in lines:
        if not line.strip():
            if not flush():
                return None
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
        elif line.startswith(("event:", "id:", "retry:", ":")):
            continue
        else:
            return None  # not an event stream
    if not flush():
        return None
    return out


def json_lines(text: str) -> list[Any] | None:
    """The objects of a JSON-lines body (two or more lines, each one JSON object), or None."""
    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        return None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2:
        return None
    out = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        out.append(value)
    return out


def chunks_of_text(text: str) -> list[Any] | None:
    """The chunks of a recorded streamed body given as text (SSE or JSON lines) when they are a stream of one
    known kind, else None."""
    events = sse_events(text)
    if events is not None:
        chunks = [e for e in events if e != "[DONE]"]
        done = "[DONE]" in events
        if chunks and len({kind(c) for c in chunks} - {None}) == 1 and all(
                kind(c) is not None or (isinstance(c, dict) and c.get("type") == "error") for c in chunks):
            return chunks + (["[DONE]"] if done else [])
        if len(chunks) == 1 and kind(chunks[0]) is not None:
            return chunks
        return None
    lines = json_lines(text)
    if lines is not None and is_chunk_list(lines):
        return lines
    return None


def join(chunks: list[Any]) -> dict[str, Any]:
    """The unstreamed body the chunks stream (see module doc).

    Raises:
        StreamError("stream_incomplete") when the stream does not end;
        StreamError("stream_not_joined") when its chunks cannot be joined without guessing.
    """
    done_marker = bool(chunks) and chunks[-1] == "[DONE]"
    items = [_unwrap(c) for c in chunks if c != "[DONE]"]
    errors = [c for c in items if isinstance(c, dict) and c.get("type") == "error"]
    if errors:
        raise StreamError("stream_incomplete", f"the stream ends in an error event: "
                          f"{json.dumps(errors[0].get('error'))[:200]}")
    kinds = {kind(c) for c in items}
    if len(kinds) != 1 or None in kinds:
        raise StreamError("stream_not_joined", f"the stream's chunks are of more than one kind "
                          f"({', '.join(sorted(str(k) for k in kinds))})")
    (k,) = kinds
    joiner = {"openai_chat": _openai_chat, "anthropic": _anthropic, "ollama_chat": _ollama_chat,
              "gemini": _gemini, "openai_responses": _openai_responses, "cohere": _cohere}[k]  # type: ignore[index]
    return joiner(items, done_marker)


def _cohere(items: list[dict], done_marker: bool) -> dict[str, Any]:
    """Cohere v1 chat events: the ``stream-end`` event's ``response`` (the unstreamed body), else the
    ``text-generation`` texts joined with the calls of ``tool-calls-generation``."""
    end = next((c for c in items if c.get("event_type") == "stream-end"), None)
    if end is None:
        raise StreamError("stream_incomplete", "the Cohere stream has no stream-end event: the reply was cut")
    if isinstance(end.get("response"), dict):
        return end["response"]
    calls = [c for e in items if e.get("event_type") == "tool-calls-generation" for c in e.get("tool_calls") or []]
    return {"text": "".join(str(e.get("text", "")) for e in items if e.get("event_type") == "text-generation"),
            **({"tool_calls": calls} if calls else {}), "finish_reason": end.get("finish_reason")}


def _cat(a: Any, b: Any) -> Any:
    if b is None or b == "":
        return a
    if a is None:
        return b
    return f"{a}{b}"


def _openai_chat(items: list[dict], done_marker: bool) -> dict[str, Any]:
    choices: dict[int, dict[str, Any]] = {}
    calls: dict[int, dict[int, dict[str, Any]]] = {}
    out: dict[str, Any] = {"object": "chat.completion"}
    for chunk in items:
        for key in ("id", "model", "created", "system_fingerprint"):
            if chunk.get(key) is not None and key not in out:
                out[key] = chunk[key]
        if chunk.get("usage"):
            out["usage"] = chunk["usage"]
        for c in chunk.get("choices") or []:
            if not isinstance(c, dict):
                continue
            i = c.get("index", 0)
            choice = choices.setdefault(i, {"index": i, "message": {"role": "assistant"}, "finish_reason": None})
            msg = choice["message"]
            delta = c.get("delta") or {}
            if not isinstance(delta, dict):
                raise StreamError("stream_not_joined", "a chunk's delta is not an object")
            for key in ("content", "reasoning_content", "reasoning", "refusal"):
                if isinstance(delta.get(key), str):
                    msg[key] = _cat(msg.get(key), delta[key])
                elif delta.get(key) not in (None, "", []):
                    raise StreamError("stream_not_joined", f"a delta's {key} is not text")
            if isinstance(delta.get("function_call"), dict):  # the legacy single call
                fc = msg.setdefault("function_call", {"name": None, "arguments": ""})
                _call_part(fc, delta["function_call"])
            for tc in delta.get("tool_calls") or []:
                if not isinstance(tc, dict):
                    raise StreamError("stream_not_joined", "a tool-call delta is not an object")
                known = calls.get(i, {})
                j = tc.get("index")
                if j is None:  # no index: a delta with an id starts the next call, one without continues the last
                    j = len(known) if tc.get("id") or not known else max(known)
                call = calls.setdefault(i, {}).setdefault(j, {"id": None, "type": "function",
                                                              "function": {"name": None, "arguments": ""}})
                if tc.get("id"):
                    if call["id"] not in (None, tc["id"]):
                        raise StreamError("stream_not_joined", f"tool call {j} changes its id between chunks")
                    call["id"] = tc["id"]
                if tc.get("type"):
                    call["type"] = tc["type"]
                _call_part(call["function"], tc.get("function") or {})
            if c.get("finish_reason"):
                choice["finish_reason"] = c["finish_reason"]
    if not choices:
        raise StreamError("stream_incomplete", "the stream holds no choice")
    unended = [i for i, c in choices.items() if not c["finish_reason"]]
    if unended:
        raise StreamError("stream_incomplete", f"the stream ends without a finish_reason for choice "
                          f"{unended[0]} ({'after' if done_marker else 'and without'} data: [DONE]): the reply "
                          "was cut")
    for i, choice in choices.items():
        if calls.get(i):
            choice["message"]["tool_calls"] = [calls[i][j] for j in sorted(calls[i])]
        if "content" not in choice["message"]:
            choice["message"]["content"] = None
    out["choices"] = [choices[i] for i in sorted(choices)]
    return out


def _call_part(call: dict[str, Any], part: dict[str, Any]) -> None:
    """One chunk's piece of a function call: the name set once (a repeat of it is fine), arguments appended."""
    if not isinstance(part, dict):
        raise StreamError("stream_not_joined", "a function-call delta is not an object")
    name = part.get("name")
    if name:
        if call.get("name") not in (None, "", name):
            raise StreamError("stream_not_joined", f"a tool call's name changes between chunks "
                              f"({call['name']!r}, {name!r})")
        call["name"] = name
    args = part.get("arguments")
    if isinstance(args, str):
        call["arguments"] = (call.get("arguments") or "") + args
    elif args is not None:
        if call.get("arguments"):
            raise StreamError("stream_not_joined", "tool-call arguments given both as text and as an object")
        call["arguments"] = json.dumps(args)


def _anthropic(items: list[dict], done_marker: bool) -> dict[str, Any]:
    msg: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    ended = False
    for ev in items:
        t = ev.get("type")
        if t == "message_start":
            msg = dict(ev.get("message") or {})
            msg.setdefault("role", "assistant")
        elif t == "content_block_start":
            i = ev.get("index", len(blocks))
            blocks[i] = dict(ev.get("content_block") or {})
        elif t == "content_block_delta":
            i = ev.get("index")
            delta = ev.get("delta") or {}
            if i not in blocks:
                raise StreamError("stream_not_joined", f"a delta for content block {i}, which never started")
            b = blocks[i]
            dt = delta.get("type")
            if dt == "text_delta":
                b["text"] = _cat(b.get("text") or "", delta.get("text"))
            elif dt == "thinking_delta":
                b["thinking"] = _cat(b.get("thinking") or "", delta.get("thinking"))
            elif dt == "signature_delta":
                b["signature"] = _cat(b.get("signature") or "", delta.get("signature"))
            elif dt == "input_json_delta":
                partial[i] = partial.get(i, "") + (delta.get("partial_json") or "")
            elif dt == "citations_delta":
                b.setdefault("citations", []).append(delta.get("citation"))
            else:
                raise StreamError("stream_not_joined", f"a content delta of a type not known: {dt!r}")
        elif t == "message_delta":
            if msg is None:
                raise StreamError("stream_not_joined", "message_delta before message_start")
            d = ev.get("delta") or {}
            for key in ("stop_reason", "stop_sequence"):
                if d.get(key) is not None:
                    msg[key] = d[key]
            if ev.get("usage"):
                msg["usage"] = {**(msg.get("usage") or {}), **ev["usage"]}
        elif t == "message_stop":
            ended = True
    if msg is None:
        raise StreamError("stream_incomplete", "the stream has no message_start")
    if not ended and not msg.get("stop_reason"):
        raise StreamError("stream_incomplete", "the stream ends without message_stop or a stop_reason: the reply "
                          "was cut")
    for i, text in partial.items():
        try:
            blocks[i]["input"] = json.loads(text) if text.strip() else {}
        except ValueError as exc:
            raise StreamError("stream_not_joined", f"the input of tool call block {i} does not parse as JSON: "
                              f"{exc}") from None
    msg["content"] = [blocks[i] for i in sorted(blocks)]
    return msg


def _ollama_chat(items: list[dict], done_marker: bool) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    calls: list[Any] = []
    last = items[-1]
    for chunk in items:
        m = chunk.get("message") or {}
        for key in ("content", "thinking"):
            if isinstance(m.get(key), str):
                message[key] = _cat(message.get(key), m[key])
        calls += [c for c in m.get("tool_calls") or []]
        if chunk is not last and chunk.get("done") is True:
            raise StreamError("stream_not_joined", "a line after the one marked done")
    if last.get("done") is not True:
        raise StreamError("stream_incomplete", "the stream's last line is not done: true: the reply was cut")
    if calls:
        message["tool_calls"] = [_ollama_call(c, n) for n, c in enumerate(calls)]
    if "thinking" in message:
        message["reasoning_content"] = message.pop("thinking")
    out: dict[str, Any] = {"object": "chat.completion", "model": last.get("model"),
                           "choices": [{"index": 0, "message": message,
                                        "finish_reason": last.get("done_reason") or "stop"}]}
    if "prompt_eval_count" in last or "eval_count" in last:
        out["usage"] = {"prompt_tokens": last.get("prompt_eval_count"), "completion_tokens": last.get("eval_count")}
    return out


def _ollama_call(call: Any, n: int) -> dict[str, Any]:
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        raise StreamError("stream_not_joined", "an Ollama tool call without a function")
    fn = call["function"]
    args = fn.get("arguments")
    return {"id": call.get("id") or f"call_{n}", "type": "function",
            "function": {"name": fn.get("name"), "arguments": args if isinstance(args, str) else json.dumps(args)}}


def _gemini(items: list[dict], done_marker: bool) -> dict[str, Any]:
    cands: dict[int, dict[str, Any]] = {}
    out: dict[str, Any] = {}
    for chunk in items:
        for key in ("modelVersion", "responseId", "usageMetadata"):
            if chunk.get(key) is not None:
                out[key] = chunk[key]
        for n, c in enumerate(chunk.get("candidates") or []):
            if not isinstance(c, dict):
                continue
            i = c.get("index", n)
            cand = cands.setdefault(i, {"index": i, "content": {"role": "model", "parts": []}})
            parts = cand["content"]["parts"]
            for p in (c.get("content") or {}).get("parts") or []:
                if not isinstance(p, dict):
                    raise StreamError("stream_not_joined", "a part is not an object")
                prev = parts[-1] if parts else None
                if (prev is not None and set(p) <= {"text", "thought"} and set(prev) <= {"text", "thought"}
                        and "text" in p and "text" in prev and bool(p.get("thought")) == bool(prev.get("thought"))):
                    prev["text"] += p["text"]
                else:
                    parts.append(dict(p))
            if c.get("finishReason"):
                cand["finishReason"] = c["finishReason"]
    if not cands or any(not c.get("finishReason") for c in cands.values()):
        raise StreamError("stream_incomplete", "the stream ends without a finishReason: the reply was cut")
    out["candidates"] = [cands[i] for i in sorted(cands)]
    return out


def _openai_responses(items: list[dict], done_marker: bool) -> dict[str, Any]:
    """The ``response.completed`` event's response; where its ``output`` is empty and the stream finished items
    (``response.output_item.done``: a stream not stored, ``store: false``), those items in output order."""
    for ev in items:
        if ev.get("type") == "response.completed" and isinstance(ev.get("response"), dict):
            done = sorted((e for e in items if e.get("type") == "response.output_item.done" and
                           isinstance(e.get("item"), dict)), key=lambda e: e.get("output_index") or 0)
            if not ev["response"].get("output") and done:
                return {**ev["response"], "output": [e["item"] for e in done]}
            return ev["response"]
    last = items[-1].get("type")
    raise StreamError("stream_incomplete", f"the stream has no response.completed event (last: {last}): the "
                      "reply was cut or failed")


def _sse_pieces(value: list) -> bool:
    """Whether a list of strings is one Server-Sent Events body in pieces (network chunks, cut mid-line)."""
    return len(value) >= 2 and all(isinstance(v, str) for v in value) and \
        value[0].lstrip().startswith(("event:", "data:", ":")) and "data:" in "".join(value[:8])  # ":" a comment


def _piece_texts(value: list) -> list[str] | None:
    """The texts of a list of network chunks recorded as objects, each holding its piece of one SSE body under the
    same key beside other spellings of it (ReqLLM's fixtures: ``{b64, decoded}``), or None."""
    if len(value) < 2 or not all(isinstance(v, dict) for v in value):
        return None
    keys = [k for k in value[0] if all(isinstance(v.get(k), str) for v in value)]
    found = [[v[k] for v in value] for k in keys if _sse_pieces([v[k] for v in value])]
    found = [f for f in found if chunks_of_text("".join(f)) is not None]  # not a spelling that reads as no stream
    return found[0] if found and all(f == found[0] for f in found) else None  # one text, maybe spelt twice


def joined_tree(value: Any, depth: int = 0) -> tuple[Any, list[StreamError]]:
    """``value`` with every recorded stream in it (a chunk list, or SSE / JSON-lines text below the top) replaced
    by the body it streams; the streams that could not be joined are returned as errors (and left in place).
    Containers holding no stream are returned as they are (not copied)."""
    errors: list[StreamError] = []
    if depth > MAX_DEPTH:
        return value, errors
    if isinstance(value, list):
        if is_chunk_list(value):
            try:
                return join(value), errors
            except StreamError as exc:
                return value, [exc]
        pieces = value if _sse_pieces(value) else _piece_texts(value)
        if pieces is not None:  # an HTTP recorder's network chunks of one SSE body, cut anywhere
            return joined_tree("".join(pieces), depth + 1)
        changed = False
        out = list(value)
        for n, v in enumerate(value[:1000]):
            if isinstance(v, (list, dict, str)):
                new, errs = joined_tree(v, depth + 1)
                errors += errs
                if new is not v:
                    out[n], changed = new, True
        return (out if changed else value), errors
    if isinstance(value, dict):
        new_dict: dict[str, Any] | None = None
        for k, v in value.items():
            if isinstance(v, (list, dict, str)):
                new, errs = joined_tree(v, depth + 1)
                errors += errs
                if new is not v:
                    new_dict = new_dict if new_dict is not None else dict(value)
                    new_dict[k] = new
        return (new_dict if new_dict is not None else value), errors
    if isinstance(value, str) and depth and ("data:" in value[:200] or value[:1] == "{" and "}\n{" in value[:20000]):
        chunks = chunks_of_text(value)
        if chunks is not None:
            try:
                return join(chunks), errors
            except StreamError as exc:
                return value, [exc]
    return value, errors


def joined_records(records, problems, fmt: str):
    """``(source, value)`` records with their recorded streams joined (``joined_tree``); a record holding a
    stream that cannot be joined is reported with its code (``stream_incomplete`` / ``stream_not_joined``) and
    not read (reading it in part would keep a truncated reply)."""
    for source, value in records:
        new, errors = joined_tree(value)
        if errors:
            problems.error(errors[0].code, f"recorded streamed response: {errors[0]} (docs/traces.md, streamed "
                           "responses); the record is not read", source)
            continue
        yield source, new
