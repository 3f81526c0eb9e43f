"""The general path for YAML: a ``.yaml`` / ``.yml`` file whose documents are records.

Test harnesses and evaluation tools write their runs as YAML (a report per run, holding the request's messages,
the tool calls and the answer; mock specs one document each). Each document is a record (a document that is a list:
its items), with YAML's own scalars written as JSON has them (a timestamp as its text). The records are then read
exactly as the general path reads JSON records (``generic.read_records``: the same shapes, spellings and
refusals; docs/traces.md, "YAML").

Not claimed: a file that is no YAML mapping or list at its start (prose, a JSON document: the JSON readers'), and a
VCR cassette (the provider modules before this one read those). Bad input: a document that does not parse is
``invalid_yaml`` at its line; the documents before it are read, those after it cannot be found (YAML has no
line-level resynchronisation).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator
from typing import IO, Any

from drafters.traces.formats import generic
from drafters.traces.formats._reading import count
from drafters.traces.formats._records import guard_file
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import Conversation, Source

NAME = "yaml_documents"
EXTENSIONS = (".yaml", ".yml")
#: A YAML file's first meaningful line: a document marker, a ``key:`` of a mapping, or a list item.
_START = re.compile(r"^(---|%YAML|[\w\"'.-][^:#]*:(\s|$)|-\s)")


def sniff(head: str, filename: str) -> bool:
    """A ``.yaml`` / ``.yml`` file whose first line that is no comment opens a mapping, a list or a document."""
    if not filename.lower().endswith(EXTENSIONS):
        return False
    first = next((line for line in head.lstrip("\ufeff").splitlines() if line.strip() and
                  not line.lstrip().startswith("#")), "")
    return _START.match(first) is not None


def _plain(value: Any) -> Any:
    """``value`` with YAML's scalars that JSON has no type for written as text (a timestamp, a date, bytes)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat(sep=" ") if isinstance(value, datetime.datetime) else value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def documents(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[tuple[Source, Any]]:
    """Each document as ``(source, value)`` (a list document: each item, ``$[i]``); a document that does not
    parse is reported (``invalid_yaml``, with its line) and ends the file."""
    import yaml

    loader = yaml.load_all(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    index = 0
    while True:
        try:
            doc = next(loader)
        except StopIteration:
            return
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            problems.error("invalid_yaml", f"the document does not parse ({getattr(exc, 'problem', exc)}): it and "
                           "the rest of the file are not read", Source(NAME, filename, line=mark.line + 1 if mark else None))
            return
        index += 1
        if doc is None:  # an empty document (a trailing ---)
            continue
        doc = _plain(doc)
        items = list(enumerate(doc)) if isinstance(doc, list) else [(None, doc)]
        for i, item in items:
            count(problems, "records")
            yield Source(NAME, filename, record=f"document {index}" + (f" $[{i}]" if i is not None else "")), item


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """The file's conversations: its documents read as the general path reads JSON records."""
    yield from generic.read_records(documents(stream, filename, problems), filename, problems)


FORMAT = TraceFormat(
    name=NAME,
    description="General path for YAML: each document (or a list document's items) read as a JSON record",
    sniff=sniff,
    parse=parse,
)
