"""The records a declared mapping reads (``Mapping.records``, drafters/traces/mapping.py): a file's lines, array
items or document (``each``, ``messages``), a table's rows, the whole file as one record (``file``), the items of a
batch's lists (``lists``, at the object ``Mapping.lists`` names) or a response cache's entries (``entries``,
``formats/_entries.py``). Torch-free."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import IO, Any

from drafters.traces.formats import _reading
from drafters.traces.formats._documents import document_records, is_document
from drafters.traces.formats._entries import entry_records
from drafters.traces.formats._table_rows import is_table, table_rows
from drafters.traces.formats.base import ProblemSink
from drafters.traces.json_paths import child_path, jsonpath
from drafters.traces.model import Source


def file_records(stream: IO[str], filename: str, problems: ProblemSink, fmt: str,
                 mode: str) -> Iterator[tuple[Source, Any]]:
    """The file's records as ``(source, value)``: lines, array items or the document, a table's rows
    (``_table_rows``), a YAML file's documents or a TOML file's table (``_documents``); with ``mode`` ``file`` the
    whole file as one record (a top-level array stays one list; a YAML file: each document whole). Bad lines are
    reported to ``problems``."""
    if is_table(filename):
        yield from table_rows(stream, filename, problems, fmt)
        return
    if mode == "file" and is_document(filename):
        yield from document_records(stream, filename, problems, fmt, whole=True)
        return
    if mode == "file":
        doc = _reading.load_json(stream, filename, problems, fmt)
        if doc is not None:
            yield Source(fmt, filename, record="$"), doc
        return
    yield from document_records(stream, filename, problems, fmt)


def expanded(records: Iterator[tuple[Source, Any]], mode: str, lists: str = "$") -> Iterator[tuple[Source, Any]]:
    """The records a mapping reads one by one: each batch list's items (``lists``), each cache entry
    (``entries``), each value of an object of records (``values``), else the records as they are."""
    if mode == "lists":
        return batch_items(records, lists)
    if mode == "entries":
        return entry_records(records)
    if mode == "values":
        return value_records(records)
    return records


def value_records(records: Iterator[tuple[Source, Any]]) -> Iterator[tuple[Source, Any]]:
    """``records: values``: the document is an object of records keyed by id (a trajectory dump ``{"6238":
    {"traj": [...]}, ...}``): each value is a record, at its key's path (``$['6238']``); a value that is no object
    is not read."""
    for source, doc in records:
        for key, value in (doc.items() if isinstance(doc, dict) else []):
            if isinstance(value, dict):
                yield replace(source, record=child_path("$", key), line=None), value


def batch_items(records: Iterator[tuple[Source, Any]], lists: str = "$") -> Iterator[tuple[Source, Any]]:
    """``records: lists``: the document (or the object at ``lists`` in it: an eval export's ``results``) is an
    object of lists whose items are the records (a batch upload, LangSmith's ``{"post": [runs], "patch":
    [runs]}``); a value that is not a list is not read."""
    for source, doc in records:
        found = jsonpath(doc, lists) if isinstance(doc, (dict, list)) else []
        holder = found[0][1] if found else None
        for key, items in (holder.items() if isinstance(holder, dict) else []):
            for i, item in enumerate(items if isinstance(items, list) else []):
                yield replace(source, record=f"{child_path(lists, key)}[{i}]", line=None), item
