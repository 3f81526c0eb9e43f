"""Record-level robustness for format parsers: what a malformed-but-valid-JSON record may raise, a guard
that turns such a crash into a ``bad_record`` problem, and the shared reader of provider request bodies.

Not a format (no ``FORMAT``).
"""

from __future__ import annotations

from drafters.traces.cut_replies import body_stopped_by_length
from drafters.traces.formats._reading import load_json_or_lines
from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Conversation, Source

# What a malformed-but-valid-JSON record can raise inside a converter: reported, never propagated.
# TraceError (on_error="fail") is none of these, so it still stops the run.
RECORD_ERRORS = (TypeError, AttributeError, KeyError, ValueError, IndexError)


def guard_file(fmt: str):
    """Decorator for a ``parse`` generator: a malformed record that slips past the converter's checks
    is reported as ``bad_record`` for the file instead of crashing the ingestion."""

    def wrap(parse_fn):
        def parse(stream, filename, problems):
            try:
                yield from parse_fn(stream, filename, problems)
            except RECORD_ERRORS as exc:
                problems.error("bad_record", f"malformed record ({type(exc).__name__}: {exc})",
                               Source(fmt, filename))

        parse.__doc__ = parse_fn.__doc__
        parse.__name__ = parse_fn.__name__
        return parse

    return wrap


def parse_request_records(stream, filename: str, problems: ProblemSink, fmt: str, request_to_messages,
                          response_to_message=None, is_record=None):
    """Records that are provider request bodies (optionally with the response under "response"):
    one Conversation per record whose messages are the request's plus the response's message."""
    stem = filename.rsplit("/", 1)[-1]
    for src, value in load_json_or_lines(stream, filename, problems, fmt):
        items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
        for i, item in items:
            s = src if i is None else Source(fmt, filename, record=f"$[{i}]")
            if not isinstance(item, dict) or (is_record is not None and not is_record(item)):
                problems.error("not_an_object", f"record is not a {fmt} request body", s)
                continue
            body = item.get("request") if isinstance(item.get("request"), dict) else item
            try:
                tools, msgs = request_to_messages(body)
                resp = item.get("response")
                if resp is None and isinstance(item.get("output"), list):  # a Responses object: input and output
                    resp = item
                if response_to_message is not None and isinstance(resp, dict):
                    m = response_to_message(resp)
                    if m is not None and m.failed and not m.parts:
                        problems.warning("failed_turn_skipped", "the response records a failed request (its stop "
                                         "reason) and no content: no model turn, the record is not read", s)
                        continue
                    if m is not None:
                        m.cut = body_stopped_by_length(resp)  # cut_replies: reported
                        msgs.append(m)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                problems.error("not_an_object", f"record not understood: {exc}", s)
                continue
            loc = s.line if s.line is not None else s.record
            yield Conversation(id=f"{fmt}:{stem}:{item.get('id') or loc}", source=s, tools=tools, messages=msgs)
