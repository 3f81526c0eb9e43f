"""The general path for TOML: a ``.toml`` file is one record.

LLM response caches and harness fixtures write one request per TOML file (the messages sent as an array of
tables, the reply as a multi-line string, the model and cache keys beside them). The file's table is a record,
with TOML's dates and times written as their ISO text, read exactly as the general path reads a JSON record
(``generic.read_records``: the same shapes, spellings and refusals; docs/traces.md, "YAML and TOML").

Not claimed: a file whose first line that is no comment is neither ``key = value`` nor a ``[table]`` header.
Bad input: a file that does not parse is ``invalid_toml`` at its line (``_documents.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO

from drafters.traces.formats import generic
from drafters.traces.formats._documents import first_line, is_toml, toml_records
from drafters.traces.formats._records import guard_file
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import Conversation

NAME = "toml_documents"
#: A TOML file's first meaningful line: a ``[table]`` / ``[[array]]`` header or a ``key = value`` pair.
_START = re.compile(r"""^\s*(\[\[?\s*[\w"'.-][^\]]*\]\]?\s*(#.*)?$|[\w"'.-][\w"'. -]*=)""")


def sniff(head: str, filename: str) -> bool:
    """A ``.toml`` file whose first line that is no comment opens a table or sets a key."""
    return is_toml(filename) and _START.match(first_line(head)) is not None


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """The file's conversations: its table read as the general path reads a JSON record."""
    yield from generic.read_records(toml_records(stream, filename, problems, NAME), filename, problems)


FORMAT = TraceFormat(
    name=NAME,
    description="General path for TOML: the file's table read as a JSON record",
    sniff=sniff,
    parse=parse,
)
