"""Which trace format is a file in? Ask every registered format's sniffer, in registry order."""

from __future__ import annotations

from drafters.traces.formats import all_formats
from drafters.traces.formats.base import TraceFormat
from drafters.traces.report import TraceError


def detect_format(head: str, filename: str) -> TraceFormat:
    """The first registered format whose ``sniff(head, filename)`` accepts the file.

    ``head`` is the first (up to 64 KiB) decompressed text of the file. The registry
    (``formats.FORMAT_MODULES``) lists specific formats before general ones, so a tau-bench results
    file (OpenAI messages inside) is not taken for plain OpenAI chat.

    Raises:
        TraceError(code="unknown_format") naming every format tried, with ``where=filename``;
        TraceError(code="empty_file") for an empty file.
    """
    if not head.strip():
        raise TraceError("empty_file", "the file is empty (or only whitespace)", filename)
    tried: list[str] = []
    for fmt in all_formats():
        tried.append(fmt.name)
        try:
            if fmt.sniff(head, filename):
                return fmt
        except Exception:  # noqa: BLE001 - a buggy sniffer must not hide the other formats
            continue
    raise TraceError(
        "unknown_format",
        "no trace format recognizes this file; for an in-house format, declare where its messages sit with a "
        f"mapping (--mapping, docs/traces.md); tried: {', '.join(tried) or '(no formats registered)'}",
        filename,
    )
