"""Amazon Bedrock Converse: ``messages[{role, content[{text} | {toolUse} | {toolResult} |
{reasoningContent{reasoningText{text, signature}} | {redactedContent}} | {image}...]}]``.

``toolUse.input`` is an object; ``toolResult.content`` is ``[{text} | {json} | {image}]`` with ``status``
("error" -> is_error). Cassettes store the request as a raw JSON string in ``body`` (handled by
``_cassette``); the model id is in the URI (``/model/<id>/converse``), filled in by ``_cassette``.
"""

from __future__ import annotations

import json
from typing import Any

from drafters.traces.formats import _cassette
from drafters.traces.formats.base import TraceFormat
from drafters.traces.model import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
    UnsupportedPart,
)

NAME = "bedrock_converse"


def _result_text(content: Any) -> str:
    pieces = []
    for b in content or []:
        if isinstance(b, dict):
            if isinstance(b.get("text"), str):
                pieces.append(b["text"])
            elif "json" in b:
                pieces.append(json.dumps(b["json"], ensure_ascii=False))
    return "\n".join(pieces)


def message_to_messages(msg: dict[str, Any], model: str | None = None) -> list[Message]:
    role = "assistant" if msg.get("role") == "assistant" else "user"
    out: list[Message] = []
    parts: list = []
    for block in msg.get("content") or []:
        if not isinstance(block, dict) or set(block) == {"cachePoint"}:
            continue  # a prompt-cache marker holds no content
        if "text" in block:
            parts.append(TextPart(block["text"] or ""))
        elif "toolUse" in block:
            tu = block["toolUse"] or {}
            parts.append(ToolCallPart.from_raw(tu.get("toolUseId"), str(tu.get("name", "")), tu.get("input")))
        elif "toolResult" in block:
            tr = block["toolResult"] or {}
            if parts:
                out.append(Message(role, parts, model=model if role == "assistant" else None))  # type: ignore[arg-type]
                parts = []
            out.append(Message("tool", [ToolResultPart(tr.get("toolUseId"), _result_text(tr.get("content")),
                                                       is_error=tr.get("status") == "error")]))
        elif "reasoningContent" in block:
            rc = block["reasoningContent"] or {}
            rt = rc.get("reasoningText") or {}
            if "redactedContent" in rc:
                parts.append(ReasoningPart("", signature=str(rc["redactedContent"]), redacted=True))
            else:
                parts.append(ReasoningPart(rt.get("text") or "", signature=rt.get("signature")))
        else:
            parts.append(UnsupportedPart(next(iter(block), "unknown")))
    if parts or not out:
        out.append(Message(role, parts, model=model if role == "assistant" else None))  # type: ignore[arg-type]
    return out


def tools_from_bedrock(config: Any) -> list[ToolDef]:
    out = []
    for t in (config or {}).get("tools") or []:
        spec = (t or {}).get("toolSpec")
        if isinstance(spec, dict):
            schema = (spec.get("inputSchema") or {}).get("json")
            out.append(ToolDef(spec.get("name", ""), spec.get("description") or "",
                               schema if isinstance(schema, dict) else {"type": "object", "properties": {}}))
    return out


def request_to_messages(body: dict[str, Any]) -> tuple[list[ToolDef], list[Message]]:
    msgs: list[Message] = []
    system = "\n".join(s.get("text", "") for s in body.get("system") or [] if isinstance(s, dict))
    if system:
        msgs.append(Message("system", [TextPart(system)]))
    for m in body.get("messages") or []:
        if isinstance(m, dict):
            msgs.extend(message_to_messages(m))
    return tools_from_bedrock(body.get("toolConfig")), msgs


def response_to_message(body: dict[str, Any]) -> Message | None:
    msg = (body.get("output") or {}).get("message")
    if not isinstance(msg, dict):
        return None
    return message_to_messages({**msg, "role": "assistant"})[0]


def _is_record(item: dict[str, Any]) -> bool:
    body = item.get("request") if isinstance(item.get("request"), dict) else item
    return "toolConfig" in body or "inferenceConfig" in body or any(
        isinstance(m, dict) and isinstance(m.get("content"), list) and any(
            isinstance(b, dict) and ("toolUse" in b or "toolResult" in b or "reasoningContent" in b)
            for b in m["content"]) for m in body.get("messages") or [])


# Cassettes and JSON(L) request-body records, told apart and parsed as for every provider format.
sniff, parse = _cassette.provider_sniff_parse(NAME, request_to_messages, response_to_message, _is_record)


FORMAT = TraceFormat(NAME, "Amazon Bedrock Converse messages (toolUse/toolResult/reasoningContent)", sniff, parse)
