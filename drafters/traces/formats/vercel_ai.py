"""Vercel AI SDK multi-step results (``generateText`` / ``streamText`` results saved as JSON).

A result is ``{text, steps[{content?, text, toolCalls, toolResults, finishReason, request{body},
response{id, modelId, messages[]}}], response{messages[]}}``; a file holds one result, an array of
them, or one per line. Each step is one LLM call:

- its context is the provider request the SDK sent (``request.body``, a JSON string or object, in the
  provider's own format: OpenAI chat ``messages``, OpenAI Responses ``input``, or Anthropic ``messages``
  with a top-level ``system``), which also carries the tool definitions;
- its completion is the step's assistant message in ``response.messages`` (AI SDK model messages: parts
  ``text``, ``reasoning``, ``redacted-reasoning``, ``tool-call{toolCallId, toolName, args|input}``;
  tool messages with ``tool-result{toolCallId, toolName, result|output}``). Some SDK versions repeat
  the earlier steps' messages in every step's ``response.messages``: only the new ones are read.

A step without a request body gets the conversation so far as its context (the previous step's context,
its response messages and tool results); a first step without one has no recorded prompt and is skipped
(``missing_context``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from drafters.traces.formats import anthropic_messages, openai_chat, openai_responses
from drafters.traces.formats._content import as_list, as_text, link_models, merge_adjacent_tool_messages
from drafters.traces.formats._reading import load_json_or_lines
from drafters.traces.formats._records import RECORD_ERRORS
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import (
    Conversation,
    LLMCall,
    Message,
    ReasoningPart,
    Source,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
    UnsupportedPart,
)

NAME = "vercel_ai"


def sniff(head: str, filename: str) -> bool:
    """JSON with ``"steps"`` whose entries carry AI SDK fields (``finishReason``, ``toolCalls``, ``response``)."""
    window = head[:30000]
    return '"steps"' in window and '"finishReason"' in window and (
        '"toolCalls"' in window or '"toolResults"' in window or '"modelId"' in window)


def _part(p: Any) -> Any:
    """One AI SDK message part -> a canonical part (None for an empty text)."""
    if isinstance(p, str):
        return TextPart(p) if p else None
    if not isinstance(p, dict):
        return UnsupportedPart(type(p).__name__)
    kind = p.get("type")
    if kind == "text":
        return TextPart(as_text(p.get("text"))) if p.get("text") else None
    if kind == "reasoning":
        meta = p.get("providerOptions") or p.get("providerMetadata")
        anthropic = meta.get("anthropic") if isinstance(meta, dict) else None
        signature = p.get("signature") or (anthropic.get("signature") if isinstance(anthropic, dict) else None)
        return ReasoningPart(as_text(p.get("text") or p.get("reasoning")), signature=signature)
    if kind == "redacted-reasoning":
        return ReasoningPart("", signature=p.get("data"), redacted=True)
    if kind == "tool-call":
        return ToolCallPart.from_raw(p.get("toolCallId"), str(p.get("toolName")), p.get("input", p.get("args")))
    if kind == "tool-result":
        out = p.get("output", p.get("result"))
        error = False
        if isinstance(out, dict) and out.get("type") in ("text", "json", "error-text", "error-json", "content"):
            error = str(out["type"]).startswith("error")
            out = out.get("value")
        return ToolResultPart(p.get("toolCallId"), as_text(out), is_error=error or bool(p.get("isError")),
                              name=p.get("toolName"))
    if kind in ("image", "file"):
        return UnsupportedPart("image" if kind == "image" else "file")
    return UnsupportedPart(str(kind))


def _message(raw: Any, model: str | None) -> Message | None:
    if not isinstance(raw, dict) or raw.get("role") not in ("system", "user", "assistant", "tool"):
        return None
    content = raw.get("content")
    parts = [p for p in (_part(c) for c in (content if isinstance(content, list) else [content])) if p is not None]
    role = raw["role"]
    return Message(role, parts, model=model if role == "assistant" else None)


def _request(body: Any) -> tuple[list[ToolDef], list[Message]] | None:
    """(tools, context) of a provider request body, or None when there is none or it is not understood."""
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    if not isinstance(body, dict):
        return None
    if isinstance(body.get("input"), (list, str)):
        return openai_responses.request_to_messages(body)
    msgs = body.get("messages")
    if not isinstance(msgs, list):
        return None
    anthropic = "system" in body or "anthropic_version" in body or any(
        isinstance(m, dict) and isinstance(m.get("content"), list) and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in m["content"])
        for m in msgs)
    return (anthropic_messages if anthropic else openai_chat).request_to_messages(body)


def _new_messages(step_msgs: list[Message], seen: list[Message]) -> list[Message]:
    """The messages of a step that are not a repeat of the earlier steps' (cumulative SDK versions)."""
    n = len(seen)
    if n and len(step_msgs) > n and all(a.role == b.role and a.parts == b.parts
                                        for a, b in zip(step_msgs[:n], seen, strict=False)):
        return step_msgs[n:]
    return step_msgs


def _conversation(result: dict, source: Source, conv_id: str, problems: ProblemSink) -> Conversation | None:
    calls: list[LLMCall] = []
    seen: list[Message] = []  # the SDK's own record: every response message so far
    history: list[Message] = []  # the conversation so far: the last request plus what came after it
    tools: list[ToolDef] = []
    for k, step in enumerate(result["steps"]):
        where = f"steps[{k}]"
        if not isinstance(step, dict):
            problems.error("bad_record", "step is not an object", source, where)
            continue
        response = step.get("response") if isinstance(step.get("response"), dict) else {}
        model = response.get("modelId") if isinstance(response.get("modelId"), str) else None
        msgs = [m for m in (_message(r, model) for r in as_list(response.get("messages"))) if m is not None]
        new = _new_messages(msgs, seen)
        completion = next((m for m in new if m.role == "assistant"), None)
        if completion is None:
            problems.warning("no_assistant_message", "step without an assistant message in response.messages",
                             source, where)
            seen += new
            history += new
            continue
        request = _request((step.get("request") or {}).get("body") if isinstance(step.get("request"), dict) else None)
        if request is not None:
            step_tools, context = request[0], merge_adjacent_tool_messages(request[1])
            tools = step_tools or tools
        else:
            context = list(history)
        if not context:
            problems.warning("missing_context", "step without a request body and no earlier messages: its "
                             "prompt is not recorded", source, where)
        else:
            calls.append(LLMCall(conv_id, len(calls), tools, context, completion))
        seen += new
        history = [*context, *new]
    if not calls:
        return None
    link_models(calls)
    last = calls[-1]
    return Conversation(id=conv_id, source=source, tools=tools, messages=[*last.context, last.completion],
                        explicit_calls=calls)


def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """One conversation per saved result."""
    stem = filename.rsplit("/", 1)[-1]
    for source, value in load_json_or_lines(stream, filename, problems, NAME):
        results = value if isinstance(value, list) else [value]
        for i, result in enumerate(results):
            src = source if not isinstance(value, list) else Source(NAME, filename, source.line, f"$[{i}]")
            if not isinstance(result, dict) or not isinstance(result.get("steps"), list):
                problems.error("not_an_object", "record is not an AI SDK result (no 'steps' list)", src, "steps")
                continue
            loc = src.line if src.line is not None else src.record
            try:
                conv = _conversation(result, src, f"{NAME}:{stem}:{loc}", problems)
            except RECORD_ERRORS as exc:
                problems.error("bad_record", f"result not understood ({type(exc).__name__}: {exc})", src)
                continue
            if conv is not None:
                yield conv


FORMAT = TraceFormat(
    name=NAME,
    description="Vercel AI SDK multi-step results (steps with request bodies and response messages)",
    sniff=sniff,
    parse=parse,
)
