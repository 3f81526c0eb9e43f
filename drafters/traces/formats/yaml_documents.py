"""The general path for YAML: a ``.yaml`` / ``.yml`` file whose documents are records.

Test harnesses and evaluation tools write their runs as YAML (a report per run, holding the request's messages,
the tool calls and the answer; mock specs one document each). Each document is a record (a document that is a list:
its items), with YAML's own scalars written as JSON has them (a timestamp as its text). The records are then read
exactly as the general path reads JSON records (``generic.read_records``: the same shapes, spellings and
refusals; docs/traces.md, "YAML"). The documents are loaded by ``_documents.py``, shared with declared mappings
and ``infer-mapping``.

Not claimed: a file that is no YAML mapping or list at its start (prose, a JSON document: the JSON readers'), and a
VCR cassette (the provider modules before this one read those). Bad input: a document that does not parse is
``invalid_yaml`` at its line; the documents before it are read, those after it cannot be found (YAML has no
line-level resynchronisation).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO

from drafters.traces.formats import generic
from drafters.traces.formats._documents import first_line, is_yaml, yaml_records
from drafters.traces.formats._records import guard_file
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import Conversation

NAME = "yaml_documents"
#: A YAML file's first meaningful line: a document marker, a ``key:`` of a mapping, or a list item.
_START = re.compile(r"^(---|%YAML|[\w\"'.-][^:#]*:(\s|$)|-\s)")


def sniff(head: str, filename: str) -> bool:
    """A ``.yaml`` / ``.yml`` file whose first line that is no comment opens a mapping, a list or a document."""
    return is_yaml(filename) and _START.match(first_line(head)) is not None


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """The file's conversations: its documents read as the general path reads JSON records."""
    yield from generic.read_records(yaml_records(stream, filename, problems, NAME), filename, problems)


FORMAT = TraceFormat(
    name=NAME,
    description="General path for YAML: each document (or a list document's items) read as a JSON record",
    sniff=sniff,
    parse=parse,
)
