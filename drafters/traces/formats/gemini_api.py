"""Gemini ``generateContent`` traffic: ``contents[{role: user|model, parts[...]}]``.

Parts: ``{text}``, ``{text, thought: true}`` (a thought summary -> ReasoningPart), ``{functionCall{id?,
name, args{}}}``, ``{functionResponse{id?, name, response}}`` (-> a ``tool`` message), inline data
(images/audio -> counted placeholders). A ``thoughtSignature`` on any part is an opaque blob that must
be replayed byte-exact to Gemini: it is kept as a ReasoningPart with empty text and that signature,
placed just before the part it was attached to. Files: cassettes and JSON(L) request bodies.
"""

from __future__ import annotations

import json
from typing import Any

from drafters.traces.formats import _cassette
from drafters.traces.formats._content import tool_defs
from drafters.traces.formats._spellings import failed_turn
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

NAME = "gemini_api"


def _response_text(response: Any) -> str:
    """A functionResponse.response -> the text the model saw (a lone output/result string unwrapped)."""
    if isinstance(response, dict) and len(response) == 1:
        (value,) = response.values()
        if isinstance(value, str):
            return value
    return json.dumps(response, ensure_ascii=False)


# Part keys in the REST API's camelCase and the Python SDK's snake_case (``model_dump``) spellings.
_SPELLED = {"function_call": "functionCall", "function_response": "functionResponse", "inline_data": "inlineData",
            "file_data": "fileData", "executable_code": "executableCode", "thought_signature": "thoughtSignature",
            "code_execution_result": "codeExecutionResult"}
_KNOWN = {"text", "thought", "thoughtSignature", "functionCall", "functionResponse", "inlineData", "fileData",
          "executableCode", "codeExecutionResult", "videoMetadata", "partMetadata", "mediaResolution"}


def _parts(content: dict[str, Any]) -> list[dict[str, Any]]:
    """A content's parts as a list of part objects, keys in camelCase and unset (null) fields left out: a lone
    part object or a bare string stands for a one-part list (Vertex AI batch requests write ``parts: {text}``)."""
    raw = content.get("parts")
    if isinstance(raw, str):
        raw = [{"text": raw}]
    elif isinstance(raw, dict):
        raw = [raw]
    return [{_SPELLED.get(k, k): v for k, v in p.items() if v is not None} for p in raw or [] if isinstance(p, dict)]


def content_to_messages(content: dict[str, Any], model: str | None = None) -> list[Message]:
    """One ``{role, parts}`` content -> canonical messages (function responses become tool messages). A part of
    no known kind becomes an ``UnsupportedPart`` of its first key's name, which ingestion reports as
    ``unknown_content`` (its content would be lost)."""
    role = "assistant" if content.get("role") == "model" else "user"
    out: list[Message] = []
    parts: list = []
    for part in _parts(content):
        if part.get("thoughtSignature") and "functionResponse" not in part:
            parts.append(ReasoningPart("", signature=part["thoughtSignature"]))
        if "functionResponse" in part:
            fr = part["functionResponse"] or {}
            if parts:
                out.append(Message(role, parts, model=model if role == "assistant" else None))  # type: ignore[arg-type]
                parts = []
            out.append(Message("tool", [ToolResultPart(fr.get("id"), _response_text(fr.get("response")),
                                                       name=fr.get("name"))]))
        elif "functionCall" in part:
            fc = part["functionCall"] or {}
            parts.append(ToolCallPart.from_raw(fc.get("id"), str(fc.get("name", "")), fc.get("args")))
        elif "text" in part:
            if part.get("thought"):
                parts.append(ReasoningPart(part["text"] or ""))
            elif part["text"]:
                parts.append(TextPart(part["text"]))
        elif "inlineData" in part or "fileData" in part:
            data = part.get("inlineData") or part.get("fileData") or {}
            mime = str(data.get("mimeType") or data.get("mime_type") or "")
            parts.append(UnsupportedPart(mime.split("/")[0] or "file"))
        elif "executableCode" in part or "codeExecutionResult" in part:
            parts.append(UnsupportedPart("server_tool_use"))
        elif set(part) - _KNOWN:
            parts.append(UnsupportedPart(next(iter(set(part) - _KNOWN))))
    if parts or not out:
        out.append(Message(role, parts, model=model if role == "assistant" else None))  # type: ignore[arg-type]
    return out


def request_to_messages(body: dict[str, Any]) -> tuple[list[ToolDef], list[Message]]:
    msgs: list[Message] = []
    system = body.get("systemInstruction") or body.get("system_instruction")
    if isinstance(system, dict):
        text = "".join(p.get("text", "") for p in system.get("parts") or [] if isinstance(p, dict))
        if text:
            msgs.append(Message("system", [TextPart(text)]))
    for c in body.get("contents") or []:
        if isinstance(c, dict):
            msgs.extend(content_to_messages(c))
    return tool_defs(body.get("tools")), msgs  # their functionDeclarations


def response_to_message(body: dict[str, Any]) -> Message | None:
    cands = body.get("candidates")
    if not isinstance(cands, list) or not cands or not isinstance(cands[0], dict):
        return None
    content = cands[0].get("content") or {"role": "model", "parts": []}
    msgs = content_to_messages({**content, "role": "model"}, model=body.get("modelVersion"))
    # a reply the provider withheld (finishReason RECITATION / SAFETY, no content): a failed request, no model turn
    msgs[0].failed = failed_turn(cands[0])
    return msgs[0]


def _is_record(item: dict[str, Any]) -> bool:
    return isinstance(item.get("contents"), list) or isinstance((item.get("request") or {}).get("contents"), list)


# Cassettes and JSON(L) request-body records, told apart and parsed as for every provider format.
sniff, parse = _cassette.provider_sniff_parse(NAME, request_to_messages, response_to_message, _is_record)


FORMAT = TraceFormat(NAME, "Gemini generateContent contents/parts (functionCall, thoughtSignature)", sniff, parse)
