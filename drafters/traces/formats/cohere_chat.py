"""Cohere's Chat API, v2 (``POST /v2/chat``) and v1 (``POST /v1/chat``).

v2: OpenAI-shaped ``messages`` and ``tools`` with Cohere's own pieces.

- an assistant message may carry ``tool_plan``, the plan the model writes before its tool calls (its reasoning,
  sent back with the calls in the next request): a ReasoningPart before the calls;
- a message's ``content`` is a string or a list of ``{type: text, text}`` and, for a tool's result, ``{type:
  document, document: {data, id?}}`` blocks: a document is its ``data`` as compact JSON (what Cohere renders);
- the response is ``{id, message: {role, content, tool_plan, tool_calls, citations}, finish_reason, usage}``:
  ``citations`` are spans of the reply's own text pointing at sources, metadata, not read.

v1: the request holds ``preamble`` (the system prompt), ``chat_history`` (``{role: SYSTEM | USER | CHATBOT | TOOL,
message, tool_calls: [{name, parameters | args, id?}], tool_results: [{call: {name, parameters}, outputs}]}``, roles
in any case), then the turn sent now: ``message`` (the user's; empty when the turn is tool results) and
``tool_results``; ``tools`` are ``{name, description, parameter_definitions: {NAME: {type, description,
required}}}``. The response is ``{text, tool_calls: [{name, parameters}], citations, documents, chat_history}``
(``text`` the reply, or the plan written before the calls). v1 calls carry no id where the model wrote them, so
each call's id is made from its name and parameters, which its result's ``call`` repeats. A streamed v1 reply
(``event_type`` events) is joined by ``_streams``.

Files: vcrpy / Ruby VCR cassettes of ``api.cohere.com/v2/chat`` and ``/v1/chat`` (``_cassette``; langchain-cohere and
llm-command-r record their tests so) and JSON(L) request bodies with a ``tool_plan`` or document block.
"""

from __future__ import annotations

import json
from typing import Any

from drafters.traces.formats import _cassette
from drafters.traces.formats.base import TraceFormat
from drafters.traces.formats.openai_chat import message_from_openai, tools_from_openai
from drafters.traces.model import Message, TextPart, ToolCallPart, ToolDef, ToolResultPart

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
    """A ``/v2/chat`` or ``/v1/chat`` request body -> (tools, context messages). Raises ValueError on an unknown
    role."""
    if "messages" not in body and ("message" in body or "chat_history" in body):
        return _v1_tools(body.get("tools")), _v1_request(body)
    messages = [message_from_openai(_as_openai(m)) for m in body.get("messages") or [] if isinstance(m, dict)]
    return tools_from_openai(body.get("tools")), messages


def response_to_message(body: dict[str, Any]) -> Message | None:
    """A ``/v2/chat`` or ``/v1/chat`` response body -> its assistant Message (None without a reply)."""
    msg = body.get("message")
    if isinstance(msg, dict):
        return message_from_openai(_as_openai({**msg, "role": "assistant"}), model=body.get("model"))
    if isinstance(body.get("text"), str) or isinstance(body.get("tool_calls"), list):
        return _v1_message({"role": "CHATBOT", "message": body.get("text"), "tool_calls": body.get("tool_calls")})
    return None


_V1_ROLES = {"system": "system", "user": "user", "chatbot": "assistant", "tool": "tool"}


def _v1_call_id(call: dict[str, Any]) -> str:
    """A v1 call's id, made from its name and parameters: the model's response gives none, an id a client adds to
    the history later is not in the result, and the result's ``call`` repeats both."""
    params = call.get("parameters", call.get("args"))
    return f"{call.get('name')}:{json.dumps(params, sort_keys=True, separators=(',', ':'))}"


def _v1_results(results: Any) -> list[ToolResultPart]:
    """v1 ``tool_results`` (``[{call: {name, parameters}, outputs: [...]}]``) -> result parts, each answering the
    call its ``call`` names; the outputs as compact JSON, one a line."""
    parts = []
    for r in results if isinstance(results, list) else []:
        call = r.get("call") if isinstance(r, dict) and isinstance(r.get("call"), dict) else {}
        outputs = r.get("outputs") if isinstance(r, dict) and isinstance(r.get("outputs"), list) else []
        text = "\n".join(o if isinstance(o, str) else json.dumps(o, ensure_ascii=False, separators=(",", ":"))
                         for o in outputs)
        parts.append(ToolResultPart(_v1_call_id(call), text, name=call.get("name")))
    return parts


def _v1_message(turn: dict[str, Any]) -> Message:
    """One v1 ``chat_history`` turn -> a Message. Raises ValueError on an unknown role."""
    role = _V1_ROLES.get(str(turn.get("role", "")).lower())
    if role is None:
        raise ValueError(f"unknown role {turn.get('role')!r}")
    if role == "tool":
        return Message("tool", list(_v1_results(turn.get("tool_results"))))
    parts: list[Any] = [TextPart(turn["message"])] if isinstance(turn.get("message"), str) and turn["message"] else []
    for call in turn.get("tool_calls") or [] if role == "assistant" else []:
        if isinstance(call, dict):
            params = call.get("parameters", call.get("args"))
            parts.append(ToolCallPart.from_raw(_v1_call_id(call), str(call.get("name", "")), params))
    return Message(role, parts)  # type: ignore[arg-type]


def _v1_request(body: dict[str, Any]) -> list[Message]:
    """A v1 request's context: the preamble, the history, then the turn sent now (the user's message, or the
    results of the last reply's calls)."""
    out = [Message("system", [TextPart(body["preamble"])])] if isinstance(body.get("preamble"), str) and \
        body["preamble"] else []
    out += [_v1_message(t) for t in body.get("chat_history") or [] if isinstance(t, dict)]
    if body.get("tool_results"):
        out.append(Message("tool", list(_v1_results(body["tool_results"]))))
    if isinstance(body.get("message"), str) and body["message"]:
        out.append(Message("user", [TextPart(body["message"])]))
    return out


def _v1_tools(tools: Any) -> list[ToolDef]:
    """v1 tools (``parameter_definitions``) -> ToolDefs with a JSON schema."""
    out = []
    for t in tools if isinstance(tools, list) else []:
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            continue
        defs = t.get("parameter_definitions") if isinstance(t.get("parameter_definitions"), dict) else {}
        props = {k: {key: v[key] for key in ("type", "description") if key in v} for k, v in defs.items()
                 if isinstance(v, dict)}
        required = [k for k, v in defs.items() if isinstance(v, dict) and v.get("required")]
        schema = {"type": "object", "properties": props, **({"required": required} if required else {})}
        out.append(ToolDef(t["name"], t.get("description") or "", schema))
    return out


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
