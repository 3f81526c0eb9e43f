"""The interface every trace format module implements, and the problem sink they report into.

A format module defines one module-level ``FORMAT = TraceFormat(...)``. ``sniff`` looks at the first
bytes of a file (decompressed, at most 64 KiB) and its name and says whether the format can be the
file's; ``parse`` streams the file and yields canonical conversations, reporting every bad record to
``problems`` with its location and a stable code instead of raising. ``parse`` raises only for
``on_error=fail`` (through ``problems``) or for a file it cannot read at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Protocol

from drafters.traces.model import Conversation, Source


class ProblemSink(Protocol):
    """Where parsers report problems. ``error`` raises ``TraceError`` when the run uses on_error=fail."""

    def error(self, code: str, message: str, source: Source, field: str | None = None) -> None: ...

    def warning(self, code: str, message: str, source: Source, field: str | None = None) -> None: ...


@dataclass(frozen=True)
class TraceFormat:
    """A trace format: its stable name, a cheap sniffer and a streaming parser.

    sniff(head, filename) -> bool: ``head`` is the first (up to 64 KiB) decoded text of the file.
    parse(stream, filename, problems) -> Iterator[Conversation]: ``stream`` is a text stream of the
    whole (decompressed) file; ``filename`` is used only for ``Source.file``, never opened.
    """

    name: str
    description: str
    sniff: Callable[[str, str], bool]
    parse: Callable[[IO[str], str, ProblemSink], Iterator[Conversation]]
