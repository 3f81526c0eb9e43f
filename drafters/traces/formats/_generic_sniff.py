"""Which files the general path (``generic.py``) claims: any JSON or JSONL document whose first records, rewritten
as the reader rewrites them, have a shape ``_shapes.infer`` recognises, a text log printing JSON records, or a
document cut by the 64 KiB head that looks like messages. Torch-free."""

from __future__ import annotations

import re
from typing import Any

from drafters.traces.formats import (
    _exchanges,
    _joined_by_id,
    _reading,
    _shapes,
    _step_events,
    _streams,
    _update_events,
)
from drafters.traces.formats._embedded_json import embedded_records
from drafters.traces.formats._entries import cache_head
from drafters.traces.formats._named_speakers import named_speakers
from drafters.traces.formats._pair_turns import STRING_HISTORY_KEYS, pair_turns
from drafters.traces.formats._rendered_chats import rendered_messages
from drafters.traces.formats._spellings import contents_shorthand
from drafters.traces.formats._typed_messages import typed_calls
from drafters.traces.formats._wrapped_messages import serialized_messages, untagged_variants
from drafters.traces.model import Source

NAME = "generic"

#: Roles written as message classes: AutoGen's ``"type": "UserMessage"``, LangChain's serialized ``"id": [...,
#: "HumanMessage"]``.
_CLASS_ROLE = re.compile(r'"type":\s*"(User|Assistant|System|Human|AI)Message"|"(Human|AI|System|Tool)Message"\s*\]')


#: A chat history of bare texts (``_pair_turns.STRING_HISTORY_KEYS``) opening in a head cut short.
_STRING_HISTORY = re.compile(r'"(?:' + "|".join(STRING_HISTORY_KEYS) + r')"\s*:\s*\[\s*"')


def sniff(head: str, filename: str) -> bool:
    """Any JSON or JSONL document whose first records have a shape ``_shapes.infer`` recognises."""
    start = head.lstrip()[:1]
    if start not in ("{", "["):
        return bool(start) and embedded_records(head) is not None
    first = _reading.first_json_line(head)
    values = _reading.json_lines(head, limit=_shapes.SAMPLE) if isinstance(first, (dict, list)) else []
    values = [v for v in map(_as_read, values) if v is not None]
    if _step_events.is_step_log(values) or _update_events.is_update_stream(values):
        return True
    if len(values) == 1 and isinstance(values[0], list):  # a one-line array document: its items are the records
        items = [v for v in map(_as_read, values[0]) if v is not None]  # each read as a record (a pair history)
        if _update_events.is_update_stream(items[:_shapes.SAMPLE]):
            return True
        return _shapes.infer([(Source(NAME, filename, record=f"$[{i}]"), v) for i, v in enumerate(items)])\
            is not None
    if values and (_joined_by_id.join_key(values) is not None  # requests and responses logged apart
                   or (len(values) > 1 and _joined_by_id.lone_side(values) is not None)):  # or one half of them
        return True
    if values:
        return _shapes.infer([(Source(NAME, filename, line=i), v) for i, v in enumerate(values, 1)]) is not None
    try:
        value = _as_read(_reading.loads(head))
    except ValueError:  # a pretty-printed document cut by the head
        text = head.replace('\\"', '"')  # messages in a JSON string (a recorded request body) too
        if cache_head(head) or _update_events.HEAD_MARK.search(head) is not None or _STRING_HISTORY.search(head):
            return True
        return ('"role"' in text or '"from"' in text or _CLASS_ROLE.search(text) is not None) \
            and ('"content"' in text or '"value"' in text)  # roles as message classes (AutoGen, LangChain) too
    items = [v for v in map(_as_read, value) if v is not None] if isinstance(value, list) else [value]
    if _update_events.is_update_stream(items[:_shapes.SAMPLE]):
        return True
    return _shapes.infer([(Source(NAME, filename, record=f"$[{i}]" if isinstance(value, list) else "$"), v)
                          for i, v in enumerate(items)]) is not None


def _as_read(value: Any) -> Any:
    """A record of the head as ``read_records`` reads it (None for a failed HTTP exchange): a recorded stream as
    the reply it streams, named speakers, calls typed as messages and the other spellings in common form."""
    value = _exchanges.without_failed(_exchanges.decoded_bodies(value))[0]
    if value is None:
        return None
    value = untagged_variants(serialized_messages(_streams.joined_tree(named_speakers(value)[0])[0]))
    return rendered_messages(spellings_as_messages(value))


def spellings_as_messages(value: Any) -> Any:
    """``value`` with its pair histories or turn objects, Gemini ``contents`` shorthand and messages typed as calls
    or results in common form (``{"role", "content"}`` messages): the rewrites the sniffer and the reader share."""
    return contents_shorthand(pair_turns(typed_calls(value)))
