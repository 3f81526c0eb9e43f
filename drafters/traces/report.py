"""The validation report of a trace ingestion: every problem with its location, plus counts.

``ValidationReport`` implements the ``ProblemSink`` of ``formats/base.py``: parsers report bad records
to it instead of raising. With ``on_error="fail"`` the first error raises ``TraceError`` (with file and
line); with ``on_error="skip"`` every error is recorded and the run goes on.

Memory is bounded whatever the input size: the first ``max_problems`` problems are kept in detail, the
rest only as counts per code; with ``problems_path`` every problem is also streamed as one JSON line to
a file as it happens. Original secret values never reach
the report: parsers put locations and codes in problems, not content, and scrub counts are per type.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any, Literal

from drafters.errors import TracedraftError
from drafters.traces.model import (
    Conversation,
    ReasoningPart,
    Source,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnsupportedPart,
    inline_reasoning_spans,
)

Severity = Literal["error", "warning"]

# Stable problem codes (tests, API bodies and the CLI key on them). Parsers may use others; these are
# the ones the core emits.
CODES: dict[str, str] = {
    "invalid_json": "a line or document is not valid JSON (or YAML)",
    "too_deep": "a line or document nests deeper than the JSON reader allows (hundreds of levels); the rest of the "
    "file is still read",
    "not_an_object": "a record is valid JSON but not an object of the expected shape",
    "unknown_format": "no registered format recognizes the file",
    "unreadable_file": "the file cannot be opened or decompressed",
    "unpaired_tool_call": "a tool call has no result in the conversation",
    "failed_turn_skipped": "an assistant message with no content that records a failed request (an error / aborted "
    "stop reason, an error message) is no model turn: not read",
    "tool_result_without_call": "a tool result answers no earlier tool call",
    "empty_conversation": "a record holds no messages",
    "no_assistant_message": "a conversation has no assistant message, so no LLM call to train on",
    "empty_file": "the file is empty",
    "unknown_record": "a record of a type the format's reader does not know",
    "no_llm_call": "a conversation's assistant messages have no context before them (a log cut at its start)",
    "arguments_not_json": "tool-call arguments are not a JSON object (kept raw)",
    "unsupported_content": "images, audio or files were replaced by counted placeholders",
    "not_a_transcript": "the file is a log of another kind (e.g. a hook-event log), not a conversation",
    "missing_field": "a record lacks a field the format requires",
    "model_mismatch": "traces were produced by a different model than the target",
    "duplicate_conversation": "an exact duplicate conversation was dropped",
    # Silent-loss rule: ``ok`` means the content was understood.
    "unknown_content": "a conversation holds parts of a type the reader does not understand (dropped: their "
    "text, reasoning or tool calls would be lost)",
    "content_lost": "no message of a conversation has any text, reasoning, tool call or tool result left",
    "no_conversations": "a recognized file gave no conversation and no other error said why",
    "mapping_field_missing": "a key the declared mapping requires (content of a message without tool calls, a tool "
    "call's name, a tool result's content) is not in the record (dropped: its content would be lost)",
    "mapping_field_never_matched": "an optional key of the declared mapping (tool_calls, tool_call.arguments) "
    "matches nowhere in a file whose messages or calls hold other, unmapped data, a declared record path finds "
    "nothing, or an assistant answer stored beside the messages is not declared (response)",
    "mostly_unsupported": "most content parts of a file are placeholders (images, files, unknown parts)",
    "history_rows_merged": "records that repeat the history of the record after them (per-call rows) were read once, "
    "as part of the longer record",
    "tool_call_text_not_parsed": "a <tool_call> block in assistant text is not a JSON object or Python dict with a "
    "name (kept as text, so the file's call count would be wrong)",
    "content_not_captured": "an LLM call span holds no input messages (content capture off, or an any-agent version "
    "before input capture) and its context cannot be rebuilt: the call is lost",
    "context_rebuilt": "calls recorded without input had their context rebuilt from the call before, its output and "
    "the tool spans in between",
    "history_rebuilt": "stored messages no longer in an agent's context (Letta evicts old messages) were read as "
    "the earlier calls they were",
    "history_not_read": "stored messages no longer in an agent's context whose calls' contexts cannot be rebuilt "
    "(an earlier eviction); counted, not read",
    "tool_result_not_found": "a file read by shape or by a declared mapping has a tool call whose result was never "
    "found: the mapping does not reach where the results are (content lost; the conversation is not kept)",
    "copied_context": "messages flagged as copied from another context (an agent's handoff) are context, not this "
    "file's calls; the general path does not tell them apart, so the file is refused",
    "handoff_context_not_recorded": "an agent step hands the context off to another trajectory (ATIF "
    "subagent_trajectory_ref: a context summarization, or a call's result left to a sub-agent's file): the calls "
    "after it saw a context the file does not record; they are refused, the calls before it are read",
    "run_starts_merged": "records holding only a call's input that a later record repeats with its output (a run "
    "posted, then updated) were read once, as the later record",
    "marker_skipped": "a chat message of a role no chat API has that holds nothing but its role (a session "
    "marker such as {\"role\": \"session_meta\"}): no content, not read",
    "system_prompt_not_read": "a record holds a system prompt beside its message list (system, system_prompt, "
    "instructions, ...) that the conversation does not read: a second, different one, or one that differs from "
    "the list's own first system message (which one the model saw is not known)",
    "records_not_messages": "records: messages: records holding no message at the mapping's path (metadata, usage "
    "events) were counted and not read",
    "messages_not_read": "a declared mapping marks these role values skip (records of another kind: events, slots): "
    "counted and not read",
    "tools_not_understood": "a declared mapping's tools path holds entries with a schema but no tool definition the "
    "readers know: the tool list would be lost",
    "update_events_folded": "an object-update event stream (OpenCode's server events) was read as each message's "
    "last version; the count of events folded",
    "resent_versions_read_last": "assistant records re-sent the answer before them as it grew (a streamed reply "
    "saved at each update): each read as that answer's last version, not joined to it; the count",
    "chat_template_read": "a text rendered by a chat template (ChatML, Llama 3, Gemma, Phi-3, Zephyr, Mistral "
    "[INST]) was read as its turns, the template's tokens left out",
    "chat_template_not_read": "a text holds a chat template's special tokens but is not wholly turns of a template "
    "the readers know: not read (read as one message, its tokens would be rendered twice)",
    "sessions_interleaved": "a log of one message a record interleaves sessions (a group id resumes after "
    "another's): each session's messages were read in order as its conversation; the count",
    "reply_cut": "answers were cut by the output length limit (a stop reason, or a tool call's arguments stopping "
    "mid-JSON): their calls are read; regeneration writes them whole",
    "requests_joined_by_id": "requests and their responses logged as records of their own were paired by the id they "
    "share, each pair read as one request/response record",
    "request_without_response": "requests no response answers (by the pairing id): no reply to train on",
    "response_without_request": "a response whose request is not in the file: its context is lost, not read",
    "responses_not_in_file": "every record is a call's request with an id and none its response: put both halves in "
    "one file",
    "requests_not_in_file": "every record is a call's response with an id and none its request: put both halves in "
    "one file",
    "previous_responses_prepended": "Responses API records continuing an earlier one were read with their context "
    "rebuilt as the server builds it",
    "previous_response_not_in_file": "a response continues one that is not earlier in the file: its context is lost",
    "snapshots_read_once": "a thread's state snapshots each begin the next (or the one before): each thread read once, "
    "as its longest snapshot",
    "snapshots_not_linear": "a thread's state snapshots do not each begin the next (a fork, an edit): not read",
    "repeated_records_skipped": "requests or responses logged apart were repeated exactly: read once",
    "template_tokens_stripped": "answers held the chat template's own header or end-of-turn token (a server not "
    "skipping special tokens): read without them; the count",
    "documentation_skipped": "a directory's documentation file (README, SOURCES, LICENSE, ...) was not read as "
    "traces; given by name it is read",
    "format_fallthrough": "the most confident reader(s) declined the file and a later candidate read it (the "
    "warning names each one tried and why it declined)",
    "candidates_declined": "every candidate reader declined the file; the first one's problems are reported, the "
    "warning names the others and why",
    "no_tool_definitions": "a conversation calls tools but carries no tool definitions (its rendered context "
    "differs from what the model saw when serving)",
    "subagent_not_read": "a session's main thread ran a sub-agent (a Claude Code Task) whose own thread is in no file "
    "of the batch (neither its agent-<id>.jsonl nor sidechain lines), or a Claude Agent SDK log holds messages of a "
    "sub-agent (parent_tool_use_id): its LLM calls are lost; the main thread's calls are read (the file is partial)",
    "prompt_not_recorded": "a Claude Agent SDK log whose stream does not echo the prompt given to query() and whose "
    "document holds none beside it: the first call's context is unknown, the file is not read",
    "tool_calls_not_recorded": "request/response records whose outputs hold no tool call where the next request "
    "sends the same answer with tool calls (a log writing the reply's text only): the calls would be lost, the file "
    "is not read",
    "stream_incomplete": "a recorded streamed response ends without its end (no finish reason, done, message_stop "
    "or response.completed; or an error event): the reply was cut, so the call is refused, never read truncated",
    "recording_not_parsed": "an HTTP recording's container (a Go httprr trace) does not frame as HTTP messages of "
    "the lengths it records: the rest of the file is not read",
    "stream_not_joined": "a recorded streamed response's chunks cannot be joined into one reply without guessing "
    "(chunks of two kinds, a tool call renamed between chunks, tool input fragments that do not parse)",
}


class TraceError(TracedraftError):
    """A trace-ingestion error with a stable ``code`` and a location (``where`` = ``file:line`` or
    ``file#record``, plus ``/field`` when known). Raised by ``detect_format`` for unknown formats and by
    ``ValidationReport.error`` when the run uses ``on_error="fail"``."""

    def __init__(self, code: str, message: str, where: str | None = None, problem: Problem | None = None):
        super().__init__(code, message, where)
        self.problem = problem


@dataclass
class Problem:
    """One reported problem. ``line`` is 1-based; ``record`` is a path inside a structured file."""

    code: str
    message: str
    file: str | None = None
    line: int | None = None
    record: str | None = None
    field: str | None = None
    severity: Severity = "error"
    format: str | None = None

    def where(self) -> str | None:
        if self.file is None:
            return self.field
        loc = self.file
        if self.line is not None:
            loc += f":{self.line}"
        elif self.record:
            loc += f"#{self.record}"
        if self.field:
            loc += f" ({self.field})"
        return loc


@dataclass
class _Reference:
    """Content a file's reader saw referred to and did not hold (a sub-agent's thread): an error unless another
    file of the batch provides one of ``keys`` (``ValidationReport.refer``)."""

    keys: frozenset[str]
    code: str
    message: str
    source: Source
    field: str | None = None


_COUNT_KEYS = (
    "files",
    "files_unreadable",
    "records",  # what the reader read: JSONL lines, top-level array items, one per JSON document, log blocks
    "conversations",
    "calls",
    "tool_calls",
    "parallel_calls",  # assistant messages holding more than one tool call
    "duplicates_dropped",
    "conversations_dropped",
    "unsupported_parts",
    "meta_messages",
)
_CHAR_KEYS = ("tool_args", "text", "reasoning", "tool_results")


def _part_chars(part, role: str) -> dict[str, int]:
    """Characters of one part by kind (``_CHAR_KEYS``); an assistant's inline ``<think>...</think>`` is
    reasoning, as rendering labels it."""
    if isinstance(part, TextPart):
        inline = sum(e - s for s, e in inline_reasoning_spans(part.text)) if role == "assistant" else 0
        return {"reasoning": inline, "text": len(part.text) - inline}
    if isinstance(part, ToolCallPart):
        return {"tool_args": len(part.raw_arguments) + len(part.name)}
    if isinstance(part, ReasoningPart):
        return {"reasoning": len(part.text)}
    if isinstance(part, ToolResultPart):
        return {"tool_results": len(part.content)}
    return {}


def _part_key(part, role: str) -> tuple | None:
    """What a part says, without ids or metadata: the same content seen in two views is one content."""
    if isinstance(part, (TextPart, ReasoningPart)):
        return role, type(part).__name__, part.text
    if isinstance(part, ToolCallPart):
        return role, "tool_call", part.name, part.raw_arguments
    if isinstance(part, ToolResultPart):
        return role, "tool_result", part.content
    return None


def _content_chars(conv: Conversation) -> Counter[str]:
    """Characters per kind of everything the conversation holds: its transcript and, for sources that log
    each LLM call with its own context (Langfuse, OpenTelemetry, cassettes), every call's context and
    completion, which may hold content the final transcript lacks (another agent's calls in one trace).
    Each distinct content counts as often as the most any single view (the transcript, or one call's
    context plus completion) holds it: a history repeated in every call counts once, two identical
    parallel calls twice, whether a log writes them in one message or split over two."""
    views = [list(conv.messages)]
    views += [[*c.context, c.completion] for c in conv.explicit_calls or []]
    most: dict[tuple, int] = {}
    chars: dict[tuple, dict[str, int]] = {}
    for view in views:
        seen: Counter[tuple] = Counter()
        for m in view:
            for p in m.parts:
                key = _part_key(p, m.role)
                if key is not None:
                    seen[key] += 1
                    chars.setdefault(key, _part_chars(p, m.role))
        for key, n in seen.items():
            most[key] = max(most.get(key, 0), n)
    out: Counter[str] = Counter({k: 0 for k in _CHAR_KEYS})
    for key, n in most.items():
        for kind, c in chars[key].items():
            out[kind] += n * c
    return out


class ValidationReport:
    """Problems, counts, models seen and scrub counts of one ingestion run (a ``ProblemSink``).

    Args:
        on_error: "skip" records errors and goes on; "fail" raises ``TraceError`` at the first error.
        max_problems: how many problems are kept in detail (``errors``/``warnings``); every problem is
            always counted per code in ``problem_counts``.
        problems_path: when given, every problem is appended to this file as one JSON line as it is
            reported (call ``close()`` at the end, or use the report as a context manager).
    """

    def __init__(
        self,
        on_error: Literal["skip", "fail"] = "skip",
        *,
        max_problems: int = 1000,
        problems_path: str | Path | None = None,
    ):
        if on_error not in ("skip", "fail"):
            raise ValueError(f"on_error must be 'skip' or 'fail', not {on_error!r}")
        self.on_error = on_error
        self.max_problems = max_problems
        self.errors: list[Problem] = []
        self.warnings: list[Problem] = []
        self.problem_counts: Counter[str] = Counter()  # "error:code" / "warning:code" -> count
        self.counts: dict[str, int] = {k: 0 for k in _COUNT_KEYS}
        self.chars: dict[str, int] = {k: 0 for k in _CHAR_KEYS}
        self.formats: Counter[str] = Counter()  # format name -> files
        self.models: Counter[str] = Counter()  # model name -> assistant messages (or explicit calls)
        self.unsupported: Counter[str] = Counter()  # part kind -> count
        self.scrub_counts: Counter[str] = Counter()  # placeholder type -> replacements
        self.files: dict[str, dict[str, Any]] = {}  # file -> {format, conversations, calls, errors, warnings}
        # Content a file refers to and another file of the batch may hold (``refer``/``provide``/``resolve``):
        # kept per referring file until the batch ends; what is provided is a few keys per thread.
        self._references: list[_Reference] = []
        self._provided: set[str] = set()
        self._referring: dict[str, dict[str, Any] | None] = {}  # referring file -> its ``files`` entry
        self._stream: IO[str] | None = None
        if problems_path is not None:
            self._stream = open(problems_path, "w", encoding="utf-8")

    # ------------------------------------------------------------------------------------ ProblemSink

    def error(self, code: str, message: str, source: Source, field: str | None = None) -> None:
        """Record an error; raises ``TraceError`` when ``on_error="fail"``."""
        problem = self._add(code, message, source, field, "error")
        if self.on_error == "fail":
            self.close()
            raise TraceError(code, message, problem.where(), problem)

    def warning(self, code: str, message: str, source: Source, field: str | None = None) -> None:
        """Record a warning (never raises)."""
        self._add(code, message, source, field, "warning")

    def count(self, key: str, n: int = 1) -> None:
        """Add ``n`` to a counter such as "records" (parsers call it through ``formats._reading.count``)."""
        self.counts[key] = self.counts.get(key, 0) + n

    def refer(self, keys: Iterable[str], code: str, message: str, source: Source, field: str | None = None) -> None:
        """A reader saw content it does not hold referred to (a sub-agent's thread, named by ``keys``): at the end
        of the batch (``resolve``) it is the error ``code`` at ``source`` unless a file read in the same batch
        ``provide``-d one of the keys."""
        self._references.append(_Reference(frozenset(keys), code, message, source, field))
        if source.file is not None:
            self._referring.setdefault(source.file, None)

    def provide(self, keys: Iterable[str]) -> None:
        """A reader read content that other files may refer to (a sub-agent's thread, by id, first line, prompt)."""
        self._provided.update(keys)

    def resolve(self) -> None:
        """End of a batch: every reference no file of the batch provided becomes its error, counted in its file's
        entry (an ``ok`` file becomes ``partial``). Raises ``TraceError`` at the first with ``on_error="fail"``."""
        refs, self._references = self._references, []
        for ref in refs:
            if ref.keys & self._provided:
                continue
            self.error(ref.code, ref.message, ref.source, ref.field)
            entry = self._referring.get(ref.source.file) if ref.source.file is not None else None
            if entry is not None:
                before = entry["status"]
                entry["errors"] += 1
                entry["status"] = _file_status(entry["conversations"], entry["errors"], entry["duplicate_of"])
                self.counts["files_" + before] -= 1
                if not self.counts["files_" + before]:
                    del self.counts["files_" + before]  # like a status no file had
                self.counts["files_" + entry["status"]] = self.counts.get("files_" + entry["status"], 0) + 1
        self._referring.clear()

    def _add(self, code: str, message: str, source: Source | None, field: str | None, severity: Severity):
        problem = Problem(
            code=code,
            message=message,
            file=source.file if source else None,
            line=source.line if source else None,
            record=source.record if source else None,
            field=field,
            severity=severity,
            format=source.format if source else None,
        )
        self.problem_counts[f"{severity}:{code}"] += 1
        bucket = self.errors if severity == "error" else self.warnings
        if len(bucket) < self.max_problems:
            bucket.append(problem)
        if self._stream is not None:
            self._stream.write(json.dumps(asdict(problem), ensure_ascii=False) + "\n")
            self._stream.flush()
        return problem

    # ----------------------------------------------------------------------------------------- counts

    def observe(self, conv: Conversation) -> None:
        """Count a kept conversation: calls, tool calls, parallel calls, characters per segment, models."""
        self.counts["conversations"] += 1
        calls = list(conv.calls())
        self.counts["calls"] += len(calls)
        completions = [c.completion for c in calls] if conv.explicit_calls is not None else None
        for message in conv.messages:
            if message.meta:
                self.counts["meta_messages"] += 1
            self._count_unsupported(message.parts)
        for kind, n in _content_chars(conv).items():
            self.chars[kind] += n
        for message in completions if completions is not None else conv.messages:
            if message.role != "assistant":
                continue
            n_calls = sum(1 for p in message.parts if isinstance(p, ToolCallPart))
            self.counts["tool_calls"] += n_calls
            if n_calls > 1:
                self.counts["parallel_calls"] += 1
            if message.model:
                self.models[message.model] += 1

    def _count_unsupported(self, parts) -> None:
        for p in parts:
            if isinstance(p, UnsupportedPart):
                self.counts["unsupported_parts"] += p.count
                self.unsupported[p.kind] += p.count

    def add_file(self, name: str, format: str | None, conversations: int, calls: int, errors: int,
                 warnings: int, chars: dict[str, int] | None = None, duplicate_of: list[str] | None = None,
                 candidates: list[dict[str, str]] | None = None) -> None:
        """Record one file's outcome; ``status`` is "ok" (understood, no error), "partial" (conversations
        kept, some content refused), "duplicate" (understood, no error, but every conversation was already
        read from the files in ``duplicate_of``) or "refused" (nothing kept; the errors say why). ``chars``
        are the file's characters per segment kind (a file whose text or tool calls vanished shows zeros);
        ``candidates`` the readers tried, in order, each ``{format, declined}`` (the reason it declined, or
        "" for the one that read the file)."""
        status = _file_status(conversations, errors, duplicate_of)
        self.counts["files_" + status] = self.counts.get("files_" + status, 0) + 1
        entry = {"format": format, "conversations": conversations, "calls": calls, "errors": errors,
                 "warnings": warnings, "status": status, "chars": dict(chars or {}),
                 "duplicate_of": list(duplicate_of or []), "candidates": list(candidates or [])}
        if name in self._referring:  # its status may change when the batch ends (``resolve``)
            self._referring[name] = entry
        if len(self.files) >= self.max_problems:  # bounded like the problem lists; the counts stay complete
            return
        self.files[name] = entry

    def add_scrub_counts(self, counts: dict[str, int]) -> None:
        self.scrub_counts.update({k: v for k, v in counts.items() if v})

    def check_target(self, target_name: str | None) -> bool:
        """Warn when the traces were written by models other than ``target_name``.

        Closed-model traces are contexts, not targets (docs/traces.md): the drafter must learn the target's
        own continuations, so the user should regenerate the completions with the target. Returns True
        when a mismatch was found. Names match case-insensitively, ignoring an org prefix
        ("HuggingFaceTB/SmolLM2-135M-Instruct" matches "smollm2-135m-instruct").
        """
        if not target_name or not self.models:
            return False
        want = _norm_model(target_name)
        others = sorted(m for m in self.models if _norm_model(m) != want)
        if not others:
            return False
        self._add(
            "model_mismatch",
            f"traces were produced by a different model than the target ({target_name}): "
            f"{', '.join(others[:10])}{' ...' if len(others) > 10 else ''}; the drafter must learn the "
            "target's own answers: a job regenerates them with the target (data.regenerate 'auto')",
            None,
            None,
            "warning",
        )
        return True

    # ----------------------------------------------------------------------------------------- output

    @property
    def ok(self) -> bool:
        return not any(k.startswith("error:") for k in self.problem_counts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary: problems (first ``max_problems`` of each severity), counts per code, counts,
        characters per segment, formats, models seen, unsupported kinds, scrub counts per type."""
        return {
            "ok": self.ok,
            "on_error": self.on_error,
            "errors": [asdict(p) for p in self.errors],
            "warnings": [asdict(p) for p in self.warnings],
            "problem_counts": dict(sorted(self.problem_counts.items())),
            "problems_truncated": sum(self.problem_counts.values()) > len(self.errors) + len(self.warnings),
            "counts": dict(self.counts),
            "chars": dict(self.chars),
            "formats": dict(self.formats),
            "models": dict(self.models),
            "unsupported": dict(self.unsupported),
            "scrub_counts": dict(sorted(self.scrub_counts.items())),
            "files": dict(self.files),
        }

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def __enter__(self) -> ValidationReport:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _file_status(conversations: int, errors: int, duplicate_of: list[str] | None) -> str:
    """A file's ``status`` (see ``ValidationReport.add_file``)."""
    if conversations == 0:
        return "duplicate" if duplicate_of and not errors else "refused"
    return "partial" if errors else "ok"


def _norm_model(name: str) -> str:
    name = name.strip().lower()
    if "/" in name:
        name = name.rsplit("/", 1)[1]
    for suffix in (".gguf",):
        name = name.removesuffix(suffix)
    return name
