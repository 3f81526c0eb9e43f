"""Object-update event streams: an agent server's events that re-send an object whole each time it changes, read as
the messages the stream ends with (docs/traces.md, "Object-update event streams").

OpenCode's server events, as its clients capture them, are the model: ``{"type": "message.updated", "properties":
{"info": {id, role, sessionID, ...}}}`` for a message and ``{"type": "message.part.updated", "properties": {"part":
{id, messageID, type, ...}}}`` for one of its parts, a text part re-sent as it grows, a tool part as its state
moves from pending to completed. The stream is folded into each message's last version, in the order messages first
appeared, holding the last version of each of its parts in the order parts first appeared; a ``*.removed`` /
``*.deleted`` event removes the message or part it names. One record per session (``sessionID``, else one for the
file), ``{"id", "messages": [{...info, "parts": [...]}]}``, which the general path reads as a message list with parts;
a message's own ``system`` text (sent with an OpenCode user turn) is a system message before it.

Events of other kinds (a session's title, a permission asked, a file edited) hold no message: counted in the
``records_not_messages`` warning. A part of a message no event describes (its role unknown) is ``missing_field``, an
error: the message would be lost. Not a format (no ``FORMAT``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from drafters.traces.formats._spellings import first
from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Source

_KIND_KEYS = ("type", "event")
_PAYLOAD_KEYS = ("properties", "data", "payload")
_MESSAGE_KEYS = ("info", "message")
_MESSAGE_ID_KEYS = ("messageID", "messageId", "message_id")
_PART_ID_KEYS = ("partID", "partId", "part_id")
_SESSION_KEYS = ("sessionID", "sessionId", "session_id")
#: A namespaced event name (``message.part.updated``): how such streams name their events.
_EVENT_NAME = re.compile(r"[a-z][a-z_]*(\.[a-z][a-z_]*)+")
_UPDATED = ("updated", "created", "added")
_REMOVED = ("removed", "deleted")
#: A head cut inside such a stream (a pretty-printed array): a message event's name.
HEAD_MARK = re.compile(r'"(type|event)"\s*:\s*"message\.(part\.)?(updated|created)"')


def _event(value: Any) -> tuple[str, dict] | None:
    """``(name, payload)`` of a namespaced event, or None."""
    if not isinstance(value, dict):
        return None
    name = first(value, _KIND_KEYS)
    if not isinstance(name, str) or not _EVENT_NAME.fullmatch(name):
        return None
    payload = next((value[k] for k in _PAYLOAD_KEYS if k in value), value)
    return name, payload if isinstance(payload, dict) else {}


def _message(name: str, payload: dict) -> dict | None:
    words = name.split(".")
    obj = first(payload, _MESSAGE_KEYS)
    if words[0] == "message" and words[-1] in _UPDATED and len(words) == 2 and isinstance(obj, dict) \
            and isinstance(obj.get("id"), str) and isinstance(obj.get("role"), str):
        return obj
    return None


def _part(name: str, payload: dict) -> dict | None:
    words = name.split(".")
    obj = payload.get("part")
    if "part" in words and words[-1] in _UPDATED and isinstance(obj, dict) and isinstance(obj.get("id"), str) \
            and isinstance(first(obj, _MESSAGE_ID_KEYS), str):
        return obj
    return None


def is_update_stream(values: Iterable[Any]) -> bool:
    """Whether ``values`` (a file's first records) are such a stream: namespaced events only, holding at least
    one message event (``message.updated`` with an object holding ``id`` and ``role``) and one part event."""
    events = [_event(v) for v in values]
    if not events or any(e is None for e in events):
        return False
    return any(_message(*e) for e in events if e) and any(_part(*e) for e in events if e)


@dataclass
class _Session:
    source: Source
    messages: dict[str, dict] = field(default_factory=dict)  # id -> last version, in first-seen order
    parts: dict[str, dict[str, dict]] = field(default_factory=dict)  # message id -> part id -> last version


def folded(records: Iterable[tuple[Source, Any]], filename: str, problems: ProblemSink, fmt: str
           ) -> Iterator[tuple[Source, Any]]:
    """The records of an update stream (``is_update_stream`` of all of them) as one ``{"id", "messages"}`` record
    per session; a warning says the stream was folded and counts the events that hold no message."""
    sessions: dict[str, _Session] = {}
    other: Counter[str] = Counter()
    n_events = 0
    for source, value in records:
        event = _event(value)
        if event is None:
            problems.error("unknown_record", "a record of an object-update event stream that is no namespaced event "
                           "(docs/traces.md, object-update event streams): not read", source)
            continue
        n_events += 1
        name, payload = event
        if not _apply(name, payload, source, sessions):
            other[name] += 1
    problems.warning("update_events_folded", f"{n_events} events re-sending messages and their parts as they change "
                     "were read as each message's last version (docs/traces.md, object-update event streams)",
                     Source(fmt, filename))
    if other:
        kinds = ", ".join(f"{k} x{n}" for k, n in other.most_common())
        problems.warning("records_not_messages", f"{sum(other.values())} event(s) hold no message and are not read: "
                         f"{kinds}", Source(fmt, filename))
    for sid, session in sessions.items():
        yield from _session_record(sid, session, problems)


def _apply(name: str, payload: dict, source: Source, sessions: dict[str, _Session]) -> bool:
    """Apply one event to ``sessions``; False for an event that holds no message or part."""
    message, part = _message(name, payload), _part(name, payload)
    obj = message or part
    if obj is None and name.split(".")[-1] in _REMOVED and name.split(".")[0] == "message":
        return _remove(name, payload, sessions)
    if obj is None:
        return False
    sid = str(first(obj, _SESSION_KEYS) or first(payload, _SESSION_KEYS) or "")
    session = sessions.setdefault(sid, _Session(source))
    if message is not None:
        session.messages[message["id"]] = message
    elif part is not None:
        session.parts.setdefault(first(part, _MESSAGE_ID_KEYS), {})[part["id"]] = part
    return True


def _remove(name: str, payload: dict, sessions: dict[str, _Session]) -> bool:
    mid, pid = first(payload, _MESSAGE_ID_KEYS), first(payload, _PART_ID_KEYS)
    for session in sessions.values():
        if "part" in name.split(".") and pid is not None:
            session.parts.get(mid, {}).pop(pid, None)
        elif mid is not None:
            session.messages.pop(mid, None)
            session.parts.pop(mid, None)
    return True


def _session_record(sid: str, session: _Session, problems: ProblemSink) -> Iterator[tuple[Source, Any]]:
    orphans = [mid for mid in session.parts if mid not in session.messages]
    if orphans:
        problems.error("missing_field", f"{len(orphans)} message(s) have parts but no event describing the message "
                       f"(its role unknown), first {orphans[0]}: the session is not read", session.source)
        return
    messages: list[dict] = []
    for mid, info in session.messages.items():
        own = info.get("system")
        if isinstance(own, str) and own.strip():  # the system text sent with this message (OpenCode's user turns)
            messages.append({"role": "system", "parts": [{"type": "text", "text": own}]})
            info = {k: v for k, v in info.items() if k != "system"}
        messages.append({**info, "parts": list(session.parts.get(mid, {}).values())})
    yield session.source, {"id": sid or None, "messages": messages}
