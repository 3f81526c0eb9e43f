"""Content a record keeps beside the messages a mapping reads (drafters/traces/mapping.py), which reading the
messages alone would lose: a message history under a key no path reads, a turn or a context the model read or
tool calls under another key (``_text_beside``), an assistant answer beside a list that ends before it. Each
refuses the record, reported with its code (docs/traces.md, "Text beside the messages")."""

from __future__ import annotations

from typing import Any

from drafters.traces.formats._content import as_text
from drafters.traces.formats._pair_turns import is_pair_history
from drafters.traces.formats._record_shapes import assistant_path
from drafters.traces.formats._spellings import role_of
from drafters.traces.formats._text_beside import message_texts, text_beside_list
from drafters.traces.json_paths import jsonpath, root_key
from drafters.traces.mapping_reading import Reading
from drafters.traces.model import Conversation


def content_beside(mapping: Any, record: Any, where: str, conv: Conversation | None, reading: Reading) -> bool:
    """Report content beside the messages at ``where`` that ``conv`` (the conversation a ``mapping.Mapping`` read
    there; None when none was) would lose; True when the record is refused (``content_not_mapped``, or
    ``mapping_field_never_matched`` for an answer a ``response`` path should name)."""
    source = reading.source
    history = _history_beside(mapping, record)
    if history is not None:
        reading.problems.error("content_not_mapped", f"the record keeps messages under {history!r}, which the "
                               "mapping does not read: that history would be lost (declare where the conversation "
                               "is: messages: PATH)", source, history)
        return True
    text = _text_beside(mapping, record, where, conv)
    if text is not None:
        at = f"{where.rsplit('.', 1)[0]}.{text}" if "." in where else f"$.{text}"
        reading.problems.error("content_not_mapped", f"the record holds text or tool calls under {text!r} beside the "
                               f"messages the mapping reads ({where}), and no message holds them: a turn, a context "
                               f"the model read or its calls would be lost (declare it: `prompt: {{system: {at}}}` (or "
                               "user) in the mapping, or messages: PATH)", source, text)
        return True
    answer = None if mapping.tree else _answer_beside(mapping, record, where, conv)
    if answer is not None:
        reading.problems.error("mapping_field_never_matched", f"the record holds an assistant answer at {answer}, "
                               "beside the messages the mapping reads, which end before it: the call's output would "
                               "be lost (declare it: response: PATH)", source, "response")
        return True
    return False


def _history_beside(mapping: Any, record: Any) -> str | None:
    """The top-level key of a record holding a message history (a list of messages, each with a ``role`` and a
    ``content``, or of ``[user, assistant]`` text pairs) that none of the mapping's paths reads, else None."""
    if not isinstance(record, dict):
        return None
    m = mapping
    read = {root_key(p) for p in (m.messages, m.response, m.tools, m.id, *m.prompt.values()) if p}
    return next((k for k, v in record.items() if k not in read and isinstance(v, list) and v and
                 (is_pair_history(v) or all(isinstance(x, dict) and role_of(x.get("role")) and
                                            x.get("content") not in (None, "", []) for x in v))), None)


def _text_beside(mapping: Any, record: Any, where: str, conv: Conversation | None) -> str | None:
    """``_text_beside.text_beside_list`` for the conversation read at ``where`` (None when none was)."""
    if conv is None:
        return None
    m = mapping
    texts = message_texts(conv.messages) + ([as_text(v) for _, v in jsonpath(record, m.response)]
                                            if m.response else [])
    return text_beside_list(record, where, texts, [m.messages, m.response, m.tools, m.id, m.group, m.turns,
                                                   *m.prompt.values(), *m.tree.values()])


def _answer_beside(mapping: Any, record: Any, where: str, conv: Conversation | None) -> str | None:
    """Without a declared ``response``, the path of an assistant message stored beside a message list that ends
    before the model's answer (a request/response record read as if it were a transcript), else None."""
    if mapping.response or conv is None or not conv.messages or conv.messages[-1].role == "assistant":
        return None
    assistant = {v for v, r in mapping.roles.items() if r == "assistant"}
    return assistant_path(record, where, mapping.role, assistant)
