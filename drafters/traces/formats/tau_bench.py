"""tau-bench and tau2-bench results.

tau-bench (``historical_trajectories``): a JSON list of ``{task_id, reward, info{task, reward_info,
...}, traj[], trial}``; ``traj`` is an OpenAI chat message list (system policy prompt, ``user``
turns from the LLM user simulator, assistant turns with ``content: null`` + ``tool_calls[{id, type,
function{name, arguments (JSON string)}}]``, ``{role: "tool", tool_call_id, name, content}``).
One conversation per record.

tau2-bench results: ``{info{agent_info{llm}, user_info, environment_info{policy, ...}}, tasks[],
simulations[{id, task_id, trial, messages[{role, content, tool_calls[{id, name, arguments{},
requestor}], turn_idx, raw_data, ...}]}]}``. Each message's top-level ``role`` is authoritative: the
user simulator is itself an LLM, so its ``raw_data.message.role`` is ``"assistant"`` and a reader
that trusts ``raw_data`` labels simulated-user turns as model turns. Tool calls the *user* made
(``requestor: "user"``, telecom domain) and their results are the simulated user's environment, not
the agent's context, and are dropped. The agent's ``thinking_blocks`` (in ``raw_data``) become
ReasoningParts with their signatures verbatim; the model is ``info.agent_info.llm``.
The simulated user is never the assistant: its messages are always ``user``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from drafters.traces.formats._content import as_list, as_str, as_text, content_parts, first_choice_message
from drafters.traces.formats._reading import iter_values, src
from drafters.traces.formats._records import RECORD_ERRORS
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import Conversation, Message, ReasoningPart, ToolCallPart, ToolResultPart

NAME = "tau_bench"


def sniff(head: str, filename: str) -> bool:
    """tau-bench: records with ``"task_id"`` and ``"traj"``; tau2: ``"simulations"`` with ``"task_id"``."""
    start = head.lstrip()[:65536]
    if start.startswith("[") and '"task_id"' in start[:2000] and '"traj"' in start:
        return True
    return start.startswith("{") and '"simulations"' in start and '"task_id"' in start


def _thinking(raw: Any) -> list[ReasoningPart]:
    """Reasoning blocks from a tau2 ``raw_data`` (litellm message or chat completion), verbatim."""
    if not isinstance(raw, dict):
        return []
    msg = raw.get("message") if isinstance(raw.get("message"), dict) else None
    if msg is None:
        msg = first_choice_message(raw) or raw
    if not isinstance(msg, dict):
        return []
    out = []
    for b in msg.get("thinking_blocks") or []:
        if isinstance(b, dict):
            if b.get("type") == "redacted_thinking":
                out.append(ReasoningPart("", signature=b.get("data"), redacted=True))
            else:
                out.append(ReasoningPart(str(b.get("thinking") or ""), signature=b.get("signature")))
    if not out and isinstance(msg.get("reasoning_content"), str) and msg["reasoning_content"]:
        out.append(ReasoningPart(msg["reasoning_content"]))
    return out


def convert(raw_messages: list, field: str, source, problems: ProblemSink, model: str | None,
            tau2: bool) -> list[Message]:
    """OpenAI-style (tau) or tau2 messages -> canonical, dropping user-requested tool traffic (tau2)."""
    out: list[Message] = []
    user_call_ids: set[str] = set()
    for i, m in enumerate(raw_messages):
        where = f"{field}[{i}]"
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            problems.error("bad_record", "message is not {role, ...} with a known role", source, where)
            continue
        role = m["role"]  # authoritative; never raw_data.message.role (tau2 simulated user says "assistant")
        if role == "assistant":
            parts: list = _thinking(m.get("raw_data")) if tau2 else []
            parts.extend(content_parts(m.get("content")))
            for k, tc in enumerate(as_list(m.get("tool_calls"))):
                if not isinstance(tc, dict):
                    continue
                fn = tc.get("function") if isinstance(tc.get("function"), dict) else tc
                if not isinstance(fn.get("name"), str):
                    why = ("'function' is a string, not an object with name and arguments"
                           if isinstance(tc.get("function"), str) else "tool call without a name")
                    problems.error("bad_tool_call", why, source, f"{where}.tool_calls[{k}]")
                    continue
                call = ToolCallPart.from_raw(tc.get("id") or None, fn["name"], fn.get("arguments"))
                if not call.arguments_valid:
                    problems.warning("arguments_not_json", "tool call arguments are not a JSON object", source,
                                     f"{where}.tool_calls[{k}]")
                parts.append(call)
            out.append(Message("assistant", parts, model=model))
        elif role == "tool":
            cid = as_str(m.get("tool_call_id")) or as_str(m.get("id"))
            if m.get("requestor") == "user" or cid in user_call_ids:
                continue  # the simulated user's own tool result
            part = ToolResultPart(call_id=cid, content=as_text(m.get("content")), is_error=bool(m.get("error")),
                                  name=m.get("name"))
            if out and out[-1].role == "tool":
                out[-1].parts.append(part)
            else:
                out.append(Message("tool", [part]))
        elif role == "user":
            for tc in as_list(m.get("tool_calls")):  # user-side tools (tau2 telecom): not agent context
                if isinstance(tc, dict) and as_str(tc.get("id")):
                    user_call_ids.add(tc["id"])
            parts = content_parts(m.get("content"))
            if parts:
                out.append(Message("user", parts))
        else:
            out.append(Message("system", content_parts(m.get("content"))))
    return out


def _record_messages(record: Any, field: str, missing: str, source, problems: ProblemSink, model: str | None,
                     tau2: bool) -> list[Message] | None:
    """``record[field]`` converted (see ``convert``), or None when the record is not an object holding a
    list there (reported as ``bad_record`` with the message ``missing``) or is malformed."""
    if not isinstance(record, dict) or not isinstance(record.get(field), list):
        problems.error("bad_record", missing, source, field)
        return None
    try:
        return convert(record[field], field, source, problems, model, tau2=tau2)
    except RECORD_ERRORS as exc:
        problems.error("bad_record", f"malformed record ({type(exc).__name__}: {exc})", source)
        return None


def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """tau-bench: one conversation per record (streamed); tau2: one per simulation."""
    base = Path(filename).name
    for line, ordinal, value in iter_values(stream, filename, NAME, problems):
        if isinstance(value, dict) and isinstance(value.get("simulations"), list):
            yield from _tau2(value, filename, base, problems)
            continue
        source = src(NAME, filename, line=None, record=f"$[{ordinal}]")
        messages = _record_messages(value, "traj", "record has no 'traj' message list", source, problems,
                                    None, tau2=False)
        if messages is None:
            continue
        conv_id = f"{base}#task{value.get('task_id')}-trial{value.get('trial', 0)}-{ordinal}"
        yield Conversation(id=conv_id, source=source, messages=messages)


def _tau2(doc: dict, filename: str, base: str, problems: ProblemSink) -> Iterator[Conversation]:
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    agent_info = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
    model = agent_info.get("llm") if isinstance(agent_info.get("llm"), str) else None
    for s, sim in enumerate(doc["simulations"]):
        source = src(NAME, filename, record=f"$.simulations[{s}]")
        messages = _record_messages(sim, "messages", "simulation has no 'messages' list", source, problems,
                                    model, tau2=True)
        if messages is None:
            continue
        yield Conversation(id=str(sim.get("id") or f"{base}#sim{s}"), source=source, messages=messages)


FORMAT = TraceFormat(
    name=NAME,
    description="tau-bench traj records and tau2-bench simulations (simulated user is never the assistant)",
    sniff=sniff,
    parse=parse,
)
