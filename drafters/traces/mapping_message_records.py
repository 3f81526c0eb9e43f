"""A declared mapping's ``records: messages`` (docs/traces.md, the declared mapping): each record of the file holds
one message, at the mapping's ``messages`` path; the records with the same ``group`` value form one conversation,
in order (sessions interleaved in one log are told apart: ``sessions_interleaved``). Records holding no message
there (session metadata, usage events) are counted, not read; records whose role value the mapping does not name
but that are events beside the messages (a stream chunk, a call's run) are checked against the messages read
(``formats/_events.py``). Torch-free.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from drafters.traces.formats._content import as_text
from drafters.traces.formats._events import event_kind, restated_events
from drafters.traces.formats._record_shapes import holds_role_message
from drafters.traces.formats._spellings import get, newest_first
from drafters.traces.formats.base import ProblemSink
from drafters.traces.formats.openai_responses import ITEM_TYPES
from drafters.traces.json_paths import jsonpath
from drafters.traces.mapping_reading import ABSENT
from drafters.traces.model import Conversation, Source

#: Reads one conversation's raw messages (the mapping's own message reading) as the list ``$``, reporting to the
#: sink given, against the conversation's first source.
ReadRun = Callable[[list, Source, ProblemSink], "Conversation | None"]


def message_records(mapping: Any, records: Iterator[tuple[Source, Any]], filename: str, fmt: str,
                    problems: ProblemSink, read_run: ReadRun) -> Iterator[Conversation]:
    """The conversations of records one message each (see the module docstring), ``mapping`` the declared
    ``Mapping`` (its paths and roles; not imported: mapping.py calls this); ``records_not_messages`` counts the
    records holding none."""
    # group value -> (group value, first source, raw messages, their sources), in order of first record: sessions
    # interleaved in one log (a server's concurrent users) each read as one conversation
    runs: dict[Any, tuple[Any, Source, list, list]] = {}
    last_key, resumed = object(), 0
    skipped, stem = 0, filename.rsplit("/", 1)[-1]
    events: list[tuple[str, Any, Source]] = []
    read: list[Any] = []  # the raw messages read, to check the events against
    for source, record in records:
        found = jsonpath(record, mapping.messages)
        if found and mapping.items == "openai_responses" and isinstance(found[0][1], dict) and \
                found[0][1].get("type", "message") not in ITEM_TYPES:
            found = []  # items one per line: a record of another type (a session header) is no item
        held = found[0][1] if found else None
        # a record may hold its new messages as a list (AI-Trader's log: one message, or several, a line)
        raws = [held] if isinstance(held, dict) else held if isinstance(held, list) and held and all(
            isinstance(m, dict) for m in held) else []
        if not raws:
            if mapping.label == "generic" and holds_role_message(record):  # read by shape: never skip a message
                problems.error("content_not_mapped", f"the record holds a message outside {mapping.messages}, "
                               "where the file's other messages are: it is not read by the inferred mapping", source)
            skipped += 1
            continue
        group = jsonpath(record, mapping.group) if mapping.group else []
        key = as_text(group[0][1]) if group else None
        for raw in raws:
            kind = _event_kind(mapping, raw)
            if kind is not None:  # an event beside the messages: a stream chunk, a call's run, metadata
                events.append((kind, raw, source))
                continue
            resumed += key != last_key and key in runs
            run = runs.setdefault(key, (key, source, [], []))
            run[2].append(raw)
            run[3].append(source)
            read.append(raw)
            last_key = key
    for run in runs.values():
        yield from _run(run, stem, fmt, read_run, problems)
    if resumed:
        problems.warning("sessions_interleaved", f"{resumed} time(s) a session's records resume after another "
                         f"session's ({mapping.group}): each session's messages are read in order as its "
                         "conversation", Source(fmt, filename))
    skipped += restated_events(events, read, problems)
    if skipped:
        problems.warning("records_not_messages", f"{skipped} record(s) hold no message at {mapping.messages} "
                         "(metadata or other events): not read", Source(fmt, filename))


def _event_kind(mapping: Any, raw: Any) -> str | None:
    """``chunk``, ``call_run`` or ``other`` for a record whose role value is no role of the mapping
    (``formats/_events.event_kind``); None for a message (or a record to refuse as ``unknown_role``)."""
    if mapping.items != "messages" or not isinstance(raw, dict):
        return None  # Responses items are typed by their reader (a function call has no role)
    value = get(raw, mapping.role)
    if value is ABSENT or value is None:  # no role at all: a metadata line when it holds no turn either
        value = ""
    if not isinstance(value, str) or value in mapping.roles or "*" in mapping.roles:
        return None
    return event_kind(raw, value, mapping.content, mapping.tool_calls)


def _run(run: tuple[Any, Source, list, list], stem: str, fmt: str, read_run: ReadRun,
         problems: ProblemSink) -> Iterator[Conversation]:
    key, source, msgs, sources = run
    if newest_first(msgs):  # rows exported newest first (ORDER BY created_at DESC): read oldest first
        msgs, sources = msgs[::-1], sources[::-1]
        problems.warning("messages_newest_first", f"the messages of {key!r} are written newest first (their times "
                         "fall): read oldest first", source)
    conv = read_run(msgs, source, AtRecordLines(problems, sources))
    if conv is not None:
        loc = source.line if source.line is not None else source.record
        conv.id = f"{fmt}:{stem}:{key if key is not None else loc}"
        yield conv


_ITEM = re.compile(r"\$\[(\d+)\]")


@dataclass
class AtRecordLines:
    """A problem sink placing a problem about message ``$[i]`` of a run at the record it was read from
    (``sources[i]``: its line) and the rest of the field path (``$[4].content`` -> line 5, ``$.content``): the
    run is read as one list, but the user's file holds each message on a line of its own."""

    problems: ProblemSink
    sources: list[Source]

    def _at(self, message: str, source: Source, field: str | None) -> tuple[str, Source, str | None]:
        m = _ITEM.match(field or "")
        if m is None or int(m[1]) >= len(self.sources):
            return message, source, field
        at = f"${(field or '')[m.end():]}"
        return message.replace(field or "", at), self.sources[int(m[1])], at if at != "$" else None

    def error(self, code: str, message: str, source: Source, field: str | None = None) -> None:
        self.problems.error(code, *self._at(message, source, field))

    def warning(self, code: str, message: str, source: Source, field: str | None = None) -> None:
        self.problems.warning(code, *self._at(message, source, field))

    def __getattr__(self, name: str) -> Any:  # counters and the batch's references (ValidationReport's)
        return getattr(self.problems, name)
