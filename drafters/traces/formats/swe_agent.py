"""SWE-agent trajectories (``*.traj``).

Shape: ``{environment, trajectory[], history[], info, replay_config?}``; demonstration files may
have only ``history``. ``history`` is the message list sent to the model (``{role, content, agent,
message_type: system_prompt|observation|action|demonstration, thought?, action?, is_demo?,
tool_calls?, tool_call_ids?}``); ``trajectory[]`` (``{response, thought, action, observation,
state}``) stores the same steps a second time. ``history`` is used (it is what the model saw);
``trajectory`` only when a file has no history. A run whose trajectory has more steps than its
history has assistant messages (the final ``submit`` step is often missing from history) gets a
``history_shorter_than_trajectory`` warning, unless only the last step is missing: then that step's
``response`` is the final model turn (in a function-calling run with the call of a bare action such as
``submit``, arguments ``{}``, id not recorded). Other missing steps are not invented.

Classic runs write the command as free text after the reasoning: the assistant text is the
completion, there is no structured tool call. Function-calling runs use OpenAI ``tool_calls`` with
string ``arguments``; tool messages point back through a ``tool_call_ids`` list. An inlined
demonstration (``is_demo``) stays a user message: it was part of the context.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from drafters.traces.formats._content import content_parts
from drafters.traces.formats._reading import load_json, src
from drafters.traces.formats._records import guard_file
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import Conversation, Message, TextPart, ToolCallPart, ToolResultPart

NAME = "swe_agent"


def sniff(head: str, filename: str) -> bool:
    """``.traj`` files (SWE-agent's extension), or an object whose head shows ``"trajectory"`` steps
    with ``"observation"`` and ``"action"`` or a ``history`` with ``"message_type"``/``"agent"``."""
    if filename.endswith(".traj") or filename.endswith(".traj.gz") or filename.endswith(".traj.zst"):
        return True
    start = head.lstrip()[:3000]
    if not start.startswith("{"):
        return False
    return ('"trajectory"' in start and '"observation"' in head and '"action"' in head and '"thought"' in head) or (
        '"history"' in start and '"agent"' in head and '"message_type"' in head
    )


def _listish(value: Any) -> list:
    """A list that older files stored as its Python/JSON repr string."""
    if isinstance(value, list):
        return value
    if isinstance(value, str) and value.strip().startswith("["):
        for loader in (json.loads, ast.literal_eval):
            try:
                out = loader(value)
                if isinstance(out, list):
                    return out
            except (ValueError, SyntaxError):
                pass
    return []


def history_to_messages(history: list, source, problems: ProblemSink, model: str | None,
                        key: str = "history") -> list[Message]:
    """SWE-agent history entries -> canonical messages (bad entries reported at ``{key}[i]``)."""
    out: list[Message] = []
    for i, m in enumerate(history):
        field = f"{key}[{i}]"
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            problems.error("bad_record", "history entry is not {role, content} with a known role", source, field)
            continue
        role = m["role"]
        if role == "assistant":
            parts = content_parts(m.get("content"))
            for k, tc in enumerate(_listish(m.get("tool_calls"))):
                fn = tc.get("function") if isinstance(tc, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                    problems.error("bad_tool_call", "tool call without function.name", source, f"{field}.tool_calls[{k}]")
                    continue
                call = ToolCallPart.from_raw(tc.get("id"), fn["name"], fn.get("arguments"))
                if not call.arguments_valid:
                    problems.warning("arguments_not_json", "tool call arguments are not a JSON object", source,
                                     f"{field}.tool_calls[{k}].function.arguments")
                parts.append(call)
            out.append(Message("assistant", parts, model=model))
        elif role == "tool":
            ids = _listish(m.get("tool_call_ids")) or [m.get("tool_call_id")]
            text = "".join(p.text for p in content_parts(m.get("content")) if isinstance(p, TextPart))
            part = ToolResultPart(call_id=ids[0] if ids else None, content=text)
            if out and out[-1].role == "tool":
                out[-1].parts.append(part)
            else:
                out.append(Message("tool", [part]))
        else:
            out.append(Message(role, content_parts(m.get("content"))))
    return out


def trajectory_to_messages(traj: list, source, problems: ProblemSink, model: str | None) -> list[Message]:
    out: list[Message] = []
    for i, step in enumerate(traj):
        if not isinstance(step, dict):
            problems.error("bad_record", "trajectory step is not an object", source, f"trajectory[{i}]")
            continue
        response = step.get("response") or step.get("thought") or ""
        out.append(Message("assistant", [TextPart(str(response))], model=model))
        if step.get("observation") is not None:
            out.append(Message("user", content_parts(str(step["observation"]))))
    return out


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """One conversation per .traj file (see module docstring)."""
    doc = load_json(stream, filename, problems, NAME)
    if doc is None:
        return
    source = src(NAME, filename, record="$.history")
    if not isinstance(doc, dict):
        problems.error("bad_record", "a .traj file holds an object", src(NAME, filename, record="$"))
        return
    model = _model_name(doc)
    history = doc.get("history")
    traj = doc.get("trajectory") if isinstance(doc.get("trajectory"), list) else []
    if isinstance(history, list) and history:
        messages = history_to_messages(history, source, problems, model)
        n_assistant = sum(1 for m in history if isinstance(m, dict) and m.get("role") == "assistant"
                          and not m.get("is_demo"))
        final = _final_step_turn(traj, n_assistant, messages, model)
        if final is not None:
            messages.append(final)
            n_assistant += 1
        if len(traj) > n_assistant:
            problems.warning("history_shorter_than_trajectory",
                             f"trajectory has {len(traj)} steps but history only {n_assistant} model turns; "
                             "the missing steps' model output is not recorded", source, "trajectory")
    elif traj:
        source = src(NAME, filename, record="$.trajectory")
        messages = trajectory_to_messages(traj, source, problems, model)
    else:
        problems.error("empty_conversation", "no history and no trajectory", src(NAME, filename, record="$"))
        return
    yield Conversation(id=Path(filename).name, source=source, messages=messages)


def _final_step_turn(traj: list, n_assistant: int, messages: list[Message], model: str | None) -> Message | None:
    """The model turn of a final trajectory step that history lacks (SWE-agent often leaves the ``submit``
    step out of history): its ``response`` text, plus, in a function-calling run, the call of a bare
    action such as ``submit`` (arguments ``{}``; the call id is not recorded). None unless exactly the last
    step is missing after an observation, and it has a response."""
    if len(traj) != n_assistant + 1 or not messages or messages[-1].role == "assistant":
        return None
    step = traj[-1]
    response = step.get("response") if isinstance(step, dict) else None
    if not isinstance(response, str) or not response:
        return None
    parts: list = [TextPart(response)]
    action = step.get("action") if isinstance(step.get("action"), str) else ""
    calls_used = any(m.tool_calls for m in messages if m.role == "assistant")
    if calls_used and action.strip() and len(action.split()) == 1:
        parts.append(ToolCallPart.from_raw(None, action.strip(), {}))
    return Message("assistant", parts, model=model)


def _model_name(doc: dict) -> str | None:
    """The model from ``replay_config.agent.model.name`` (newer files) when recorded."""
    rc = doc.get("replay_config")
    if isinstance(rc, str):
        try:
            rc = json.loads(rc)
        except ValueError:
            rc = None
    try:
        name = rc["agent"]["model"]["name"]  # type: ignore[index]
    except (TypeError, KeyError):
        return None
    return name if isinstance(name, str) else None


FORMAT = TraceFormat(
    name=NAME,
    description="SWE-agent .traj trajectories (history used; classic text actions and function calling)",
    sniff=sniff,
    parse=parse,
)
