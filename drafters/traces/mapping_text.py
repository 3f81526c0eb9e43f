"""A declared mapping for text: a log or transcript whose messages open with marker lines the file spells its own
way (``## Crystalyse Response``, ``===== gemini-pro response =====``, ``**Query:** ...``), which no role label of
the general path's text reader knows (docs/traces.md, "A text mapping").

The mapping file names each marker and the role of the message it opens, and may name the line that opens each
conversation::

    name: crystalyse
    text:
      markers:
        "## User Query": user
        "## Crystalyse Response": assistant
        "### Score": skip            # a section that is no message (not read, warned)
        "### Reasoning": reasoning   # the reasoning of the reply that follows
        "Tool:": tool_call           # a tool call of the reply: the tool's name, then perhaps its arguments
        "Arguments:": arguments      # the arguments (JSON, else kept raw) of the tool call before it
        "Result:": tool              # the result of the reply's first call not yet answered
      conversation: "## Example 1"   # optional: a line beginning with it (any number) opens a conversation
      conversation_id: "conversation:"  # optional: conversation lines naming the same word after it are one

A line opens a message when, stripped, it begins with a marker (the longest that fits; not followed by a letter or
digit: ``## User`` does not open ``## Username``; a number in it matches any number, as a timestamp would); the
rest of that line (``**Query:** What is 2+2?``) is the message's first line. Lines inside a code fence are text
(a fence never closed is text itself); rules (``---``) and tags (``</details>``) closing a section are no content,
nor is the indentation all of a section's lines share (a prompt a report quotes as a code block). Text before a
conversation's first marker is its heading, not read (``preamble_not_read``); messages of one role in a row are
one message; two answers in a row are one call (``adjacent_answers_joined``), or as ``adjacent_answers`` declares
(``separate``: two calls; ``refuse``). A log that prints an agent loop's tool calls as lines of their own (``Tool:
NAME`` / ``Arguments: {...}`` / ``Result: ...``) declares them: a ``tool_call`` section is a call of the reply it
follows (of a new reply after a result: each call after a result is the next request's answer), named by its first
line; ``arguments`` the arguments of the call before it; a ``tool`` section the result of the oldest call not yet
answered. A ``tool`` section no declared call precedes, an ``arguments`` section with no call before it, and a
reply that writes a tool call in a known notation are refused (``content_not_mapped``): the call would be lost.
A conversation whose prompt has no reply is
``no_assistant_message``, an error (its reply may sit under a marker not named), a warning for the file's last (a
chat file's next turn). Every assistant message is a call whose context is everything before it in its
conversation. Torch-free, standard library only.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import pairwise
from typing import IO, Any

from drafters.traces.formats._reading import count, src
from drafters.traces.formats._records import guard_file
from drafters.traces.formats._turns import ADJACENT_ANSWERS, join_turns, warn_joined
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.formats.text_transcript import fenced_lines, tool_call_line
from drafters.traces.model import Conversation, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from drafters.traces.report import TraceError

RULE = re.compile(r"^\s*([-*_=])(\s*\1){2,}\s*$")  # a rule: Markdown's ---, ***, ___; a log's ====
CLOSING_TAG = re.compile(r"^\s*</(?:details|summary|div)>\s*$")  # the end of a collapsible section (<details>)
TEXT_ROLES = ("system", "user", "assistant", "tool", "reasoning", "skip", "tool_call", "arguments")
MAX_MARKERS = 40  # markers in one mapping (a transcript has a handful)
MAX_MARKER = 200  # characters of one marker


@dataclass(frozen=True)
class TextMapping:
    """A declared text mapping: ``markers`` (a marker line's beginning -> the role of the message it opens,
    ``reasoning`` or ``skip``), ``conversation`` (the beginning of the line opening each conversation, or None: one
    conversation a file) and ``adjacent_answers`` (``ADJACENT_ANSWERS``)."""

    name: str
    markers: dict[str, str]
    conversation: str | None = None
    adjacent_answers: str = "join"  # two replies with nothing between them: one call (join), two, or refused
    conversation_id: str | None = None  # a label on conversation lines; the word after it names the conversation

    @cached_property
    def _patterns(self) -> list[tuple[str, re.Pattern[str]]]:
        return [(m, line_start(m)) for m in sorted(self.markers, key=len, reverse=True)]  # the longest that fits

    @property
    def format_name(self) -> str:
        """The format name in reports: ``mapping:NAME``."""
        return f"mapping:{self.name}"

    def format(self) -> TraceFormat:
        """A ``TraceFormat`` reading files with this mapping (its sniffer accepts every file)."""
        return TraceFormat(name=self.format_name, description=f"declared text mapping {self.name}",
                           sniff=lambda head, filename: True, parse=guard_file(self.format_name)(self.parse))

    def to_dict(self) -> dict[str, Any]:
        """The mapping as a mapping file's content (``text_mapping_from_dict`` inverts it)."""
        text: dict[str, Any] = {"markers": dict(self.markers)}
        if self.conversation:
            text["conversation"] = self.conversation
        if self.conversation_id:
            text["conversation_id"] = self.conversation_id
        out: dict[str, Any] = {"name": self.name, "text": text}
        if self.adjacent_answers != "join":
            out["adjacent_answers"] = self.adjacent_answers
        return out

    def names(self, line: str) -> str | None:
        """The conversation a conversation line names: the word after ``conversation_id`` on it, else None."""
        at = line.find(self.conversation_id) if self.conversation_id else -1
        word = line[at + len(self.conversation_id or ""):].split()[:1] if at >= 0 else []
        return word[0] if word else None

    def opens(self, line: str) -> tuple[str, str] | None:
        """``(marker, rest of the line)`` when ``line`` opens a message, else None."""
        text = line.strip()
        for marker, pattern in self._patterns:
            match = pattern.match(text)
            if match:
                return marker, text[match.end():].strip().lstrip(":*_ \t")
        return None

    def parse(self, stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
        """The file's conversations (see the module docstring); problems reported to ``problems``."""
        return _parse(self, stream.read().splitlines(), filename, problems)


@lru_cache(maxsize=256)
def line_start(text: str) -> re.Pattern[str]:
    """The pattern of a line beginning with ``text``, each run of digits in it matching any number (``## Example 1``
    begins ``## Example 12``; a timestamp, any other) and, where it ends in a letter or digit, none following it
    (``## User`` does not begin ``## Username``)."""
    pattern = "".join(r"\d+" if part.isdigit() else re.escape(part) for part in re.split(r"(\d+)", text))
    return re.compile(pattern + (r"(?![A-Za-z0-9])" if text[-1:].isalnum() else ""))


def opens_conversation(line: str, conversation: str) -> bool:
    """Whether ``line``, stripped, begins with ``conversation`` (``line_start``)."""
    return line_start(conversation).match(line.strip()) is not None


@dataclass
class _Section:
    """A marker's section: the 0-based line of its marker, the role (``skip``: not read) and its lines."""

    line: int
    role: str
    lines: list[str]


def _sections(mapping: TextMapping, lines: list[str]) -> Iterator[tuple[int, list[_Section]]]:
    """Each conversation's first line (0-based) and its sections; a section of role ``""`` is the heading."""
    sections: list[_Section] = [_Section(0, "", [])]
    start, fenced = 0, fenced_lines(lines)
    for i, line in enumerate(lines):
        opened = None if fenced[i] else mapping.opens(line)
        if not fenced[i] and mapping.conversation and opens_conversation(line, mapping.conversation):
            yield start, sections
            start, sections = i, [_Section(i, "", [])]
            if opened is None:
                continue  # the line names the conversation: no message's text
        if opened is not None:
            sections.append(_Section(i, mapping.markers[opened[0]], [opened[1]] if opened[1] else []))
        else:
            sections[-1].lines.append(line)
    yield start, sections


def _same_named(found: list[tuple[int, list[_Section]]], mapping: TextMapping, lines: list[str]
                ) -> list[tuple[int, list[_Section]]]:
    """``found`` with the conversations whose lines name the same conversation (``conversation_id``) as one, at the
    first one's place, in file order (a log's entries continuing one chat)."""
    merged: dict[str, tuple[int, list[_Section]]] = {}
    out = []
    for start, sections in found:
        name = mapping.names(lines[start])
        if name is not None and name in merged:
            merged[name][1].extend(sections)
            continue
        out.append((start, sections))
        if name is not None:
            merged[name] = out[-1]
    return out


def _parse(mapping: TextMapping, lines: list[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    name = mapping.format_name
    groups = list(_sections(mapping, lines))
    found = _same_named([(start, sections) for start, sections in groups if any(s.role for s in sections)],
                        mapping, lines)
    head = "\n".join(groups[0][1][0].lines).strip() if groups[0] not in found else ""
    if head:  # the file's heading above its first conversation line
        problems.warning("preamble_not_read", f"{len(head.splitlines())} line(s) before the first conversation line "
                         "are the file's heading, not a message: not read", src(name, filename, line=1))
    if not found:
        problems.error("unknown_format", f"no line opens with a marker of the mapping ({', '.join(mapping.markers)})",
                       src(name, filename, line=1))
        return
    for s in (s for _, sections in found for s in sections):
        refused = _refused(s)
        if refused:
            problems.error("content_not_mapped", refused, src(name, filename, line=s.line + 1))
            return
    try:
        read = [(start, sections, _messages(sections)) for start, sections in found]
    except _NotPaired as e:
        problems.error("content_not_mapped", e.why, src(name, filename, line=e.line + 1))
        return
    if not any(m.role == "assistant" for _, _, messages in read for m in messages):
        problems.error("no_assistant_message", "no assistant marker of the mapping holds text",
                       src(name, filename, line=1))
        return
    stem = filename.rsplit("/", 1)[-1]
    for k, (start, sections, messages) in enumerate(read):
        count(problems, "records")
        where = src(name, filename, line=start + 1)
        _warn_unread(sections, problems, where)
        if not any(m.role == "assistant" for m in messages):
            if messages and k < len(read) - 1:  # a reply under a marker the mapping does not name would be lost
                problems.error("no_assistant_message", "the conversation's prompt has no reply after it (is its "
                               "reply opened by a marker the mapping does not name?)", where)
            elif messages:  # the file's last prompt, left for the next turn of a chat: no call to read
                problems.warning("no_assistant_message", "the file's last prompt has no reply after it", where)
            continue
        messages, joined = _join_same_role(messages, mapping.adjacent_answers == "join")
        turns = join_turns(messages, [None] * len(messages), "role", mapping.adjacent_answers)
        turns = turns._replace(joined=joined)
        if turns.why is not None:
            problems.error("ambiguous_turns", f"{turns.why} (docs/traces.md, consecutive assistant messages)", where)
            continue
        warn_joined(turns, problems, where, None)
        suffix = "" if len(found) == 1 else f":{k}"
        yield Conversation(id=f"{stem}:text{suffix}", source=where, messages=turns.messages)


class _NotPaired(Exception):
    """A tool result or arguments section with no declared tool call to belong to: ``why``, at 0-based ``line``."""

    def __init__(self, why: str, line: int) -> None:
        super().__init__(why)
        self.why, self.line = why, line


def _messages(sections: list[_Section]) -> list[Message]:
    """A conversation's messages: its sections with text, other than the heading and ``skip`` sections; a
    ``reasoning`` section is the reasoning of the next reply (of the last, where none follows); a ``system`` section
    right after a prompt is that request's system prompt, before it; ``tool_call``, ``arguments`` and ``tool``
    sections the reply's calls and their results (``_tool_section``). Raises _NotPaired (see there)."""
    out: list[Message] = []
    thinking: list[ReasoningPart] = []
    pending: list[ToolCallPart] = []  # the calls not yet answered, oldest first
    for s in sections:
        text = _text(s.lines)
        if s.role in ("tool_call", "arguments", "tool"):
            _tool_section(s, text, out, pending, thinking)
            thinking = [] if s.role == "tool_call" else thinking
        elif s.role == "reasoning" and text:
            thinking.append(ReasoningPart(text))
        elif s.role == "assistant" and text:
            out.append(Message("assistant", [*thinking, TextPart(text)]))
            thinking = []
        elif s.role == "system" and text and out and out[-1].role == "user":
            out.insert(len(out) - 1, Message("system", [TextPart(text)]))  # the request's system prompt, written
            # after its prompt (llm's logs): sent before it
        elif s.role not in ("", "skip", "reasoning") and text:
            out.append(Message(s.role, [TextPart(text)]))  # type: ignore[arg-type]
    last = next((m for m in reversed(out) if m.role == "assistant"), None)
    if thinking and last is not None:
        last.parts[:0] = thinking
    elif thinking:
        out.append(Message("assistant", list(thinking)))
    return out


def _tool_section(s: _Section, text: str, out: list[Message], pending: list[ToolCallPart],
                  thinking: list[ReasoningPart]) -> None:
    """Read a ``tool_call`` section (a call, named by its first line, the rest its arguments) into the reply it
    follows, or a new reply after anything else; an ``arguments`` section into the call before it; a ``tool``
    section as the result of the oldest call not answered (its id ``text:LINE``, the call's marker line). Raises
    _NotPaired for arguments or a result no declared call precedes (the call would be lost)."""
    if s.role == "tool_call":
        name, _, rest = text.partition("\n")
        name = name.strip().strip("*_`").strip()  # the decoration closing the name: "Tool use: **search**"
        if not name:
            raise _NotPaired(f"line {s.line + 1} opens a tool call without the tool's name", s.line)
        call = ToolCallPart.from_raw(f"text:{s.line + 1}", name, rest.strip())
        if out and out[-1].role == "assistant":
            out[-1].parts.extend([*thinking, call])
        else:
            out.append(Message("assistant", [*thinking, call]))
        pending.append(call)
        return
    last = out[-1].parts[-1] if out and out[-1].role == "assistant" and out[-1].parts else None
    if s.role == "arguments":
        if not isinstance(last, ToolCallPart) or last.raw_arguments:
            raise _NotPaired(f"line {s.line + 1} opens a tool call's arguments with no tool call right before it",
                             s.line)
        out[-1].parts[-1] = ToolCallPart.from_raw(last.id, last.name, text)
        pending[-1] = out[-1].parts[-1]  # type: ignore[assignment]
        return
    if not pending:
        raise _NotPaired(f"line {s.line + 1} opens a tool message that no tool call precedes (the log prints none "
                         "before it, or its line is not declared as tool_call): its call would be lost", s.line)
    call = pending.pop(0)
    out.append(Message("tool", [ToolResultPart(call.id, text, name=call.name)]))


def _text(lines: list[str]) -> str:
    """A section's text, without the rules (``---``, ``====``) and closing tags (``</details>``) that close it or
    open it (a separator between blocks, a log's frame around its marker: not content) and the indentation all its
    lines share (a report's quoting, not the text's)."""
    start, end = 0, len(lines)
    while end and (not lines[end - 1].strip() or RULE.match(lines[end - 1]) or CLOSING_TAG.match(lines[end - 1])):
        end -= 1
    while start < end and (not lines[start].strip() or RULE.match(lines[start])):
        start += 1
    return textwrap.dedent("\n".join(lines[start:end])).strip()


#: A tool call a log prints as lines of its own, where no marker declares them: ``Tool: NAME``, then its arguments.
_PRINTED_CALL = re.compile(r"^\s*(?:tool|tool call|function|function call)\s*:\s*\S", re.IGNORECASE)
_PRINTED_ARGS = re.compile(r"^\s*(?:arguments|args|parameters|params|input)\s*:", re.IGNORECASE)


def _refused(section: _Section) -> str | None:
    """Why a section cannot be read (a reply writing a tool call in a known notation; a section holding a printed
    tool call, ``Tool:`` then ``Arguments:``, that no marker declares), or None."""
    at = tool_call_line(section.lines) if section.role == "assistant" else None
    if at is not None:
        return (f"the reply at line {section.line + 1} writes a tool call as text ({section.lines[at].strip()[:60]!r}):"
                " a text transcript records no structured tool call, and reading it as text would lose the call")
    if section.role in ("", "skip", "system", "reasoning"):
        return None  # a heading, a section not read, a system prompt describing the log's format
    lines = [line for line in section.lines if line.strip()]
    for line, after in pairwise(lines):
        if _PRINTED_CALL.match(line) and _PRINTED_ARGS.match(after):
            return (f"the {section.role} message opened at line {section.line + 1} holds a printed tool call "
                    f"({line.strip()[:60]!r}, then its arguments): reading it as text would lose the call; declare "
                    "its lines' markers (tool_call, arguments, and tool for its result; docs/traces.md, \"A text "
                    "mapping\")")
    return None


def _warn_unread(sections: list[_Section], problems: ProblemSink, where) -> None:
    """``preamble_not_read`` for a conversation's heading text, ``sections_not_read`` for ``skip`` sections."""
    head = "\n".join(sections[0].lines).strip()
    if head and not sections[0].role:
        problems.warning("preamble_not_read", f"{len(head.splitlines())} line(s) before the conversation's first "
                         "marker are its heading, not a message: not read", where)
    skipped = [s for s in sections if s.role == "skip" and "\n".join(s.lines).strip()]
    if skipped:
        problems.warning("sections_not_read", f"{len(skipped)} section(s) the mapping marks skip (from line "
                         f"{skipped[0].line + 1}) are not read", where)


def _join_same_role(messages: list[Message], answers: bool) -> tuple[list[Message], int]:
    """Messages of one role in a row as one message, a blank line between them (a prompt in two sections); the
    assistant's too where ``answers`` (``adjacent_answers: join``), with how many such pairs were joined."""
    out: list[Message] = []
    joined = 0
    for m in messages:
        if out and out[-1].role == m.role and (m.role != "assistant" or answers):
            texts = isinstance(out[-1].parts[-1], TextPart) and isinstance(m.parts[0], TextPart)
            out[-1] = Message(m.role, [*out[-1].parts, *([TextPart("\n\n")] if texts else []), *m.parts])
            joined += m.role == "assistant"
        else:
            out.append(m)
    return out, joined


def text_mapping_from_dict(data: dict, where: str, name: str) -> TextMapping:
    """Check a text mapping's ``text`` object (untrusted: types and sizes bounded).

    Raises:
        TraceError("bad_mapping") naming ``where`` and the field at fault.
    """
    def bad(field_name: str, why: str) -> TraceError:
        return TraceError("bad_mapping", f"{field_name}: {why}", f"{where} ({field_name})")

    extra = set(data) - {"name", "text", "adjacent_answers"}
    if extra:
        raise bad(min(map(str, extra)), "a text mapping has the keys name, text and adjacent_answers only")
    adjacent = data.get("adjacent_answers", "join")
    if adjacent not in ADJACENT_ANSWERS:
        raise bad("adjacent_answers", f"one of {', '.join(ADJACENT_ANSWERS)} (two replies with nothing between "
                  "them: two calls, one call, or refused)")
    text = data["text"]
    if not isinstance(text, dict) or not set(text) <= {"markers", "conversation", "conversation_id"}:
        raise bad("text", "an object with markers (a marker line's beginning -> its role) and, perhaps, conversation "
                  "and conversation_id")
    markers = text.get("markers")
    if not isinstance(markers, dict) or not markers or len(markers) > MAX_MARKERS:
        raise bad("text.markers", f"a map of 1 to {MAX_MARKERS} marker lines to {', '.join(TEXT_ROLES)}")
    wrong = {str(k)[:60]: v for k, v in markers.items() if not isinstance(k, str) or not k.strip()
             or len(k) > MAX_MARKER or v not in TEXT_ROLES}
    if wrong:
        raise bad("text.markers", f"{wrong}: each a non-empty line of at most {MAX_MARKER} characters mapped to one "
                  f"of {', '.join(TEXT_ROLES)}")
    if "assistant" not in markers.values():
        raise bad("text.markers", "no marker opens the assistant's messages (the model's replies)")
    conversation = text.get("conversation")
    if conversation is not None and not (isinstance(conversation, str) and conversation.strip()
                                         and len(conversation) <= MAX_MARKER):
        raise bad("text.conversation", f"a non-empty line beginning of at most {MAX_MARKER} characters")
    named = text.get("conversation_id")
    if named is not None and not (conversation and isinstance(named, str) and named.strip()
                                  and len(named) <= MAX_MARKER):
        raise bad("text.conversation_id", f"a non-empty label of at most {MAX_MARKER} characters on the lines "
                  "conversation names (the word after it names the conversation)")
    return TextMapping(name, {k.strip(): v for k, v in markers.items()},
                       conversation.strip() if conversation else None, adjacent, named.strip() if named else None)
