"""Agent step event logs: a JSONL file whose model output is logged as events of loop steps, not as messages
(docs/traces.md, "Step event logs"). Read by the general path (``generic.py``) before the shapes.

The layout (Kimi Code CLI's wire log writes it; the event names are spelt with ``.`` or ``_``): records typed
by ``type``; inputs appended to the model's context as a message in a ``message`` envelope (``{role,
content}``); the loop's events in an ``event`` envelope, typed:

- ``step.begin``: the model is asked again (a new call); a step whose request produced no output is no call;
- ``content.part``: a part of the step's output, ``part: {type: text, text}`` or ``{type: think, think}``
  (reasoning; also ``thinking`` / ``reasoning``);
- ``tool.call``: a tool call of the step's output (``toolCallId`` / ``id``, ``name``, ``args`` / ``arguments``);
- ``tool.result``: a tool's result, the input of the next step (its call id; ``result.output`` text, with an
  ``isError`` flag; any other result object is read as compact JSON, like every structured result);
- ``step.end``: the step's end (usage, finish reason); one that records a failure (``finishReason: error`` /
  ``aborted``, an error message) marks the step's call failed, as an assistant message that records it is.

A system prompt set beside (``systemPrompt`` / ``system_prompt`` in a record) is the first system message; a
record that sets a different one while calls follow refuses the file (``system_prompt_not_read``). Records of
other types (run metadata, requests, usage, approvals) are not messages: counted in the ``generic_mapping``
warning. Not guessed, refused with a code: an event type not listed (``unknown_content``), a part of another type
(``unknown_content``), output after a tool result in the same step (``ambiguous_turns``), a compaction
(``*compaction*`` record with a summary) followed by calls, whose context was replaced by a summary
(``handoff_context_not_recorded``; a compaction at the end is no call and is reported), a tool result whose
call is not in the file (``tool_result_not_found``), a message record outside the ``message`` envelope or an
assistant message in it (``ambiguous_shape``). Standard library only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from drafters.traces.formats._spellings import (
    ROLE_KEYS,
    block_parts,
    failed_turn,
    result_text,
    role_of,
    tool_call,
)
from drafters.traces.formats._system_prompts import system_text
from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Conversation, Message, ReasoningPart, Source, TextPart, ToolResultPart

STEP_BEGIN = ("step_begin", "step_start")
STEP_END = ("step_end", "step_finish")
PART = ("content_part",)
TOOL_CALL = ("tool_call",)
TOOL_RESULT = ("tool_result",)
EVENTS = STEP_BEGIN + STEP_END + PART + TOOL_CALL + TOOL_RESULT
_TEXT = ("text",)
_THINK = ("think", "thinking", "reasoning")
_SYSTEM = ("systemPrompt", "system_prompt")


def _name(value: Any) -> str | None:
    return value.replace(".", "_").replace("-", "_").lower() if isinstance(value, str) else None


def _event(record: Any) -> dict | None:
    ev = record.get("event") if isinstance(record, dict) else None
    return ev if isinstance(ev, dict) and isinstance(ev.get("type"), str) else None


def is_step_log(values: list) -> bool:
    """Records of a step event log: typed records, at least one ``event`` envelope starting a step and one
    holding model output (a content part or a tool call)."""
    if len(values) < 3 or not all(isinstance(v, dict) and isinstance(v.get("type"), str) for v in values):
        return False
    kinds = {_name(ev["type"]) for v in values if (ev := _event(v)) is not None}
    return bool(kinds & set(STEP_BEGIN)) and bool(kinds & set(PART + TOOL_CALL))


def read(records: Iterable[tuple[Source, Any]], filename: str, problems: ProblemSink) -> Conversation | None:
    """The one conversation of a step event log, or None (reported) when a rule above refuses it."""
    src = Source("generic", filename)
    messages: list[Message] = []
    system: str | None = None
    open_call: Message | None = None  # the current step's output, once it has any
    after_result = False  # a tool result arrived in the current step
    compacted_at: Any = None
    changed_at: Any = None
    skipped: Counter = Counter()
    calls_seen: set[str] = set()
    for source, rec in records:
        ev = _event(rec)
        prompt = next((system_text(rec.get(k)) for k in _SYSTEM if isinstance(rec, dict) and rec.get(k)), None)
        if prompt is not None:
            if system is None and any(m.role == "assistant" for m in messages):
                problems.error("system_prompt_not_read", "a system prompt is set after the model's first call: "
                               "which prompt each call saw is not guessed", source)
                return None
            if system is None:
                system = prompt
            elif prompt != system:
                changed_at = source  # refused if the model answers after it
            continue
        if ev is None:
            msg = rec.get("message") if isinstance(rec, dict) else None
            role = role_of(msg.get("role")) if isinstance(msg, dict) else None
            if role is not None and role != "assistant":
                parts = block_parts(msg.get("content"))
                if not parts:
                    problems.error("content_not_mapped", "a message record with no content in a known spelling",
                                   source)
                    return None
                messages.append(Message(role, parts))  # type: ignore[arg-type]
                open_call, after_result = None, False
            elif role == "assistant":
                problems.error("ambiguous_shape", "an assistant message record beside the step events: the model's "
                               "output would be read twice or not at all", source)
                return None
            elif isinstance(rec, dict) and "compaction" in (_name(rec.get("type")) or "") and \
                    any(isinstance(rec.get(k), str) for k in ("summary", "contextSummary", "context_summary")):
                compacted_at = source
            elif isinstance(rec, dict) and any(role_of(rec.get(k)) for k in ROLE_KEYS):
                problems.error("ambiguous_shape", "a message record outside the message envelope beside the step "
                               "events: which records hold the conversation is not guessed", source)
                return None
            else:
                skipped[rec.get("type") if isinstance(rec, dict) else type(rec).__name__] += 1
            continue
        kind = _name(ev["type"])
        if kind not in EVENTS:
            problems.error("unknown_content", f"step event of type {ev['type']!r}, which no rule reads", source)
            return None
        if kind in STEP_BEGIN:
            open_call, after_result = None, False
            continue
        if kind in STEP_END:
            if open_call is not None and failed_turn(ev):  # the step records its failure (finishReason: error)
                open_call.failed = True  # its calls that no result answers were never run
            continue
        if kind in TOOL_RESULT:
            call_id = ev.get("toolCallId") or ev.get("tool_call_id") or ev.get("call_id")
            if not isinstance(call_id, str) or call_id not in calls_seen:
                problems.error("tool_result_not_found", f"a tool result for call {call_id!r}, which no tool call "
                               "of the file made", source)
                return None
            result = ev.get("result")
            flags = {k: v for k, v in result.items() if k != "output"} if isinstance(result, dict) else None
            if flags is not None and isinstance(result.get("output"), str) and \
                    all(isinstance(v, bool) for v in flags.values()):
                text, is_error = result["output"], any(flags.get(k) for k in ("isError", "is_error", "error"))
            else:
                text, is_error = result_text(result), False
            if text is None:
                problems.error("content_not_mapped", "a tool result with no result text", source)
                return None
            part = ToolResultPart(call_id, text, is_error=is_error)
            if messages and messages[-1].role == "tool":
                messages[-1].parts.append(part)
            else:
                messages.append(Message("tool", [part]))
            open_call, after_result = None, True
            continue
        if changed_at is not None:
            problems.error("system_prompt_not_read", "model output after the system prompt was changed: which prompt "
                           "each call saw is not guessed", changed_at)
            return None
        if compacted_at is not None:
            problems.error("handoff_context_not_recorded", "model output after a compaction: the context of the "
                           "calls after it was replaced by a summary, which is not rebuilt", source)
            return None
        if after_result:
            problems.error("ambiguous_turns", "model output after a tool result within one step, with no new "
                           "step between them: whether it is a new call is not known", source)
            return None
        if kind in PART:
            part = ev.get("part") if isinstance(ev.get("part"), dict) else {}
            ptype = _name(part.get("type"))
            if ptype in _TEXT and isinstance(part.get("text"), str):
                new: Any = TextPart(part["text"])
            elif ptype in _THINK and isinstance(part.get(part["type"]) or part.get("text"), str):
                new = ReasoningPart(part.get(part["type"]) or part.get("text"))
            else:
                problems.error("unknown_content", f"a content part of type {part.get('type')!r}, which no rule reads",
                               source)
                return None
        else:
            new = tool_call(ev)
            if not new.name or new.name == "None" or not new.id:
                problems.error("content_not_mapped", "a tool call event without a name or call id", source)
                return None
            calls_seen.add(new.id)
        if open_call is None:
            open_call = Message("assistant", [])
            messages.append(open_call)
        open_call.parts.append(new)
    if not any(m.role == "assistant" for m in messages):
        return None
    ends = ("; the log ends with a compaction (the summary the model wrote of the run; no call follows it): its "
            "summarising request is not read") if compacted_at is not None else ""
    problems.warning("generic_mapping", "read by the general path as a step event log (docs/traces.md, \"Step event "
                     "logs\"); records not messages: " + (", ".join(f"{k} ({n})" for k, n in skipped.most_common(16))
                                                         or "none") + ends, src)
    if system is not None:
        messages.insert(0, Message("system", [TextPart(system)]))
    stem = filename.rsplit("/", 1)[-1]
    return Conversation(id=stem, source=src, messages=messages)
