"""Helpers shared by the format modules: JSONL/JSON/YAML reading with per-record problem reports.

Not a format (no ``FORMAT``); format modules of any engineer may use these.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Source, UnsupportedPart


def count(problems: ProblemSink, key: str, n: int = 1) -> None:
    """Bump a report counter (e.g. "records") when the sink keeps counts (``ValidationReport`` does)."""
    fn = getattr(problems, "count", None)
    if fn is not None:
        fn(key, n)


def first_json_line(head: str) -> Any:
    """The first non-blank line of ``head`` parsed as JSON, or None when it is cut or invalid."""
    for line in head.splitlines(keepends=True):
        if not line.strip():
            continue
        if not line.endswith("\n") and len(head) >= 60000:
            return None  # cut by the 64 KiB head
        try:
            return json.loads(line)
        except ValueError:
            return None
    return None


def json_lines(head: str, limit: int = 20) -> list[Any]:
    """Up to ``limit`` complete, valid JSON lines of ``head`` (invalid ones skipped)."""
    out = []
    lines = head.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if len(out) >= limit:
            break
        if not line.strip() or (i == len(lines) - 1 and not line.endswith("\n") and len(head) >= 60000):
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def iter_json_lines(
    stream: IO[str], filename: str, problems: ProblemSink, fmt: str, first_lineno: int = 1
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line; invalid JSON is reported as ``invalid_json``
    with its 1-based line and skipped. Counts every non-blank line as a record. ``first_lineno`` is the
    number of the stream's first line (greater than 1 when earlier lines were already read)."""
    for lineno, line in enumerate(stream, first_lineno):
        if not line.strip():
            continue
        count(problems, "records")
        try:
            value = json.loads(line)
        except ValueError as exc:
            problems.error("invalid_json", f"line is not valid JSON: {exc.msg} at column {exc.colno}",
                           Source(fmt, filename, line=lineno))
            continue
        yield lineno, value


def load_json(stream: IO[str], filename: str, problems: ProblemSink, fmt: str) -> Any:
    """The whole stream parsed as one JSON document, or None (reported as ``invalid_json``)."""
    text = stream.read()
    try:
        return json.loads(text)
    except ValueError as exc:
        problems.error("invalid_json", f"file is not valid JSON: {exc.msg}",
                       Source(fmt, filename, line=getattr(exc, "lineno", None)))
        return None


def load_json_or_lines(
    stream: IO[str], filename: str, problems: ProblemSink, fmt: str
) -> Iterator[tuple[Source, Any]]:
    """A file that is either JSONL or one JSON document (object or array): yield ``(source, value)``
    per record. Arrays yield their items (record ``$[i]``); a single object yields itself."""
    first = ""
    lead = 0  # newlines skipped before the first record: line numbers count them
    while True:
        ch = stream.read(1)
        if not ch:
            return
        if not ch.isspace():
            first = ch
            break
        lead += ch == "\n"
    rest_first_line = stream.readline()
    line1 = first + rest_first_line
    if first == "[":
        text = line1 + stream.read()
        try:
            value = json.loads(text)
        except ValueError as exc:
            problems.error("invalid_json", f"file is not valid JSON: {exc.msg}",
                           Source(fmt, filename, line=exc.lineno + lead))
            return
        for i, item in enumerate(value):
            count(problems, "records")
            yield Source(fmt, filename, record=f"$[{i}]"), item
        return
    # An object: one-per-line JSONL, or a pretty-printed single document.
    try:
        value = json.loads(line1)
        is_jsonl = True
    except ValueError:
        is_jsonl = False
    if not is_jsonl:
        text = line1 + stream.read()
        try:
            value = json.loads(text)
        except ValueError:
            # Not one document either: treat as JSONL whose first line is bad. Split on "\n" only, as
            # the line reader does (str.splitlines also splits on \x1c, \u2028, ... and shifts numbers).
            lines = text.split("\n")
            for lineno, line in enumerate(lines, 1 + lead):
                if not line.strip():
                    continue
                count(problems, "records")
                try:
                    yield Source(fmt, filename, line=lineno), json.loads(line)
                except ValueError as exc:
                    problems.error("invalid_json", f"line is not valid JSON: {exc.msg}",
                                   Source(fmt, filename, line=lineno))
            return
        count(problems, "records")
        yield Source(fmt, filename, record="$"), value
        return
    count(problems, "records")
    yield Source(fmt, filename, line=1 + lead), value
    for lineno, value in iter_json_lines(stream, filename, problems, fmt, first_lineno=2 + lead):
        yield Source(fmt, filename, line=lineno), value


def load_yaml(stream: IO[str], filename: str, problems: ProblemSink, fmt: str) -> Any:
    """The stream parsed as YAML (C loader when available), or None (reported as ``invalid_json``)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(stream, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problems.error("invalid_json", f"file is not valid YAML: {getattr(exc, 'problem', exc)}",
                       Source(fmt, filename, line=mark.line + 1 if mark else None))
        return None


def text_of(content: Any) -> str:
    """Flatten a content value (string, list of {type:text,text} blocks, or other JSON) to text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for block in content:
            if isinstance(block, str):
                pieces.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                pieces.append(block["text"])
        return "\n".join(pieces)
    return json.dumps(content, ensure_ascii=False)


def add_unsupported(parts: list, kind: str) -> None:
    """Append an ``UnsupportedPart(kind)`` to ``parts``, or bump the count of the last part when it is an
    unsupported part of the same kind (three images in a row are one part with count 3)."""
    if parts and isinstance(parts[-1], UnsupportedPart) and parts[-1].kind == kind:
        parts[-1].count += 1
    else:
        parts.append(UnsupportedPart(kind))


class Prefixed:
    """A text stream with some already-read text put back in front (for sniffing inside ``parse``)."""

    def __init__(self, prefix: str, stream: IO[str]):
        self._prefix = prefix
        self._stream = stream

    def read(self, n: int = -1) -> str:
        if not self._prefix:
            return self._stream.read(n)
        if n is None or n < 0:
            out, self._prefix = self._prefix + self._stream.read(), ""
            return out
        out, self._prefix = self._prefix[:n], self._prefix[n:]
        if len(out) < n:
            out += self._stream.read(n - len(out))
        return out

    def readline(self, limit: int = -1) -> str:
        if not self._prefix:
            return self._stream.readline()
        if "\n" in self._prefix:
            i = self._prefix.index("\n") + 1
            out, self._prefix = self._prefix[:i], self._prefix[i:]
            return out
        out, self._prefix = self._prefix + self._stream.readline(), ""
        return out

    def __iter__(self):
        return self

    def __next__(self) -> str:
        line = self.readline()
        if not line:
            raise StopIteration
        return line


def parse_request_records(stream, filename: str, problems: ProblemSink, fmt: str, request_to_messages,
                          response_to_message=None, is_record=None):
    """Records that are provider request bodies (optionally with the response under "response"):
    one Conversation per record whose messages are the request's plus the response's message."""
    from drafters.traces.model import Conversation

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
                if response_to_message is not None and isinstance(resp, dict):
                    m = response_to_message(resp)
                    if m is not None:
                        msgs.append(m)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                problems.error("not_an_object", f"record not understood: {exc}", s)
                continue
            loc = s.line if s.line is not None else s.record
            yield Conversation(id=f"{fmt}:{stem}:{item.get('id') or loc}", source=s, tools=tools, messages=msgs)
