"""State snapshots listed newest first (docs/traces.md, "State snapshots"): LangGraph's ``get_state_history()``
saved as a file, each record one checkpoint of a thread holding every message so far (``values.messages``), the
latest first. Each snapshot's messages begin the one before it, so read as records each would be a conversation
repeating the calls of the next (every call counted once per later snapshot). The general path reads each thread's
newest snapshot only, the older ones of that thread, each the beginning of the newer, being its history
(``snapshots_read_once``, a warning with the count).

Recognized on the first records: two or more whose one message list each begins the list of the record before it,
all naming one thread by a session id (``thread_id``, ``session_id``, ... at any depth up to four: LangGraph's
``config.configurable.thread_id``). Not a format (no ``FORMAT``); standard library only.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain, islice
from typing import Any

from drafters.traces.formats._call_io import message_lists
from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Source

SAMPLE = 40
_THREAD_KEYS = ("thread_id", "threadId", "session_id", "sessionId", "conversation_id", "conversationId")


def _thread(value: Any, depth: int = 0) -> str | None:
    """The first session id found in ``value`` (a key of ``_THREAD_KEYS`` holding text or a number)."""
    if depth > 4 or not isinstance(value, dict):
        return None
    for key in _THREAD_KEYS:
        if isinstance(value.get(key), (str, int)) and not isinstance(value.get(key), bool):
            return str(value[key])
    return next((t for v in value.values() if (t := _thread(v, depth + 1)) is not None), None)


def _messages(value: Any) -> list | None:
    found = message_lists(value, need_assistant=False) if isinstance(value, dict) else []
    return found[0][1] if len(found) == 1 else None


def _newest_first(values: list[Any]) -> bool:
    lists = [_messages(v) for v in values]
    threads = {_thread(v) for v in values}
    return len(values) >= 2 and None not in threads and len(threads) == 1 and all(ms is not None for ms in lists) \
        and all(len(b) < len(a) and a[:len(b)] == b for a, b in zip(lists, lists[1:]))  # type: ignore[index,arg-type]


def newest_snapshots(records: Iterator[tuple[Source, Any]], problems: ProblemSink) -> Iterator[tuple[Source, Any]]:
    """``records`` without the snapshots that begin the newer snapshot of their thread read before them; files
    whose first records are not such snapshots pass through untouched."""
    head = list(islice(records, SAMPLE))
    if not _newest_first([v for _, v in head[:SAMPLE]]):
        yield from chain(head, records)
        return
    newest: dict[str, list] = {}  # thread -> the messages of its newest snapshot
    dropped, first = 0, None
    for source, value in chain(head, records):
        thread, messages = _thread(value), _messages(value)
        kept = newest.get(thread) if thread is not None else None
        if kept is not None and messages is not None and len(messages) <= len(kept) and kept[:len(messages)] == messages:
            dropped, first = dropped + 1, first or source
            continue
        if thread is not None and messages is not None:
            newest[thread] = messages
        yield source, value
    if dropped:
        problems.warning("snapshots_read_once", f"{dropped} state snapshot(s) listed newest first each begin the newer "
                         "snapshot of their thread read before them: read once, as that newer snapshot's history",
                         first)  # type: ignore[arg-type]
