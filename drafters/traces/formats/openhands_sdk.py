"""OpenHands software-agent-sdk event streams (the V1 SDK's persisted conversation events).

The SDK stores one JSON file per event (``conversations/<id>/events/event-<n>-<uuid>.json``); ingestion
reads such an ``events`` directory as one stream (see ``ingest.expand_paths``). The same events also
come as a JSON array, JSON Lines, concatenated values, or a REST page ``{"items": [...]}``.

Events are told apart by ``kind``:

- ``SystemPromptEvent{system_prompt{text}, tools[{title|name, description, parameters?}]}``: the system
  message and the tool list (the SDK writes tool specs without a parameter schema: reported as
  ``tool_parameters_missing``);
- ``MessageEvent{source: user|agent, llm_message{role, content[{type: text}], reasoning_content?,
  thinking_blocks[]}, extended_content[]}``: a user or assistant message;
- ``ActionEvent{thought[], reasoning_content?, thinking_blocks[], tool_call{id, name, arguments},
  llm_response_id}``: the actions of one LLM response share its ``llm_response_id`` and become one
  assistant message (parallel calls stay together);
- ``ObservationEvent{tool_call_id, observation{content[], is_error, metadata{prefix, suffix}?}}``: a tool
  result (a terminal observation's ``prefix``/``suffix`` are part of what the model is shown);
  ``AgentErrorEvent{tool_call_id, error}`` and ``UserRejectObservation{tool_call_id, rejection_reason}``
  are error results;
- state, pause and condensation events are not model context.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO, Any

from drafters.traces.formats._content import as_list, as_text, tool_defs
from drafters.traces.formats._reading import iter_values, src
from drafters.traces.formats._records import RECORD_ERRORS
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import (
    Conversation,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
)

NAME = "openhands_sdk"
_KINDS = ("SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent")
_KIND_RE = re.compile(r'"kind"\s*:\s*"(' + "|".join(_KINDS) + ')"')
_IGNORED = {"ConversationStateUpdateEvent", "PauseEvent", "Condensation", "CondensationRequest",
            "CondensationSummaryEvent", "TokenEvent", "StreamingDeltaEvent"}


def sniff(head: str, filename: str) -> bool:
    """Events with an SDK event ``kind`` and the SDK's ``llm_message``/``tool_call``/``system_prompt``."""
    return bool(_KIND_RE.search(head)) and any(
        k in head for k in ('"llm_message"', '"llm_response_id"', '"system_prompt"', '"action_id"'))


def _text(content: Any) -> str:
    return "".join(as_text(c.get("text")) for c in as_list(content) if isinstance(c, dict) and c.get("type") == "text")


def _reasoning(ev: dict) -> list:
    parts: list = []
    for block in as_list(ev.get("thinking_blocks")):
        if isinstance(block, dict) and block.get("thinking"):
            parts.append(ReasoningPart(as_text(block["thinking"]), signature=block.get("signature")))
    if not parts and isinstance(ev.get("reasoning_content"), str) and ev["reasoning_content"]:
        parts.append(ReasoningPart(ev["reasoning_content"]))
    return parts


def _tools(ev: dict) -> tuple[list[ToolDef], bool]:
    """(tool definitions, whether any lacked a parameter schema) of a SystemPromptEvent."""
    specs, missing = [], False
    for spec in as_list(ev.get("tools")):
        if not isinstance(spec, dict):
            continue
        name = spec.get("name") or spec.get("title") or (spec.get("annotations") or {}).get("title")
        params = spec.get("parameters") or spec.get("input_schema")
        missing |= not isinstance(params, dict)
        specs.append({"name": name, "description": spec.get("description"), "parameters": params})
    return tool_defs(specs), missing


def _observation_text(obs: Any) -> str:
    if not isinstance(obs, dict):
        return as_text(obs)
    text = _text(obs.get("content")) if isinstance(obs.get("content"), list) else as_text(obs.get("content"))
    meta = obs.get("metadata") if isinstance(obs.get("metadata"), dict) else {}
    return f"{as_text(meta.get('prefix'))}{text}{as_text(meta.get('suffix'))}"


class _Builder:
    """Messages in order; actions of one LLM response are merged into one assistant message."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.tools: list[ToolDef] = []
        self.by_response: dict[str, Message] = {}

    def add(self, role: str, parts: list, response_id: Any = None) -> None:
        if role == "assistant" and isinstance(response_id, str) and response_id in self.by_response:
            self.by_response[response_id].parts.extend(parts)
            return
        if role == "tool" and self.messages and self.messages[-1].role == "tool":
            self.messages[-1].parts.extend(parts)
            return
        message = Message(role, parts)  # type: ignore[arg-type]
        self.messages.append(message)
        if role == "assistant" and isinstance(response_id, str):
            self.by_response[response_id] = message

    def event(self, ev: dict) -> str | None:
        """Add one event; returns a problem description for an event it cannot place, else None."""
        kind = ev.get("kind")
        if kind == "SystemPromptEvent":
            prompt = ev.get("system_prompt")
            self.add("system", [TextPart(as_text(prompt.get("text") if isinstance(prompt, dict) else prompt))])
            self.tools, missing = _tools(ev)
            return "tool definitions carry no parameter schema" if missing and self.tools else None
        if kind == "MessageEvent":
            msg = ev.get("llm_message") if isinstance(ev.get("llm_message"), dict) else {}
            role = "assistant" if msg.get("role") == "assistant" else "user"
            text = _text(msg.get("content")) + "".join(_text([c]) for c in as_list(ev.get("extended_content")))
            parts = (_reasoning(msg) if role == "assistant" else []) + ([TextPart(text)] if text else [])
            self.add(role, parts, ev.get("llm_response_id"))
            return None
        if kind == "ActionEvent":
            call = ev.get("tool_call") if isinstance(ev.get("tool_call"), dict) else {}
            thought = _text(ev.get("thought"))
            parts = _reasoning(ev) + ([TextPart(thought)] if thought else [])
            parts.append(ToolCallPart.from_raw(call.get("id") or ev.get("tool_call_id"),
                                               str(call.get("name") or ev.get("tool_name")), call.get("arguments")))
            self.add("assistant", parts, ev.get("llm_response_id"))
            return None
        if kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
            obs = ev.get("observation")
            error = kind != "ObservationEvent" or (isinstance(obs, dict) and obs.get("is_error") is True)
            text = _observation_text(obs) if kind == "ObservationEvent" else as_text(
                ev.get("error") or ev.get("rejection_reason"))
            self.add("tool", [ToolResultPart(ev.get("tool_call_id"), text, is_error=error,
                                             name=ev.get("tool_name"))])
            return None
        return None if kind in _IGNORED else f"event kind {kind!r} is not known"


def _events(value: Any) -> list:
    """The events of one decoded value: an event, an array of events, or a page ``{"items": [...]}``."""
    if isinstance(value, dict) and isinstance(value.get("items"), list):
        return value["items"]
    return value if isinstance(value, list) else [value]


def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """One conversation per stream (a directory of event files, or one file of events)."""
    b = _Builder()
    warned: set[str] = set()
    for line, ordinal, value in iter_values(stream, filename, NAME, problems):
        for ev in _events(value):
            where = src(NAME, filename, line=line, record=f"$[{ordinal}]")
            if not isinstance(ev, dict):
                problems.error("bad_record", f"event is a {type(ev).__name__}, not an object", where)
                continue
            try:
                problem = b.event(ev)
            except RECORD_ERRORS as exc:
                problems.error("bad_record", f"malformed {ev.get('kind')} ({type(exc).__name__}: {exc})", where)
                continue
            if problem and problem not in warned:
                warned.add(problem)
                code = "tool_parameters_missing" if "schema" in problem else "unknown_event"
                problems.warning(code, problem, where)
    if b.messages:
        yield Conversation(id=f"{NAME}:{filename}", source=src(NAME, filename), tools=b.tools, messages=b.messages)


FORMAT = TraceFormat(
    name=NAME,
    description="OpenHands software-agent-sdk events (event files of a conversation, arrays or JSON Lines)",
    sniff=sniff,
    parse=parse,
)
