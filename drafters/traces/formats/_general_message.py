"""One raw message of the general path (drafters/traces/formats/generic.py) in the common spellings -> a canonical
``Message``: its content key, its parts (a UI message's richer ``parts``), its reasoning and its calls. Not a format
(no ``FORMAT``)."""

from __future__ import annotations

from drafters.traces.formats._content import as_text
from drafters.traces.formats._spellings import (
    CALL_KEYS,
    CONTENT_KEYS,
    MESSAGE_WRAPPERS,
    TOOL_MESSAGE_RESULT_KEYS,
    block_parts,
    calls_of,
    first,
    get,
    keyed_by_id,
    media_beside,
    result_parts,
    summary_texts,
)
from drafters.traces.model import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking", "thought", "channels.reasoning",
                   "tool_plan")  # tool_plan: Cohere v2's plan written before its calls
# LangChain's AIMessage keeps a provider's reasoning in additional_kwargs: DeepSeek's text, a Responses reasoning item
_KWARGS_REASONING = ("additional_kwargs.reasoning_content", "additional_kwargs.reasoning")


def message_of(raw: dict, role: str, content_key: str | None, richer: list | None = None,
               executed: list | None = None) -> Message:
    """One raw message in the common spellings -> a canonical message. A message holding its text under
    ``content_key`` and a ``parts`` list with more than text (the AI SDK's UI messages: the calls and their
    results live only in ``parts``; ``richer``, from ``richer_parts``) is read from its parts. An assistant
    message's calls recorded with their results (``executed``: their parts, ``executed_key``) come before its
    text: the harness ran them, and the text is the reply written after the last result."""
    value = get(raw, content_key) if content_key else None
    if role == "tool" and content_key and content_key.rpartition(".")[2] in TOOL_MESSAGE_RESULT_KEYS \
            and isinstance(value, dict):
        value = as_text(value)  # a result object (Home Assistant's {success, result}): its JSON is the result
    parts = richer if richer is not None else block_parts(value) if content_key else []
    if role == "assistant" and executed:
        parts = [*executed, *parts]
    if role == "tool" or (role == "user" and keyed_by_id(raw.get("tool_results")) and not parts):
        return Message("tool", result_parts(raw, parts))  # a user turn holding only results keyed by call id
    if role == "assistant":
        for key in (*_REASONING_KEYS, *(w + k for w in MESSAGE_WRAPPERS for k in _KWARGS_REASONING)):
            text = get(raw, key)  # thought: AutoGen's text before calls; channels.reasoning: fast-agent's blocks
            text = "".join(p.text for p in block_parts(text) if isinstance(p, TextPart)) if isinstance(text, list) \
                else "".join(summary_texts(text) or []) if isinstance(text, dict) else text
            if isinstance(text, str) and text:
                parts.insert(0, ReasoningPart(text))
                break
        if not parts and summary_texts(raw) is not None:  # a reasoning record: its summary (Responses API items)
            parts = [ReasoningPart(t) for t in summary_texts(raw) or []]
        ids = {p.id for p in parts if isinstance(p, ToolCallPart) and p.id}  # a call in both (LangChain's
        parts += [c for c in calls_of(first(raw, CALL_KEYS)) if not (c.id and c.id in ids)]  # tool_use + tool_calls)
        model = raw.get("model") if isinstance(raw.get("model"), str) else None
        return Message("assistant", parts, model=model)
    if parts and all(isinstance(p, ToolResultPart) for p in parts):
        return Message("tool", parts)
    return Message(role, parts + media_beside(raw))  # type: ignore[arg-type]


def richer_parts(raw: dict, content_key: str | None) -> list | None:
    """The parts of a message's ``parts`` list when it holds more than text beside the content it would be read
    from (``message_of``), else None."""
    if content_key == "parts":
        return None
    held = raw.get(content_key) if content_key else None
    raw = held if isinstance(held, dict) and isinstance(held.get("parts"), list) else raw  # Mastra's v2 content
    blocks = raw.get("parts")
    if not isinstance(blocks, list) and isinstance(raw.get("toolInvocations"), list) and raw["toolInvocations"]:
        # AI SDK v4 before 4.2: the calls only in toolInvocations, run before the content's text
        text = raw.get(content_key) if content_key else None
        blocks = [{"type": "tool-invocation", "toolInvocation": inv} for inv in raw["toolInvocations"]]
        blocks += [{"type": "text", "text": text}] if isinstance(text, str) and text else []
    if not isinstance(blocks, list):
        return None
    parts = block_parts(blocks)
    return parts if any(not isinstance(p, TextPart) for p in parts) else None


def content_key_of(raw: dict, key: str | None, role: str | None = None) -> str | None:
    """The content key of one message: the list's (``key``), or where a message lacks it another spelling beside
    it (OpenCode rows: a user's ``data.text``, an assistant's ``data.content``; a text beside parts; a tool
    message's ``tool_result``, ``TOOL_MESSAGE_RESULT_KEYS``)."""
    if key is None or get(raw, key) is not None:
        return key
    parent = key.rpartition(".")[0]
    beside = [f"{parent}.{k}" if parent else k for k in (*CONTENT_KEYS, *TOOL_MESSAGE_RESULT_KEYS)]
    found = next((k for k in beside[:len(CONTENT_KEYS)] if isinstance(get(raw, k), (str, list))), None)
    if found is None and role == "tool":
        found = next((k for k in beside[len(CONTENT_KEYS):] if get(raw, k) not in (None, "", [], {})), None)
    return found or key
