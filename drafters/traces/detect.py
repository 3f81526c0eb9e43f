"""Which trace format is a file in? Ask every registered format's sniffer, in registry order.

Detection does not guess once: ``candidate_formats`` lists every format whose sniffer accepts the file, in
order of confidence (the registry order: specific formats before general ones, the general path last), and
ingestion tries them in turn; a reader that reads nothing from the file hands it to the next candidate
(``ingest._read_file``), and the report names every candidate tried and why each declined. The general path
is always the last candidate of a JSON file that a specific reader claims, even when its own sniffer did not
accept the head: a misdetecting reader's refusal is then never the final word without the general path
having tried (and said why it declined).
"""

from __future__ import annotations

import json
from pathlib import PurePath

from drafters.traces.formats import all_formats
from drafters.traces.formats._reading import concatenated_objects
from drafters.traces.formats.base import TraceFormat
from drafters.traces.report import TraceError

GENERAL = "generic"  # the general path (formats/generic.py): the last candidate of every JSON file


def candidate_formats(head: str, filename: str) -> list[TraceFormat]:
    """Every registered format whose ``sniff(head, filename)`` accepts the file, most specific first.

    ``head`` is the first (up to 64 KiB) decompressed text of the file. The registry
    (``formats.FORMAT_MODULES``) lists specific formats before general ones, so a tau-bench results
    file (OpenAI messages inside) is tried as tau-bench before plain OpenAI chat.

    Raises:
        TraceError(code="unknown_format") naming every format tried, with ``where=filename``;
        TraceError(code="empty_file") for an empty file.
    """
    if not head.strip():
        raise TraceError("empty_file", "the file is empty (or only whitespace)", filename)
    tried: list[str] = []
    found: list[TraceFormat] = []
    for fmt in all_formats():
        tried.append(fmt.name)
        try:
            if fmt.sniff(head, filename):
                found.append(fmt)
        except Exception:  # noqa: BLE001 - a buggy sniffer must not hide the other formats
            continue
    if found:
        general = next((f for f in all_formats() if f.name == GENERAL), None)
        if general is not None and general not in found and head.lstrip()[:1] in ("{", "["):
            found.append(general)  # a JSON file a specific reader claims: the general path tries it last
        return found
    raise TraceError(
        "unknown_format",
        "no trace format recognizes this file; for an in-house format, declare where its messages sit with a "
        "mapping (--mapping, docs/traces.md; `tracedraft datasets infer-mapping FILE` writes a first one); "
        f"tried: {', '.join(tried) or '(no formats registered)'}",
        filename,
    )


def detect_format(head: str, filename: str) -> TraceFormat:
    """The most confident candidate (``candidate_formats(head, filename)[0]``); same errors."""
    return candidate_formats(head, filename)[0]


#: Names that say "JSON" (compressed or not), and no name at all: what ``json_problem`` may call not JSON.
JSON_SUFFIXES = frozenset({"", ".json", ".jsonl", ".ndjson"})


def json_problem(head: str, filename: str, *, whole: bool) -> tuple[str, int, int] | None:
    """Why a file that no format recognizes is not JSON at all: (message, 1-based line, 1-based column) of
    the first syntax error, when its text is neither a JSON document nor JSON lines and its name says JSON
    (``JSON_SUFFIXES``, under ``.gz``/``.zst``). None when it parses, when its name says another format
    (``notes.txt``: ``unknown_format`` says more), or when ``head`` is not the ``whole`` file and the error
    may only be where the head was cut."""
    name = filename.lower()
    for ext in (".gz", ".zst", ".zstd"):
        name = name.removesuffix(ext)
    if PurePath(name).suffix not in JSON_SUFFIXES:
        return None
    text = head.rstrip()
    try:
        json.loads(text)
        return None
    except json.JSONDecodeError as exc:
        err = exc
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        json.loads(first)
        return None  # JSON lines (a later line's problem is its reader's to report, with its line)
    except json.JSONDecodeError:
        pass
    if err.msg == "Extra data" and concatenated_objects(text):
        return None  # pretty-printed objects one after another: JSON, of no shape a reader knows
    if not whole and (err.pos >= len(text) - 1 or err.msg.startswith("Unterminated string")):
        return None  # a long document cut at the head's end
    return err.msg, err.lineno, err.colno
