"""ToolBench DFS answer files (legacy OpenAI ``function_call`` messages).

Shape: one JSON object per file, ``{win, tree, forward_args, compare_candidates,
answer_generation{valid_data, query, final_answer, finish_type, function[], chain,
train_messages[[...]], ...}}``. ``train_messages`` holds one message list per explored branch of the
depth-first search; each list is one training example whose last message is the model's answer.
Branches repeat their common prefix, so lists that are a prefix of a longer list are folded into it:
every maximal branch is one conversation and every assistant message in it one LLM call.

Messages use the legacy function-calling API: ``{"role":"assistant", "content": str|null,
"function_call": {"name", "arguments": "<JSON string>"}}`` and ``{"role":"function", "name",
"content": "<JSON string with error and response>"}``. There are no call ids: a ``function``
message answers the call right before it (paired by position, ``call_id=None``). ``Finish`` is a
pseudo-tool (``return_type: give_answer|give_up_and_restart``) and stays a tool call: it is what the
model emitted. Tool definitions come from ``answer_generation.function``. Files may use CRLF
line endings (text-mode reading normalises them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO

from drafters.traces.formats._content import content_parts, tool_defs
from drafters.traces.formats._reading import load_json, src
from drafters.traces.formats._records import guard_file
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import Conversation, Message, ToolCallPart, ToolResultPart

NAME = "toolbench"


def sniff(head: str, filename: str) -> bool:
    """A ToolBench answer: an object starting with ``"win"`` and a DFS ``"tree"``, or one whose head
    already shows ``"answer_generation"`` with ``"train_messages"``."""
    start = head.lstrip()[:400]
    if start.startswith("{") and '"win"' in start and '"tree"' in start:
        return True
    return '"answer_generation"' in head and '"train_messages"' in head


def convert_messages(raw: list, field: str, source, problems: ProblemSink) -> list[Message] | None:
    """Legacy OpenAI messages -> canonical messages; None (after an error) when a message is malformed."""
    out: list[Message] = []
    last_call: ToolCallPart | None = None
    for j, m in enumerate(raw):
        where = f"{field}[{j}]"
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "function", "tool"):
            problems.error("bad_record", "message is not {role, content} with a known role", source, where)
            return None
        role = m["role"]
        if role == "assistant":
            parts = content_parts(m.get("content"))
            fc = m.get("function_call")
            if isinstance(fc, dict) and isinstance(fc.get("name"), str):
                call = ToolCallPart.from_raw(None, fc["name"], fc.get("arguments"))
                if not call.arguments_valid:
                    problems.warning("arguments_not_json", f"arguments of {fc['name']} are not a JSON object",
                                     source, where + ".function_call.arguments")
                parts.append(call)
                last_call = call
            for k, tc in enumerate(m.get("tool_calls") or []):
                fn = tc.get("function") or {}
                call = ToolCallPart.from_raw(tc.get("id"), fn.get("name", ""), fn.get("arguments"))
                parts.append(call)
                last_call = call
            out.append(Message("assistant", parts))
        elif role in ("function", "tool"):
            content = m.get("content")
            text = content if isinstance(content, str) else ("" if content is None else str(content))
            name = m.get("name") or (last_call.name if last_call else None)
            if last_call is None:
                problems.warning("tool_result_without_call", "function result with no preceding call", source, where)
            part = ToolResultPart(call_id=m.get("tool_call_id"), content=text, name=name)
            if out and out[-1].role == "tool":
                out[-1].parts.append(part)
            else:
                out.append(Message("tool", [part]))
        else:
            text = m.get("content") if isinstance(m.get("content"), str) else ""
            # the DFS harness re-prompts with earlier failed actions: harness text, not the human's
            injected = role == "user" and bool(out) and text.startswith("This is not the first time you try this task")
            out.append(Message(role, content_parts(m.get("content")), meta=injected))
    return out


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """Yield one conversation per maximal DFS branch of ``answer_generation.train_messages``."""
    doc = load_json(stream, filename, problems, NAME)
    if doc is None:
        return
    base = Path(filename).name
    ag = doc.get("answer_generation") if isinstance(doc, dict) else None
    if not isinstance(ag, dict) or not isinstance(ag.get("train_messages"), list):
        problems.error("bad_record", "no answer_generation.train_messages list", src(NAME, filename, record="$"),
                       "answer_generation.train_messages")
        return
    tools = tool_defs(ag.get("function") or [])
    branches: list[tuple[int, list]] = [
        (i, b) for i, b in enumerate(ag["train_messages"]) if isinstance(b, list) and b
    ]
    for i, b in enumerate(ag["train_messages"]):
        if not isinstance(b, list) or not b:
            problems.error("bad_record", "train_messages entry is not a non-empty list",
                           src(NAME, filename, record=f"$.answer_generation.train_messages[{i}]"))
    for i, branch in branches:
        # a branch that is a prefix of a longer one adds no call of its own
        if any(len(other) > len(branch) and other[: len(branch)] == branch for _, other in branches):
            continue
        if any(j < i and other == branch for j, other in branches):
            continue  # exact repeat
        record = f"$.answer_generation.train_messages[{i}]"
        source = src(NAME, filename, record=record)
        messages = convert_messages(branch, "train_messages", source, problems)
        if messages is None:
            continue
        yield Conversation(id=f"{base}#{i}", source=source, tools=tools, messages=messages)


FORMAT = TraceFormat(
    name=NAME,
    description="ToolBench DFS answers: answer_generation.train_messages with legacy function_call",
    sniff=sniff,
    parse=parse,
)
