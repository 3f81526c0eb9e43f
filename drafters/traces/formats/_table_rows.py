"""A table's rows as records: a CSV (or TSV) file's header names the keys, a cell holding a JSON array or object (or
the same written as a Python literal, as pandas' ``to_csv`` writes a list of message dicts) is that value. Shared by
the general path's table reader (``csv_rows``) and declared mappings (``mapping_records``). Not a format."""

from __future__ import annotations

import ast
import csv
import json
from collections.abc import Iterator
from typing import IO, Any

from drafters.traces.formats._reading import count
from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Source

EXTENSIONS = (".csv", ".tsv")
MAX_CELL = 64 * 1024 * 1024  # characters of one cell (a long chat history as JSON), far above csv's 128 KiB default
MAX_NAME = 60  # characters of a column name: a longer first-line cell is data, not a header
MAX_LITERAL = 1024 * 1024  # characters of a cell tried as a Python literal (literal_eval is slow on huge input)


def is_table(filename: str) -> bool:
    """Whether the file is read as a table (by its extension)."""
    return filename.lower().endswith(EXTENSIONS)


def delimiter(filename: str) -> str:
    """The cell delimiter: a tab for ``.tsv``, else a comma."""
    return "\t" if filename.lower().endswith(".tsv") else ","


def cell(text: str) -> Any:
    """A cell's value: the JSON array or object it holds, else the Python literal list or dict it holds
    (``[{'role': 'user', 'content': '...'}]``; ``ast.literal_eval`` evaluates literals only, never code), else its
    text."""
    if text.lstrip()[:1] not in ("[", "{"):
        return text
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    if len(text) <= MAX_LITERAL:
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return text
        if isinstance(value, (list, dict)):
            return value
    return text


def table_rows(stream: IO[str], filename: str, problems: ProblemSink, fmt: str) -> Iterator[tuple[Source, dict]]:
    """Each row as ``(source, {column: value})`` with its first line number. A row with more cells than the header
    names is ``invalid_csv`` and not read (the rest is); a quote never closed stops the table there, and a first
    line that is no header (a cell over ``MAX_NAME`` characters: settings above the header) refuses it
    (``invalid_csv``)."""
    csv.field_size_limit(MAX_CELL)
    reader = csv.reader(stream, delimiter=delimiter(filename))
    try:
        header = [h.lstrip("\ufeff").strip() for h in next(reader, [])]
        long = next((h for h in header if len(h) > MAX_NAME or "\n" in h), None)
        if long is not None:  # settings or text above the header: rows read against it would shift every key
            problems.error("invalid_csv", f"the first line is no header: a cell of {len(long)} characters "
                           f"({long[:40]!r}...); a table's first line names its columns", Source(fmt, filename, line=1))
            return
        line = reader.line_num + 1
        for cells in reader:
            source = Source(fmt, filename, line=line)
            line = reader.line_num + 1
            if not any(c.strip() for c in cells):
                continue
            if len(cells) > len(header):
                problems.error("invalid_csv", f"the row has {len(cells)} cells where the header names {len(header)} "
                               "columns: not read", source)
                continue
            count(problems, "records")
            yield source, {h: cell(c) for h, c in zip(header, cells)}
    except csv.Error as exc:  # an unterminated quote, a cell past MAX_CELL
        problems.error("invalid_csv", f"the table cannot be read past here: {exc}", Source(fmt, filename))
