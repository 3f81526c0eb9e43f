"""Reading trace files: JSON documents, JSON Lines and concatenated JSON values, with every bad line or
document reported to the ``ProblemSink`` (code ``invalid_json``, with file and line) instead of raised, plus the
cheap helpers sniffers use on a file's head (YAML and TOML documents: ``_documents.py``).

Not a format (no ``FORMAT``); every format module may use these. Standard library only.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator
from typing import IO, Any

from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Source

_DECODER = json.JSONDecoder()


class TooDeep(ValueError):
    """A JSON value nested deeper than the decoder's recursion allows (``json`` raises RecursionError)."""

    msg = "value nested deeper than the JSON reader allows (hundreds of levels)"
    colno = None


def loads(text: str) -> Any:
    """``json.loads`` whose recursion failure on absurdly deep nesting is a ``TooDeep`` (a ValueError),
    so every reader reports it at its line like any other bad record instead of stopping the file."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TooDeep(TooDeep.msg) from None


#: What a bad record's message says to do: the rest is read, the record is not (an upload is kept as sent).
SKIPPED = "; it is skipped and the rest of the file read (fix or remove it and upload the file again to read it)"
WHOLE = " (the file is read as one document: fix it at that line and upload it again)"


def bad_json_code(exc: ValueError) -> str:
    """The problem code of a decoding failure: ``too_deep`` or ``invalid_json``."""
    return "too_deep" if isinstance(exc, TooDeep) else "invalid_json"


def src(fmt: str, filename: str, line: int | None = None, record: str | None = None) -> Source:
    """A ``Source`` for ``fmt`` in ``filename`` at a 1-based ``line`` or a JSON ``record`` path."""
    return Source(format=fmt, file=filename, line=line, record=record)


def count(problems: ProblemSink, key: str, n: int = 1) -> None:
    """Bump a report counter (e.g. "records") when the sink keeps counts (``ValidationReport`` does)."""
    fn = getattr(problems, "count", None)
    if fn is not None:
        fn(key, n)


def refer(problems: ProblemSink, keys: Iterable[str], code: str, message: str, source: Source) -> None:
    """Content this file refers to and does not hold (a sub-agent's thread): an error ``code`` at ``source`` when
    no file of the same batch provides one of ``keys`` (``ValidationReport.refer``; a sink without batches
    ignores it)."""
    fn = getattr(problems, "refer", None)
    if fn is not None:
        fn(list(keys), code, message, source)


def provide(problems: ProblemSink, keys: Iterable[str]) -> None:
    """Keys of content this file holds that another file may refer to (``ValidationReport.provide``)."""
    fn = getattr(problems, "provide", None)
    if fn is not None:
        fn(list(keys))


def _why(exc: ValueError, with_line: bool) -> str:
    """A JSON decoding error's reason and position (``Expecting ',' delimiter: column 12``)."""
    msg, col = getattr(exc, "msg", str(exc)), getattr(exc, "colno", None)
    if col is None:
        return msg
    return f"{msg}: line {exc.lineno} column {col}" if with_line else f"{msg}: column {col}"  # type: ignore[attr-defined]


def head_has(head: str, *patterns: str) -> bool:
    """True when every regex in ``patterns`` occurs in ``head``."""
    return all(re.search(p, head) for p in patterns)


def first_json_line(head: str) -> Any:
    """The first non-blank line of ``head`` parsed as JSON, or None when it is cut or invalid."""
    for line in head.splitlines(keepends=True):
        if not line.strip():
            continue
        if not line.endswith("\n") and len(head) >= 60000:
            return None  # cut by the 64 KiB head
        try:
            return loads(line)
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
            out.append(loads(line))
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
            value = loads(line)
        except ValueError as exc:
            problems.error(bad_json_code(exc), f"line is not valid JSON: {_why(exc, False)}{SKIPPED}",
                           Source(fmt, filename, line=lineno))
            continue
        yield lineno, value


def load_json(stream: IO[str], filename: str, problems: ProblemSink, fmt: str) -> Any:
    """The whole stream parsed as one JSON document, or None (reported as ``invalid_json`` at the error's
    line). For formats whose files are one JSON value; line-oriented formats use ``iter_json_lines`` so
    memory stays bounded."""
    text = stream.read()
    try:
        doc = loads(text)
    except ValueError as exc:
        problems.error(bad_json_code(exc), f"file is not valid JSON: {_why(exc, True)}{WHOLE}",
                       Source(fmt, filename, line=getattr(exc, "lineno", None)))
        return None
    count(problems, "records", len(doc) if isinstance(doc, list) else 1)
    return doc


def load_json_or_lines(
    stream: IO[str], filename: str, problems: ProblemSink, fmt: str
) -> Iterator[tuple[Source, Any]]:
    """A file that is either JSONL or one JSON document (object or array): yield ``(source, value)``
    per record. A document that is an array yields its items (record ``$[i]``); a single object yields
    itself. A file that is not one document is read as JSON Lines (lines may be objects or arrays): each
    bad line is reported at its line (``invalid_json``, ``too_deep`` for absurd nesting) and the rest of
    the file is still read. Objects pretty-printed one after another (a record appended per ``json.dump(indent=2)``)
    are read one by one (``iter_values``)."""
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
    line1 = first + stream.readline()
    try:
        value, one_line = loads(line1), True
    except ValueError:
        value, one_line = None, False
    if one_line:
        skipped, line2 = 0, stream.readline()
        while line2 and not line2.strip():
            skipped, line2 = skipped + 1, stream.readline()
        if first != "[" or line2:  # JSONL (of objects, or of arrays when a second line follows)
            count(problems, "records")
            yield Source(fmt, filename, line=1 + lead), value
            rest = Prefixed(line2, stream)
            for lineno, value in iter_json_lines(rest, filename, problems, fmt, first_lineno=2 + lead + skipped):
                yield Source(fmt, filename, line=lineno), value
            return
        yield from _items(value, filename, problems, fmt)  # a one-line array document
        return
    text = line1 + stream.read()
    try:
        value = loads(text)
    except ValueError as exc:
        if first == "{" and concatenated_objects(text):  # objects appended one after another (json.dump(indent=2))
            for line, _, value in iter_values(io.StringIO(text), filename, fmt, problems):
                yield Source(fmt, filename, line=line + lead), value
            return
        if first == "[" and not _later_lines_parse(text):
            problems.error(bad_json_code(exc), f"file is not valid JSON: {_why(exc, True)}{WHOLE}",
                           Source(fmt, filename, line=(getattr(exc, "lineno", None) or 1) + lead))
            return
        yield from _split_lines(text, filename, problems, fmt, lead)  # JSONL whose first line is bad
        return
    if isinstance(value, list):
        yield from _items(value, filename, problems, fmt)
        return
    count(problems, "records")
    yield Source(fmt, filename, record="$"), value


def concatenated_objects(text: str) -> bool:
    """Whether ``text`` opens with a JSON object written over several lines and another object follows it (records
    appended by ``json.dump(record, f, indent=2)``; ``iter_values`` reads them, a bad one reported at its line).
    JSON Lines, one object a line, are read line by line instead."""
    text = text.lstrip()
    try:
        value, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and "\n" in text[:end] and text[end:].lstrip().startswith("{")


def _items(value: list, filename: str, problems: ProblemSink, fmt: str) -> Iterator[tuple[Source, Any]]:
    for i, item in enumerate(value):
        count(problems, "records")
        yield Source(fmt, filename, record=f"$[{i}]"), item


def _later_lines_parse(text: str, limit: int = 5) -> bool:
    """True when one of the first ``limit`` non-blank lines after the first is a JSON object or array on its
    own: the file is JSON Lines whose first line is bad, not one broken (pretty-printed) document."""
    lines = [ln for ln in text.split("\n")[1:] if ln.strip()][:limit]
    for line in lines:
        try:
            if isinstance(loads(line), (dict, list)):
                return True
        except ValueError:
            continue
    return False


def _split_lines(text: str, filename: str, problems: ProblemSink, fmt: str, lead: int
                 ) -> Iterator[tuple[Source, Any]]:
    """``text`` read as JSON Lines. Split on "\n" only, as the line reader does (str.splitlines also
    splits on \x1c, \u2028, ... and shifts the line numbers)."""
    for lineno, line in enumerate(text.split("\n"), 1 + lead):
        if not line.strip():
            continue
        count(problems, "records")
        try:
            yield Source(fmt, filename, line=lineno), loads(line)
        except ValueError as exc:
            problems.error(bad_json_code(exc), f"line is not valid JSON: {_why(exc, False)}{SKIPPED}",
                           Source(fmt, filename, line=lineno))


def iter_values(
    stream: IO[str], filename: str, fmt: str, problems: ProblemSink, chunk_size: int = 1 << 20
) -> Iterator[tuple[int, int, Any]]:
    """Yield ``(start_line, ordinal, value)`` for the records of a file, streaming.

    Accepts a top-level JSON array (yields its elements; ``ordinal`` is the array index, so the
    record path is ``$[ordinal]``), JSON Lines, or JSON values printed one after another, indented
    (the OpenTelemetry console exporter does this, and neither ``json.load`` nor a line reader
    accepts it). Memory is bounded by the largest record plus one chunk. Text that does not decode
    is reported as ``invalid_json`` at its line and skipped up to the next line that starts a value.
    """
    buf = ""
    line = 1  # line number of buf[0]
    eof = False
    in_array: bool | None = None
    ordinal = 0
    indent = ""  # leading whitespace of the current record's first line

    def fill() -> bool:
        nonlocal buf, eof
        if eof:
            return False
        more = stream.read(chunk_size)
        if not more:
            eof = True
            return False
        buf += more
        return True

    while True:
        if len(buf) < chunk_size:
            fill()
        i = 0
        while i < len(buf) and buf[i] in " \t\r\n,\ufeff":
            i += 1
        line += buf.count("\n", 0, i)
        if "\n" in buf[:i]:
            indent = buf[buf.rfind("\n", 0, i) + 1 : i].replace(",", "")
        buf = buf[i:]
        if not buf:
            if eof:
                return
            continue
        if in_array is None:
            in_array = buf[0] == "["
            if in_array:
                buf = buf[1:]
                continue
        if in_array and buf[0] == "]":
            return
        try:
            try:
                value, end = _DECODER.raw_decode(buf)
            except RecursionError:
                raise TooDeep(TooDeep.msg) from None
        except ValueError as exc:
            # Only an error at the end of the buffer can mean "the value continues in the next
            # chunk"; anything earlier is a real error (so one bad record never loads the whole file).
            deep = isinstance(exc, TooDeep)
            at_end = not deep and (exc.pos >= len(buf) - 1 or exc.msg.startswith("Unterminated"))
            if at_end and fill():
                continue
            why = TooDeep.msg if deep else exc.msg.removesuffix(" starting at")  # position: the record's source
            problems.error(bad_json_code(exc), f"record is not valid JSON: {why}{SKIPPED}",
                           src(fmt, filename, line=line, record=f"$[{ordinal}]" if in_array else None))
            ordinal += 1
            # resynchronise at the next value indented like this record (a nested object of the
            # broken record is indented deeper and is skipped)
            m = re.search(r"\n" + re.escape(indent) + r"(?=[\[{])", buf[1:])
            if m is None:
                return
            cut = m.end() + 1
            line += buf.count("\n", 0, cut)
            buf = buf[cut:]
            continue
        count(problems, "records")
        yield line, ordinal, value
        ordinal += 1
        line += buf.count("\n", 0, end)
        buf = buf[end:]


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
