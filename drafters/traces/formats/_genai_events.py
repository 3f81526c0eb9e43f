"""A chat span's messages as OpenTelemetry GenAI *events* (the semantic conventions before content moved into the
``gen_ai.input.messages`` / ``gen_ai.output.messages`` attributes; ``opentelemetry-instrumentation-openai-v2`` and
others write them): ``gen_ai.system.message`` / ``gen_ai.user.message`` / ``gen_ai.assistant.message`` /
``gen_ai.tool.message`` events in order, each with its ``content`` (an assistant's ``tool_calls``, a tool's ``id``),
then one ``gen_ai.choice`` event per answer holding its ``message`` and ``finish_reason``. Read by ``otel_genai``
(docs/traces.md, "OpenTelemetry GenAI"). Not a format (no ``FORMAT``).
"""

from __future__ import annotations

from typing import Any

from drafters.traces.cut_replies import stopped_by_length
from drafters.traces.formats.openai_chat import message_from_openai
from drafters.traces.model import Message

_ROLES = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
          "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
CHOICE = "gen_ai.choice"


def records_messages(events: list[tuple[Any, dict]]) -> bool:
    """Whether a span's ``(name, attributes)`` events are GenAI message events."""
    return any(name in _ROLES or name == CHOICE for name, _ in events)


def call(events: list[tuple[Any, dict]]) -> tuple[list[Message], Message]:
    """(context, answer) of a span's GenAI message events.

    Raises:
        ValueError: no ``gen_ai.choice`` or several (answers sampled for one prompt: not one call), or no event
            holding any content or tool call (content capture off: the call's text is not in the file).
    """
    context: list[Message] = []
    choices = [attrs for name, attrs in events if name == CHOICE]
    for name, attrs in events:
        if name not in _ROLES:
            continue
        raw = {"role": _ROLES[name], "content": attrs.get("content")}
        if isinstance(attrs.get("tool_calls"), list):
            raw["tool_calls"] = attrs["tool_calls"]
        if name == "gen_ai.tool.message" and isinstance(attrs.get("id"), str):
            raw["tool_call_id"] = attrs["id"]
        context.append(message_from_openai(raw))
    if len(choices) != 1:
        raise ValueError(f"{len(choices)} gen_ai.choice events (one answer per call is read)")
    message = choices[0].get("message") if isinstance(choices[0].get("message"), dict) else {}
    answer = message_from_openai({**message, "role": "assistant"})
    if not answer.parts or not any(m.parts for m in context):
        raise ValueError("the events hold no message content (content capture off)")
    answer.cut = stopped_by_length(choices[0])  # cut_replies: reported
    return context, answer
