"""Trae Agent trajectories (``trajectories/trajectory_<timestamp>.json``).

Shape: ``{task, start_time, end_time, provider, model, max_steps, llm_interactions[], agent_steps[],
success, final_result, execution_time}``. Each interaction is ``{timestamp, provider, model,
input_messages[{role, content, tool_call?, tool_result?}], response{content, model, finish_reason, usage,
tool_calls[{call_id, name, arguments, id}]}, tools_available[names]}``; a tool result is a ``user``
message with ``tool_result{call_id, success, result, error}``.

The open-source writer records per interaction only the messages that are *new* to the model (its client
keeps the history itself): the context of interaction k is every earlier interaction's input messages
and response, plus its own input. Other files (the leaderboard trajectories) repeat the whole history in
every ``input_messages``; an interaction whose input starts with the history so far is read that way, so
both give the same calls. ``agent_steps`` repeat the same content and are not read.

``tools_available`` holds tool names only, no schemas: the conversation carries no tool definitions
(ingestion warns ``no_tool_definitions``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from drafters.traces.formats._content import as_list, as_text, link_models
from drafters.traces.formats._reading import load_json, src
from drafters.traces.formats._records import guard_file
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import Conversation, LLMCall, Message, TextPart, ToolCallPart, ToolResultPart

NAME = "trae_agent"


def sniff(head: str, filename: str) -> bool:
    """A JSON object with Trae's ``"llm_interactions"`` and ``"input_messages"`` (or ``"agent_steps"``)."""
    window = head.lstrip()[:20000]
    return window.startswith("{") and '"llm_interactions"' in window and (
        '"input_messages"' in window or '"agent_steps"' in window)


def _message(raw: dict) -> Message:
    role = raw.get("role") if raw.get("role") in ("system", "user", "assistant") else "user"
    result = raw.get("tool_result")
    if isinstance(result, dict):
        ok = result.get("success") is not False
        text = as_text(result.get("result")) if ok else as_text(result.get("error") or result.get("result"))
        return Message("tool", [ToolResultPart(call_id=result.get("call_id"), content=text, is_error=not ok)])
    parts: list = [TextPart(as_text(raw.get("content")))] if raw.get("content") else []
    call = raw.get("tool_call")
    if isinstance(call, dict):
        parts.append(ToolCallPart.from_raw(call.get("call_id"), str(call.get("name")), call.get("arguments")))
    return Message(role, parts)  # type: ignore[arg-type]


def _response(raw: Any, model: str | None) -> Message:
    raw = raw if isinstance(raw, dict) else {}
    parts: list = [TextPart(as_text(raw["content"]))] if raw.get("content") else []
    for call in as_list(raw.get("tool_calls")):
        if isinstance(call, dict):
            parts.append(ToolCallPart.from_raw(call.get("call_id"), str(call.get("name")), call.get("arguments")))
    return Message("assistant", parts, model=raw.get("model") if isinstance(raw.get("model"), str) else model)


def _merge_turns(messages: list[Message]) -> list[Message]:
    """Trae keeps one tool call or result per message: consecutive results, and an assistant message
    followed by call-only assistant messages, are one turn (as the model produced and received them)."""
    out: list[Message] = []
    for m in messages:
        prev = out[-1] if out else None
        calls_only = all(isinstance(p, ToolCallPart) for p in m.parts)
        if prev is not None and m.role == prev.role and (m.role == "tool" or m.role == "assistant" and calls_only):
            out[-1] = Message(m.role, prev.parts + m.parts, model=prev.model)
        else:
            out.append(m)
    return out


def _same(a: Message, b: Message) -> bool:
    return a.role == b.role and a.parts == b.parts


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """One conversation per trajectory file, its interactions as explicit calls."""
    doc = load_json(stream, filename, problems, NAME)
    if doc is None:
        return
    source = src(NAME, filename, record="$.llm_interactions")
    if not isinstance(doc, dict) or not isinstance(doc.get("llm_interactions"), list):
        problems.error("bad_record", "a Trae trajectory is an object with an 'llm_interactions' list",
                       src(NAME, filename, record="$"))
        return
    model = doc.get("model") if isinstance(doc.get("model"), str) else None
    history: list[Message] = []
    calls: list[LLMCall] = []
    conv_id = f"{NAME}:{filename.rsplit('/', 1)[-1]}"
    for i, inter in enumerate(doc["llm_interactions"]):
        where = f"llm_interactions[{i}]"
        if not isinstance(inter, dict) or not isinstance(inter.get("input_messages"), list):
            problems.error("bad_record", "interaction without an input_messages list", source, where)
            continue
        new = _merge_turns([_message(m) for m in inter["input_messages"] if isinstance(m, dict)])
        full = len(new) >= len(history) > 0 and all(_same(a, b) for a, b in zip(history, new, strict=False))
        context = new if full else _merge_turns(history + new)
        completion = _response(inter.get("response"), inter.get("model") or model)
        if not completion.parts:
            problems.warning("no_assistant_message", "interaction without a response", source, where)
            history = context
            continue
        calls.append(LLMCall(conv_id, len(calls), [], context, completion))
        history = [*context, completion]
    if not calls:
        problems.error("empty_conversation", "no interaction with a response", source)
        return
    link_models(calls)
    yield Conversation(id=conv_id, source=source, messages=history, explicit_calls=calls)


FORMAT = TraceFormat(
    name=NAME,
    description="Trae Agent trajectory JSON (llm_interactions with per-call input messages and responses)",
    sniff=sniff,
    parse=parse,
)
