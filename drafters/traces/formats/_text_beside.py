"""Texts a record keeps beside the message list the general path reads (``generic``): a turn the list does not hold
(``message_prompt``, ``final_response``), or the answer to a list that ends before the model's (an agent step log
keeping the reply as a repr string). Either would be lost by reading the list alone, so the record is refused
(``content_not_mapped``). Not a format (no ``FORMAT``)."""

from __future__ import annotations

import re
from typing import Any

from drafters.traces.formats._content import as_text
from drafters.traces.formats._spellings import get, role_of
from drafters.traces.formats._system_prompts import SYSTEM_KEYS

#: A key beside a message list naming a turn of a conversation by its last word (``message_prompt``,
#: ``final_response``, ``userQuery``; not ``response_format``), or a ``message_`` key; not ``answer`` (an eval's
#: reference answer beside the messages is no turn).
_TURN_KEY = re.compile(r"(^|_|[a-z])(prompt|query|question|instruction|input|completion|response|reply|output)s?$"
                       r"|^message_", re.IGNORECASE)


def turn_text_beside(objects: list[dict], messages: list, content_key: str | None) -> str | None:
    """The first key of the object holding the list whose name says a turn (``_TURN_KEY``) and whose text no
    message of the list holds, else None (a copy of a message is no loss)."""
    texts = {as_text(get(m, content_key)).strip() for m in messages if isinstance(m, dict)} if content_key else set()
    for holder in objects:
        for key, value in holder.items():
            if key in SYSTEM_KEYS or not isinstance(value, str) or len(value.split()) < 3 or \
                    not _TURN_KEY.search(key):
                continue  # a word or two (a format name, a label) is no turn
            if value.strip() not in texts and not any(value.strip() in t for t in texts):
                return key
    return None


#: A key that says it holds a call's output (``output_text``, ``action``, ``original_response``, ``prediction``).
_OUTPUT_WORD = re.compile(r"output|answer|action|response|completion|result|reply|generation|predict", re.IGNORECASE)


def answer_beside(objects: list[dict], messages: list, role_key: str) -> str | None:
    """Where a record whose list ends before the model's answer (its last message is not the assistant's) holds
    text under a key saying output (itself or one level down): the answer to that input is there, in a spelling
    the general path does not read (an agent step log: the messages sent, and the reply as a repr string)."""
    last = messages[-1] if messages else None
    if not isinstance(last, dict) or role_of(get(last, role_key)) == "assistant":
        return None
    for holder in objects:
        for key, value in holder.items():
            inner = value.items() if isinstance(value, dict) else [(key, value)]
            for name, text in inner:
                if _OUTPUT_WORD.search(f"{key}.{name}") and isinstance(text, str) and len(text.split()) >= 3:
                    return key if name == key else f"{key}.{name}"
    return None


def holders(value: Any, path: str) -> list[dict]:
    """The objects holding the list at ``path`` (``$.agent.memory.content``: the memory, the agent, the record),
    nearest first; none when a list is on the way (whose prompt an item's list would take is not guessed)."""
    out, node = [], value
    for key, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path)[:-1]:
        if index or not isinstance(node, dict):
            return []
        out.append(node)
        node = node.get(key)
    return ([node] if isinstance(node, dict) else []) + out[::-1]
