"""Messages written inside wrappers or in a compact form, rewritten as plain ``{role, content}`` messages before the
general path (``generic.py``), declared mappings and ``infer-mapping`` read them (docs/traces.md, "Messages in
wrappers"): a library's own serialization (LangChain's ``dumpd``, a dataclass's private fields, Pydantic AI's
requests and responses), Rust serde's externally tagged variants, ``[message, marks]`` pairs, and messages written
as ``[role, content]`` pairs or as one-key objects keyed by their role. Not a format (no ``FORMAT``)."""

from __future__ import annotations

from typing import Any

from drafters.traces.formats._model_messages import expand as expand_model_messages
from drafters.traces.formats._spellings import (
    RESULT_TEXT_KEYS,
    first,
    is_message,
    result_text,
    role_of,
    snake,
)
from drafters.traces.json_paths import decoded

#: Variant names under which a serde externally tagged message holds a tool's result (snake case).
_RESULT_VARIANTS = ("tool", "tool_result", "function_result", "tool_output")


def untagged_variants(value: Any, depth: int = 0) -> Any:
    """``value`` with every list of messages written inside a wrapper per item replaced by the messages:
    externally tagged variants (Rust serde's enums: a one-key object per message, ``{"text": {role, content,
    tool_calls}}``, ``{"tool": {name, call_id, output}}``; Forge's conversation dumps), where a variant holding a
    message is that message and a result variant (``tool``, ``tool_result``, ...) a tool message with its object's
    keys (the result's text under ``output`` / ``content``, its call under ``call_id``); and ``[message, marks]``
    pairs (AgentScope's memory: each message beside the list of its marks). A list is rewritten only when every item
    is such a wrapper and one holds a message (metadata beside a variant, such as ``usage``, and the marks are not
    read). A message a library serialized in its own envelope is the message it holds (``serialized_message``).
    Anything else is returned as it is."""
    if depth > 8:
        return value
    if isinstance(value, dict):
        held = serialized_message(value)
        if held is not None:
            return {k: untagged_variants(v, depth + 1) for k, v in held.items()}
        new = {k: untagged_variants(v, depth + 1) for k, v in value.items()}
        return value if all(new[k] is v for k, v in value.items()) else new  # unchanged: the same object
    if not isinstance(value, list):
        return value
    if value and all(isinstance(v, list) and len(v) == 2 and is_message(v[0]) and isinstance(v[1], list)
                     for v in value):
        return [v[0] for v in value]  # [message, marks] pairs
    inner = [_variant(v) for v in value]
    if value and all(i is not None for i in inner) and any(is_message(i[1]) for i in inner if i is not None):
        out = []
        for tag, obj in (i for i in inner if i is not None):
            if is_message(obj):
                out.append(obj)
            elif snake(tag) in _RESULT_VARIANTS:  # its text as the content: under output, result, ... if not there
                text = obj.get("content") if "content" in obj else result_text(first(obj, RESULT_TEXT_KEYS))
                out.append({**obj, "role": "tool", "content": text})
            else:
                return value  # a variant of another kind: not guessed
        return out
    head = [untagged_variants(v, depth + 1) for v in value[:1000]]
    return value if all(a is b for a, b in zip(head, value)) else head + value[1000:]


def serialized_message(value: dict) -> dict | None:
    """A message a library serialized in its own envelope, as the message it holds; None for anything else:

    - a LangChain message serialized by ``dumpd`` / ``dumps`` (LangSmith runs, LangGraph checkpoints, tracing
      exports: ``{"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "AIMessage"], "kwargs":
      {content, tool_calls, tool_call_id, ...}}``) as ``{"role": "AIMessage", **kwargs}`` (the class name is the
      role: ``role_of``);
    - a dataclass dumped with its private fields (Haystack's ``ChatMessage`` before 2.9: ``{"_role": "user",
      "_content": [...], "_name": null, "_meta": {}}``) with the underscores dropped."""
    if "_role" in value and "_content" in value and "role" not in value and "content" not in value and \
            all(isinstance(k, str) and k.startswith("_") for k in value):
        return {k[1:]: v for k, v in value.items()}
    ident, kwargs = value.get("id"), value.get("kwargs")
    if value.get("lc") != 1 or value.get("type") != "constructor" or not isinstance(kwargs, dict) or \
            not isinstance(ident, list) or not ident or not isinstance(ident[-1], str) or role_of(ident[-1]) is None:
        return None
    return {"role": ident[-1], **{k: v for k, v in kwargs.items() if k != "role"}}


def serialized_messages(value: Any, depth: int = 0) -> Any:
    """``value`` with every message a library serialized in its own envelope replaced by the message it holds
    (``serialized_message``), at any depth (a LangSmith run tree's LLM runs: ``inputs.messages[0][0]``,
    ``outputs.generations[0][0].message``), and a Pydantic AI history by its role messages (``_model_messages``);
    unchanged objects are returned as they are."""
    if depth > 64 or not isinstance(value, (dict, list)):
        return value
    expanded = expand_model_messages(value)  # Pydantic AI's requests and responses: a request is several messages
    if expanded is not None:
        return [m for _, m in expanded]
    if isinstance(value, dict):
        held = serialized_message(value)
        if held is not None:
            value = held
        # a reply keyed by its role (Monocle's ``response``), but never a message's or a tool result's own content
        # (a tool returning ``{"assistant": "Bob"}``: data, not a reply)
        keyed = not is_message(value) and not any(k in value for k in _RESULT_ID_KEYS)
        new = {k: (keyed and role_keyed_reply(v)) or serialized_messages(v, depth + 1) for k, v in value.items()}
        return value if held is None and all(new[k] is v for k, v in value.items()) else new
    compact = compact_messages(value)
    if compact is not None:
        return compact
    items = [serialized_messages(v, depth + 1) for v in value]
    return value if all(a is b for a, b in zip(items, value)) else items


#: Keys linking a tool result to its call (an Agents SDK ``function_call_output``'s ``call_id``).
_RESULT_ID_KEYS = ("call_id", "tool_call_id", "tool_use_id", "toolCallId")

#: The roles a compact message may be keyed or paired by: the chat roles only (not ``answer`` / ``prompt`` /
#: ``observation``, which name other things as keys), canonical role after ``role_of``.
_CHAT_ROLE_WORDS = ("system", "developer", "user", "human", "assistant", "ai", "model", "bot", "tool")


def compact_messages(value: list) -> list[dict] | None:
    """A list of messages written compactly, as ``{"role", "content"}`` messages; None for any other list:

    - ``[role, content]`` pairs (LangChain's message tuples: ``[["system", "..."], ["human", "Hi"], ["ai", "Hello"]]``);
    - one-key objects keyed by the role (``[{"system": "..."}, {"user": "Hi"}]``; Monocle's span events write each
      as a JSON string, decoded here).

    Every item must be one, the role a chat role word (``_CHAT_ROLE_WORDS``, any case), the content text, a list of
    content blocks or a typed block (``{"type": "tool_call", ...}``, read as the message's content), and one item a
    user's or the system's: a list of user-name objects (``[{"user": "alice"}]``) holds no assistant and gives no
    call; Gradio's ``[user, reply]`` text pairs (``_pair_turns``) start with a user's text, not a role word."""
    if not value or len(value) > 100_000:
        return None
    out = []
    for item in value:
        message = _compact(item, pairs=True)
        if message is None:
            return None
        out.append(message)
    return out if any(m["role"] in ("user", "system") for m in out) else None


def role_keyed_reply(value: Any) -> dict | None:
    """A reply written as a JSON string of one object keyed by an assistant role (``"{\"assistant\": \"4\"}"``,
    Monocle's ``data.output`` events), as ``{"role": "assistant", "content": ...}``; None for anything else."""
    message = _compact(value, pairs=False) if isinstance(value, str) else None
    return message if message is not None and message["role"] == "assistant" else None


def _compact(item: Any, pairs: bool) -> dict | None:
    """One compactly written message (a one-key object keyed by a chat role word, perhaps as a JSON string; with
    ``pairs``, a ``[role, content]`` pair too) as ``{"role", "content"}``; None for anything else."""
    item = decoded(item)
    if pairs and isinstance(item, list) and len(item) == 2:
        role, content = item
    elif isinstance(item, dict) and len(item) == 1:
        (role, content), = item.items()
    else:
        return None
    if not isinstance(role, str) or role.strip().lower() not in _CHAT_ROLE_WORDS or not _content(content):
        return None
    return {"role": role_of(role.strip().lower()), "content": content}


def _content(value: Any) -> bool:
    """Text, a list of content blocks or a typed block: what a compact message's content may be."""
    return isinstance(value, str) or isinstance(value, list) and all(isinstance(v, (dict, str)) for v in value) or \
        isinstance(value, dict) and isinstance(value.get("type"), str)


def _variant(item: Any) -> tuple[str, dict] | None:
    """(tag, object) of an item that is one externally tagged variant: exactly one key holding an object that
    is a message or named as a result, beside metadata keys holding no message (Forge's ``usage``)."""
    if not isinstance(item, dict) or is_message(item):
        return None
    tagged = [(k, v) for k, v in item.items() if isinstance(v, dict) and (is_message(v) or snake(k) in _RESULT_VARIANTS)]
    return tagged[0] if len(tagged) == 1 else None
