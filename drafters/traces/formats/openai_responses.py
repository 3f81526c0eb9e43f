"""OpenAI Responses API items (also the shape of Codex CLI ``response_item`` records).

Items: ``{role, content}`` / ``{type: "message", role, content[input_text|output_text|...]}``,
``{type: "function_call", call_id, name, arguments (JSON string)}``, ``{type: "custom_tool_call", call_id,
name, input}``, ``{type: "local_shell_call", call_id, action}``, ``{type: "function_call_output" |
"custom_tool_call_output", call_id, output}``, ``{type: "reasoning", summary[{text}], encrypted_content}``.
Consecutive model-side items (reasoning, message, calls) form one assistant message, so parallel calls
come out as one message. Encrypted reasoning keeps ``encrypted_content`` verbatim as the signature with
the readable summary as its text. Files: cassettes and JSON(L) request bodies (``input`` + optional
``response``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from drafters.traces.formats import _cassette, _content
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

NAME = "openai_responses"
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
_MODEL_SIDE = {"function_call", "custom_tool_call", "local_shell_call", "reasoning"}
# function_call_result: the spelling of session logs that write Responses-like items one per line (CodeBuddy)
_OUTPUTS = {"function_call_output", "function_call_result", "custom_tool_call_output", "local_shell_call_output"}
_SERVER = {"web_search_call", "file_search_call", "mcp_call", "mcp_list_tools", "code_interpreter_call",
           "image_generation_call", "computer_call", "mcp_approval_request"}
#: Items that carry no content of their own (a pointer to an earlier item, the client's approval answer).
_NO_CONTENT = {"item_reference", "mcp_approval_response", "computer_call_output"}
#: Every item type this reader knows.
ITEM_TYPES = frozenset({"message", "reasoning", "custom_tool_call", "local_shell_call"} | _MODEL_SIDE | _OUTPUTS | _SERVER
                       | _NO_CONTENT)


def _content_parts(content: Any) -> list:
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    parts: list = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in ("input_text", "output_text", "text") and isinstance(block.get("text"), str):
            parts.append(TextPart(block["text"]))
        elif kind == "refusal":
            parts.append(TextPart(block.get("refusal") or ""))
        else:
            parts.append(UnsupportedPart({"input_image": "image", "input_file": "file",
                                          "input_audio": "audio"}.get(kind, str(kind))))
    return parts


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return _content.text_of(output)
    return json.dumps(output, ensure_ascii=False)


def items_to_messages(items: list[Any], model: str | None = None) -> list[Message]:
    """Responses items -> canonical messages (model-side items merged into assistant messages)."""
    out: list[Message] = []

    def assistant() -> Message:
        if out and out[-1].role == "assistant":
            return out[-1]
        out.append(Message("assistant", [], model=model))
        return out[-1]

    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            role = _ROLES.get(item.get("role"))  # type: ignore[arg-type]
            if role is None:
                continue
            parts = _content_parts(item.get("content"))
            if role == "assistant":
                assistant().parts.extend(parts)
            else:
                out.append(Message(role, parts))  # type: ignore[arg-type]
        elif kind == "reasoning":
            summary = "\n".join(s.get("text", "") for s in item.get("summary") or [] if isinstance(s, dict))
            text = summary or _content.text_of(item.get("content"))
            assistant().parts.append(ReasoningPart(text, signature=item.get("encrypted_content"),
                                                   redacted=bool(item.get("encrypted_content")) and not text))
        elif kind == "function_call":
            assistant().parts.append(ToolCallPart.from_raw(item.get("call_id"), str(item.get("name", "")),
                                                           item.get("arguments")))
        elif kind == "custom_tool_call":
            # Freeform tools take raw text input (e.g. apply_patch): keep it as {"input": text}.
            assistant().parts.append(ToolCallPart.from_raw(item.get("call_id"), str(item.get("name", "")),
                                                           {"input": item.get("input", "")}))
        elif kind == "local_shell_call":
            assistant().parts.append(ToolCallPart.from_raw(item.get("call_id"), "local_shell",
                                                           item.get("action") or {}))
        elif kind in _OUTPUTS:
            out.append(Message("tool", [ToolResultPart(item.get("call_id"), _output_text(item.get("output")))]))
        elif kind in _SERVER:
            assistant().parts.append(UnsupportedPart("server_tool_use"))
        elif kind not in _NO_CONTENT:
            # An item type this reader does not know (a newer API): a counted placeholder whose kind is not
            # deliberate, so ingestion reports the loss (unknown_content) instead of dropping it unseen.
            assistant().parts.append(UnsupportedPart(str(kind)))
    return out


def tools_from_responses(tools: Any) -> list[ToolDef]:
    out = []
    for t in tools or []:
        if isinstance(t, dict) and t.get("type", "function") == "function" and isinstance(t.get("name"), str):
            params = t.get("parameters")
            out.append(ToolDef(t["name"], t.get("description") or "",
                               params if isinstance(params, dict) else {"type": "object", "properties": {}}))
    return out


def request_to_messages(body: dict[str, Any]) -> tuple[list[ToolDef], list[Message]]:
    msgs: list[Message] = []
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        msgs.append(Message("system", [TextPart(body["instructions"])]))
    inp = body.get("input")
    if isinstance(inp, str):
        msgs.append(Message("user", [TextPart(inp)]))
    elif isinstance(inp, list):
        msgs.extend(items_to_messages(inp))
    return tools_from_responses(body.get("tools")), msgs


def response_to_message(body: dict[str, Any]) -> Message | None:
    output = body.get("output")
    if not isinstance(output, list):
        return None
    msgs = [m for m in items_to_messages(output, model=body.get("model")) if m.role == "assistant"]
    return msgs[0] if msgs else Message("assistant", [], model=body.get("model"))


def _is_record(item: dict[str, Any]) -> bool:
    body = item.get("request") if isinstance(item.get("request"), dict) else item
    if isinstance(item.get("output"), dict) and "role" in item["output"]:
        return False  # a chat message beside the input (an agent's call log), no Responses output's item list
    return "input" in body and ("model" in body or "instructions" in body or isinstance(body.get("input"), list))


# Cassettes and JSON(L) request-body records, told apart and parsed as for every provider format.
_sniff, parse = _cassette.provider_sniff_parse(NAME, request_to_messages, response_to_message, _is_record)
#: A response continuing an earlier one by id: its input holds only what is new, so the general path reads such
#: files, rebuilding each context (``_previous_responses``).
_CONTINUES = re.compile(r'"previous_response_id"\s*:\s*"[^"]')


def sniff(head: str, filename: str) -> bool:
    """A provider file of Responses API bodies (``_cassette.provider_sniff_parse``), none continuing another."""
    return _sniff(head, filename) and _CONTINUES.search(head) is None


FORMAT = TraceFormat(NAME, "OpenAI Responses API items (function_call, reasoning), records and cassettes",
                     sniff, parse)
