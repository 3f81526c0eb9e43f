"""Responses API records chained by ``previous_response_id`` (docs/traces.md, "Responses continuing an earlier
one"): with server-side state, a response's ``input`` holds only what is new since the previous response (the tool
outputs, the user's next message), and the server builds the model's context as the previous response's context,
its ``output`` items, then this ``input``. The general path rebuilds each record's ``input`` that way before reading
it, so every call's context is what the model saw and the calls chain into one conversation (``_chains``).

A response continuing one that is not in the file (nor earlier in it) has lost its context:
``previous_response_not_in_file``, an error, the record not read. Not a format (no ``FORMAT``); standard library.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any

from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Source

SAMPLE = 40


@dataclass
class _Response:
    """One logged response: its id, the response it continues, its own input and output, and how to write the
    record back with another input (a Response object itself, or ``{"request", "response"}`` as a client logs
    ``responses.create``'s arguments and result)."""

    id: str
    previous: str | None
    input: list
    output: list
    wrapped: bool


def _response(value: Any) -> _Response | None:
    if not isinstance(value, dict):
        return None
    request, response = value.get("request"), value.get("response")
    wrapped = isinstance(request, dict) and isinstance(response, dict)
    asked, answered = (request, response) if wrapped else (value, value)
    if not isinstance(answered.get("id"), str) or not isinstance(answered.get("output"), list):  # type: ignore[union-attr]
        return None
    previous = asked.get("previous_response_id") or answered.get("previous_response_id")  # type: ignore[union-attr]
    return _Response(answered["id"], previous if isinstance(previous, str) else None,  # type: ignore[index]
                     _items(asked.get("input")), _items(answered.get("output")), wrapped)  # type: ignore[union-attr]


def _with_input(value: dict, response: _Response, items: list) -> dict:
    if response.wrapped:
        return {**value, "request": {**value["request"], "input": items}}
    return {**value, "input": items}


def _items(value: Any) -> list:
    """A response's ``input`` as a list of items (a text input is the user's message)."""
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return list(value) if isinstance(value, list) else []


def chained_responses(records: Iterator[tuple[Source, Any]], problems: ProblemSink) -> Iterator[tuple[Source, Any]]:
    """``records`` with each response that continues an earlier one (``previous_response_id``) given the whole
    context as its ``input``: the earlier responses' inputs and outputs, oldest first, then its own input. Files
    whose first records continue none are passed through untouched."""
    head = list(islice(records, SAMPLE))
    if not any((r := _response(v)) is not None and r.previous for _, v in head):
        yield from chain(head, records)
        return
    own: dict[str, tuple[str | None, list]] = {}  # response id -> (the response it continues, its input + output)
    rebuilt, first = 0, None
    for source, value in chain(head, records):
        response = _response(value)
        if response is None:
            yield source, value
            continue
        own[response.id] = (response.previous, response.input + response.output)
        if response.previous is None:
            yield source, value
            continue
        context = _context(response.previous, own)
        if context is None:
            problems.error("previous_response_not_in_file", f"response {response.id!r} continues "
                           f"{response.previous!r}, which is not earlier in the file: its context (that response's "
                           "input and output) is lost; not read", source)
            continue
        rebuilt, first = rebuilt + 1, first or source
        yield source, _with_input(value, response, context + response.input)
    if rebuilt:
        problems.warning("previous_responses_prepended", f"{rebuilt} response(s) continue an earlier one "
                         "(previous_response_id): each one's context rebuilt as the server builds it, the earlier "
                         "responses' inputs and outputs before its own input", first)  # type: ignore[arg-type]


def _context(response_id: str, own: dict[str, tuple[str | None, list]]) -> list | None:
    """The items the model saw up to and including response ``response_id``'s output, or None when a response of
    the chain is not in ``own``."""
    parts: list[list] = []
    at: str | None = response_id
    while at is not None:
        if at not in own or len(parts) > len(own):  # absent, or a cycle of ids
            return None
        at, items = own[at]
        parts.append(items)
    return [item for items in reversed(parts) for item in items]
