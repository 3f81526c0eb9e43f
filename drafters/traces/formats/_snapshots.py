"""A thread's state snapshots saved as a file (docs/traces.md, "State snapshots"): LangGraph's ``get_state_history()``
(newest first) or checkpoints listed oldest first, each record one checkpoint of a thread holding every message so
far (``values.messages``). Read as records, each snapshot would be a conversation repeating the calls of the others.
The general path reads each thread once, as its longest snapshot, when the thread's snapshots, in file order, each
begin the next (oldest first) or each begin the one before (newest first) (``snapshots_read_once``, a warning with
the count). A thread whose snapshots do not form such a chain (a fork by time travel, messages trimmed or removed, a
person's edit of the model's tool call through ``update_state``) is refused (``snapshots_not_linear``): which calls
the model made is not guessed. A checkpoint holding no message yet (the input checkpoint, ``values: {}``) is no
call.

Recognized on the first records: every one a checkpoint (a session id such as ``thread_id`` and a ``checkpoint_id``
or ``parent_config``, at any depth up to four: LangGraph's ``config.configurable``) holding one message list or
none, two or more of them holding messages. Not a format (no ``FORMAT``); standard library only.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain, islice, pairwise
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


def _checkpoint(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` names a checkpoint (``checkpoint_id``, ``parent_config``) at any depth up to four."""
    if depth > 4 or not isinstance(value, dict):
        return False
    return "checkpoint_id" in value or "parent_config" in value or any(_checkpoint(v, depth + 1) for v in value.values())


def _is_snapshot_file(values: list[Any]) -> bool:
    held = [_messages(v) for v in values]
    return len([m for m in held if m]) >= 2 and all(
        isinstance(v, dict) and _thread(v) is not None and _checkpoint(v)
        and (m is not None or not message_lists(v, need_assistant=False)) for v, m in zip(values, held))


def _begins(short: list, long: list) -> bool:
    return len(short) <= len(long) and long[:len(short)] == short


def longest_snapshots(records: Iterator[tuple[Source, Any]], problems: ProblemSink) -> Iterator[tuple[Source, Any]]:
    """Each thread's longest snapshot, once (see the module doc), at the place of the thread's first record; files
    whose first records are not such snapshots pass through untouched."""
    head = list(islice(records, SAMPLE))
    if not _is_snapshot_file([v for _, v in head]):
        yield from chain(head, records)
        return
    threads: dict[str, list[tuple[Source, Any, list]]] = {}
    for source, value in chain(head, records):
        messages = _messages(value)
        if messages:
            threads.setdefault(_thread(value) or "", []).append((source, value, messages))
    dropped = 0
    for thread, snaps in threads.items():
        pairs = list(pairwise(snaps))
        if all(_begins(b[2], a[2]) for a, b in pairs):  # newest first
            kept = snaps[0]
        elif all(_begins(a[2], b[2]) for a, b in pairs):  # oldest first
            kept = snaps[-1]
        else:
            problems.error("snapshots_not_linear", f"thread {thread!r}: its {len(snaps)} state snapshots do not each "
                           "begin the next (a fork, trimmed or removed messages, an edited message): which calls the "
                           "model made is not guessed; not read", snaps[0][0])
            continue
        dropped += len(snaps) - 1
        yield kept[0], kept[1]
    if dropped:
        problems.warning("snapshots_read_once", f"{dropped} state snapshot(s) each begin the longest snapshot of their "
                         "thread: each thread read once, as its longest snapshot", head[0][0])
