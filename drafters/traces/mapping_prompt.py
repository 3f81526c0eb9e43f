"""A declared mapping's prompt (drafters/traces/mapping.py): the system and user messages its ``prompt`` paths give,
or, without a declared system prompt, one kept beside the message list or on the session its messages name
(``_system_prompts``; docs/traces.md, "A system prompt beside the message list")."""

from __future__ import annotations

from typing import Any

from drafters.traces.formats._record_shapes import MESSAGE_CHAT_KEYS
from drafters.traces.formats._spellings import block_parts
from drafters.traces.formats._system_prompts import (
    SYSTEM_KEYS,
    linked_system,
    sibling_system,
    system_not_read,
    system_text,
)
from drafters.traces.json_paths import holder_of, jsonpath
from drafters.traces.mapping_reading import Reading
from drafters.traces.model import Message, TextPart


def prompt_messages(declared: dict[str, str], record: Any, where: str | None = None,
                    messages: list[Message] | None = None, reading: Reading | None = None, raws: Any = None
                    ) -> list[Message]:
    """The messages a mapping's ``prompt`` paths (``declared``: {system|user: JSONPath}) give in ``record``
    (system, then user), put before the message list. Without a declared ``prompt.system``, a system prompt beside
    the list at ``where`` (``_spellings.SYSTEM_KEYS`` in the object holding the list, given ``reading``), or on the
    session its raw messages ``raws`` name (``linked_system``), is the first message (``messages``: the list's,
    to tell a copy); one that is not read is reported, never dropped silently."""
    out = []
    for role in ("system", "user"):
        found = jsonpath(record, declared[role]) if role in declared else []
        text = system_text(found[0][1]) if found and role == "system" else None
        parts = [TextPart(text)] if text is not None else block_parts(found[0][1]) if found else []
        if parts:
            out.append(Message(role, parts))  # type: ignore[arg-type]
    holder = holder_of(record, where) if where is not None and reading is not None else None
    if holder is not None and reading is not None:
        keys = {p.split(".")[-1] for p in declared.values()}  # read as declared, not twice
        rest = {k: v for k, v in holder.items() if k not in keys}
        head = out[:1] if out and out[0].role == "system" else messages
        prompt, not_read = sibling_system(rest, head)
        if not prompt and not not_read and isinstance(raws, list):  # on the session the messages name
            prompt, not_read = linked_system(rest, raws, MESSAGE_CHAT_KEYS, head or [])
        if "system" not in declared:
            out[:0] = prompt
        elif prompt:  # a declared system path that found nothing here: the other keys are not read
            not_read = [k for k in SYSTEM_KEYS if system_text(rest.get(k)) is not None]
        system_not_read(not_read, reading.source, reading.problems)
    return out

