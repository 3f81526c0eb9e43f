"""Records that are recorded HTTP exchanges (a request URL and the response's status beside the bodies), as JSON
recorders write them outside a cassette: a fetch recorder's tapes (``{url, init: {body}, response: {status,
body}}``), nock (``scope`` / ``path`` / ``status``), php-vcr JSON, Azure's test proxy (``RequestUri`` /
``StatusCode``). The general path reads their bodies as request/response records; this module tells them apart:

- an exchange whose status is an HTTP error (400 and up) holds no model turn (the body is the server's error):
  skipped, warned ``error_response``, as a cassette's are;
- each exchange is a request the client sent, so two with the same input and output are two calls (a test suite
  sending one prompt streamed and not), never a trace restating its generation (``_chains.drop_repeats``);
- a body (or a stream's network chunk) a recorder kept as base64, gzip-compressed or not (Echoproxia's ``body``
  and ``chunks``), is the text it encodes, where that text is JSON or Server-Sent Events (``decoded_bodies``).

Not a format (no ``FORMAT``). Torch-free.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import re
import zlib
from typing import Any

from drafters.traces.formats.base import ProblemSink
from drafters.traces.json_paths import child_path, path_steps
from drafters.traces.model import Source

URL_KEYS = ("url", "uri", "RequestUri", "requestUri", "request_url", "request_path")  # request_path: Helicone's
STATUS_KEYS = ("status", "status_code", "statusCode", "StatusCode", "response_status", "responseStatus",
               "response_status_code")  # response_status_code: Portkey's logs
_SIDES = ("request", "response", "init", "req", "res")


def _status(value: Any) -> int | None:
    if isinstance(value, dict):  # php-vcr, Ruby VCR: {"code": 200, "message": "OK"}
        value = value.get("code")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and 100 <= value < 600 else None


def http_status(record: Any) -> int | None:
    """The HTTP status of a record that is a recorded exchange (a URL, or nock's ``scope`` and ``path``, at the
    record or its request side; a status at the record or its response side), else None."""
    if not isinstance(record, dict):
        return None
    sides = [record, *(record[k] for k in _SIDES if isinstance(record.get(k), dict))]
    has_url = any(isinstance(s.get(k), str) and "/" in s[k] for s in sides for k in URL_KEYS) or \
        (isinstance(record.get("scope"), str) and isinstance(record.get("path"), str))
    if not has_url:
        return None
    for side in (record.get("response"), record.get("res"), record):
        if isinstance(side, dict):
            found = next((s for k in STATUS_KEYS if (s := _status(side.get(k))) is not None), None)
            if found is not None:
                return found
    return None


def failed(record: Any) -> bool:
    """Whether ``record`` is a recorded exchange whose response is an HTTP error (no model turn)."""
    status = http_status(record)
    return status is not None and status >= 400


def without_failed(value: Any, depth: int = 0) -> tuple[Any, int]:
    """``(value, dropped)``: ``value`` with the failed exchanges among its items removed (a list of exchanges, an
    object of exchanges keyed by hash, either one object down: ``{"Entries": [...]}``), or ``(None, 1)`` when
    ``value`` is one. Anything else is returned as it is."""
    if failed(value):
        return None, 1
    if depth > 1 or not isinstance(value, (dict, list)) or http_status(value) is not None:
        return value, 0
    items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
    kept, dropped = [], 0
    for key, item in items:
        item, n = without_failed(item, depth + 1)
        dropped += n
        if item is not None:
            kept.append((key, item))
    if not dropped:
        return value, 0
    return (dict(kept) if isinstance(value, dict) else [item for _, item in kept]), dropped


def all_exchanges(records: list[Any]) -> bool:
    """Whether every record is a recorded exchange (then none restates another's call)."""
    return bool(records) and all(http_status(r) is not None for r in records)


#: The sides of an exchange: where its request sits (a mock server's ``when``), and where its response does.
REQUEST_SIDES = ("request", "req", "when", "init")
RESPONSE_SIDES = ("response", "res", "then")
_BODY_KEYS = ("body", "parsed_body", "content", "data")


def response_beside(record: Any, path: str) -> str | None:
    """Where an exchange whose request side holds the message list at ``path`` keeps a response with a body beside
    it (``$.interactions[0].response``; a list on the way: its first item looked at): read alone, the request's
    list would lose every answer recorded there (an unknown provider's cassette). None where there is none."""
    node, at = record, "$"
    for step in path_steps(path):
        if isinstance(node, dict) and step.startswith(".") and step[1:] in REQUEST_SIDES:
            for side in RESPONSE_SIDES:
                response = node.get(side)
                if isinstance(response, dict) and any(response.get(k) not in (None, "", [], {}) for k in _BODY_KEYS):
                    return child_path(at, side)
        if step.startswith("[") and isinstance(node, list):
            index = 0 if step == "[*]" else int(step[1:-1]) if step[1:-1].isdigit() else None
            node = node[index] if index is not None and index < len(node) else None
            at = f"{at}[{index}]"
        elif isinstance(node, dict):
            key = step[1:] if step.startswith(".") else step[2:-2]  # .key or ['key']
            node, at = node.get(key), child_path(at, key)
        else:
            return None
    return None


def warn_skipped(problems: ProblemSink, dropped: int, source: Source) -> None:
    """Report ``dropped`` failed exchanges skipped (``error_response``), when there are any."""
    if dropped:
        problems.warning("error_response", f"{dropped} recorded HTTP exchange(s) with an error status skipped (the "
                         "body is the server's error, no model turn)", source)


_BASE64 = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")
_BASE64_ANY = re.compile(r"[A-Za-z0-9+/]+={0,2}")  # a network chunk's: short ones too
#: How a body's text starts where it is a body a model's API sends: JSON, or Server-Sent Events (a comment line too).
_BODY_STARTS = ("{", "[", "data:", "event:", ":")
_BODY_STARTS_BYTES = tuple(s.encode() for s in _BODY_STARTS)


def decoded_bodies(value: Any, depth: int = 0) -> Any:
    """``value`` with every string that is base64 of a JSON or SSE body (gzip-compressed or not) replaced by that
    text, a list of network chunks so kept becoming a list of their texts; any other string (an id, a signature,
    binary) is left as it is. Containers holding none are returned as they are (not copied)."""
    if isinstance(value, str):
        text = _base64_body(value)
        return value if text is None else text
    if depth > 8 or not isinstance(value, (dict, list)):
        return value
    if isinstance(value, list):
        joined = _base64_pieces(value)  # a body's network chunks, each base64 of its piece (cut anywhere)
        if joined is not None:
            return joined
        items = [decoded_bodies(v, depth + 1) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    found = {k: decoded_bodies(v, depth + 1) for k, v in value.items()}
    return value if all(found[k] is v for k, v in value.items()) else found


def _base64_pieces(value: list) -> str | None:
    """The one JSON or SSE text a list of two or more base64 strings encodes together, else None."""
    if len(value) < 2 or not all(isinstance(v, str) and v and not len(v) % 4 and _BASE64_ANY.fullmatch(v)
                                 for v in value):
        return None
    try:
        raw = b"".join(base64.b64decode(v, validate=True) for v in value)
    except binascii.Error:
        return None
    return _body_text(raw)


def _base64_body(text: str) -> str | None:
    """The JSON or SSE text a base64 string encodes (gunzipped first when it is gzip), else None."""
    if len(text) % 4 or not _BASE64.fullmatch(text):
        return None
    head = base64.b64decode(text[:16]).lstrip()  # cheap: an image's base64 is not decoded whole
    if len(head) > 1 and not (head[:2] == b"\x1f\x8b" or head.startswith(_BODY_STARTS_BYTES)):  # blank: decode on
        return None
    try:
        return _body_text(base64.b64decode(text, validate=True))
    except binascii.Error:
        return None


def _body_text(raw: bytes) -> str | None:
    """``raw`` as text (gunzipped first when it is gzip) where that text is JSON or SSE, else None."""
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        decoded = raw.decode("utf-8")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):
        return None
    return decoded if decoded.lstrip().startswith(_BODY_STARTS) else None
