"""Anthropic Messages API: ``tool_use``/``tool_result``, signed ``thinking``, ``redacted_thinking``,
server-side ``mcp_tool_use``/``mcp_tool_result`` (and ``server_tool_use``/``*_tool_result``).

Accepted files: request/response recordings (VCR/pydantic-ai YAML cassettes, see ``_cassette.py``), and
JSONL/JSON records ``{"system"?, "messages": [...], "tools"?: [...]}`` whose content uses Anthropic blocks.

Canonical mapping (shared with Claude Code, whose ``message`` objects are Anthropic messages):
- a user message's ``tool_result`` blocks become one ``tool``-role message each, in block order; other
  user blocks stay in a user message (Anthropic puts results in the user role; templates want ``tool``);
  a ``tool_result`` block inside an assistant message (a chat export) likewise ends the assistant message
  there: what follows the result is the model's next call (docs/traces.md, "Tool results inside an assistant
  message");
- ``thinking`` keeps its ``signature`` byte-exact; ``redacted_thinking`` keeps its ``data`` as the
  signature with ``redacted=True``;
- server-side tool blocks (MCP connector, web search) ran inside the API within the same response: the
  model did not wait on a client, so they must not be rendered as client tool calls (README,
  mcp_in_transcripts). They become ``UnsupportedPart(kind="server_tool_use" | "server_tool_result")``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from drafters.traces.formats import _cassette, _content, _reading, _spellings, _system_prompts
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import (
    Conversation,
    Message,
    ReasoningPart,
    Source,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
    UnsupportedPart,
)

NAME = "anthropic_messages"

_SERVER_CALLS = {"mcp_tool_use", "server_tool_use"}
_RESULT_KEYS = {"type", "tool_use_id", "id", "content", "is_error", "cache_control"}


def _is_server_result(kind: str) -> bool:
    return kind == "mcp_tool_result" or (kind.endswith("_tool_result") and kind != "tool_result")


def tool_result_parts(block: dict[str, Any]) -> list:
    """A ``tool_result`` block -> [ToolResultPart, UnsupportedPart(image)...]. Text blocks are joined by
    newlines; images (base64 screenshots) are counted, not kept. Without ``content`` (an empty result in the
    API) the text under another common key (``text``, ``output``: a chat export) is read; a block holding other
    data but no text in a known spelling is a placeholder that ingestion reports, never an empty result."""
    content = block.get("content")
    if content is None:
        content = _spellings.first(block, _spellings.RESULT_TEXT_KEYS)
        if content is None and any(v not in (None, "", [], {}) for k, v in block.items() if k not in _RESULT_KEYS):
            return [UnsupportedPart(_spellings.RESULT_NOT_READ)]
    extra: list = []
    if isinstance(content, list):
        texts = []
        for b in content:
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
                texts.append(b["text"])
            elif isinstance(b, str):
                texts.append(b)
            elif isinstance(b, dict):
                _content.add_unsupported(extra, "image" if b.get("type") == "image" else str(b.get("type")))
        text = "\n".join(texts)
    elif isinstance(content, str):
        text = content
    elif content is None:
        text = ""
    else:
        text = json.dumps(content, ensure_ascii=False)
    return [ToolResultPart(call_id=block.get("tool_use_id") or _content.as_str(block.get("id")), content=text,
                           is_error=bool(block.get("is_error", False)))] + extra


def block_part(block: Any) -> Any:
    """One non-tool_result content block -> a canonical part (or None for empty/ignorable blocks)."""
    if isinstance(block, str):
        return TextPart(block)
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text":
        return TextPart(block.get("text") or "")
    if kind == "thinking":
        return ReasoningPart(block.get("thinking") or "", signature=block.get("signature"))
    if kind == "redacted_thinking":
        return ReasoningPart("", signature=block.get("data"), redacted=True)
    if kind == "tool_use":
        return ToolCallPart.from_raw(block.get("id"), str(block.get("name", "")), block.get("input"))
    if kind in _SERVER_CALLS:
        return UnsupportedPart("server_tool_use")
    if isinstance(kind, str) and _is_server_result(kind):
        return UnsupportedPart("server_tool_result")
    return UnsupportedPart("image" if kind == "image" else "document" if kind == "document" else str(kind))


def blocks_to_messages(role: str, content: Any, model: str | None = None, meta: bool = False) -> list[Message]:
    """An Anthropic message (role + string or block list) -> canonical Messages (see module doc)."""
    if isinstance(content, str) or content is None:
        return [Message(role, [TextPart(content)] if content else [], model=model, meta=meta)]  # type: ignore[arg-type]
    out: list[Message] = []
    current: list = []
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            if current:
                out.append(Message(role, current, model=model, meta=meta))  # type: ignore[arg-type]
                current = []
            out.append(Message("tool", tool_result_parts(block)))
            continue
        part = block_part(block)
        if part is None:
            continue
        if isinstance(part, UnsupportedPart):
            _content.add_unsupported(current, part.kind)
        else:
            current.append(part)
    if current or not out:
        out.append(Message(role, current, model=model, meta=meta))  # type: ignore[arg-type]
    return out


def system_messages(system: Any) -> list[Message]:
    """The request's ``system`` (string or text blocks) -> [system Message] or []."""
    text = _content.text_of(system) if system else ""
    return [Message("system", [TextPart(text)])] if text else []


def tools_from_anthropic(tools: Any) -> list[ToolDef]:
    """``[{name, description, input_schema}]`` -> ToolDefs (server tools without a schema are skipped)."""
    out = []
    for t in tools or []:
        if isinstance(t, dict) and isinstance(t.get("name"), str) and isinstance(t.get("input_schema"), dict):
            out.append(ToolDef(t["name"], t.get("description") or "", t["input_schema"]))
    return out


def request_to_messages(body: dict[str, Any]) -> tuple[list[ToolDef], list[Message]]:
    """A /v1/messages request body -> (tools, context messages)."""
    msgs = system_messages(body.get("system"))
    for m in body.get("messages") or []:
        if isinstance(m, dict) and m.get("role") in ("user", "assistant"):
            msgs.extend(blocks_to_messages(m["role"], m.get("content")))
    return tools_from_anthropic(body.get("tools")), msgs


def response_to_message(body: dict[str, Any]) -> Message | None:
    """A /v1/messages response body -> the assistant Message (model filled)."""
    if body.get("type") == "error" or "content" not in body:
        return None
    msgs = blocks_to_messages("assistant", body.get("content"), model=body.get("model"))
    return msgs[0] if msgs else None


# ----------------------------------------------------------------------------------------------- files


def _is_record(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        return False
    for m in value["messages"][:4]:
        if isinstance(m, dict) and isinstance(m.get("content"), list):
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result", "thinking",
                                                             "redacted_thinking", "mcp_tool_use"):
                    return True
    return "system" in value or any(isinstance(t, dict) and "input_schema" in t for t in value.get("tools") or [])


def sniff(head: str, filename: str) -> bool:
    """A cassette of Anthropic /v1/messages calls, or JSON(L) records of Anthropic messages."""
    return _cassette.sniff_cassette_or_records(head, NAME, _is_record)


def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """Yield one Conversation per cassette, or per JSON(L) record."""
    yield from _cassette.parse_cassette_or_records(
        stream, filename, problems, NAME, lambda s: _parse_records(s, filename, problems))


def _parse_records(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    stem = filename.rsplit("/", 1)[-1]
    for src, value in _reading.load_json_or_lines(stream, filename, problems, NAME):
        items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
        for i, item in items:
            s = src if i is None else Source(NAME, filename, record=f"$[{i}]")
            if not isinstance(item, dict) or not isinstance(item.get("messages"), list):
                problems.error("not_an_object", "record has no 'messages' list", s)
                continue
            other = [j for j, m in enumerate(item["messages"])
                     if not (isinstance(m, dict) and m.get("role") in ("user", "assistant"))]
            if other:  # a message the Messages API has no role for (a tool or system message) would be lost
                problems.error("not_an_object", f"message {other[0]}: not a user or assistant message of the "
                               "Anthropic Messages API (its content would be lost)", s, field=f"messages[{other[0]}]")
                continue
            tools, msgs = request_to_messages(item)
            if "system" not in item:  # the system prompt under another spelling beside the list
                prompt, not_read = _system_prompts.sibling_system(item, msgs)
                msgs[:0] = prompt
                _system_prompts.system_not_read(not_read, s, problems)
            model = item.get("model") if isinstance(item.get("model"), str) else None
            for m in msgs:
                if m.role == "assistant" and m.model is None:
                    m.model = model
            loc = s.line if s.line is not None else s.record
            yield Conversation(id=f"{NAME}:{stem}:{item.get('id') or loc}", source=s, tools=tools, messages=msgs)


FORMAT = TraceFormat(
    name=NAME,
    description="Anthropic Messages API (tool_use/tool_result/thinking/MCP), records and cassettes",
    sniff=sniff,
    parse=parse,
)
