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
from collections.abc import Iterator
from typing import IO

from drafters.traces.formats import generic
from drafters.traces.formats._records import guard_file
from drafters.traces.formats._table_rows import EXTENSIONS, delimiter, table_rows
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import Conversation

NAME = "csv_rows"


def sniff(head: str, filename: str) -> bool:
    """A ``.csv`` / ``.tsv`` file whose first line is a header of at least two named columns."""
    if not filename.lower().endswith(EXTENSIONS):
        return False
    first = head.lstrip("\ufeff").splitlines()[:1]
    if not first:
        return False
    header = next(csv.reader(first, delimiter=delimiter(filename)), [])
    return len(header) >= 2 and all(h.strip() for h in header)


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """The table's conversations: its rows read as the general path reads JSON records."""
    yield from generic.read_records(table_rows(stream, filename, problems, NAME), filename, problems)


FORMAT = TraceFormat(
    name=NAME,
    description="General path for tables: CSV / TSV rows read as records (a chat history column, prompt/response columns)",
    sniff=sniff,
    parse=parse,
)
