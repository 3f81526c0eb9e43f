"""A response cache: a JSON object whose every entry is one LLM call, the request as its key and the model's
response as its value (MetaGPT's ``rsp_cache.json``: prompt text -> reply text; gpt-engineer's ``ai_cache.json``:
the JSON text of the messages sent -> the JSON text of those messages with the reply appended). The general path
reads it as request/response records ``{"prompt": key, "response": value}`` (mapping key ``records: entries``;
docs/traces.md, "Response caches"); a value that restates the request before the reply is read once (mapping.py).

An object is a cache only when every key (at least two) reads as a request, not a name: text of several words, or
the JSON text of a message list; a config or a map of ids is not. Not a format (no ``FORMAT``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from drafters.traces.model import Source

MIN_ENTRIES = 2
MIN_WORDS = 4  # a request key is text of several words (a prompt), or a message list as JSON text


def is_cache(doc: Any) -> bool:
    """Whether ``doc`` is a response cache (see the module docstring): an object of at least two entries whose
    keys are requests and whose values are text or JSON text (decoded: a list)."""
    return isinstance(doc, dict) and len(doc) >= MIN_ENTRIES and all(
        _request_key(k) and (isinstance(v, str) and v.strip() or isinstance(v, list) and v) for k, v in doc.items())


def _request_key(key: str) -> bool:
    if key.lstrip()[:1] == "[":
        try:
            value = json.loads(key)
        except ValueError:
            return False
        return isinstance(value, list) and bool(value) and all(isinstance(m, dict) for m in value)
    return len(key.split()) >= MIN_WORDS


def cache_head(head: str) -> bool:
    """Whether a document cut by the sniffer's head opens as a response cache: an object whose first key (read
    whole, followed by a string value or a list of strings) is a request."""
    text = head.lstrip()
    if not text.startswith("{"):
        return False
    decoder = json.JSONDecoder()
    try:
        key, end = decoder.raw_decode(text, text.index('"'))
    except ValueError:
        return False
    rest = text[end:].lstrip()
    value = rest[1:].lstrip()
    value = value[1:].lstrip() if value.startswith("[") else value  # a list of the replies cached for it
    return isinstance(key, str) and rest.startswith(":") and value.startswith('"') and _request_key(key)


def entry_items(doc: dict) -> list[dict]:
    """The cache's entries as request/response records."""
    return [{"prompt": k, "response": v} for k, v in doc.items()]


def entry_records(records: Iterator[tuple[Source, Any]]) -> Iterator[tuple[Source, Any]]:
    """``records: entries``: each entry of each cache document, as ``{"prompt": key, "response": value}`` at
    ``entries[i]``; a document that is no object yields nothing."""
    for source, doc in records:
        for i, item in enumerate(entry_items(doc) if isinstance(doc, dict) else []):
            yield replace(source, record=f"entries[{i}]", line=None), item
