"""Monocle's span convention (monocle2ai/monocle's ``monocle_apptrace``, also as the Okahu service's trace JSON),
read by ``otel_genai``. Not a format (no ``FORMAT``).

An LLM call is a span whose ``span.type`` starts with ``inference`` (``inference``, ``inference.framework``,
``inference.modelapi``); its messages are in two span events: ``data.input`` holds ``input``, a list of JSON
strings, one per context message, keyed by the role (``{"system": ...}``, ``{"user" | "human": ...}``,
``{"assistant" | "ai": ...}``, ``{"tool": ...}``; content as text, content blocks or LangChain's tool call
``{name, args, id, type: "tool_call"}``), or items of the OpenAI Agents SDK (``{tool_function, tool_arguments,
call_id}`` a tool call, ``{call_id, output}`` its result); ``data.output`` holds ``response``, a JSON string keyed
by the role (``{"assistant" | "ai": ...}``) or ``{"tools": [{tool_id, tool_name, tool_arguments}]}``, or the text.
A framework span and the provider span it wraps describe one call: the wrapped span records no events
(``otel_genai`` drops it). A tool message without a call id answers the calls of the assistant message before it,
in order. Torch-free.
"""

from __future__ import annotations

from typing import Any

from drafters.traces.formats._content import as_text, semconv_parts
from drafters.traces.formats._spellings import role_of
from drafters.traces.json_paths import decoded
from drafters.traces.model import Message, TextPart, ToolCallPart, ToolResultPart


def is_inference(attrs: dict) -> bool:
    """Whether a span's attributes make it a Monocle LLM-call span (``span.type`` ``inference...``)."""
    kind = attrs.get("span.type")
    return isinstance(kind, str) and kind.split(".")[0] == "inference"


def records_content(events: dict) -> bool:
    """Whether a Monocle inference span's events (``{name: attributes}``) hold its input."""
    return isinstance(events.get("data.input"), dict) and "input" in events["data.input"]


def call(events: dict) -> tuple[list[Message], Message]:
    """(context, completion) of a Monocle inference span from its events (``{name: attributes}``).

    Raises:
        ValueError: an input item or the response in a form not listed in the module docstring (the call is not
            guessed), or no ``data.output`` response.
    """
    output = events.get("data.output") if isinstance(events.get("data.output"), dict) else {}
    if output.get("response") in (None, ""):
        raise ValueError("no data.output response")
    context: list[Message] = []
    for item in events["data.input"]["input"] or []:
        _append(context, decoded(item))
    link_results(context)
    return context, Message("assistant", _reply_parts(decoded(output["response"])))


def _append(context: list[Message], item: Any) -> None:
    """``item`` added to ``context``: a role-keyed message, or an Agents SDK tool call / result joined to the
    message of its kind before it (a turn's parallel calls, their results)."""
    if isinstance(item, str):
        context.append(Message("user", [TextPart(item)]))
        return
    item = item if isinstance(item, dict) else {"": item}  # any other value: refused below
    if "tool_function" in item:
        part, role = ToolCallPart.from_raw(item.get("call_id"), str(item["tool_function"]),
                                           item.get("tool_arguments")), "assistant"
    elif set(item) == {"call_id", "output"}:
        part, role = ToolResultPart(call_id=item["call_id"], content=as_text(item["output"])), "tool"
    elif len(item) == 1 and role_of(next(iter(item))) in ("system", "user", "assistant", "tool"):
        (key, content), = item.items()
        role = role_of(key)
        parts = [ToolResultPart(call_id=None, content=as_text(content))] if role == "tool" else _parts(content)
        context.append(Message(role, parts))
        return
    else:
        raise ValueError(f"input item with keys {sorted(item)[:6]}")
    if context and context[-1].role == role and all(isinstance(p, type(part)) for p in context[-1].parts):
        context[-1].parts.append(part)
    else:
        context.append(Message(role, [part]))


def _parts(content: Any) -> list:
    if isinstance(content, str):
        calls = decoded(content)  # LangChain's tool calls of a turn, written as a JSON string in the context
        if isinstance(calls, list) and calls and all(isinstance(c, dict) and c.get("type") == "tool_call" for c in calls):
            return _parts(calls)
        return [TextPart(content)] if content else []
    if isinstance(content, dict) and content.get("type") == "tool_call" and "name" in content:
        return [ToolCallPart.from_raw(content.get("id"), str(content["name"]), content.get("args"))]
    if isinstance(content, list):  # blocks, or LangChain's tool calls of one turn
        return [p for block in content for p in (_parts(block) if isinstance(block, dict) and block.get("type") ==
                                                 "tool_call" else semconv_parts([block]))]
    raise ValueError(f"message content of type {type(content).__name__}")


def _reply_parts(response: Any) -> list:
    if isinstance(response, str):
        return [TextPart(response)]
    if isinstance(response, dict) and isinstance(response.get("tools"), list) and len(response) == 1:
        return [ToolCallPart.from_raw(t.get("tool_id"), str(t.get("tool_name")), t.get("tool_arguments"))
                for t in response["tools"] if isinstance(t, dict)]
    if isinstance(response, dict) and len(response) == 1 and role_of(next(iter(response))) == "assistant":
        return _parts(next(iter(response.values())))
    raise ValueError("a response in another form")


def link_results(context: list[Message]) -> None:
    """A tool message's results without a call id get the ids of the assistant's calls before them, in order."""
    pending: list[str] = []
    for m in context:
        if m.role == "assistant":
            pending = [p.id for p in m.parts if isinstance(p, ToolCallPart) and p.id]
        elif m.role == "tool":
            for i, p in enumerate(m.parts):
                if isinstance(p, ToolResultPart) and p.call_id is None and pending:
                    m.parts[i] = ToolResultPart(call_id=pending.pop(0), content=p.content)
