"""Tool calls, tool results and thinking written as sections of a text transcript.

Chat buffers of editor agents (greger.el's ``# TOOL USE`` / ``# TOOL RESULT`` / ``# THINKING``, in either of its
layouts) keep the whole agent loop as text: the model's reply under one marker, each tool call it made under a
marker of its own, the client's result under another, all in the decoration of the role markers. A call section
names its tool on a ``Name:`` line (an ``ID:`` line beside it) and gives each argument under a Markdown heading of
its own, or the arguments as one JSON object; a result section gives the ``ID:`` it answers and the output. A
parameter's value or a result may be wrapped in a tag block of its own (``<tool.ID>`` ... ``</tool.ID>``) whose
lines are opaque: a result quoting a file that holds the same markers is text, never a marker.

What the sections become (docs/traces.md, "Text transcripts"): a call section is a ``ToolCallPart`` of the reply it
is written in (a reply of tool calls only, where no reply text precedes it); a result section is a tool message
answering the call its ``ID:`` names (else the reply's first unanswered call); a thinking section is the reasoning of
the reply it opens or belongs to; the provider's own tools run during the reply (``SERVER TOOL USE``, ``WEB SEARCH
TOOL RESULT``) are counted placeholders of that reply (``server_tool_use`` / ``server_tool_result``), not calls.
A section that gives no tool name, or arguments neither as headings nor as JSON, is not guessed: the reader refuses
the file (``content_not_mapped``).

Not a format (no ``FORMAT``).
"""

from __future__ import annotations

import json
import re
from itertools import pairwise

from drafters.traces.formats._text_calls import split_text_calls
from drafters.traces.model import TextPart, ToolCallPart, ToolResultPart

#: A marker's label (lower case, spaces collapsed) -> the kind of section it opens, beside the role labels.
SECTION_LABELS = {
    **dict.fromkeys(("tool use", "tool call", "tool calls", "function call", "tool request"), "call"),
    **dict.fromkeys(("thinking", "reasoning"), "reasoning"),
    "server tool use": "server_tool_use",
    **dict.fromkeys(("server tool result", "web search tool result", "web fetch tool result",
                     "code execution tool result"), "server_tool_result"),
}
SECTION_KINDS = frozenset(SECTION_LABELS.values())
#: Section kinds that are the model's output: they continue (or open) the reply of the assistant marker before them.
OUTPUT_KINDS = frozenset({"assistant", "call", "reasoning", "server_tool_use", "server_tool_result"})

_FIELD = re.compile(r"^\s*(?P<key>name|tool|function|id|tool[ _]?use[ _]?id|call[ _]?id)\s*:\s*(?P<value>\S.*?)\s*$",
                    re.IGNORECASE)
_PARAM = re.compile(r"^(#{1,6})\s+(?P<name>[\w.-]{1,64})\s*:?\s*$")  # ``## path``: an argument's heading
_TAG_OPEN = re.compile(r"^<(?P<tag>[A-Za-z_][\w.:-]{0,100})>$")
FENCE = re.compile(r"^\s*(```|~~~)")  # a code fence: lines inside it are text, never markers
_SIGNATURE = re.compile(r"^Signature:\s*(\S+)\s*$")


def tag_blocks(lines: list[str], role_labels: dict[str, str]) -> list[bool]:
    """For each line, whether it is inside a tag block (a line ``<name>`` alone, the same ``</name>`` alone later)
    or is one of its two tag lines. A tag naming a role (``<user>``) is a marker, not a block."""
    inside = [False] * len(lines)
    i = 0
    while i < len(lines):
        m = _TAG_OPEN.match(lines[i].strip())
        if m and m["tag"].lower() not in role_labels:
            close = f"</{m['tag']}>"
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == close), None)
            if end is not None:
                inside[i:end + 1] = [True] * (end + 1 - i)
                i = end + 1
                continue
        i += 1
    return inside


def _unwrap(lines: list[str]) -> str:
    """The text of ``lines``, blank edges and one enclosing tag block or code fence removed."""
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    if len(lines) >= 2:
        m = _TAG_OPEN.match(lines[0].strip())
        if m and lines[-1].strip() == f"</{m['tag']}>" or FENCE.match(lines[0]) and FENCE.match(lines[-1]):
            lines = lines[1:-1]
    return "\n".join(lines)


def _fields(lines: list[str]) -> tuple[dict[str, str], list[str]]:
    """The ``Name:`` / ``ID:`` lines at the top of a section (lower-case keys, ``id`` for any id) and the lines
    after them."""
    fields: dict[str, str] = {}
    i = 0
    while i < len(lines):
        m = _FIELD.match(lines[i])
        if m:
            key = m["key"].lower()
            fields["id" if "id" in key else "name"] = m["value"]
        elif lines[i].strip():
            break
        i += 1
    return fields, lines[i:]


def _json_call(text: str) -> ToolCallPart | None:
    """A call written as one JSON object ``{"name", "arguments" | "input" | "parameters" | "args"}``, or None."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    function = value.get("function") if isinstance(value.get("function"), dict) else value
    name = function.get("name")
    args = next((function[k] for k in ("arguments", "input", "parameters", "args") if k in function), None)
    return ToolCallPart.from_raw(value.get("id"), name, args) if isinstance(name, str) and name else None


def _parameters(lines: list[str]) -> dict[str, str] | None:
    """Arguments written one per heading (``## path``, its value below, maybe in a tag block), or None where the
    first line with text is no such heading. A heading inside a tag block is the value's text."""
    opaque = tag_blocks(lines, {})
    heads = [i for i, line in enumerate(lines) if not opaque[i] and _PARAM.match(line)]
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if not heads or heads[0] != first:
        return None
    level = _PARAM.match(lines[heads[0]])[1]
    heads = [i for i in heads if _PARAM.match(lines[i])[1] == level]  # deeper headings are a value's text
    return {_PARAM.match(lines[start])["name"]: _unwrap(lines[start + 1:end])
            for start, end in pairwise([*heads, len(lines)])}


def read_call(lines: list[str]) -> ToolCallPart | str:
    """The tool call a call section's body writes (see the module docstring), or why it is not read (a message
    for ``content_not_mapped``)."""
    fields, rest = _fields(lines)
    text = _unwrap(rest)
    if "name" not in fields:
        call = _json_call(text)
        return call if call is not None else "no Name: line and no JSON object naming the tool"
    if not text:
        return ToolCallPart.from_raw(fields.get("id"), fields["name"], None)
    params = _parameters(rest)
    if params is not None:
        return ToolCallPart.from_raw(fields.get("id"), fields["name"], params)
    if text.startswith("{"):
        try:
            args = json.loads(text)
        except ValueError:
            args = None
        if isinstance(args, dict):
            return ToolCallPart.from_raw(fields.get("id"), fields["name"], args)
    return f"the arguments of {fields['name']!r} are neither one per heading nor a JSON object"


def read_result(lines: list[str], pending: list[ToolCallPart]) -> ToolResultPart | str:
    """The result a result section's body gives, answering the call its ``ID:`` names in ``pending`` (the reply's
    unanswered calls, in order; the answered one is removed), else the first of them; or why it is not read."""
    fields, rest = _fields(lines)
    if not pending:
        return "it answers no tool call of the reply before it"
    wanted = fields.get("id")
    call = next((c for c in pending if c.id == wanted), None) if wanted else pending[0]
    if call is None:
        return f"its ID {wanted!r} names no unanswered tool call of the reply before it"
    pending.remove(call)
    return ToolResultPart(call_id=call.id, content=_unwrap(rest), name=call.name)


#: A code fence holding nothing but ``<tool_call>`` blocks (chat.md fences each call as ``tool_call``): its
#: fence lines are the notation's, not the reply's text.
_CALL_FENCE = re.compile(r"(```|~~~)[ \t]*(?:tool[_-]?(?:call|use)|function[_-]?call)?[ \t]*\n"
                         r"((?:\s*<tool_call>.*?</tool_call>)+\s*)\n\1[ \t]*$",
                         re.MULTILINE | re.DOTALL)  # its opener may end a line of text ("Let me start.```tool_call")
_FENCED = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)


def reply_parts(text: str) -> list | None:
    """A reply's text as text and tool-call parts where it writes ``<tool_call>`` blocks that all parse
    (``_text_calls``: JSON, a Python dict, or the XML body; a fence around them dropped), else None (no block, or
    one that does not parse: the caller refuses the notation)."""
    text = _CALL_FENCE.sub(lambda m: m[2].strip(), text)
    if any("<tool_call>" in m[2] for m in _FENCED.finditer(text)):
        return None  # a block inside a code block of another kind (```json): an example, the reply's text
    split = split_text_calls(text)
    if split is None or split[1]:
        return None
    return [p for p in split[0] if not isinstance(p, TextPart) or p.text.strip()]


def thinking(lines: list[str]) -> tuple[str, str | None]:
    """A thinking section's text and its ``Signature:`` line's value (the provider's blob, kept verbatim)."""
    fields = [i for i, line in enumerate(lines) if line.strip()]
    if fields and (m := _SIGNATURE.match(lines[fields[0]].strip())):
        return _unwrap(lines[fields[0] + 1:]), m[1]
    return _unwrap(lines), None
