"""Multi-agent transcripts whose speakers are named: a list of messages ``{agent: "Principal Investigator",
message: "..."}`` where the user (or the harness speaking as the user, ``User``) is spelled as a role and every
other speaker is an agent's name (Virtual Lab's meeting discussions). Every named agent is a model prompted as a
persona: its messages are the model's turns, each run of one agent's messages one call, whose context is every
earlier message (the other agents' turns included, as the shared transcript holds them).

``named_speakers(record)`` rewrites such a list in the common spelling: each message gets ``role`` (``assistant``
for a named agent) and keeps the agent's name under ``agent``, which tells two agents' turns in a row apart
(``_turns._own_calls``: two calls, not one answer written twice). It applies only where no message has a ``role``
already, one speaker key holds both a user spelling and at least one name (at most five words, a capital first),
and every message holds text. Not a format (no ``FORMAT``). Torch-free.
"""

from __future__ import annotations

from typing import Any

from drafters.traces.formats._spellings import role_of

SPEAKER_KEYS = ("agent", "speaker", "name", "sender", "author", "from", "agent_name", "character", "participant")
TEXT_KEYS = ("message", "content", "text", "utterance")
_MAX_AGENTS = 12


def _name(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 60 and value[:1].isupper() and len(value.split()) <= 5 \
        and role_of(value) is None


def speaker_key(items: list[Any]) -> tuple[str, str] | None:
    """(speaker key, text key) of a list of named-speaker messages (see the module docstring), else None."""
    if len(items) < 2 or not all(isinstance(i, dict) and "role" not in i for i in items):
        return None
    for key in SPEAKER_KEYS:
        values = [i.get(key) for i in items]
        if not all(isinstance(v, str) for v in values):
            continue
        roles = {role_of(v) for v in values}
        names = {v for v in values if _name(v)}
        if "user" not in roles or not names or len(names) > _MAX_AGENTS or \
                any(role_of(v) is None and v not in names for v in values):
            continue
        text = next((t for t in TEXT_KEYS if t != key and all(isinstance(i.get(t), str) for i in items)), None)
        if text is not None:
            return key, text
    return None


def as_named(item: dict, key: str, text: str) -> dict:
    """One named-speaker message in the common spelling: ``role``, ``agent`` (the speaker), ``content``."""
    rest = {k: v for k, v in item.items() if k not in (key, text)}
    return {**rest, "role": role_of(item[key]) or "assistant", "agent": item[key], "content": item[text]}


def named_speakers(record: Any) -> tuple[Any, list[str]]:
    """``(record, names)``: a list of named-speaker messages (the record, or a list one key down) rewritten as the
    module docstring says, with the agents' names in order of first appearance; ``(record, [])`` otherwise."""
    if isinstance(record, dict):
        for k, v in record.items():
            new, names = named_speakers(v) if isinstance(v, list) else (v, [])
            if names:
                return {**record, k: new}, names
        return record, []
    found = speaker_key(record) if isinstance(record, list) else None
    if found is None:
        return record, []
    key, text = found
    return [as_named(i, key, text) for i in record], agent_names(record, key)


def agent_names(items: list[dict], key: str) -> list[str]:
    """The named agents among the speakers, in order of first appearance."""
    return list(dict.fromkeys(i[key] for i in items if isinstance(i, dict) and _name(i.get(key))))
