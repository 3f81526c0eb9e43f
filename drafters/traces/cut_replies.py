"""Replies cut by the output length limit (docs/traces.md, "Replies cut by the length limit"): an answer the source
records as stopped by the limit (``finish_reason: "length"``, ``stop_reason: "max_tokens"``, a Responses API
``status: "incomplete"``, llama.cpp's ``stopped_limit``; readers set ``Message.cut``), and a tool call whose
arguments end mid-JSON, whatever the source records. The call happened and its context is exact, so it stays a
call (regeneration has the target write its answer whole); the report says how many answers were cut, since
rendered as recorded, the template would close them with tokens the model never wrote (``<|im_end|>``,
``"}</tool_call>``)."""

from __future__ import annotations

import json
from typing import Any

from drafters.traces.json_paths import jsonpath, path_steps
from drafters.traces.model import Conversation, Message, ToolCallPart

_CLOSERS = {"{": "}", "[": "]"}
_STOP_KEYS = ("finish_reason", "finishReason", "stop_reason", "stopReason", "done_reason", "doneReason")
_STOP_HOLDERS = ("response_metadata", "generation_info", "metadata")
_LENGTH_STOPS = ("length", "max_tokens", "max_output_tokens", "max_completion_tokens", "model_length")


def stopped_by_length(value: Any) -> bool:
    """Whether an object records, in its own keys, that its answer stopped at the output length limit: a stop
    reason (``finish_reason`` / ``stop_reason`` / ``done_reason``, any case) of ``length`` / ``max_tokens``, a
    Responses API ``status: "incomplete"`` for ``max_output_tokens``, llama.cpp's ``stopped_limit: true``."""
    if not isinstance(value, dict):
        return False
    meta = [value.get(k) for k in _STOP_HOLDERS if isinstance(value.get(k), dict)]  # LangChain's, one level down
    stops = [v.get(k) for v in (value, *meta) for k in _STOP_KEYS]
    if any(isinstance(v, str) and v.strip().lower() in _LENGTH_STOPS for v in stops):
        return True
    details = value.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    return value.get("stopped_limit") is True or (value.get("status") == "incomplete" and reason in _LENGTH_STOPS)


def body_stopped_by_length(body: Any) -> bool:
    """Whether a provider's response body records its (first) answer stopped by the length limit: the body's own
    keys (Anthropic's ``stop_reason``, Bedrock's ``stopReason``, a Responses ``status``) or its first choice's or
    candidate's (OpenAI's ``finish_reason``, Gemini's ``finishReason``)."""
    if not isinstance(body, dict):
        return False
    firsts = [v[0] for v in (body.get("choices"), body.get("candidates")) if isinstance(v, list) and v]
    return stopped_by_length(body) or any(stopped_by_length(f) for f in firsts)


def answer_stopped_by_length(record: Any, where: str) -> bool:
    """Whether the answer found at the concrete JSONPath ``where`` of ``record`` stopped at the length limit
    (``stopped_by_length``), as recorded by the answer itself or an object holding it (a choice's
    ``finish_reason``, a response's ``stop_reason``, the record's ``stopped_limit``); never another choice's."""
    try:
        steps = path_steps(where)
    except ValueError:
        return False
    for n in range(len(steps), -1, -1):
        found = jsonpath(record, "$" + "".join(steps[:n]))
        if found and stopped_by_length(found[0][1]):
            return True
    return False


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
    """Whether an assistant ``message`` was cut: its reader found it stopped by the length limit (``cut``), or it
    holds a tool call whose arguments end mid-JSON (``ends_mid_json``)."""
    return message.role == "assistant" and (message.cut or any(
        isinstance(p, ToolCallPart) and p.arguments is None and ends_mid_json(p.raw_arguments) for p in message.parts))


def cut_completions(conv: Conversation) -> int:
    """How many of ``conv``'s calls have a cut completion (``holds_cut_call``)."""
    return sum(holds_cut_call(call.completion) for call in conv.calls())
