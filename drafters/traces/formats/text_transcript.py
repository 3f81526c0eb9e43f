"""The general path for text: a chat saved as text or markdown, each message opened by a role-marker line.

Chat front-ends that keep a conversation as a file (editor plugins, CLI chat tools, exported notes) write it as
text: a line naming the speaker, then the message, in one decoration the file uses throughout:
``# === USER ===`` / ``# === ASSISTANT ===``, ``## User`` / ``## Assistant``, ``**Human:**`` / ``**AI:**``,
``<user>`` / ``<assistant>``. No module knows the file; this reader finds the decoration by itself
(docs/traces.md, "Text transcripts"):

- a marker line is a short line made of a role label (``ROLE_LABELS``: user, human, prompt, assistant, ai, model,
  response, system, developer, ...) and decoration only (``#``, ``=``, ``*``, ``_``, ``-``, ``:``, ``<>``,
  ``[]``); the markers are the lines of one decoration (the text around the label) that labels both a user and
  an assistant message at least once; a line of that decoration whose label is no role (``### Summary`` inside
  a reply) or another label of a role than the one the file uses most for it (a reply's ``## Answer`` where the
  file writes ``## Assistant``) is text, and so is every line inside a fenced code block (an example transcript
  in a reply) and every line indented as Markdown's code block is (four spaces or a tab: a prompt a report
  quotes, its own ``**Question:**`` labels inside);
- two decorations that both qualify are not guessed: the file is refused (``ambiguous_shape``);
- tool calls, tool results and thinking written as sections of their own (greger.el's ``# TOOL USE`` / ``# TOOL
  RESULT`` / ``# THINKING``) are the reply's calls, tool messages and reasoning (``_text_tool_sections``); a tag
  block (``<tool.ID>`` ... ``</tool.ID>``) is opaque, as a fence is;
- elsewhere, a marker that labels a tool message (``## Tool``) is refused (``content_not_mapped``): a result whose
  call the text does not record as a structured call cannot be paired;
- front matter (``+++ ... +++``, ``--- ... ---`` at the start: settings) is not a message; text before the first
  marker is the user's message when that marker is the assistant's (a file that begins with the prompt, its
  first header the reply's: ``leading_text_read_as_user``), else the file's heading (``preamble_not_read``);
- a message with no text (the empty prompt a chat file ends with, for the next turn) is no message; messages of
  one role in a row are one message (two assistant messages: one call, ``adjacent_answers_joined``).

One file is one conversation; every assistant message is a call whose context is everything before it. Text
transcripts record no structured tool calls except as sections.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import IO

from drafters.traces.formats._chains import REBUILT_PREFIX
from drafters.traces.formats._documents import is_document
from drafters.traces.formats._reading import count, src
from drafters.traces.formats._records import guard_file
from drafters.traces.formats._rendered_chats import TEMPLATE_HEAD, rendered_chat, rendered_text
from drafters.traces.formats._table_rows import is_table
from drafters.traces.formats._text_tool_sections import (
    FENCE,
    OUTPUT_KINDS,
    SECTION_KINDS,
    SECTION_LABELS,
    read_call,
    read_result,
    reply_parts,
    tag_blocks,
    thinking,
)
from drafters.traces.formats._turns import join_turns, warn_joined, whole_prompts
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import (
    Conversation,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    UnsupportedPart,
)

NAME = "text_transcript"

#: A marker's label (lower case, spaces collapsed) -> the role it opens.
ROLE_LABELS = {
    **dict.fromkeys(("user", "human", "you", "me", "prompt", "question", "query", "user input", "user message",
                     "user prompt", "user query"), "user"),
    **dict.fromkeys(("assistant", "ai", "bot", "model", "response", "answer", "reply", "assistant response",
                     "assistant message", "ai response", "model response", "chatbot", "llm", "llm response",
                     "llm output", "llm reply", "llm answer", "model output", "model reply", "ai reply", "completion"),
                    "assistant"),
    **dict.fromkeys(("system", "system prompt", "system message", "developer", "instructions"), "system"),
    **dict.fromkeys(("tool", "tool result", "tool output", "tool response", "function", "observation",
                     "tool execute", "tool execution"), "tool"),
    # assistants named by their product, as chat exports label the reply ("## Claude", "**ChatGPT:**")
    # LangChain's message classes, as their names or their pretty_print titles ("=== Human Message ===")
    **dict.fromkeys(("humanmessage", "human message"), "user"),
    **dict.fromkeys(("aimessage", "ai message"), "assistant"),
    **dict.fromkeys(("systemmessage",), "system"),
    **dict.fromkeys(("toolmessage", "tool message", "functionmessage", "function message"), "tool"),
    **dict.fromkeys(("chatgpt", "claude", "gemini", "bard", "copilot", "grok", "deepseek", "qwen", "mistral",
                     "llama", "perplexity", "gpt", "gpt 4", "gpt 4o", "le chat", "kimi"), "assistant"),
}
_MARKER = re.compile(r"^(?P<pre>[#=*_<\[\s%-]*?)\s*(?P<label>[A-Za-z][A-Za-z0-9 ._-]{0,30}?)"
                     r"(?:\s*\((?P<aside>[^()]{1,30})\))?"
                     r"\s*(?P<post>[=*_:>\]\s-]*)$")  # a label, then its model or agent: "CodeCompanion (Anthropic)"
#: LangChain's message classes by name, alone on a line: a marker undecorated (``str(type(message).__name__)``).
_CLASS_MARKER = re.compile(r"^(?:Human|AI|System|Tool|Function)Message$")
#: A tool call written as text in a reply (an exporter's notation): the transcript cannot give it as a structured
#: call, and reading it as the reply's text would lose the call. Fenced lines count only as a fence's info string.
_TOOL_NOTATION = re.compile(r"^\s*(?:(?:tool[ _]use|tool[ _]calls?|calling tool|function[ _]call)\s*:"
                            r"|\*\*tool (?:use|call)|<(?:tool[_-]?(?:call|use)|function[_-]?call|invoke)\b)",
                            re.IGNORECASE)
_TOOL_FENCE = re.compile(r"^\s*(?:```|~~~)\s*(?:tool[_-]?(?:call|use)|function[_-]?call)\b", re.IGNORECASE)
#: A heading naming no model text but a figure about it (``## Token usage`` after each reply): metadata.
METADATA_LABEL = re.compile(r"token|usage|cost|score|metric|latency|duration|elapsed|correct|extracted|expected"
                            r"|reference|ground.?truth|label|grade|judg|eval", re.IGNORECASE)
HEADING = re.compile(r"^(#{1,6})\s+\S")  # a Markdown heading, its level
MIN_NAMED = 2  # turns of one named speaker (no role label) before the name is read as an agent of the model
FENCE_AFTER_TEXT = re.compile(r"\S(```|~~~)[\w-]+\s*$")  # a fence opened at a line's end ("Let me start.```bash")
INDENTED_CODE = re.compile(r"^(?: {4}|\t)\s*\S")  # Markdown's indented code block: text, never a marker
_FRONT = ("+++", "---")
MAX_MARKER = 48  # characters of a marker line: a longer line is text
MAX_FRONT = 60  # lines of front matter


def fenced_lines(lines: list[str]) -> list[bool]:
    """For each line, whether it is a code fence or inside one. A fence opened and never closed is text: taking
    the rest of the file as code would hide every marker after it (a reply's stray backticks)."""
    fences = [i for i, line in enumerate(lines) if FENCE.match(line) or FENCE_AFTER_TEXT.search(line)]
    if len(fences) % 2:
        fences.pop()  # the last opener has no closer
    inside = [False] * len(lines)
    for start, end in zip(fences[::2], fences[1::2]):
        inside[start:end + 1] = [True] * (end + 1 - start)
    return inside


@dataclass(frozen=True)
class Marker:
    """A marker line: 0-based line index, the decoration (``pre``, ``post``), its label and the role it opens."""

    index: int
    decoration: tuple[str, str]
    label: str
    role: str  # "" for a name no role label spells (see _named_agents)
    named: bool = False  # a named speaker read as an agent of the model
    rest: str | None = None  # an inline marker's message text on its own line ("User: hello")
    aside: str | None = None  # the label's parenthesis: its model, or which agent speaks ("agent id: Radiology")


def _marker(line: str, index: int) -> Marker | None:
    text = line.strip()
    if INDENTED_CODE.match(line):
        return None  # an indented code block's line (a prompt quoted in a report): text, never a marker
    if not text or len(text.strip("#=*_-")) > MAX_MARKER or text.startswith("</"):
        return None  # a rule of = or - around the label is decoration ("===== Human Message =====")
    if _CLASS_MARKER.match(text) or line.rstrip("\r\n") == " RESPONSE":
        # a message class's name (browser-use's saved conversations, the reply under " RESPONSE"): never prose
        label = "aimessage" if text == "RESPONSE" else text.lower()
        return Marker(index, ("class", ""), label, ROLE_LABELS[label])
    m = _MARKER.match(text)
    if m is None or not (m["pre"].strip() or m["post"].strip()):
        return None  # an undecorated word alone on a line is text
    label = " ".join(m["label"].replace("-", " ").replace("_", " ").lower().split())
    role = ROLE_LABELS.get(label) or SECTION_LABELS.get(label) or \
        ("" if m["label"][:1].isupper() and len(label.split()) <= 5 else None)
    aside = " ".join(m["aside"].split()) if m["aside"] else None
    return Marker(index, (_rule(m["pre"]), _rule(m["post"])), label, role, aside=aside) \
        if role is not None else None  # role "": a name, an agent of the model if it speaks often (find_markers)


def _rule(decoration: str) -> str:
    """A marker's decoration, spaces collapsed and a run of 3 or more of one character as 3: a title centred in a
    rule (``=== Human Message ====``) has runs of different lengths on each line; ``##`` and ``###`` differ."""
    return re.sub(r"(\S)\1{3,}", r"\1\1\1", " ".join(decoration.split()))


_RULE_LINE = re.compile(r"^\s*[-=*_~]{3,}\s*$")  # a rule: three or more of -, =, *, _, ~ alone on a line
#: A title between rules of one character (``=== PLAYER 1 TURN ===``): after a rule closing a section, the next
#: entry's heading, not the section's text.
_TITLE_LINE = re.compile(r"^\s*([-=*~#])\1{2,}\s+\S.{0,60}?\s+\1{3,}\s*$")
_SETTING = re.compile(r"^\s*([\w.-]+\s*[=:]|#|$)")  # a front-matter line: key = value, key: value, a comment


def _front_matter_end(lines: list[str]) -> int:
    """The index of the first line after front matter at the file's start (0 when there is none): a ``+++`` or
    ``---`` line, settings lines only, and the same line again within ``MAX_FRONT`` lines."""
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or lines[first].strip() not in _FRONT:
        return 0
    fence = lines[first].strip()
    for i in range(first + 1, min(len(lines), first + 1 + MAX_FRONT)):
        if lines[i].strip() == fence:
            return i + 1
        if not _SETTING.match(lines[i]) and not lines[i].startswith((" ", "\t", "-")):
            return 0  # prose: a horizontal rule, not front matter
    return 0


@dataclass(frozen=True)
class Markers:
    """What ``find_markers`` found: the marker lines of the one decoration that labels a user and an assistant
    message (``lines``), or, where two decorations do, those decorations (``rivals``, ``(pre, post)`` each)."""

    lines: list[Marker]
    rivals: list[tuple[str, str]]


def find_markers(lines: list[str], start: int = 0) -> Markers:
    """The role-marker lines of ``lines[start:]`` (see the module docstring)."""
    # a tag block's lines (a tool result quoting a file: ``<tool.ID>`` ... ``</tool.ID>``) are text, as a fence's
    fenced = [a or b for a, b in zip(fenced_lines(lines), tag_blocks(lines, ROLE_LABELS))]
    found = []
    for i in range(start, len(lines)):
        marker = None if fenced[i] else _marker(lines[i], i)
        if marker is not None:
            found.append(marker)
    names = [m for m in found if not m.role]
    found = _named_agents(found)
    roles: dict[tuple[str, str], set[str]] = {}
    for m in found:
        roles.setdefault(m.decoration, set()).add(m.role)
    fit = [d for d, r in roles.items() if {"user", "assistant"} <= r]
    if not fit:
        ruled = _ruled_markers(lines, start, fenced)
        return Markers(ruled, []) if ruled else _inline_markers(lines, start)
    if len(fit) != 1:
        return Markers([], fit)
    ours = [m for m in found if m.decoration == fit[0]]
    # one label per role: a heading of the same decoration with another label (a reply's "## Answer" where the
    # file writes "## Assistant") is the reply's text
    label = {role: Counter(m.label for m in ours if m.role == role).most_common(1)[0][0] for role in roles[fit[0]]}
    kept = [m for m in ours if m.label == label[m.role] or m.named or m.role in SECTION_KINDS]
    return Markers(sorted(_replies_sections(kept) + _metadata(names, kept, fit[0]), key=lambda m: m.index), [])


def _replies_sections(markers: list[Marker]) -> list[Marker]:
    """``markers`` less the thinking markers that are in no reply: a thinking section is the model's only right
    before or after another output section (``## Reasoning`` in a prompt's text is the prompt's: the line stays
    text). A tool call's section is the model's wherever it is (a reply of tool calls only follows a prompt)."""
    roles = [m.role for m in markers]
    return [m for k, m in enumerate(markers) if m.role != "reasoning"
            or {roles[k - 1] if k else "", roles[k + 1] if k + 1 < len(roles) else ""} & OUTPUT_KINDS]


def _metadata(names: list[Marker], kept: list[Marker], decoration: tuple[str, str]) -> list[Marker]:
    """Sections of the markers' decoration after every reply naming a figure about it (``## Token usage``, once in
    each reply's section, never elsewhere): metadata, read as ``skip``, not as the reply's text."""
    replies = [m for m in kept if m.role == "assistant"]
    bounds = dict(pairwise([m.index for m in kept] + [1 << 30]))
    out = []
    for label in {m.label for m in names if m.decoration == decoration and METADATA_LABEL.search(m.label)}:
        lines = [m for m in names if m.decoration == decoration and m.label == label]
        inside = [r for r in replies if sum(r.index < m.index < bounds[r.index] for m in lines) == 1]
        if len(inside) == len(replies) == len(lines):
            out += [replace(m, role="skip") for m in lines]
    return out


RULED = ("rule", "")  # the decoration of a bare label after a rule


def _ruled_markers(lines: list[str], start: int, fenced: list[bool]) -> list[Marker]:
    """Role labels alone on a line, undecorated, where the file opens with one and every other follows a rule line
    (``-----``; a blank line between them allowed): a chat dumped as ``role\\ncontent\\n-----`` (HeurAgenix's saved
    chats). A label and a user and an assistant message at least once each; else none: a word alone is text."""
    found = []
    for i in range(start, len(lines)):
        label = " ".join(lines[i].lower().split())
        if fenced[i] or ROLE_LABELS.get(label) not in ("user", "assistant", "system"):
            continue
        before = [line for line in lines[max(start, i - 2):i] if line.strip()]
        opens = not any(line.strip() for line in lines[start:i])
        if opens or (before and _RULE_LINE.match(before[-1])):
            found.append(Marker(i, RULED, label, ROLE_LABELS[label]))
    return found if {"user", "assistant"} <= {m.role for m in found} and found[0].index == next(
        i for i in range(start, len(lines)) if lines[i].strip()) else []


#: A line opened by its speaker ("User: ...", "[12:01:08] Assistant: ...", "**Human:** ..."): a chat log, one
#: utterance a line. Read only where such lines are most of the file (see _inline_markers).
_INLINE = re.compile(r"^\s*(?P<pre>(?:\[[^\]]{1,40}\]\s*)?(?:\*\*)?)(?P<label>[A-Za-z][A-Za-z ]{0,24}?)"
                     r"(?P<post>:\s*(?:\*\*)?|(?:\*\*)\s*:)\s+(?P<rest>\S.*)$")
MIN_INLINE_SHARE = 0.5  # of the non-empty lines outside code blocks


def _inline_markers(lines: list[str], start: int) -> Markers:
    """Speaker lines of one decoration labelling a user and an assistant, where at least ``MIN_INLINE_SHARE`` of
    the non-empty lines are such lines (the other lines continue the message above); else no markers."""
    found, fenced, text_lines = [], fenced_lines(lines), 0
    for i in range(start, len(lines)):
        if fenced[i] or not lines[i].strip():
            continue
        text_lines += 1
        m = None if INDENTED_CODE.match(lines[i]) else _INLINE.match(lines[i])
        role = ROLE_LABELS.get(" ".join(m["label"].lower().split())) if m else None
        if m and role:
            pre = "[]" if m["pre"].strip().startswith("[") else m["pre"].strip()
            found.append(Marker(i, (pre, m["post"].strip()), m["label"].lower(), role, rest=m["rest"]))
    decorations = Counter(m.decoration for m in found)
    if not decorations:
        return Markers([], [])
    deco, n = decorations.most_common(1)[0]
    ours = [m for m in found if m.decoration == deco]
    if {"user", "assistant"} <= {m.role for m in ours} and n >= MIN_INLINE_SHARE * text_lines:
        return Markers(ours, [])
    return Markers([], [])


def _named_agents(found: list[Marker]) -> list[Marker]:
    """The role markers, with the names of a decoration that has a user marker and no assistant marker read as
    the model's agents (role assistant, ``named``: "## Principal Investigator", "## CodeCompanion"): each name
    at least ``MIN_NAMED`` times, once at least right after a user marker (a heading repeated inside replies
    never is). Other names are headings: text."""
    out = [m for m in found if m.role]
    for deco in {m.decoration for m in found}:
        ours = [m for m in found if m.decoration == deco]
        if not any(m.role == "user" for m in ours) or any(m.role == "assistant" for m in ours):
            continue
        times = Counter(m.label for m in ours if not m.role)
        answering = {b.label for a, b in pairwise(ours) if a.role == "user"}  # a heading never does
        names = {label for label, n in times.items() if n >= MIN_NAMED and label in answering}
        out += [replace(m, role="assistant", named=True) for m in ours if m.label in names]
    return sorted(out, key=lambda m: m.index)


def sniff(head: str, filename: str) -> bool:
    """Text (not JSON, nor a file named as YAML, TOML or a table: their keys and cells are no markers) whose first
    64 KiB hold the markers of one decoration, or of two (``find_markers``)."""
    if is_document(filename) or is_table(filename):
        return False
    text = head.lstrip("\ufeff\r\n\t ")
    if not text or text[0] == "{" or text[0] == "[" and not _INLINE.match(text.split("\n", 1)[0]):
        return False  # JSON, not a log whose lines open with a [time] stamp
    if rendered_chat(text) is not None or TEMPLATE_HEAD.search(text[:2000]):  # a chat template's tokens
        return True
    lines = head.splitlines()
    found = find_markers(lines, _front_matter_end(lines))
    return bool(found.lines or found.rivals)  # rivals: claimed, to be refused by name (ambiguous_shape)


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """The file's one conversation (see the module docstring)."""
    text = stream.read()
    count(problems, "records")
    if rendered_chat(text.lstrip("\ufeff")) is not None or TEMPLATE_HEAD.search(text[:2000]):  # a template's tokens
        where = src(NAME, filename, line=1)
        turns = rendered_text(text.lstrip("\ufeff"), "$", False, problems, where)
        if turns:
            yield Conversation(id=f"{filename.rsplit('/', 1)[-1]}:transcript", source=where, messages=turns)
        return
    lines = text.splitlines()
    start = _front_matter_end(lines)
    found = find_markers(lines, start)
    where = src(NAME, filename, line=start + 1)
    if found.rivals:
        problems.error("ambiguous_shape", "two marker decorations each label user and assistant messages: "
                       + ", ".join(f"{pre} ROLE {post}".strip() for pre, post in found.rivals), where)
        return
    if not found.lines:
        problems.error("unknown_format", "no role-marker lines labelling both a user and an assistant message",
                       where)
        return
    entries = _entry_headings(lines, found.lines)
    if entries:
        problems.error("ambiguous_conversations", f"lines {', '.join(str(i + 1) for i in entries[:5])} are headings "
                       "above the markers' level, each right before a prompt: entries of a log, each a conversation "
                       "of its own or continuing an earlier one (which is not guessed); declare a text mapping "
                       "naming the line that opens each conversation (docs/traces.md, \"A text mapping\")",
                       src(NAME, filename, line=entries[0] + 1))
        return
    read = _messages(lines, start, found.lines, filename, problems)
    if read is None:
        return
    messages, speakers = read
    names = list(dict.fromkeys(s["agent"] for s in speakers if s and "agent" in s))
    if names:
        problems.warning("named_speakers_as_assistant", f"speakers named, not given a role, beside the user: "
                         f"{', '.join(names[:8])}: read as agents of the model (each their own calls)", where)
    turns = join_turns(messages, speakers, "role", "join")  # two agents' turns in a row are two calls
    warn_joined(turns, problems, where, None)
    stem = filename.rsplit("/", 1)[-1]
    conv = Conversation(id=f"{stem}:transcript", source=where, messages=turns.messages)
    shared = _rebuilt_prompts(turns.messages)
    if shared:
        problems.warning("rebuilt_prompts_read_apart", f"each prompt repeats {shared} characters or more of the one "
                         "before it, line for line (a prompt rebuilt whole from one template for every call, as an "
                         "agent loop or a game player sends it): each call is read as a conversation of its own", where)
        yield from whole_prompts(conv)
        return
    yield conv


MIN_TEMPLATE_LINE = 30  # characters of a line that counts as a template's (shorter ones repeat by chance)


def _rebuilt_prompts(messages: list[Message]) -> int:
    """The characters of its template lines (``MIN_TEMPLATE_LINE`` or longer) every prompt repeats from the one
    before it, where that is ``REBUILT_PREFIX`` or more and half its own such lines' characters or more, in a
    transcript of two or more prompts each answered and no tool message: prompts rebuilt whole for every call (a
    log printing what each call sent, ``PROMPT:`` / ``LLM RESPONSE:``, the rules and the state each turn), not a
    chat's next turns (which say only what is new; ``_chains.rebuilt_prompts`` for numbered records). 0 otherwise."""
    if any(m.role == "tool" or m.tool_calls for m in messages):
        return 0
    prompts = [m.text for m in messages if m.role == "user"]
    if len(prompts) < 2 or sum(m.role == "assistant" for m in messages) < len(prompts):
        return 0
    shares = []
    for before, prompt in pairwise(prompts):
        seen = {line.strip() for line in before.splitlines()}
        long = [line.strip() for line in prompt.splitlines() if len(line.strip()) >= MIN_TEMPLATE_LINE]
        repeated = sum(len(line) for line in long if line in seen)
        if repeated < REBUILT_PREFIX or 2 * repeated < sum(len(line) for line in long):
            return 0
        shares.append(repeated)
    return min(shares)


def _entry_headings(lines: list[str], markers: list[Marker]) -> list[int]:
    """The indices of Markdown headings above the markers' level (``# 2025-03-14T10:02:11 conversation: 01j...``
    over ``## Prompt``) among the 4 lines with text right before a prompt's (or system's) marker, where there are at
    least two: a log of entries, not one chat; [] otherwise (one title above the first prompt is the heading)."""
    level = len(markers[0].decoration[0]) if re.fullmatch("#+", markers[0].decoration[0]) else 0
    fenced, found = fenced_lines(lines), []
    for m in (m for m in markers if level > 1 and m.role in ("user", "system")):
        near = [i for i in range(m.index - 1, -1, -1) if lines[i].strip()][:4]
        heading = next((i for i in near if not fenced[i] and (h := HEADING.match(lines[i])) and len(h[1]) < level),
                       None)
        if heading is not None and heading not in found:
            found.append(heading)
    return found if len(found) >= 2 else []


def _speaker(marker: Marker) -> dict | None:
    """Who speaks at an assistant marker, for ``join_turns``: a named speaker's ``{"agent": name}``; the label with
    its parenthesis as ``{"author": ...}`` (``ASSISTANT (agent id: Radiology)`` after ``ASSISTANT (agent id:
    Orchestrator)``: two agents, two calls; the same parenthesis on every reply, a model's name, joins as before);
    None for a role label alone."""
    if marker.named:
        return {"agent": marker.label}
    return {"author": f"{marker.label} ({marker.aside})"} if marker.aside and marker.role == "assistant" else None


def _messages(lines: list[str], start: int, markers: list[Marker], filename: str,
              problems: ProblemSink) -> tuple[list[Message], list[dict | None]] | None:
    """The messages between markers and, parallel, each named speaker's ``{"agent": label}`` (None for a role
    marker's message); None, reported, when a section cannot be read (a tool message answering no recorded call, a
    tool call written in a notation not read)."""
    written = _tool_call_written(lines, markers)
    if written is not None:
        problems.error("content_not_mapped", f"line {written + 1} writes a tool call as text "
                       f"({lines[written].strip()[:60]!r}): a text transcript records no structured tool call, and "
                       "reading it as the reply's text would lose the call: declare the file's format",
                       src(NAME, filename, line=written + 1))
        return None
    messages, speakers = _lead(lines, start, markers, filename, problems)
    bounds = [m.index for m in markers] + [len(lines)]
    pending: list[ToolCallPart] = []  # the calls of the latest reply not answered yet
    titled: list[str] = []  # the first section's entry titles after its closing rule
    for marker, end, last_kind in zip(markers, bounds[1:], ["", *(m.role for m in markers)]):
        body = lines[marker.index + 1:end]
        # a rule closing the message (``---`` between sections, a ruled transcript's) is the separator, not its text
        body, titles = _closing_rule(body)
        titled = titled or titles
        text = "\n".join(([marker.rest] if marker.rest else []) + body).strip()
        if not text or marker.role == "skip":
            continue  # an empty prompt left for the next turn, a header with nothing under it, metadata
        if marker.role in SECTION_KINDS or marker.role == "tool":
            why = _section(marker.role, body, messages, speakers, pending)
            if why is not None:
                problems.error("content_not_mapped", f"the {marker.label} section at line {marker.index + 1} is not "
                               f"read: {why}: declare the file's format", src(NAME, filename, line=marker.index + 1))
                return None
            continue
        if _json_body(text):
            problems.error("content_not_mapped", f"the section at line {marker.index + 1} is a request or response "
                           "body printed as JSON (messages, or a reply with its tool calls): read as text, its messages "
                           "would be one text and its calls lost: declare the file's format",
                           src(NAME, filename, line=marker.index + 1))
            return None
        _add_text(marker, text, last_kind in SECTION_KINDS, messages, speakers, pending)
    if titled:
        problems.warning("preamble_not_read", f"lines after a rule closing a section are the next entry's title "
                         f"({titled[0].strip()[:60]!r}, ...): its heading, not the section's text: not read",
                         src(NAME, filename, line=start + 1))
    if not any(m.role == "assistant" for m in messages):
        problems.error("no_assistant_message", "the transcript's assistant markers hold no text",
                       src(NAME, filename, line=start + 1))
        return None
    return messages, speakers


def _closing_rule(body: list[str]) -> tuple[list[str], list[str]]:
    """A section's lines without the rule closing it (``---`` between sections: the separator, not its text) and,
    after that rule, the next entry's titles (``=== PLAYER 1 TURN ===``, nothing else after it), returned apart."""
    filled = [i for i, line in enumerate(body) if line.strip()]
    rules = [i for i in filled if _RULE_LINE.match(body[i])]
    if not rules:
        return body, []
    after = [body[i] for i in filled if i > rules[-1]]
    if all(_TITLE_LINE.match(line) for line in after):
        return body[:rules[-1]], after
    return body, []


def _lead(lines: list[str], start: int, markers: list[Marker], filename: str,
          problems: ProblemSink) -> tuple[list[Message], list[dict | None]]:
    """The messages before the first marker (the text there, where that marker is the assistant's) and the
    warnings about what is not read: a heading before the first marker, sections of figures after each reply."""
    lead = "\n".join(lines[start:markers[0].index]).strip()
    messages: list[Message] = []
    speakers: list[dict | None] = []
    if lead and markers[0].role == "assistant":
        messages.append(Message("user", [TextPart(lead)]))
        speakers.append(None)
        problems.warning("leading_text_read_as_user", f"the text before the first marker (line "
                         f"{markers[0].index + 1}, the assistant's) is read as the user's message",
                         src(NAME, filename, line=start + 1))
    elif lead:
        problems.warning("preamble_not_read", f"{len(lead.splitlines())} line(s) before the first marker (line "
                         f"{markers[0].index + 1}) are the file's heading, not a message: not read",
                         src(NAME, filename, line=start + 1))
    skipped = [m for m in markers if m.role == "skip"]
    if skipped:
        problems.warning("sections_not_read", f"{len(skipped)} section(s) {skipped[0].label!r} after each reply "
                         f"(from line {skipped[0].index + 1}) are figures about it, not its text: not read",
                         src(NAME, filename, line=skipped[0].index + 1))
    return messages, speakers


def _add_text(marker: Marker, text: str, after_section: bool, messages: list[Message], speakers: list[dict | None],
              pending: list[ToolCallPart]) -> None:
    """Add a marker's text to ``messages``: a new message, or the last one where one speaker's sections (or, in a
    chat log, lines) follow each other. Two answers in a row under their own headers are left to ``join_turns``
    (``adjacent_answers_joined``); a reply's text after its thinking or a tool call of its own is the same reply
    (``after_section``). A reply's ``<tool_call>`` blocks are its calls (``_text_calls``), added to ``pending``."""
    parts = (reply_parts(text) if marker.role == "assistant" else None) or [TextPart(text)]
    if messages and messages[-1].role == marker.role and (marker.role != "assistant" or marker.rest or after_section):
        if messages[-1].text and isinstance(parts[0], TextPart):
            parts[0] = TextPart(("\n" if marker.rest else "\n\n") + parts[0].text)
        messages[-1].parts.extend(parts)
    else:
        messages.append(Message(marker.role, parts))  # type: ignore[arg-type]
        speakers.append(_speaker(marker))
        pending.clear()
    pending.extend(p for p in parts if isinstance(p, ToolCallPart))


def _section(kind: str, body: list[str], messages: list[Message], speakers: list[dict | None],
             pending: list[ToolCallPart]) -> str | None:
    """Read a tool result, tool call, thinking or provider-tool section into ``messages`` (``_text_tool_sections``):
    a result is a tool message; the others are parts of the reply being written (a new assistant message where the
    last message is no reply). None, or why the section is not read."""
    if kind == "tool":
        result = read_result(body, pending)
        if isinstance(result, str):
            return result
        messages.append(Message("tool", [result]))
        speakers.append(None)
        return None
    if not messages or messages[-1].role != "assistant":
        messages.append(Message("assistant", []))
        speakers.append(None)
        pending.clear()
    reply = messages[-1]
    if kind == "call":
        call = read_call(body)
        if isinstance(call, str):
            return call
        reply.parts.append(call)
        pending.append(call)
    elif kind == "reasoning":
        text, signature = thinking(body)
        reply.parts.append(ReasoningPart(text, signature=signature))
    else:
        reply.parts.append(UnsupportedPart(kind))  # the provider's own tool, run during the reply
    return None


def _json_body(text: str) -> bool:
    """Whether a section is a JSON request or response body (a log printing them between its own headers): the
    JSON, a rule line after it aside, holds an object with a ``role`` or ``tool_calls``."""
    body = "\n".join(line for line in text.splitlines() if not _RULE_LINE.match(line)).strip()
    if body[:1] not in ("{", "["):
        return False
    try:
        value = json.loads(body)
    except ValueError:
        return False
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if isinstance(v.get("role"), str) or v.get("tool_calls"):
                return True
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False



def _tool_call_written(lines: list[str], markers: list[Marker]) -> int | None:
    """The index of the first line inside an assistant message that writes a tool call in a known notation, its
    ``<tool_call>`` blocks that parse (``reply_parts``) aside."""
    bounds = [m.index for m in markers] + [len(lines)]
    for marker, end in zip(markers, bounds[1:]):
        body = lines[marker.index + 1:end]
        if marker.role != "assistant" or tool_call_line(body) is None:
            continue
        parts = reply_parts("\n".join(body))  # the text around the calls read, where they are read
        text = body if parts is None else "\n\n".join(p.text for p in parts if isinstance(p, TextPart)).splitlines()
        at = tool_call_line(text)
        if at is not None:  # its line in the file (the piece it is, where a block read shared the line)
            return marker.index + 1 + next((j for j, line in enumerate(body) if text[at].strip() in line), 0)
    return None


def tool_call_line(lines: list[str]) -> int | None:
    """The index in ``lines`` (one reply's text) of the first line writing a tool call in a known notation
    (``<tool_call>``, ``Tool use:``, a ``tool_call`` fence), or None: a text reply records no structured call."""
    fenced = fenced_lines(lines)
    for i, line in enumerate(lines):
        if _TOOL_FENCE.match(line) or not fenced[i] and _TOOL_NOTATION.match(line):
            return i
    return None


FORMAT = TraceFormat(
    name=NAME,
    description="General path for text: a chat kept as text or markdown, messages opened by role-marker lines",
    sniff=sniff,
    parse=parse,
)
