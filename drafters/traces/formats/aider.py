"""Aider histories: ``.aider.llm.history`` (raw prompts and responses) and ``.aider.chat.history.md``.

LLM log: plain text, ``TO LLM <ts>`` then the request's messages and ``LLM RESPONSE <ts>`` then the
reply; messages are separated by ``-------`` lines and every line carries its role prefix
(``SYSTEM ``, ``USER ``, ``ASSISTANT ``; a bare ``USER`` is an empty line). Aider re-sends the repo
map and file contents with every request and rewrites them between requests, so each request/
response pair is one explicit ``LLMCall`` (its own context) and a file is one conversation with
``explicit_calls``. Streamed line by line.

Chat log (markdown): each session starts with ``# aider chat started at <ts>``; user turns are
``#### <text>`` lines; Aider's own output (warnings, "Applied edit to", command output, costs) is
quoted with ``> `` and was never sent to the model; the remaining unquoted text is the assistant's.
A quote is only ``>`` or ``> ...``: a prefix strip of ``>`` would also eat the ``>>>>>>> REPLACE``
marker that closes every SEARCH/REPLACE edit block. Slash commands (``/add``, ``/copy-context``,
...) are Aider commands, not messages, and are dropped (``/ask``, ``/code``, ``/architect`` send
their text, which is kept). One conversation per session with at least one assistant turn; the
model comes from the session's ``> Main model: <name>`` line.

There are no structured tool calls in either log: edits are SEARCH/REPLACE blocks in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from drafters.traces.formats._reading import count, src
from drafters.traces.formats._records import guard_file
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import Conversation, LLMCall, Message, TextPart

NAME = "aider"
_ROLE_LINE = re.compile(r"^(SYSTEM|USER|ASSISTANT)(?: (.*)|)$")
_ROLES = {"SYSTEM": "system", "USER": "user", "ASSISTANT": "assistant"}
_SEND_COMMANDS = ("/ask", "/code", "/architect")
#: Aider's lines saying it sent the model an edit error to answer again (its reflection).
_REFLECTION = re.compile(r"did not conform to the edit format|SEARCH/REPLACE blocks? failed to match|"
                         r"SearchReplaceNoExactMatch|Only \d+ reflections allowed")


def sniff(head: str, filename: str) -> bool:
    """``TO LLM <ts>`` at the start (LLM log) or ``# aider chat started at`` (markdown log)."""
    start = head.lstrip("\ufeff\r\n ")
    return start.startswith("TO LLM ") or start.startswith("# aider chat started at") or (
        filename.endswith(".aider.chat.history.md") or filename.endswith(".aider.llm.history"))


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """Dispatch on the first non-blank line."""
    first = ""
    lines = iter(stream)
    buffered: list[str] = []
    for line in lines:
        buffered.append(line)
        if line.strip():
            first = line.strip()
            break

    def all_lines():
        yield from buffered
        yield from lines

    if first.startswith("TO LLM"):
        yield from _llm_log(all_lines(), filename, problems)
    elif first.startswith("# aider chat started at") or filename.endswith(".md"):
        yield from _chat_md(all_lines(), filename, problems)
    else:
        problems.error("bad_record", "neither an Aider LLM log (TO LLM) nor a chat log (# aider chat started at)",
                       src(NAME, filename, line=1))


# ----------------------------------------------------------------------------------------- LLM log


def _llm_log(lines, filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    conv_id = Path(filename).name
    calls: list[LLMCall] = []
    context: list[Message] = []
    reply: list[str] | None = None
    cur_role: str | None = None
    cur_lines: list[str] = []
    block_line = 1

    def close_message() -> None:
        nonlocal cur_role, cur_lines
        if cur_role is not None:
            context.append(Message(cur_role, [TextPart("\n".join(cur_lines))]))
        cur_role, cur_lines = None, []

    def close_call() -> None:
        nonlocal context, reply
        if reply is not None:
            if not context:
                problems.error("empty_context", "LLM RESPONSE without a request", src(NAME, filename, line=block_line))
            else:
                completion = Message("assistant", [TextPart("\n".join(reply))])
                calls.append(LLMCall(conv_id, len(calls), [], context, completion))
        elif context:
            problems.warning("no_assistant_message", "request without a logged response",
                             src(NAME, filename, line=block_line))
        context, reply = [], None

    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if line.startswith("TO LLM"):
            close_message()
            close_call()
            count(problems, "records")  # a record of the LLM log is one logged request
            block_line = lineno
            continue
        if line.startswith("LLM RESPONSE"):
            close_message()
            reply = []
            continue
        if line == "-------":
            if reply is None:
                close_message()
            continue
        m = _ROLE_LINE.match(line)
        if reply is not None:
            if m and m.group(1) == "ASSISTANT":
                reply.append(m.group(2) or "")
            elif line.strip():
                problems.warning("unexpected_line", "non-ASSISTANT line in a response", src(NAME, filename, line=lineno))
                reply.append(line)
            continue
        if m is None:
            if line.strip():
                problems.warning("unexpected_line", "line without a role prefix", src(NAME, filename, line=lineno))
                cur_lines.append(line)
            continue
        role = _ROLES[m.group(1)]
        if role != cur_role:
            close_message()
            cur_role = role
        cur_lines.append(m.group(2) or "")
    close_message()
    close_call()
    if not calls:
        return
    last = calls[-1]
    yield Conversation(id=conv_id, source=src(NAME, filename, line=1), messages=last.context + [last.completion],
                       explicit_calls=calls)


# ---------------------------------------------------------------------------------------- chat log


def _chat_md(lines, filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    base = Path(filename).name
    session_line = 1
    model: str | None = None
    messages: list[Message] = []
    user_buf: list[str] = []
    asst_buf: list[str] = []
    sessions = 0

    reflected: int | None = None  # the session's message count at its first edit error sent back to the model
    reflected_line = 0

    def flush_user() -> None:
        nonlocal user_buf
        if user_buf:
            text = "\n".join(user_buf).strip("\n")
            if text.startswith("/"):
                cmd, _, rest = text.partition(" ")
                text = rest.strip() if cmd in _SEND_COMMANDS else ""
            repeated = bool(messages) and messages[-1].role == "user" and messages[-1].text == text
            if text and not repeated:  # ``/ask X`` is logged, then ``X`` as the message sent: once
                messages.append(Message("user", [TextPart(text)]))
        user_buf = []

    def flush_assistant() -> None:
        nonlocal asst_buf
        text = "\n".join(asst_buf).strip("\n")
        if text.strip():
            messages.append(Message("assistant", [TextPart(text)], model=model))
        asst_buf = []

    def close_session() -> Iterator[Conversation]:
        nonlocal messages, sessions, reflected
        flush_user()
        flush_assistant()
        if reflected is not None and any(m.role == "assistant" for m in messages[reflected:]):
            # the retry's context holds a message the log does not: not read
            problems.error("reflection_not_recorded", "Aider sent the model its edit error (a reflection: the "
                           "reply did not conform to the edit format or its SEARCH block did not match) and the "
                           "model answered again; the chat log does not hold the message Aider sent, so the calls "
                           "from here on in this session are not read (the .aider.llm.history log holds them)",
                           src(NAME, filename, line=reflected_line))
            messages = messages[:reflected]
        reflected = None
        if any(m.role == "assistant" for m in messages):
            yield Conversation(id=f"{base}#{sessions}", source=src(NAME, filename, line=session_line),
                               messages=messages)
        elif sessions:
            problems.warning("no_assistant_message", "chat session without any assistant reply",
                             src(NAME, filename, line=session_line))
        messages = []

    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if line.startswith("# aider chat started at"):
            yield from close_session()
            sessions += 1
            count(problems, "records")  # a record of the chat history is one session
            session_line, model = lineno, None
            continue
        if line.startswith("####"):
            flush_assistant()
            user_buf.append(_unbreak(line[4:].lstrip(" ") if line[4:5] == " " else line[4:]))
            continue
        if line == ">" or line.startswith("> "):
            flush_user()
            if reflected is None and _REFLECTION.search(line):
                flush_assistant()
                reflected, reflected_line = len(messages), lineno
            mm = re.match(r"> Main model: (\S+)", line)
            if mm:
                model = mm.group(1)
            continue
        flush_user()
        asst_buf.append(line)
    yield from close_session()


def _unbreak(text: str) -> str:
    """Drop the two trailing spaces Aider adds to markdown lines as hard line breaks."""
    return text[:-2] if text.endswith("  ") else text


FORMAT = TraceFormat(
    name=NAME,
    description="Aider .aider.llm.history (explicit calls) and .aider.chat.history.md",
    sniff=sniff,
    parse=parse,
)
