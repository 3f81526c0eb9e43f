"""JSON records printed whole inside a text log (docs/traces.md, "JSON inside a text log").

Some tools log each request body and each response body as pretty-printed JSON between lines of their own
(CoverUp's ``---- 2024-09-07T18:36:18 string_utils/errors.py:6-17 ----`` headers, a harness's ``Request:`` /
``Response:`` lines): the file is neither JSON nor JSON Lines nor a transcript. Each object that opens at the start
of a line and parses whole is a record; a request (a message list that does not end with the model's answer)
followed by the response that answers it (an assistant message, a ``choices`` list) is one record ``{"request",
"response"}``, read by the general path as a request/response record and chained with the others. The log's own
lines between the records are not read (counted: ``text_not_read``). A tool's Markdown report of its bodies
(Starcode's round transcript: headings, lists and tables around JSON code blocks, no prose) is such a log; a Markdown
document with prose around JSON in a code block is a transcript quoting it, not read this way.

Not a format (no ``FORMAT``). Standard library only.
"""

from __future__ import annotations

import json
import re
from typing import Any

from drafters.traces.formats._call_io import INPUT_KEYS, input_output, message_lists

MIN_RECORDS = 2  # objects a log must print for this reading (one could be a config dump)


def embedded_records(text: str) -> tuple[list[tuple[int, Any]], int] | None:
    """``([(line, record)], lines not read)`` for a text whose lines hold JSON objects printed whole, each opening
    at a line's start (``{``), at least ``MIN_RECORDS`` of them and at least one holding a message list; requests
    and the responses right after them paired (module docstring). None for any other text (JSON itself, a
    transcript, a Markdown document quoting JSON in a code block among prose: ``_markdown_report``)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    decoder = json.JSONDecoder()
    found: list[tuple[int, Any]] = []
    i = unread = fences = 0
    report = _markdown_report(lines)
    while i < len(lines):
        fences += lines[i].lstrip().startswith(("```", "~~~"))
        if lines[i].startswith("{") and fences % 2 and not report:
            return None  # a Markdown document quoting JSON in a code block: its text is the transcript
        if lines[i].startswith("{"):
            try:
                value, end = decoder.raw_decode(text, starts[i])
            except (ValueError, RecursionError):
                value = None
            if isinstance(value, dict) and not text[end:end + 200].split("\n", 1)[0].strip():
                found.append((i + 1, value))
                while i < len(lines) and starts[i + 1] <= end:
                    i += 1
                i += 1  # the line the object closes on
                continue
        unread += bool(lines[i].strip())
        i += 1
    if len(found) < MIN_RECORDS or not any(message_lists(v, need_assistant=False) for _, v in found):
        return None
    return _paired(found), unread


#: Markdown lines that are structure, not prose: headings, list items, table rows, rules, fences.
_STRUCTURE = re.compile(r"\s*(#{1,6}\s|[-*+]\s|\d+[.)]\s|\||(-{3,}|\*{3,}|_{3,})\s*$|```|~~~)")


def _markdown_report(lines: list[str]) -> bool:
    """Whether the text is a Markdown report of records: every line outside its code blocks is blank or structure
    (``_STRUCTURE``: a tool's own headings, ``- key: value`` lists and tables around the bodies it prints), no
    line of prose, as a transcript quoting JSON has."""
    inside = False
    for line in lines:
        fence = line.lstrip().startswith(("```", "~~~"))
        if not inside and line.strip() and not fence and not _STRUCTURE.match(line):
            return False
        inside ^= fence
    return True


def _paired(found: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """The records with each request and the response printed right after it as one ``{request, response}``: the
    pair read as a request/response record finds its input in the first and its answer in the second."""
    out: list[tuple[int, Any]] = []
    k = 0
    while k < len(found):
        line, value = found[k]
        if k + 1 < len(found):
            io = input_output({"request": value, "response": found[k + 1][1]})
            if io is not None and io[0].startswith("$.request.") and io[1].startswith("$.response") and \
                    not _request(found[k + 1][1]):
                out.append((line, {"request": value, "response": found[k + 1][1]}))
                k += 2
                continue
        out.append((line, value))
        k += 1
    return out


def _request(value: dict) -> bool:
    """A request body: a message list under an input key (``messages``, ``input``, ...), not a response's answers."""
    return any(p.split(".")[1].split("[")[0] in INPUT_KEYS for p, _ in message_lists(value, need_assistant=False))
