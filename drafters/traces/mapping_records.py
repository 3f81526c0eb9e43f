"""The records a declared mapping reads (``Mapping.records``, drafters/traces/mapping.py): a file's lines, array
items or document (``each``, ``messages``), a table's rows, the whole file as one record (``file``), the items of a
batch's lists (``lists``, at the object ``Mapping.lists`` names) or a response cache's entries (``entries``,
``formats/_entries.py``), and the runs nested in each record (``nested``: a run tree's child runs). Torch-free."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import IO, Any

from drafters.traces.formats import _reading
from drafters.traces.formats._documents import document_records, is_document
from drafters.traces.formats._entries import entry_records
from drafters.traces.formats._spellings import is_message
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


def expanded(records: Iterator[tuple[Source, Any]], mode: str, lists: str = "$",
             nested: str | None = None) -> Iterator[tuple[Source, Any]]:
    """The records a mapping reads one by one: each batch list's items (``lists``), each cache entry
    (``entries``), each value of an object of records (``values``), else the records as they are; with
    ``nested``, each of those followed by the runs nested under that key (``nested_records``)."""
    if mode == "lists":
        records = batch_items(records, lists)
    elif mode == "entries":
        records = entry_records(records)
    elif mode == "values":
        records = value_records(records, lists)
    return nested_records(records, nested) if nested else records


#: Keys under which a run tree keeps a run's child runs (LangSmith's ``child_runs``, a tracer's ``children``).
NESTED_KEYS = ("child_runs", "childRuns", "children", "child_spans", "childSpans", "child_calls", "childCalls",
               "sub_runs", "subruns", "spans")


def nested_key(values: list) -> str | None:
    """The key under which records nest runs of their own kind (``NESTED_KEYS``): a list of objects that are no
    messages and share at least two other keys with their parent (a chain run's ``child_runs``: its LLM and tool
    runs), in some record of ``values``; None when no record nests runs."""
    for key in NESTED_KEYS:
        for v in values:
            kids = v.get(key) if isinstance(v, dict) and not is_message(v) else None
            if isinstance(kids, list) and kids and all(
                    isinstance(k, dict) and not is_message(k) and len((set(k) & set(v)) - {key}) >= 2 for k in kids):
                return key
    return None


def nested_records(records: Iterator[tuple[Source, Any]], key: str) -> Iterator[tuple[Source, Any]]:
    """``nested: KEY``: each record without its ``KEY`` list, then each run in it, depth first (a run tree's
    runs in the order they started), at its path (``$.child_runs[0].child_runs[1]``). Iterative: the depth is the
    parser's to bound."""
    for source, value in records:
        stack = [(source.record or "$", value)]
        while stack:
            path, node = stack.pop()
            kids = node.get(key) if isinstance(node, dict) else None
            if not isinstance(kids, list):
                yield replace(source, record=path), node
                continue
            yield replace(source, record=path), {k: v for k, v in node.items() if k != key}
            stack.extend(reversed([(f"{path}.{key}[{i}]", kid) for i, kid in enumerate(kids)]))


def value_records(records: Iterator[tuple[Source, Any]], at: str = "$") -> Iterator[tuple[Source, Any]]:
    """``records: values``: the document (or the object at ``at`` in it, ``lists``: a test report's ``results``
    beside its ``metadata``) is an object of records keyed by id or name (a trajectory dump ``{"6238": {"traj":
    [...]}, ...}``): each value is a record, at its key's path (``$['6238']``); a value that is no object is not
    read, unless every value is a list (a chat bot's histories keyed by user id, ``{"1112...": [messages]}``: each
    list a record); ``at`` may match several objects (``$.runs[*].steps``), each one's values read in document
    order."""
    for source, doc in records:
        found = jsonpath(doc, at) if isinstance(doc, (dict, list)) else []
        for where, holder in found:
            lists = isinstance(holder, dict) and all(isinstance(v, list) for v in holder.values())
            for key, value in (holder.items() if isinstance(holder, dict) else []):
                if isinstance(value, dict) or lists:
                    yield replace(source, record=child_path(_concrete(at, where), key), line=None), value


def batch_items(records: Iterator[tuple[Source, Any]], lists: str = "$") -> Iterator[tuple[Source, Any]]:
    """``records: lists``: the document (or the object at ``lists`` in it: an eval export's ``results``) is an
    object of lists whose items are the records (a batch upload, LangSmith's ``{"post": [runs], "patch":
    [runs]}``); a value that is not a list is not read. ``lists`` may match several objects (``$.categories[*]
    .datasets[*]``: an eval's results grouped by category and dataset): each one's lists, in document order."""
    for source, doc in records:
        found = jsonpath(doc, lists) if isinstance(doc, (dict, list)) else []
        base = source.record if source.record and source.record != "$" else "$"  # an array's item: $[1].data...
        for where, holder in found:
            for key, items in (holder.items() if isinstance(holder, dict) else []):
                for i, item in enumerate(items if isinstance(items, list) else []):
                    yield replace(source, record=f"{base}{child_path(_concrete(lists, where), key)[1:]}[{i}]",
                                  line=None), item


def _concrete(declared: str, found: str) -> str:
    """The path of one object a ``lists`` path matched: as declared where it names one (its keys quoted as written:
    ``$['prompt-1.json']``), else the match's own (``$.categories[0].datasets[1]``)."""
    return found if "[*]" in declared else declared
