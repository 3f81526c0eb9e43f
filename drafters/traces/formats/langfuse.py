"""Langfuse trace exports (``{trace{...}, observations[...]}``, as the Langfuse UI exports them).

Observations are ``{id, traceId, type: SPAN|GENERATION|TOOL|AGENT|CHAIN|..., parentObservationId,
name, startTime, model, input, output, metadata{attributes, ...}}``. Every ``GENERATION`` is one LLM
call whose ``input`` is the context the model got and whose ``output`` is its reply; calls are
explicit (``LLMCall``) in ``startTime`` order and a trace is one conversation (``append_only`` says
whether the agent rewrote its history between calls, or several agents share the trace).
``trace.input``/``output``/``metadata`` (and sometimes observation fields) are JSON encoded inside a
string and are decoded first. Evaluation ``scores`` are not conversation content.

The message shape depends on the instrumentation, each with its own converter:

- OTel GenAI parts (Microsoft Agent Framework, pydantic-ai/logfire): ``[{role, parts[{type: text|
  tool_call|tool_call_response}]}]``; tool-call ids can be arrays (Agent Framework on the Assistants
  API: ``["run_...", "call_..."]``): the ``call_`` id (what the model emitted) is used;
- OpenAI / LangChain-serialised messages (LangGraph, Koog): ``{role, content, tool_calls |
  additional_kwargs.tool_calls, tool_call_id}``. Two quirks: LangChain's callback appends the tool
  *definitions* as ``{"role": "tool", "content": {"type": "function", "function": {...}}}``
  messages (they become ToolDefs, not messages), and Koog logs the assistant's tool calls as
  ``role: "tool"`` messages whose content is a list of ``{function, id, type: "function"}`` (they
  become assistant tool calls; the id-less results after them pair by position);
- Google GenAI (ADK): ``{model, config{system_instruction, tools[{function_declarations}]},
  contents[{role: user|model, parts[{text}|{function_call}|{function_response}]}]}`` in, ``{content:
  {role: model, parts}}`` out;
- OpenAI Responses API (the OpenAI integration on ``responses.create``): the output is the whole
  Response object (``{object: "response", output: [items]}``) or its item list, the input a list of
  role messages and items (``function_call``, ``function_call_output``, ``reasoning``) or a request
  body ``{instructions, input, tools}``; read with ``openai_responses.items_to_messages``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from drafters.traces.formats._content import (
    as_list,
    as_str,
    as_text,
    content_parts,
    link_models,
    semconv_parts,
    tool_defs,
)
from drafters.traces.formats._reading import iter_values, src
from drafters.traces.formats._records import RECORD_ERRORS
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.formats.openai_responses import items_to_messages, request_to_messages
from drafters.traces.model import (
    Conversation,
    LLMCall,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
    UnsupportedPart,
)

NAME = "langfuse"


def sniff(head: str, filename: str) -> bool:
    """A Langfuse export: ``"trace"`` and ``"observations"`` with Langfuse's ``"projectId"``/``"traceId"``; or a trace
    as the public API returns it (``GET /api/public/traces/{id}``: the trace's fields with its ``observations``
    inside, each naming its ``traceId``, generations typed ``GENERATION``)."""
    return '"observations"' in head and (('"trace"' in head and ('"projectId"' in head or '"traceId"' in head))
                                         or ('"traceId"' in head and '"GENERATION"' in head))


def _decode(value: Any) -> Any:
    """JSON encoded inside a string -> the value (left alone when it is not JSON)."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _call_id(raw: Any) -> str | None:
    if isinstance(raw, list):  # Agent Framework on the Assistants API: [run id, call id]
        ids = [str(x) for x in raw if x]
        return next((x for x in ids if x.startswith("call_")), ids[-1] if ids else None)
    return None if raw is None else str(raw)


class _Builder:
    """Accumulates converted messages, pairing id-less tool results with calls by position."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.tools: list[ToolDef] = []
        self.unanswered: list[ToolCallPart] = []

    def add(self, role: str, parts: list) -> None:
        if not parts and role != "assistant":
            return
        for p in parts:
            if isinstance(p, ToolCallPart):
                self.unanswered.append(p)
            elif isinstance(p, ToolResultPart):
                if p.call_id is None and self.unanswered:
                    call = self.unanswered.pop(0)
                    p.call_id, p.name = call.id, p.name or call.name
                else:
                    self.unanswered = [c for c in self.unanswered if c.id != p.call_id]
        if role in ("assistant", "tool") and self.messages and self.messages[-1].role == role and (
            role == "tool" or not any(isinstance(p, TextPart) for p in parts)
        ):
            self.messages[-1].parts.extend(parts)  # split parallel calls/results back into one message
        else:
            self.messages.append(Message(role, parts))


# ----------------------------------------------------------------------------------- converters


def _semconv_parts(parts: Any) -> list:
    # Agent Framework's list-valued call ids are normalised and results keep their tool name; the media
    # kinds are the ones this reader has always counted (no "video").
    return semconv_parts(parts, call_id=_call_id, result_names=True,
                         media_kinds=("blob", "uri", "file", "image", "audio"))


def _is_fn_list(content: Any) -> bool:
    return isinstance(content, list) and bool(content) and all(
        isinstance(c, dict) and isinstance(c.get("function"), dict) for c in content)


def _openai_calls(items: Any) -> list[ToolCallPart]:
    calls = []
    for tc in items if isinstance(items, list) else []:
        if not isinstance(tc, dict):
            continue
        fn = tc.get("function") if isinstance(tc.get("function"), dict) else tc
        if isinstance(fn.get("name"), str):
            args = fn.get("arguments", fn.get("args"))
            calls.append(ToolCallPart.from_raw(_call_id(tc.get("id")), fn["name"], args))
    return calls


_LC_TYPES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}


def _add_message(b: _Builder, m: Any) -> None:
    """One message in any of the shapes of the module docstring, added to ``b``."""
    if isinstance(m, str):
        b.add("user", [TextPart(m)])
        return
    if not isinstance(m, dict):
        return
    role = as_str(m.get("role")) or _LC_TYPES.get(str(m.get("type")), None) or "user"
    role = {"model": "assistant", "developer": "system"}.get(role, role)
    if role not in ("system", "user", "assistant", "tool"):
        role = "user"
    content = m.get("content")
    if "parts" in m and isinstance(m["parts"], list):
        parts = _semconv_parts(m["parts"]) if any(isinstance(p, dict) and "type" in p for p in m["parts"]) \
            else _gemini_parts(m["parts"])
        if role != "tool" and parts and all(isinstance(p, ToolResultPart) for p in parts):
            role = "tool"
        b.add(role, parts)
        return
    if role == "tool" and isinstance(content, dict) and content.get("type") == "function" \
            and isinstance(content.get("function"), dict):
        b.tools.extend(tool_defs([content]))  # LangChain callback: a tool definition, not a message
        return
    if _is_fn_list(content):  # Koog: the assistant's calls logged as role "tool"
        b.add("assistant", _openai_calls(content))
        return
    if role == "tool":
        b.add("tool", [ToolResultPart(call_id=_call_id(m.get("tool_call_id")), content=as_text(content),
                                      name=m.get("name"))])
        return
    parts = content_parts(content)
    calls = m.get("tool_calls") or (m.get("additional_kwargs") or {}).get("tool_calls") \
        if isinstance(m.get("additional_kwargs"), dict) or m.get("tool_calls") else None
    parts.extend(_openai_calls(calls))
    b.add(role, parts)


def _gemini_parts(parts: Any) -> list:
    out: list = []
    for p in parts if isinstance(parts, list) else []:
        if not isinstance(p, dict):
            continue
        fc = p.get("function_call") or p.get("functionCall")
        fr = p.get("function_response") or p.get("functionResponse")
        if isinstance(fc, dict):
            out.append(ToolCallPart.from_raw(fc.get("id"), str(fc.get("name")), fc.get("args")))
        elif isinstance(fr, dict):
            out.append(ToolResultPart(call_id=fr.get("id"), content=as_text(fr.get("response")), name=fr.get("name")))
        elif p.get("thought") and isinstance(p.get("text"), str):
            out.append(ReasoningPart(p["text"], signature=p.get("thought_signature") or p.get("thoughtSignature")))
        elif isinstance(p.get("text"), str):
            out.append(TextPart(p["text"]))
        elif p.get("inline_data") or p.get("inlineData") or p.get("file_data"):
            out.append(UnsupportedPart(kind="file"))
    return out


# Responses-API item types that carry no role (a list holding one of them is an item list).
_RESPONSES_ITEMS = {"function_call", "function_call_output", "reasoning", "custom_tool_call",
                    "custom_tool_call_output", "local_shell_call", "local_shell_call_output", "web_search_call"}


def _responses_items(raw: Any) -> list | None:
    """The Responses-API items of an input or output value: a Response object's ``output``, or a list
    with at least one role-less item (or an output ``message`` item); None for any other shape."""
    if isinstance(raw, dict) and isinstance(raw.get("output"), list) and (
            raw.get("object") == "response" or "status" in raw):
        return raw["output"]
    if isinstance(raw, list) and any(
            isinstance(i, dict) and (i.get("type") in _RESPONSES_ITEMS
                                     or i.get("type") == "message" and isinstance(i.get("content"), list))
            for i in raw):
        return raw
    return None


def _context(raw: Any, b: _Builder) -> None:
    raw = _decode(raw)
    if isinstance(raw, dict) and "input" in raw and "messages" not in raw and "contents" not in raw:
        tools, msgs = request_to_messages(raw)  # a Responses request body
        b.tools.extend(tools)
        for m in msgs:
            b.add(m.role, m.parts)
        return
    items = _responses_items(raw)
    if items is not None:
        for m in items_to_messages(items):
            b.add(m.role, m.parts)
        return
    if isinstance(raw, dict) and isinstance(raw.get("contents"), list):  # Google GenAI request
        config = raw.get("config") if isinstance(raw.get("config"), dict) else {}
        system = config.get("system_instruction")
        if system:
            b.add("system", content_parts(system) if not isinstance(system, dict) else _gemini_parts(system.get("parts")))
        b.tools.extend(tool_defs(config.get("tools") or []))  # their functionDeclarations
        for c in raw["contents"]:
            if isinstance(c, dict):
                _add_message(b, {"role": c.get("role"), "parts": c.get("parts") or []})
        return
    if isinstance(raw, dict) and isinstance(raw.get("messages"), list):
        raw = raw["messages"]
    if isinstance(raw, list):
        for m in raw:
            _add_message(b, m)
    elif raw is not None:
        _add_message(b, raw)


def _completion(raw: Any, model: str | None) -> Message | None:
    raw = _decode(raw)
    items = _responses_items(raw)
    if items is not None:
        model = model or (raw.get("model") if isinstance(raw, dict) else None)
        replies = [m for m in items_to_messages(items, model=model) if m.role == "assistant"]
        return Message("assistant", [p for m in replies for p in m.parts], model=model)
    b = _Builder()
    if isinstance(raw, dict) and isinstance(raw.get("content"), dict) and "parts" in raw["content"]:
        raw = {"role": "assistant", "parts": raw["content"]["parts"]}  # Google GenAI response
    if isinstance(raw, dict) and isinstance(raw.get("choices"), list) and raw["choices"]:
        raw = (raw["choices"][0] or {}).get("message")
    if isinstance(raw, list):
        for m in raw:
            if isinstance(m, dict) and "role" not in m and "content" not in m and "parts" not in m:
                continue  # Koog writes a bare {finish_reason} entry
            _add_message(b, {**m, "role": "assistant"} if isinstance(m, dict) and "parts" not in m
                         and not _is_fn_list(m.get("content")) else m)
    elif isinstance(raw, dict):
        _add_message(b, {**raw, "role": "assistant"} if "parts" not in raw else raw)
    elif isinstance(raw, str):
        b.add("assistant", [TextPart(raw)])
    else:
        return None
    parts = [p for m in b.messages for p in m.parts]
    return Message("assistant", parts, model=model)


def _extra_tool_defs(obs: dict) -> list[ToolDef]:
    attrs = (_decode(obs.get("metadata")) or {})
    attrs = attrs.get("attributes") if isinstance(attrs, dict) and isinstance(attrs.get("attributes"), dict) else {}
    defs = tool_defs(_decode(attrs.get("gen_ai.tool.definitions")) or [])
    mrp = _decode(attrs.get("model_request_parameters"))
    if not defs and isinstance(mrp, dict):
        defs = tool_defs(as_list(mrp.get("function_tools")) + as_list(mrp.get("output_tools")))
    return defs


# ------------------------------------------------------------------------------------------ parse


def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """One conversation per exported trace (a file may hold one export, a list, or JSON Lines)."""
    for line, ordinal, value in iter_values(stream, filename, NAME, problems):
        source = src(NAME, filename, line=line, record=f"$[{ordinal}]" if ordinal else "$")
        if not isinstance(value, dict) or not isinstance(value.get("observations"), list):
            problems.error("bad_record", "expected {trace, observations[]} (or a trace holding its observations)",
                           source, "observations")
            continue
        trace = value.get("trace") if isinstance(value.get("trace"), dict) else value  # the API's trace: itself
        trace_id = str(trace.get("id") or f"{filename}#{ordinal}")
        gens = [o for o in value["observations"] if isinstance(o, dict) and o.get("type") == "GENERATION"]
        gens.sort(key=lambda o: str(o.get("startTime") or ""))
        calls: list[LLMCall] = []
        for o in gens:
            where = f"observations[id={o.get('id')}]"
            b = _Builder()
            model = o.get("model") if isinstance(o.get("model"), str) else None
            try:
                _context(o.get("input"), b)
                completion = _completion(o.get("output"), model)
                tools = b.tools or _extra_tool_defs(o)
            except RECORD_ERRORS as exc:
                problems.error("bad_record", f"malformed generation ({type(exc).__name__}: {exc})", source, where)
                continue
            if completion is None or not completion.parts:
                problems.warning("no_assistant_message", "generation without output", source, where)
                continue
            if not b.messages:
                problems.warning("empty_context", "generation without input messages", source, where)
                continue
            calls.append(LLMCall(trace_id, len(calls), tools, b.messages, completion))
        if not calls:
            problems.warning("no_assistant_message", "trace has no usable GENERATION observation", source)
            continue
        link_models(calls)
        last = calls[-1]
        yield Conversation(id=trace_id, source=source, tools=calls[0].tools,
                           messages=last.context + [last.completion], explicit_calls=calls)


FORMAT = TraceFormat(
    name=NAME,
    description="Langfuse trace exports: GENERATION observations as explicit LLM calls (GenAI/LangChain/Gemini shapes)",
    sniff=sniff,
    parse=parse,
)
