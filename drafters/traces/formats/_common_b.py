"""Small helpers shared by the agent-log format modules (sharegpt ... agentbench).

Everything here is standard library only (``drafters.traces`` stays torch-free). The helpers report
problems through the ``ProblemSink`` of base.py with stable codes:

- ``invalid_json``: a document or line that is not JSON (location: file and line);
- ``bad_record``: valid JSON of the wrong shape for the format (location: record path such as
  ``$[3].traj[5]``);
"""

from __future__ import annotations

import json
import re
from typing import IO, Any, Callable, Iterator

from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import (
    Message, ReasoningPart, Source, TextPart, ToolCallPart, ToolDef, ToolResultPart, UnsupportedPart,
)

_DECODER = json.JSONDecoder()


def src(fmt: str, filename: str, line: int | None = None, record: str | None = None) -> Source:
    """A ``Source`` for ``fmt`` in ``filename`` at a 1-based ``line`` or a JSON ``record`` path."""
    return Source(format=fmt, file=filename, line=line, record=record)


def load_document(stream: IO[str], filename: str, fmt: str, problems: ProblemSink) -> Any | None:
    """Parse a whole-file JSON document; on failure report ``invalid_json`` at the error's line, return None.

    Used for formats whose files are one JSON value (a list or object); line-oriented formats use
    ``iter_jsonl`` instead so memory stays bounded.
    """
    text = stream.read()
    try:
        return json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        problems.error("invalid_json", f"file is not valid JSON: {exc}", src(fmt, filename, line=line))
        return None


def iter_jsonl(stream: IO[str], filename: str, fmt: str, problems: ProblemSink) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line; bad lines are reported as ``invalid_json``."""
    for lineno, line in enumerate(stream, 1):
        stripped = line.strip()
        if not stripped:
            continue
        try:
            value = json.loads(stripped)
        except ValueError as exc:
            problems.error("invalid_json", f"line is not valid JSON: {exc}", src(fmt, filename, line=lineno))
            continue
        yield lineno, value


def iter_values(
    stream: IO[str], filename: str, fmt: str, problems: ProblemSink, chunk_size: int = 1 << 20
) -> Iterator[tuple[int, int, Any]]:
    """Yield ``(start_line, ordinal, value)`` for the records of a file, streaming.

    Accepts a top-level JSON array (yields its elements; ``ordinal`` is the array index, so the
    record path is ``$[ordinal]``), JSON Lines, or JSON values printed one after another, indented
    (the OpenTelemetry console exporter does this, and neither ``json.load`` nor a line reader
    accepts it). Memory is bounded by the largest record plus one chunk. Text that does not decode
    is reported as ``invalid_json`` at its line and skipped up to the next line that starts a value.
    """
    buf = ""
    line = 1  # line number of buf[0]
    eof = False
    in_array: bool | None = None
    ordinal = 0
    indent = ""  # leading whitespace of the current record's first line

    def fill() -> bool:
        nonlocal buf, eof
        if eof:
            return False
        more = stream.read(chunk_size)
        if not more:
            eof = True
            return False
        buf += more
        return True

    while True:
        if len(buf) < chunk_size:
            fill()
        i = 0
        while i < len(buf) and buf[i] in " \t\r\n,\ufeff":
            i += 1
        line += buf.count("\n", 0, i)
        if "\n" in buf[:i]:
            indent = buf[buf.rfind("\n", 0, i) + 1 : i].replace(",", "")
        buf = buf[i:]
        if not buf:
            if eof:
                return
            continue
        if in_array is None:
            in_array = buf[0] == "["
            if in_array:
                buf = buf[1:]
                continue
        if in_array and buf[0] == "]":
            return
        try:
            value, end = _DECODER.raw_decode(buf)
        except ValueError as exc:
            # Only an error at the end of the buffer can mean "the value continues in the next
            # chunk"; anything earlier is a real error (so one bad record never loads the whole file).
            at_end = exc.pos >= len(buf) - 1 or exc.msg.startswith("Unterminated")
            if at_end and fill():
                continue
            problems.error("invalid_json", f"not valid JSON: {exc.msg}", src(fmt, filename, line=line,
                           record=f"$[{ordinal}]" if in_array else None))
            ordinal += 1
            # resynchronise at the next value indented like this record (a nested object of the
            # broken record is indented deeper and is skipped)
            m = re.search(r"\n" + re.escape(indent) + r"(?=[\[{])", buf[1:])
            if m is None:
                return
            cut = m.end() + 1
            line += buf.count("\n", 0, cut)
            buf = buf[cut:]
            continue
        yield line, ordinal, value
        ordinal += 1
        line += buf.count("\n", 0, end)
        buf = buf[end:]


def content_parts(content: Any) -> list:
    """Text parts for a content value that is a string, None, or a list of typed parts / strings.

    Typed parts follow the common shapes: ``{"type":"text","text"|"content"|"value": ...}`` or a bare
    ``{"text": ...}``; image/audio/file parts become counted ``UnsupportedPart`` placeholders.
    """
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    if isinstance(content, dict):
        content = [content]
    parts: list = []
    if isinstance(content, list):
        for item in content:
            if isinstance(item, str):
                if item:
                    parts.append(TextPart(item))
                continue
            if not isinstance(item, dict):
                parts.append(TextPart(json.dumps(item, ensure_ascii=False)))
                continue
            kind = str(item.get("type") or "")
            if any(k in kind for k in ("image", "audio", "video", "file")) or any(
                k in item for k in ("image_url", "inline_data", "inlineData", "image")
            ):
                parts.append(UnsupportedPart(kind=_unsupported_kind(kind, item)))
                continue
            for key in ("text", "content", "value"):
                if isinstance(item.get(key), str):
                    if item[key]:
                        parts.append(TextPart(item[key]))
                    break
            else:
                parts.append(TextPart(json.dumps(item, ensure_ascii=False)))
        return parts
    return [TextPart(json.dumps(content, ensure_ascii=False))]


def _unsupported_kind(kind: str, item: dict) -> str:
    for k in ("image", "audio", "video", "file"):
        if k in kind or any(k in key.lower() for key in item):
            return k
    return kind or "unknown"


def text_of(content: Any) -> str:
    """Plain text of a content value (string or parts list); non-text parts are skipped."""
    return "".join(p.text for p in content_parts(content) if isinstance(p, TextPart))


def as_text(value: Any) -> str:
    """A tool result or other payload as text: strings verbatim, anything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


SEMCONV_MEDIA_KINDS = ("blob", "uri", "file", "image", "audio", "video")


def semconv_parts(parts: Any, *, call_id: Callable[[Any], Any] = lambda raw: raw, result_names: bool = False,
                  media_kinds: tuple[str, ...] = SEMCONV_MEDIA_KINDS) -> list:
    """OpenTelemetry GenAI semantic-convention message parts (``gen_ai.input.messages[].parts``: ``{type:
    text|reasoning|thinking|tool_call{id, name, arguments}|tool_call_response{id, response}|blob|uri|
    file...}``) -> canonical parts. ``call_id`` normalises a raw call id, ``result_names`` keeps the
    tool name on results, ``media_kinds`` are the part types counted as ``UnsupportedPart`` (their
    ``modality`` when given); any other type is kept as text. Non-list input gives []."""
    out: list = []
    for p in parts if isinstance(parts, list) else []:
        if not isinstance(p, dict):
            continue
        kind = p.get("type")
        if kind == "text":
            out.append(TextPart(as_text(p.get("content", p.get("text")))))
        elif kind in ("reasoning", "thinking"):
            out.append(ReasoningPart(as_text(p.get("content")), signature=p.get("signature")))
        elif kind == "tool_call":
            out.append(ToolCallPart.from_raw(call_id(p.get("id")), str(p.get("name")), p.get("arguments")))
        elif kind == "tool_call_response":
            out.append(ToolResultPart(call_id=call_id(p.get("id")),
                                      content=as_text(p.get("response", p.get("result"))),
                                      name=p.get("name") if result_names else None))
        elif kind in media_kinds:
            out.append(UnsupportedPart(kind=str(p.get("modality") or kind)))
        else:
            out.append(TextPart(as_text(p.get("content", p))))
    return out


def tool_defs(raw: Any) -> list[ToolDef]:
    """ToolDefs from a list in OpenAI (``{"type":"function","function":{...}}``) or flat
    (``{"name","description","parameters"|"input_schema"}``) form; a JSON string is decoded first.
    Entries without a name are skipped."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else []
        except ValueError:
            return []
    if isinstance(raw, dict):
        raw = [raw]
    out: list[ToolDef] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        fn = item.get("function") if isinstance(item.get("function"), dict) else item
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            continue
        params = fn.get("parameters") or fn.get("input_schema") or fn.get("inputSchema")
        if not isinstance(params, dict):
            params = {"type": "object", "properties": {}}
        out.append(ToolDef(name=name, description=str(fn.get("description") or ""), parameters=params))
    return out


def merge_adjacent_tool_messages(messages: list[Message]) -> list[Message]:
    """Merge consecutive ``tool`` messages into one (parallel results answer one assistant message)."""
    out: list[Message] = []
    for m in messages:
        if out and m.role == "tool" and out[-1].role == "tool":
            out[-1].parts.extend(m.parts)
        else:
            out.append(m)
    return out


def head_has(head: str, *patterns: str) -> bool:
    """True when every regex in ``patterns`` occurs in ``head``."""
    return all(re.search(p, head) for p in patterns)


def link_models(calls: list) -> None:
    """Give context copies of earlier completions their model back (in place).

    Sources that log every request separately (Langfuse, OpenTelemetry, API recordings) repeat the
    earlier assistant messages in later contexts without the model name; without it the copy would
    not compare equal to the completion and ``Conversation.append_only`` would be False for a plain
    agent loop.
    """
    seen: list = []
    for call in calls:
        for m in call.context:
            if m.role == "assistant" and m.model is None:
                for done in seen:
                    if done.parts == m.parts:
                        m.model = done.model
                        break
        seen.append(call.completion)


def as_list(value: Any) -> list:
    """``value`` when it is a list, else [] (a field of the wrong type is treated as absent)."""
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str | None:
    """``value`` when it is a string, else None (ids and roles of the wrong type)."""
    return value if isinstance(value, str) else None


# What a malformed-but-valid-JSON record can raise inside a converter: reported, never propagated.
# TraceError (on_error="fail") is none of these, so it still stops the run.
RECORD_ERRORS = (TypeError, AttributeError, KeyError, ValueError, IndexError)


def guard_file(fmt: str):
    """Decorator for a ``parse`` generator: a malformed record that slips past the converter's checks
    is reported as ``bad_record`` for the file instead of crashing the ingestion."""

    def wrap(parse_fn):
        def parse(stream, filename, problems):
            try:
                yield from parse_fn(stream, filename, problems)
            except RECORD_ERRORS as exc:
                problems.error("bad_record", f"malformed record ({type(exc).__name__}: {exc})",
                               src(fmt, filename))

        parse.__doc__ = parse_fn.__doc__
        parse.__name__ = parse_fn.__name__
        return parse

    return wrap
