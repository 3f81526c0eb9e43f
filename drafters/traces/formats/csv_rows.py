"""The general path for tables: a CSV (or TSV) file whose rows are records.

Chat front-ends and eval tools export calls as spreadsheets: Gradio's flagged and cached-examples logs (a
column holding the chatbot history as JSON, ``[["Hi", "Hello!"]]``, beside ``flag`` / ``username`` /
``timestamp``), prompt/response tables of eval runs. Each row is read as a record of its header's columns; a
cell holding a JSON array or object is read as that JSON. The records are then read exactly as the general path
reads JSON records (``generic.read_records``: the same shapes, spellings and refusals; docs/traces.md, "Tables").

Bad input: a row with more cells than the header names is ``invalid_csv`` at its line, and the rest is still
read; a file whose first line is no header of at least two columns is not claimed.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from typing import IO, Any

from drafters.traces.formats import generic
from drafters.traces.formats._reading import count
from drafters.traces.formats._records import guard_file
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import Conversation, Source

NAME = "csv_rows"
EXTENSIONS = (".csv", ".tsv")
MAX_CELL = 64 * 1024 * 1024  # characters of one cell (a long chat history as JSON), far above csv's 128 KiB default


def sniff(head: str, filename: str) -> bool:
    """A ``.csv`` / ``.tsv`` file whose first line is a header of at least two named columns."""
    if not filename.lower().endswith(EXTENSIONS):
        return False
    first = head.lstrip("\ufeff").splitlines()[:1]
    if not first:
        return False
    header = next(csv.reader(first, delimiter=_delimiter(filename)), [])
    return len(header) >= 2 and all(h.strip() for h in header)


def _delimiter(filename: str) -> str:
    return "\t" if filename.lower().endswith(".tsv") else ","


def _cell(text: str) -> Any:
    """A cell's value: the JSON it holds when it is a JSON array or object, else its text."""
    if text.lstrip()[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def rows(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[tuple[Source, dict]]:
    """Each row as ``(source, {column: value})`` with its first line number; a row with more cells than the
    header names is reported (``invalid_csv``) and not read."""
    csv.field_size_limit(MAX_CELL)
    reader = csv.reader(stream, delimiter=_delimiter(filename))
    header = [h.lstrip("\ufeff").strip() for h in next(reader, [])]
    line = reader.line_num + 1
    for cells in reader:
        source = Source(NAME, filename, line=line)
        line = reader.line_num + 1
        if not any(c.strip() for c in cells):
            continue
        if len(cells) > len(header):
            problems.error("invalid_csv", f"the row has {len(cells)} cells where the header names {len(header)} "
                           "columns: not read", source)
            continue
        count(problems, "records")
        yield source, {h: _cell(c) for h, c in zip(header, cells)}


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """The table's conversations: its rows read as the general path reads JSON records."""
    try:
        yield from generic.read_records(rows(stream, filename, problems), filename, problems)
    except csv.Error as exc:  # an unterminated quote, a cell past MAX_CELL
        problems.error("invalid_csv", f"the table cannot be read past here: {exc}", Source(NAME, filename))


FORMAT = TraceFormat(
    name=NAME,
    description="General path for tables: CSV / TSV rows read as records (a chat history column, prompt/response columns)",
    sniff=sniff,
    parse=parse,
)
