"""Requests and responses logged as records of their own, joined by the id they share (docs/traces.md, "Requests
and responses logged apart"): an application's ``llm.request`` / ``llm.response`` log lines by ``request_id``, an
OpenAI, Anthropic or vLLM batch's input and output lines (one file after the other) by ``custom_id``. Each pair is
read as one request/response record, ``{"request": ..., "response": ...}``, the general path's ``request_response``
shape.

The id is found, not named: a scalar at the same path of request and response records (two levels deep at most)
whose last key is an id (``request_id``, ``custom_id``, ``callId``, ``id``), each value once among the requests and
once among the responses, pairing them. A request no response answers is no call (``request_without_response``,
a warning); a response no request precedes or follows has lost its context (``response_without_request``, an
error). Not a format (no ``FORMAT``); standard library only.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import re
from collections.abc import Iterator
from itertools import chain, islice
from typing import Any, Literal

from drafters.traces.formats import _streams
from drafters.traces.formats._batches import decoded_tree
from drafters.traces.formats._call_io import INPUT_KEYS, input_output, items_call, message_lists
from drafters.traces.formats._spellings import is_message, role_key, role_value
from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Source

SAMPLE = 40
_ID_KEY = re.compile(r"(?:^|[_-])id$|[a-z]Id$|ID$")

Side = Literal["request", "response"]


def side_of(value: Any) -> Side | None:
    """"request" for a record holding one call's input messages (one list, ending with a message other than the
    assistant's), no answer outside it and no key naming an output (``response``, ``output``, ``completion``, ...);
    "response" for one whose messages are all the assistant's (``choices[0].message``, a Messages API reply, an
    ``output`` item); None for a whole call or anything else. ``value`` is decoded (``decoded_tree``)."""
    if not isinstance(value, dict) or input_output(value) is not None or items_call(value) is not None:
        return None
    lists = [msgs for _, msgs in message_lists(value, need_assistant=False)]
    if len(lists) == 1 and lists[0] and role_value(lists[0][-1], role_key(lists[0]) or "") not in (None, "assistant"):
        outside = _roles(value, skip=lists[0])  # a chat row ends with its answer; a span keeps its answer as text
        return "request" if not outside and not _names_output(value, skip=lists[0]) else None
    if any(re.search(r"\.(" + "|".join(INPUT_KEYS) + r")$", path) for path, _ in message_lists(value)):
        return None  # the assistant's message in a message list (a chat store's new messages, one line each)
    return "response" if _roles(value) == {"assistant"} else None


_TOOL_LISTS = ("tools", "functions", "tool_definitions")  # ``{"type": "function", ...}``: no message of role tool


def _roles(value: Any, depth: int = 0, skip: list | None = None) -> set[str | None]:
    """The roles of the messages anywhere in ``value`` but in the list ``skip`` (a request's own input)."""
    if depth > 6 or value is skip:
        return set()
    if isinstance(value, dict):
        if is_message(value):
            return {role_value(value, role_key([value]) or "")}
        return {r for k, v in value.items() if k not in _TOOL_LISTS for r in _roles(v, depth + 1, skip)}
    if isinstance(value, list):
        return {r for v in value[:50] for r in _roles(v, depth + 1, skip)}
    return set()


_OUTPUT_NAME = re.compile(r"respon|output|completion|result|answer|generat|repl", re.IGNORECASE)


def _names_output(value: Any, depth: int = 0, skip: list | None = None) -> bool:
    """Whether a key of ``value`` (outside the list ``skip``) names an output: then the record may hold its answer
    in a form the request / response test does not see (a span's ``ai.response.text``)."""
    if depth > 6 or value is skip:
        return False
    if isinstance(value, dict):
        return any(_OUTPUT_NAME.search(k) or _names_output(v, depth + 1, skip) for k, v in value.items())
    if isinstance(value, list):
        return any(_names_output(v, depth + 1, skip) for v in value[:50])
    return False


def _answer(raw: Any, decoded: Any) -> Any:
    """The object of a response record that holds its answer: down its envelopes (``payload``, ``response.body``,
    ``result``, a stream's ``event``) while one key alone holds the assistant's messages, to a message or a body of
    ``choices``; the envelope's other keys (ids, status, usage) are no part of the call. ``raw`` is the record as
    read, ``decoded`` the same with its JSON text decoded (``decoded_tree``): the answer is taken from ``raw``
    wherever ``raw`` holds it as an object."""
    while isinstance(decoded, dict) and not is_message(decoded) and "choices" not in decoded:
        holding = [k for k, v in decoded.items() if isinstance(v, dict) and _roles(v) == {"assistant"}]
        if len(holding) != 1:
            break
        decoded = decoded[holding[0]]
        raw = raw.get(holding[0]) if isinstance(raw, dict) else None
        raw = raw if isinstance(raw, dict) else None
    return raw if raw is not None else decoded


def _id_values(value: dict) -> dict[str, Any]:
    """{path: scalar} of the record's id-named keys, at most two levels deep (``custom_id``, ``meta.request_id``)."""
    found: dict[str, Any] = {}
    for key, v in value.items():
        if isinstance(v, dict):
            found.update({f"{key}.{k}": w for k, w in v.items()
                          if _ID_KEY.search(k) and isinstance(w, (str, int)) and not isinstance(w, bool)})
        elif _ID_KEY.search(key) and isinstance(v, (str, int)) and not isinstance(v, bool):
            found[key] = v
    return found


def join_key(values: list[Any]) -> str | None:
    """The path of the id that pairs the requests and responses among ``values`` (records), or None: every value of
    it once per side, at least one pair, and every request but the last answered within the sample."""
    values = list({json.dumps(v, sort_keys=True, default=str): v for v in map(decoded_tree, values)}.values())
    sides = [(side_of(v), v) for v in values]  # a record logged twice, exactly, is one (above)
    requests = [_id_values(v) for s, v in sides if s == "request"]
    responses = [_id_values(v) for s, v in sides if s == "response"]
    if not requests or not responses or any(s is None and is_message(v) for s, v in sides):
        return None
    fits: list[tuple[bool, int, str]] = []
    for path in set(requests[0]) & set(responses[0]):
        asked = [r.get(path) for r in requests]
        answered = [r.get(path) for r in responses]
        if None in asked or None in answered or len(set(asked)) < len(asked) or len(set(answered)) < len(answered):
            continue
        pairs = len(set(asked) & set(answered))
        if pairs and pairs >= min(len(asked), len(answered)) - 1:
            fits.append((path.split(".")[-1] == "id", -pairs, path))
    # a key naming the call (request_id, custom_id) before a record's own id (two tables' row ids both 1, 2, ...)
    return min(fits)[2] if fits else None


def lone_side(values: list[Any]) -> tuple[Side, str] | None:
    """(side, id path) when every one of ``values`` is a request, or every one a response, all carrying one id key
    (each value once): one half of calls logged apart (a batch's input or output file alone), else None."""
    values = [decoded_tree(v) for v in values]
    sides = {side_of(v) for v in values}
    if len(sides) != 1 or None in sides:
        return None
    ids = [_id_values(v) for v in values]
    # a key naming the call (custom_id, request_id) before the record's own id
    for path in sorted(set.intersection(*(set(i) for i in ids)), key=lambda p: (p.split(".")[-1] == "id", len(p))):
        if len({i[path] for i in ids}) == len(ids):
            return sides.pop(), path  # type: ignore[return-value]
    return None


def joined_records(records: Iterator[tuple[Source, Any]], problems: ProblemSink, source: Source
                   ) -> tuple[Iterator[tuple[Source, Any]], bool]:
    """``records`` with each request and its response (``join_key``) read as one record ``{"request",
    "response"}`` (at the first of the two's source), other records as they are; and whether any was joined. A file
    of only one half (``lone_side``) is refused, ``responses_not_in_file`` / ``requests_not_in_file`` (``source``:
    the file), saying how to give both halves."""
    raw_head = list(islice(records, SAMPLE))
    records = chain(raw_head, records)
    if any(_chunk_path(decoded_tree(v)) is not None for _, v in raw_head):  # else no record is decoded here
        records = _folded(records, problems)
    head = list(islice(records, SAMPLE))
    key = join_key([v for _, v in head])
    if key is not None:
        return _joined(chain(head, records), key, problems), True
    lone = lone_side([v for _, v in head]) if len(head) > 1 else None
    if lone is None:
        return chain(head, records), False
    side, path = lone
    missing = "response" if side == "request" else "request"
    problems.error(f"{missing}s_not_in_file", f"every record is a call's {side} with its own {path} and none holds "
                   f"its {missing}: calls logged in two halves (a batch's input and output files?); put both halves in "
                   f"one file (`cat requests.jsonl responses.jsonl > calls.jsonl`), where they are paired by {path}",
                   source)
    return iter(()), False


def _joined(records: Iterator[tuple[Source, Any]], key: str, problems: ProblemSink
            ) -> Iterator[tuple[Source, Any]]:
    # pairs go out in the order of their first record (a batch's results come in any order): each once no earlier
    # record still waits for its other half. Records are kept as read (a tool call's arguments text unchanged);
    # decoded only to tell the halves apart.
    waiting: dict[tuple[Side, Any], tuple[int, Source, Any, Any]] = {}
    ready: list[tuple[int, Source, dict]] = []
    other: dict[Side, Side] = {"request": "response", "response": "request"}
    failed: dict[Any, Source] = {}  # ids answered by an error (a batch's errored result, a status 400 body)
    pairs, at, repeats = 0, None, 0
    logged: set[bytes] = set()  # digests of the halves read so far (a line logged twice is one)
    for n, (source, value) in enumerate(records):
        decoded = decoded_tree(value)
        side = side_of(decoded)
        ident = _id_values(decoded).get(key) if isinstance(decoded, dict) else None
        if ident is not None:
            exact = hashlib.sha256(json.dumps(decoded, sort_keys=True, default=str).encode()).digest()
            if exact in logged:
                repeats += 1
                continue
            logged.add(exact)
        if side is None and ident is not None and not _roles(decoded):  # no message at all: an attempt failed
            failed.setdefault(ident, source)  # (a proxy's retry may answer the request after)
            continue
        if side is None or ident is None:  # another record, or a half without the key: read as it is
            yield source, value
            continue
        match = waiting.pop((other[side], ident), None)
        if match is None:
            waiting[(side, ident)] = (n, source, value, decoded)
            continue
        halves = {other[side]: match[2:], side: (value, decoded)}
        joined = {"request": halves["request"][0], "response": _answer(*halves["response"])}
        heapq.heappush(ready, (match[0], match[1], joined))
        pairs, at = pairs + 1, at or match[1]
        oldest = min((w[0] for w in waiting.values()), default=n + 1)
        while ready and ready[0][0] < oldest:
            yield heapq.heappop(ready)[1:]
    while ready:
        yield heapq.heappop(ready)[1:]
    if at is not None:
        problems.warning("requests_joined_by_id", f"{pairs} request(s) and their responses, logged as records of their "
                         f"own, read as one record each, paired by {key}", at)
    if repeats:
        problems.warning("repeated_records_skipped", f"{repeats} record(s) repeat an earlier one exactly (a request or "
                         "response logged twice): read once", at or Source("generic", ""))
    _unpaired(waiting, failed, key, problems)


def _unpaired(waiting: dict, failed: dict[Any, Source], key: str, problems: ProblemSink) -> None:
    """Requests left unanswered or answered by an error (a warning: no call), responses left without their request
    (an error each: a reply whose context is lost)."""
    unanswered = [(ident, w[1]) for (side, ident), w in waiting.items() if side == "request"]
    if unanswered:
        errors = sum(ident in failed for ident, _ in unanswered)
        problems.warning("request_without_response", f"{len(unanswered)} request(s) answered by an error ({errors}) or "
                         f"by no response ({len(unanswered) - errors}), paired by {key}: no reply to train on",
                         unanswered[0][1])
    for (side, ident), w in waiting.items():
        if side == "response":
            problems.error("response_without_request", f"a response ({key} {ident!r}) whose request is not in the "
                           "file: its context is lost, so it is not read", w[1])



#: Chunks that are pieces only (deltas, events); Gemini's and Ollama's chunks are also whole unstreamed responses.
_DELTA_KINDS = ("openai_chat", "anthropic", "openai_responses", "cohere")


def _is_delta(value: Any) -> bool:
    return isinstance(value, dict) and _streams.kind(value) in _DELTA_KINDS


def _chunk_path(value: Any) -> str | None:
    """Where a record keeps one chunk of a streamed response (``_streams.kind``, a delta kind): "" for the record
    itself, a key (``data``, ``chunk``) or two, else None."""
    if not isinstance(value, dict):
        return None
    if _is_delta(value):
        return ""
    for key, v in value.items():
        if _is_delta(v):
            return key
        if isinstance(v, dict):
            inner = next((k for k, w in v.items() if _is_delta(w)), None)
            if inner is not None:
                return f"{key}.{inner}"
    return None


def _ends_stream(chunk: dict) -> bool:
    """Whether a chunk is one a stream ends with (then ``_streams.join`` is tried)."""
    chunk = chunk.get("__data__", chunk)
    choices = chunk.get("choices") if isinstance(chunk.get("choices"), list) else []
    candidates = chunk.get("candidates") if isinstance(chunk.get("candidates"), list) else []
    return (any(isinstance(c, dict) and c.get("finish_reason") for c in choices) or chunk.get("done") is True
            or chunk.get("type") in ("message_stop", "response.completed", "response.incomplete", "response.failed")
            or any(isinstance(c, dict) and c.get("finishReason") for c in candidates)
            or chunk.get("event_type") == "stream-end")


def _folded(records: Iterator[tuple[Source, Any]], problems: ProblemSink) -> Iterator[tuple[Source, Any]]:
    """``records`` with each streamed response logged one chunk per record (beside its request) folded into one
    record holding the joined body where its first chunk was (``_streams.join``), once a chunk ends the stream.
    A stream's chunks share the record's id values outside the chunk (``request_id``). A stream that never ends is
    ``stream_incomplete``, one that cannot be joined ``stream_not_joined``: not read (a truncated reply)."""
    open_streams: dict[tuple, tuple[Source, dict, str, list]] = {}
    for source, raw in records:
        value = decoded_tree(raw)
        path = _chunk_path(value)
        if path is None:
            yield source, raw  # as read: only a stream's chunks are decoded here
            continue
        chunk = _get(value, path)
        group = tuple(sorted((k, str(v)) for k, v in _id_values(value).items() if not path or not k.startswith(path)))
        first = open_streams.setdefault(group, (source, value, path, []))
        first[3].append(chunk)
        if not _ends_stream(chunk):
            continue
        del open_streams[group]
        try:
            body = _streams.join(first[3])
        except _streams.StreamError as exc:
            problems.error(exc.code, f"a response streamed one chunk per record: {exc}; not read", first[0])
            continue
        yield first[0], _with(first[1], path, body)
    for source, _, _, chunks in open_streams.values():
        if any(not (isinstance(c, dict) and c.get("choices") == []) for c in chunks):  # not a usage chunk after the end
            problems.error("stream_incomplete", f"a response streamed one chunk per record ({len(chunks)} chunks) never "
                           "ends (no finish reason): the reply was cut; not read", source)


def _get(value: dict, path: str) -> Any:
    for key in path.split(".") if path else []:
        value = value[key]
    return value


def _with(value: dict, path: str, body: Any) -> Any:
    """``value`` with the object at ``path`` ("" the record itself, "a" or "a.b") replaced by ``body``."""
    if not path:
        return body
    head, _, rest = path.partition(".")
    return {**value, head: _with(value[head], rest, body)}
