"""Replies cut by the output length limit: a tool call whose arguments end mid-JSON (``finish_reason: "length"``
in OpenAI's spelling, ``max_tokens`` in Anthropic's). Rendered by the chat template, such a call would be closed
(``"}</tool_call><|im_end|>``), tokens the model never wrote, so it is never a call's completion; it stays in
later calls' context, as the server sent it on (docs/traces.md, "Replies cut by the length limit")."""

from __future__ import annotations

import json

from drafters.traces.model import Conversation, Message, ToolCallPart

_CLOSERS = {"{": "}", "[": "]"}


def ends_mid_json(raw: str) -> bool:
    """Whether ``raw`` is a JSON object or array cut short: not JSON itself, but the start of one (closing its
    open string and brackets, after a dangling ``:`` or ``,`` is completed, makes it valid). Plain text arguments
    (a free-form tool's input) and JSON that is wrong in its middle are not cut."""
    text = raw.strip()
    if text[:1] not in _CLOSERS:
        return False
    try:
        json.loads(text)
        return False
    except ValueError:
        pass
    open_brackets: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in _CLOSERS:
            open_brackets.append(_CLOSERS[ch])
        elif ch in "}]" and (not open_brackets or open_brackets.pop() != ch):
            return False
    if not open_brackets:
        return False
    closing = "".join(reversed(open_brackets))
    head = text + ("\\" if escaped else "") + ('"' if in_string else "")  # a cut escape completed, the string closed
    for tail in ("", "null", ': null', '"": null'):  # after a key, a colon, a comma or an object's opening
        for candidate in (head + tail + closing, head.rstrip().rstrip(",") + closing):
            try:
                json.loads(candidate)
                return True
            except ValueError:
                continue
    return False


def holds_cut_call(message: Message) -> bool:
    """Whether an assistant ``message`` holds a tool call whose arguments end mid-JSON (``ends_mid_json``)."""
    return message.role == "assistant" and any(
        isinstance(p, ToolCallPart) and p.arguments is None and ends_mid_json(p.raw_arguments) for p in message.parts)


def drop_cut_completions(conv: Conversation) -> int:
    """In place: every reply holding a cut tool call (``holds_cut_call``) stops being a call's completion (an
    implicit call's message is marked ``supervised=False``; an explicit call whose completion it is, removed).
    Returns how many calls were dropped."""
    if conv.explicit_calls is not None:
        kept = [c for c in conv.explicit_calls if not holds_cut_call(c.completion)]
        dropped = len(conv.explicit_calls) - len(kept)
        conv.explicit_calls = kept
        return dropped
    dropped = 0
    for i, m in enumerate(conv.messages):
        if i > 0 and m.supervised and holds_cut_call(m):
            m.supervised = False
            dropped += 1
    return dropped
