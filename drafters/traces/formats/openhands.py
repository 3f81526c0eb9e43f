"""OpenHands (V0) trajectories: a JSON list of events.

Event: ``{id, timestamp, source: user|agent|environment, message, action | observation,
args{} | content + extras{}, cause, tool_call_metadata{function_name, tool_call_id,
model_response{...}, total_calls_in_response}}``.

Model turns are rebuilt from the raw provider response that the action events carry: every action
with ``tool_call_metadata`` points at ``model_response`` (an OpenAI-style chat completion, the same
object copied onto each action of a parallel response and onto its observations). One model
response id = one assistant message = one LLM call; its text and its ``tool_calls`` (``arguments``
a JSON string, kept raw) come from ``choices[0].message``. When the response is missing, the call is
rebuilt from ``tool_call_metadata.function_name`` + the action's ``args`` (an object). Observations
with ``tool_call_metadata`` become tool results paired by ``tool_call_id`` (their ``content`` is what
the model saw). A ``message`` action from the agent without tool metadata is a plain-text model
turn; ``source: user`` messages are user turns. State-change events (``agent_state_changed``,
``change_agent_state``), ``null`` observations and other environment events are not model context.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from drafters.traces.formats._content import as_str, as_text, content_parts, first_choice_message
from drafters.traces.formats._reading import load_json, src
from drafters.traces.formats._records import guard_file
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.formats.openai_chat import tools_from_openai
from drafters.traces.model import Conversation, Message, ToolCallPart, ToolResultPart

NAME = "openhands"
_SKIP_ACTIONS = {"change_agent_state", "recall"}
_THOUGHT_ONLY = {"think"}


def sniff(head: str, filename: str) -> bool:
    """A JSON list whose first event has ``"source"`` and ``"action"``/``"observation"`` keys."""
    start = head.lstrip()[:4000]
    return start.startswith("[") and '"source"' in start and ('"action"' in start or '"observation"' in start) \
        and ('"timestamp"' in start) and ('"cause"' in head or '"tool_call_metadata"' in head or '"args"' in start)


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """One conversation per trajectory file."""
    doc = load_json(stream, filename, problems, NAME)
    if doc is None:
        return
    if isinstance(doc, dict) and isinstance(doc.get("history") or doc.get("events"), list):
        doc = doc.get("history") or doc.get("events")
    if not isinstance(doc, list):
        problems.error("bad_record", "expected a list of events", src(NAME, filename, record="$"))
        return
    source = src(NAME, filename, record="$")
    messages: list[Message] = []
    tools: list = []
    by_response: dict[str, Message] = {}
    for i, ev in enumerate(doc):
        field = f"[{i}]"
        if not isinstance(ev, dict):
            problems.error("bad_record", "event is not an object", source, field)
            continue
        tcm = ev.get("tool_call_metadata") if isinstance(ev.get("tool_call_metadata"), dict) else None
        if "action" in ev:
            action = as_str(ev.get("action"))
            if action in _SKIP_ACTIONS:
                continue
            args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
            if action == "system":  # the system prompt and the tool list the agent sent with every call
                messages.append(Message("system", content_parts(args.get("content", ev.get("message")))))
                tools = tools_from_openai(args.get("tools")) or tools
                continue
            if ev.get("source") == "user":
                if action == "message":
                    messages.append(Message("user", content_parts(args.get("content", ev.get("message")))))
                continue
            if ev.get("source") != "agent":
                continue
            if tcm is None:
                if action == "message":
                    messages.append(Message("assistant", content_parts(args.get("content", ev.get("message")))))
                continue
            response = tcm.get("model_response") if isinstance(tcm.get("model_response"), dict) else None
            rid = (response or {}).get("id") or f"event-{ev.get('id', i)}"
            if rid in by_response:
                continue  # a later action of the same parallel response: already expanded
            msg = _from_response(response, field, source, problems)
            if msg is None:  # no raw response: rebuild the single call from action + args
                call_args = {k: v for k, v in args.items() if k not in ("thought",)}
                parts: list = content_parts(args.get("thought"))
                parts.append(ToolCallPart.from_raw(tcm.get("tool_call_id"), str(tcm.get("function_name")), call_args))
                msg = Message("assistant", parts)
            by_response[rid] = msg
            messages.append(msg)
        elif "observation" in ev:
            if tcm is None or ev.get("observation") in ("null", "agent_state_changed", None):
                continue
            part = ToolResultPart(call_id=tcm.get("tool_call_id"), content=as_text(ev.get("content")),
                                  is_error=ev.get("observation") == "error" or ev.get("success") is False,
                                  name=tcm.get("function_name"))
            if messages and messages[-1].role == "tool":
                messages[-1].parts.append(part)
            else:
                messages.append(Message("tool", [part]))
    yield Conversation(id=Path(filename).name, source=source, tools=tools, messages=messages)


def _from_response(response: Any, field: str, source, problems: ProblemSink) -> Message | None:
    msg = first_choice_message(response)
    if msg is None:
        return None
    parts = content_parts(msg.get("content"))
    for k, tc in enumerate(msg.get("tool_calls") or []):
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            problems.error("bad_tool_call", "tool call without function.name", source,
                           f"{field}.tool_call_metadata.model_response.choices[0].message.tool_calls[{k}]")
            continue
        call = ToolCallPart.from_raw(tc.get("id"), fn["name"], fn.get("arguments"))
        if not call.arguments_valid:
            problems.warning("arguments_not_json", "tool call arguments are not a JSON object", source, field)
        parts.append(call)
    return Message("assistant", parts, model=response.get("model"))


FORMAT = TraceFormat(
    name=NAME,
    description="OpenHands V0 event-stream trajectories (calls rebuilt from model_response / action args)",
    sniff=sniff,
    parse=parse,
)
