"""Cohere's v2 Chat API (``POST /v2/chat``): OpenAI-shaped ``messages`` and ``tools`` with Cohere's own pieces.

- an assistant message may carry ``tool_plan``, the plan the model writes before its tool calls (its reasoning,
  sent back with the calls in the next request): a ReasoningPart before the calls;
- a message's ``content`` is a string or a list of ``{type: text, text}`` and, for a tool's result, ``{type:
  document, document: {data, id?}}`` blocks: a document is its ``data`` as compact JSON (what Cohere renders);
- the response is ``{id, message: {role, content, tool_plan, tool_calls, citations}, finish_reason, usage}``:
  ``citations`` are spans of the reply's own text pointing at sources, metadata, not read.

Files: vcrpy / Ruby VCR cassettes of ``api.cohere.com/v2/chat`` (``_cassette``; langchain-cohere records its tests
so) and JSON(L) request bodies with a ``tool_plan`` or document block. Cohere's v1 chat (``message`` beside a
``chat_history`` of ``USER`` / ``CHATBOT`` turns) is another format, not read here.
"""

from __future__ import annotations

import json
from typing import Any

from drafters.traces.formats import _cassette
from drafters.traces.formats.base import TraceFormat
from drafters.traces.formats.openai_chat import message_from_openai, tools_from_openai
from drafters.traces.model import Message, ToolDef

NAME = "cohere_chat"
_METADATA = ("citations",)  # beside a reply: spans of its text pointing at sources


def _block_text(block: Any) -> Any:
    """A content block as OpenAI's spelling reads it: a document as a text block of its data's JSON."""
    if isinstance(block, dict) and block.get("type") == "document" and isinstance(block.get("document"), dict):
        data = block["document"].get("data", block["document"])
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return {"type": "text", "text": text}
    return block


def _as_openai(msg: dict[str, Any]) -> dict[str, Any]:
    """One Cohere v2 message in OpenAI's spelling: ``tool_plan`` as ``reasoning_content``, documents as text,
    citations left out."""
    out = {k: v for k, v in msg.items() if k not in _METADATA and k != "tool_plan"}
    if isinstance(msg.get("tool_plan"), str) and msg["tool_plan"]:
        out["reasoning_content"] = msg["tool_plan"]
    if isinstance(out.get("content"), list):
        out["content"] = [_block_text(b) for b in out["content"]]
    return out


def request_to_messages(body: dict[str, Any]) -> tuple[list[ToolDef], list[Message]]:
    """A ``/v2/chat`` request body -> (tools, context messages). Raises ValueError on an unknown role."""
    messages = [message_from_openai(_as_openai(m)) for m in body.get("messages") or [] if isinstance(m, dict)]
    return tools_from_openai(body.get("tools")), messages


def response_to_message(body: dict[str, Any]) -> Message | None:
    """A ``/v2/chat`` response body -> its assistant Message (None without a ``message``)."""
    msg = body.get("message")
    if not isinstance(msg, dict):
        return None
    return message_from_openai(_as_openai({**msg, "role": "assistant"}), model=body.get("model"))


def _is_record(item: dict[str, Any]) -> bool:
    """A request body (or ``{request, response}``) that only Cohere spells: an assistant ``tool_plan`` or a
    document block in a message."""
    body = item.get("request") if isinstance(item.get("request"), dict) else item
    msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    return any("tool_plan" in m or any(isinstance(b, dict) and b.get("type") == "document"
                                       for b in (m.get("content") if isinstance(m.get("content"), list) else []))
               for m in msgs)


# Cassettes and JSON(L) request-body records, told apart and parsed as for every provider format.
sniff, parse = _cassette.provider_sniff_parse(NAME, request_to_messages, response_to_message, _is_record)


FORMAT = TraceFormat(NAME, "Cohere v2 Chat API (tool_plan, document tool results) records and cassettes", sniff,
                     parse)
