"""Structured documents as records: YAML and TOML files, besides the JSON the readers of ``_reading.py`` load.

Harnesses, caches and test suites write their LLM calls as YAML (a report per run, mock specs) or TOML (a response
cache's entry per request: the messages sent and the reply). Each document is a record (a YAML document that is a
list: its items), its scalars that JSON has no type for written as text (a timestamp as its ISO text), so every
reader of JSON records reads them unchanged: the general path (``yaml_documents.py``, ``toml_documents.py``), a
declared mapping (``mapping_records.file_records``) and ``infer-mapping`` with or without ``--reply``.

Bad input: a YAML document that does not parse is ``invalid_yaml`` at its line (the documents before it are read;
those after it cannot be found: YAML has no line-level resynchronisation); a TOML file that does not parse is
``invalid_toml`` at its line (TOML is one document: nothing of it is read). Not a format (no ``FORMAT``).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator
from typing import IO, Any

from drafters.traces.formats._reading import count, load_json_or_lines
from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Source

YAML_EXTENSIONS = (".yaml", ".yml")
TOML_EXTENSIONS = (".toml",)
#: ``tomllib`` ends its messages with the place: "Invalid value (at line 3, column 9)".
_TOML_LINE = re.compile(r"\(at line (\d+), column \d+\)$")


def is_yaml(filename: str) -> bool:
    """A file named ``.yaml`` / ``.yml``."""
    return filename.lower().endswith(YAML_EXTENSIONS)


def is_toml(filename: str) -> bool:
    """A file named ``.toml``."""
    return filename.lower().endswith(TOML_EXTENSIONS)


def first_line(head: str) -> str:
    """A YAML or TOML file's first line that is no blank and no comment (what its sniffer looks at)."""
    return next((line for line in head.lstrip("\ufeff").splitlines() if line.strip() and
                 not line.lstrip().startswith("#")), "")


def is_document(filename: str) -> bool:
    """A YAML or TOML file, by its name."""
    return is_yaml(filename) or is_toml(filename)


def plain(value: Any) -> Any:
    """``value`` with the scalars JSON has no type for written as text (a timestamp, a date, a time of day, bytes)
    and every key a string (YAML allows numbers and booleans as keys)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def yaml_records(stream: IO[str], filename: str, problems: ProblemSink, fmt: str,
                 whole: bool = False) -> Iterator[tuple[Source, Any]]:
    """Each YAML document as ``(source, value)``; a list document yields its items (``$[i]``) unless ``whole``.
    A document that does not parse is reported (``invalid_yaml``, with its line) and ends the file."""
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
                           "the rest of the file are not read", Source(fmt, filename, line=mark.line + 1 if mark else None))
            return
        index += 1
        if doc is None:  # an empty document (a trailing ---)
            continue
        doc = plain(doc)
        items = list(enumerate(doc)) if isinstance(doc, list) and not whole else [(None, doc)]
        for i, item in items:
            count(problems, "records")
            yield Source(fmt, filename, record=f"document {index}" + (f" $[{i}]" if i is not None else "")), item


def toml_records(stream: IO[str], filename: str, problems: ProblemSink, fmt: str) -> Iterator[tuple[Source, Any]]:
    """The TOML file as one record ``(source, table)`` (record ``$``); a file that does not parse is reported
    (``invalid_toml``, with its line) and yields nothing."""
    import tomllib

    try:
        doc = tomllib.loads(stream.read())
    except tomllib.TOMLDecodeError as exc:
        where = _TOML_LINE.search(str(exc))
        problems.error("invalid_toml", f"the file does not parse as TOML ({_TOML_LINE.sub('', str(exc)).strip()}): "
                       "nothing of it is read", Source(fmt, filename, line=int(where.group(1)) if where else None))
        return
    count(problems, "records")
    yield Source(fmt, filename, record="$"), plain(doc)


def document_records(stream: IO[str], filename: str, problems: ProblemSink, fmt: str,
                     whole: bool = False) -> Iterator[tuple[Source, Any]]:
    """The records of a YAML, TOML or JSON / JSON Lines file, by its name (``.yaml`` / ``.yml``, ``.toml``, else
    JSON: ``_reading.load_json_or_lines``); ``whole`` keeps a YAML list document one record."""
    if is_yaml(filename):
        return yaml_records(stream, filename, problems, fmt, whole)
    if is_toml(filename):
        return toml_records(stream, filename, problems, fmt)
    return load_json_or_lines(stream, filename, problems, fmt)
