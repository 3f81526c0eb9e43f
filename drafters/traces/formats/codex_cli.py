"""OpenAI Codex CLI rollouts (``~/.codex/sessions/.../rollout-*.jsonl``) and ``codex exec --json`` streams.

Rollout lines are ``{timestamp, type, payload}``. Everything is written twice (README codex_cli_rollout):
``response_item`` payloads are what the model saw and wrote, ``event_msg`` payloads are the UI copy; only
``response_item`` is used. Items have the OpenAI Responses shape (``openai_responses.items_to_messages``):
``function_call.arguments`` is JSON inside a JSON string (its ``command`` an argv list), reasoning is
encrypted (kept verbatim as the signature) with a short readable summary as its text. The first user
messages are injected context (``<environment_context>``, ``<user_instructions>``, AGENTS.md): they are
marked ``meta``. ``turn_context.model`` names the model of the following assistant messages.

``codex exec --json`` streams (``thread.started``, ``item.completed{item{type: reasoning |
command_execution | agent_message | ...}}``, ``turn.completed``) hold no prompt: they yield the
assistant/tool messages with a ``missing_context`` warning.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from drafters.traces.formats import _reading
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.formats.openai_responses import items_to_messages
from drafters.traces.model import (
    Conversation,
    Message,
    ReasoningPart,
    Source,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnsupportedPart,
)

NAME = "codex_cli"
_ROLLOUT_TYPES = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
_EXEC_TYPES = {"thread.started", "turn.started", "turn.completed", "turn.failed", "item.started",
               "item.updated", "item.completed", "error"}
_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<INSTRUCTIONS>")


def sniff(head: str, filename: str) -> bool:
    lines = [d for d in _reading.json_lines(head, limit=5) if isinstance(d, dict)]
    if not lines:  # a first line longer than the 64 KiB head
        start = head.lstrip()[:300]
        return start.startswith('{"timestamp"') and ('"type":"session_meta"' in start or '"type":"response_item"' in start)
    if all(d.get("type") in _ROLLOUT_TYPES and "payload" in d for d in lines):
        return True
    return lines[0].get("type") in _EXEC_TYPES and all(d.get("type") in _EXEC_TYPES for d in lines)


def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    stem = filename.rsplit("/", 1)[-1]
    messages: list[Message] = []
    model: str | None = None
    session_id: str | None = None
    first_src: Source | None = None
    exec_stream = False
    for lineno, rec in _reading.iter_json_lines(stream, filename, problems, NAME):
        src = Source(NAME, filename, line=lineno)
        if not isinstance(rec, dict) or not isinstance(rec.get("type"), str):
            problems.error("not_an_object", "line is not a {type, payload} object", src)
            continue
        first_src = first_src or src
        kind = rec["type"]
        if kind in _EXEC_TYPES:
            exec_stream = True
            if kind == "thread.started":
                session_id = rec.get("thread_id") or session_id
            elif kind == "item.completed":
                _exec_item(rec.get("item"), messages)
            continue
        payload = rec.get("payload")
        if not isinstance(payload, dict):
            if kind in _ROLLOUT_TYPES:
                problems.error("missing_field", "record has no payload object", src, field="payload")
            else:
                problems.error("not_an_object", f"unknown record type {kind!r}", src, field="type")
            continue
        if kind == "session_meta":
            session_id = payload.get("id") or session_id
            if isinstance(payload.get("instructions"), str) and payload["instructions"]:
                messages.append(Message("system", [TextPart(payload["instructions"])], meta=True))
        elif kind == "turn_context":
            model = payload.get("model") if isinstance(payload.get("model"), str) else model
        elif kind == "response_item":
            for m in items_to_messages([payload], model=model):
                if m.role == "user" and m.text.lstrip().startswith(_INJECTED):
                    m.meta = True
                if m.role == "assistant" and messages and messages[-1].role == "assistant":
                    messages[-1].parts.extend(m.parts)  # reasoning + calls of one response
                else:
                    messages.append(m)
        # event_msg: the UI copy of the same turns; compacted: see below (history replaced)
        elif kind == "compacted":
            problems.warning("compaction", "Codex compacted the history here; later calls are derived from "
                             "the full transcript", src)
    if first_src is None:
        return
    if exec_stream:
        problems.warning("missing_context", "codex exec --json streams do not log the prompt: calls lack "
                         "the user request", first_src)
    yield Conversation(id=f"{NAME}:{session_id or stem}", source=first_src, messages=messages)


def _exec_item(item: Any, messages: list[Message]) -> None:
    if not isinstance(item, dict):
        return

    def assistant() -> Message:
        if messages and messages[-1].role == "assistant":
            return messages[-1]
        messages.append(Message("assistant", []))
        return messages[-1]

    kind = item.get("type")
    if kind == "reasoning":
        assistant().parts.append(ReasoningPart(item.get("text") or ""))
    elif kind == "agent_message":
        assistant().parts.append(TextPart(item.get("text") or ""))
    elif kind == "command_execution":
        cid = item.get("id")
        assistant().parts.append(ToolCallPart.from_raw(cid, "shell", {"command": item.get("command", "")}))
        messages.append(Message("tool", [ToolResultPart(cid, item.get("aggregated_output") or "",
                                                        is_error=item.get("exit_code") not in (0, None))]))
    elif kind != "error":
        # file_change, mcp_tool_call, web_search, todo_list and item types of a newer Codex: content this
        # reader does not turn into messages, reported as lost (unknown_content), never dropped unseen.
        assistant().parts.append(UnsupportedPart(str(kind)))


FORMAT = TraceFormat(NAME, "OpenAI Codex CLI rollouts (response_item) and codex exec --json streams", sniff, parse)
