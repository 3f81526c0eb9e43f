"""Content extraction shared by the format modules: message content values to canonical parts, tool
definitions in their common spellings, and small type guards for fields of the wrong type.

Not a format (no ``FORMAT``). Standard library only (``drafters.traces`` stays torch-free).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from drafters.traces.model import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
    UnsupportedPart,
)

_TEXT_KINDS = ("", "text", "input_text", "output_text")


def content_parts(content: Any) -> list:
    """Parts for a content value that is a string, None, or a list of typed parts / strings.

    Text parts follow the common shapes: ``{"type":"text","text"|"content"|"value": ...}`` or an untyped
    ``{"text": ...}``; ``reasoning``/``thinking`` parts become ReasoningParts; image/audio/file parts become
    counted ``UnsupportedPart`` placeholders; a part of any other type becomes a placeholder of that type
    (reported as lost content by ingestion).
    """
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    if isinstance(content, dict):
        content = [content]
    parts: list = []
    if isinstance(content, list):
        for item in content:
            if isinstance(item, str):
                if item:
                    parts.append(TextPart(item))
                continue
            if not isinstance(item, dict):
                parts.append(TextPart(json.dumps(item, ensure_ascii=False)))
                continue
            kind = str(item.get("type") or "")
            if any(k in kind for k in ("image", "audio", "video", "file")) or any(
                k in item for k in ("image_url", "inline_data", "inlineData", "image")
            ):
                parts.append(UnsupportedPart(kind=_unsupported_kind(kind, item)))
                continue
            if kind in ("reasoning", "thinking"):
                keys = ("text", "thinking", "reasoning", "value")
                text = next((item[k] for k in keys if isinstance(item.get(k), str)), "")
                parts.append(ReasoningPart(text, signature=item.get("signature"),
                                           redacted=bool(item.get("redacted"))))
                continue
            if kind in ("redacted_reasoning", "omitted_reasoning"):  # Letta: kept encrypted or left out
                parts.append(ReasoningPart("", signature=item.get("data"), redacted=True))
                continue
            if kind not in _TEXT_KINDS:
                # A typed part of another kind (a tool call, a citation, ...): a placeholder of its type,
                # which ingestion reports as lost content, never its JSON dumped in as if it were text.
                parts.append(UnsupportedPart(kind))
                continue
            for key in ("text", "content", "value"):
                if isinstance(item.get(key), str):
                    if item[key]:
                        parts.append(TextPart(item[key]))
                    break
            else:
                parts.append(TextPart(json.dumps(item, ensure_ascii=False)))
        return parts
    return [TextPart(json.dumps(content, ensure_ascii=False))]


def first_choice_message(response: Any) -> dict | None:
    """``response["choices"][0]["message"]`` of an OpenAI-style chat completion, or None when the response
    has no such dict (a missing key, an empty list, another shape)."""
    try:
        msg = response["choices"][0]["message"]
    except (TypeError, KeyError, IndexError):
        return None
    return msg if isinstance(msg, dict) else None


def _unsupported_kind(kind: str, item: dict) -> str:
    for k in ("image", "audio", "video", "file"):
        if k in kind or any(k in key.lower() for key in item):
            return k
    return kind or "unknown"


def text_of(content: Any) -> str:
    """The text of a content value, for fields that are only ever text (system prompts, tool output).

    A string is returned as is; a list keeps its strings and the ``text`` of its blocks, joined by
    newlines (other blocks are dropped: callers that must account for them use ``content_parts``);
    any other JSON value is serialized."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for block in content:
            if isinstance(block, str):
                pieces.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                pieces.append(block["text"])
        return "\n".join(pieces)
    return json.dumps(content, ensure_ascii=False)


def add_unsupported(parts: list, kind: str) -> None:
    """Append an ``UnsupportedPart(kind)`` to ``parts``, or bump the count of the last part when it is an
    unsupported part of the same kind (three images in a row are one part with count 3)."""
    if parts and isinstance(parts[-1], UnsupportedPart) and parts[-1].kind == kind:
        parts[-1].count += 1
    else:
        parts.append(UnsupportedPart(kind))


def as_text(value: Any) -> str:
    """A tool result or other payload as text: strings verbatim, anything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def as_list(value: Any) -> list:
    """``value`` when it is a list, else [] (a field of the wrong type is treated as absent)."""
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str | None:
    """``value`` when it is a string, else None (ids and roles of the wrong type)."""
    return value if isinstance(value, str) else None


SEMCONV_MEDIA_KINDS = ("blob", "uri", "file", "image", "audio", "video")


def semconv_parts(parts: Any, *, call_id: Callable[[Any], Any] = lambda raw: raw, result_names: bool = False,
                  media_kinds: tuple[str, ...] = SEMCONV_MEDIA_KINDS) -> list:
    """OpenTelemetry GenAI semantic-convention message parts (``gen_ai.input.messages[].parts``: ``{type:
    text|reasoning|thinking|tool_call{id, name, arguments}|tool_call_response{id, response}|blob|uri|
    file...}``) -> canonical parts. ``call_id`` normalises a raw call id, ``result_names`` keeps the
    tool name on results, ``media_kinds`` are the part types counted as ``UnsupportedPart`` (their
    ``modality`` when given); any other type is kept as text. Non-list input gives []."""
    out: list = []
    for p in parts if isinstance(parts, list) else []:
        if not isinstance(p, dict):
            continue
        kind = p.get("type")
        if kind == "text":
            out.append(TextPart(as_text(p.get("content", p.get("text")))))
        elif kind in ("reasoning", "thinking"):
            out.append(ReasoningPart(as_text(p.get("content")), signature=p.get("signature")))
        elif kind == "tool_call":
            out.append(ToolCallPart.from_raw(call_id(p.get("id")), str(p.get("name")), p.get("arguments")))
        elif kind == "tool_call_response":
            out.append(ToolResultPart(call_id=call_id(p.get("id")),
                                      content=as_text(p.get("response", p.get("result"))),
                                      name=p.get("name") if result_names else None))
        elif kind in media_kinds:
            out.append(UnsupportedPart(kind=str(p.get("modality") or kind)))
        else:
            out.append(TextPart(as_text(p.get("content", p))))
    return out


def function_declarations(item: Any) -> list | None:
    """The function declarations of a Gemini tool object (``functionDeclarations`` / ``function_declarations``),
    or None for any other value."""
    return next((item[k] for k in ("functionDeclarations", "function_declarations")
                 if isinstance(item, dict) and isinstance(item.get(k), list)), None)


def tool_defs(raw: Any) -> list[ToolDef]:
    """ToolDefs from a list in OpenAI (``{"type":"function","function":{...}}``), Bedrock Converse
    (``{"toolSpec": {name, description, inputSchema: {json}}}``) or flat
    (``{"name","description","parameters"|"input_schema"}``) form; a JSON string is decoded first.
    Entries without a name are skipped."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else []
        except ValueError:
            return []
    if isinstance(raw, dict):
        raw = [raw]
    if isinstance(raw, list):  # Gemini's tools: [{functionDeclarations: [...]}], the declarations are the tools
        raw = [d for item in raw for d in function_declarations(item) or [item]]
    out: list[ToolDef] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        fn = next((item[k] for k in ("function", "toolSpec") if isinstance(item.get(k), dict)), item)
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            continue
        params = next((fn[k] for k in ("parameters", "input_schema", "inputSchema", "parameters_json_schema",
                                       "parametersJsonSchema") if fn.get(k)), None)  # the last two: Gemini's
        if isinstance(params, dict) and isinstance(params.get("json"), dict) and len(params) == 1:
            params = params["json"]  # Bedrock Converse: inputSchema {json: {...}}
        if not isinstance(params, dict):
            params = {"type": "object", "properties": {}}
        out.append(ToolDef(name=name, description=str(fn.get("description") or ""), parameters=params))
    return out


def merge_adjacent_tool_messages(messages: list[Message]) -> list[Message]:
    """Merge consecutive ``tool`` messages into one (parallel results answer one assistant message)."""
    out: list[Message] = []
    for m in messages:
        if out and m.role == "tool" and out[-1].role == "tool":
            out[-1].parts.extend(m.parts)
        else:
            out.append(m)
    return out


def link_models(calls: list) -> None:
    """Give context copies of earlier completions their model back (in place).

    Sources that log every request separately (Langfuse, OpenTelemetry, API recordings) repeat the
    earlier assistant messages in later contexts without the model name; without it the copy would
    not compare equal to the completion and ``Conversation.append_only`` would be False for a plain
    agent loop.
    """
    seen: list = []
    for call in calls:
        for m in call.context:
            if m.role == "assistant" and m.model is None:
                for done in seen:
                    if done.parts == m.parts:
                        m.model = done.model
                        break
        seen.append(call.completion)


def trained(message: Any) -> bool:
    """False when a raw message carries a trainer's "do not train this turn" flag: OpenAI fine-tuning
    ``"weight": 0``, LLaMA-Factory ``"loss_weight": 0``, Axolotl ``"train": false`` / ``"training": false``
    (its ``message_field_training`` keys). Such an assistant message is context, never a completion."""
    if not isinstance(message, dict):
        return True
    for key in ("weight", "loss_weight"):
        value = message.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
            return False
    return not any(message.get(key) is False for key in ("train", "training"))
