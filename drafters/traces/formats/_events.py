"""Events beside the messages of a one-message-per-record log (``records: messages``; an agent UI's event
stream: Tarko's ``user_message`` / ``assistant_message`` / ``tool_result`` beside ``assistant_streaming_message``
chunks, ``tool_call`` run records and ``agent_run_start``). A record whose role value is no role of the mapping
is one of (docs/traces.md, "Events beside the messages"):

- a **chunk** of a streamed reply (its type says ``stream``, ``delta`` or ``chunk``): the complete message with
  its message id restates it, and it is not read; a chunk no read message restates is ``stream_not_joined``;
- the **run of a call** (its type says ``tool_call`` / ``function_call`` / ``tool_use``): the client running a
  call an assistant message holds, not read; a call no read message holds is ``content_not_mapped``;
- **another event** holding neither content nor tool calls (a run start, a settings change): not read;

each counted in the ``records_not_messages`` warning. Any other record is a message with an unknown role
(``unknown_role``). Not a format (no ``FORMAT``).
"""

from __future__ import annotations

from typing import Any

from drafters.traces.formats._spellings import get, snake
from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Source, compact_json

CHUNK_WORDS = ("stream", "delta", "chunk")
CALL_RUN_WORDS = ("tool_call", "function_call", "tool_use")
MESSAGE_IDS = ("messageId", "message_id", "responseId", "response_id")
CALL_IDS = ("toolCallId", "tool_call_id", "callId", "call_id")
#: Keys that hold a turn's content or a call whatever the mapping names: a record holding one is no metadata.
TURN_KEYS = ("content", "text", "message", "parts", "arguments", "input", "output", "tool_calls", "toolCalls",
             "function_call", *CALL_IDS)


def event_kind(raw: dict, kind: str, content_key: str | None, calls_key: str | None) -> str | None:
    """``chunk``, ``call_run``, ``other`` (see the module docstring) or None for a record to read as a message
    (its role then refused as unknown)."""
    name = snake(kind)
    if any(w in name for w in CHUNK_WORDS) and _first(raw, MESSAGE_IDS) is not None:
        return "chunk"
    if any(w in name for w in CALL_RUN_WORDS) and _first(raw, CALL_IDS) is not None:
        return "call_run"
    held = [get(raw, k) for k in (content_key, calls_key, *TURN_KEYS) if k]
    return "other" if all(v in (None, "", [], {}) for v in held) else None


def restated_events(events: list[tuple[str, Any, Source]], read: list[Any], problems: ProblemSink) -> int:
    """Check the events against the raw messages read: a chunk whose message id no read message carries is
    ``stream_not_joined``, a call run whose call id no read message holds ``content_not_mapped``; returns how
    many events were not read (all of them)."""
    ids = {str(v) for m in read if isinstance(m, dict) for k in MESSAGE_IDS if (v := m.get(k)) is not None}
    text = "".join(compact_json(m) for m in read)
    for kind, raw, source in events:
        if kind == "chunk" and str(_first(raw, MESSAGE_IDS)) not in ids:
            problems.error("stream_not_joined", f"a chunk of a streamed reply (message id "
                           f"{_first(raw, MESSAGE_IDS)}) that no complete message restates: its text is not read",
                           source)
        elif kind == "call_run" and str(_first(raw, CALL_IDS)) not in text:
            problems.error("content_not_mapped", f"a record of a tool call ({_first(raw, CALL_IDS)}) that no "
                           "assistant message holds: the call is not read", source)
    return len(events)


def _first(raw: dict, keys: tuple[str, ...]) -> Any:
    return next((raw[k] for k in keys if raw.get(k) not in (None, "")), None)
