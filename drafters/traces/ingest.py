"""Ingest trace files: detect, parse, validate, scrub, deduplicate, split.

``iter_conversations`` streams (one conversation in memory at a time, plus the set of content hashes
for deduplication, 32 bytes each); ``ingest`` collects the result. Nothing raises for bad input with
``on_error="skip"``: unreadable files, unknown formats and bad records all go to the report with their
location. With ``on_error="fail"`` the first error raises ``TraceError`` (file and line in ``where``).

The canonical stored form is JSONL of ``conversation_to_dict`` (``write_canonical``/``read_canonical``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from drafters.traces import io as tio
from drafters.traces.cut_replies import cut_completions
from drafters.traces.detect import candidate_formats, json_problem
from drafters.traces.formats import get_format
from drafters.traces.formats._rendered_chats import strip_turn_tokens
from drafters.traces.formats.base import TraceFormat
from drafters.traces.mapping import Mapping
from drafters.traces.mapping_file import load_mapping
from drafters.traces.mapping_text import TextMapping
from drafters.traces.model import (
    Conversation,
    ReasoningPart,
    Source,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnsupportedPart,
    compact_json,
    conversation_from_dict,
    conversation_to_dict,
)
from drafters.traces.report import TraceError, ValidationReport
from drafters.traces.scrub import Scrubber, ScrubConfig
from drafters.traces.trial import TrialSink

OnError = Literal["skip", "fail"]


def split_of(conv_id: str, heldout_fraction: float = 0.1) -> Literal["train", "heldout"]:
    """"heldout" for a stable ``heldout_fraction`` of conversation ids (sha256 of the id, first 8 bytes
    as a fraction of 2**64), else "train". Re-ingesting the same data gives the same split."""
    h = int.from_bytes(hashlib.sha256(conv_id.encode("utf-8")).digest()[:8], "big")
    return "heldout" if h / 2**64 < heldout_fraction else "train"


@dataclass
class IngestResult:
    """Scrubbed, deduplicated conversations and the report of the run."""

    conversations: list[Conversation]
    report: ValidationReport
    heldout_fraction: float = 0.1

    def split(self, conv_id: str) -> Literal["train", "heldout"]:
        """The split of a conversation id (see ``split_of``)."""
        return split_of(conv_id, self.heldout_fraction)

    def train(self) -> list[Conversation]:
        return [c for c in self.conversations if self.split(c.id) == "train"]

    def heldout(self) -> list[Conversation]:
        return [c for c in self.conversations if self.split(c.id) == "heldout"]


# A directory of traces often carries its notes (README.md, SOURCES.md, LICENSE); read as traces they would be
# refused and turn the batch's result to "errors". Given by name, such a file is read like any other.
_DOCUMENTATION_RE = re.compile(r"(readme|sources|licen[cs]e|notice|changelog|copying|authors)(\.(md|txt|rst|tsv))?",
                               re.IGNORECASE)


def expand_paths(paths: Iterable[str | os.PathLike[str]], skipped: list[Path] | None = None) -> list[Path]:
    """Files as given, directories expanded recursively (sorted, hidden files skipped). A directory of
    numbered event files (``io.event_files``: one JSON file per event of one conversation) is one entry,
    read as the concatenation of its events; its other files are listed on their own. A directory's
    documentation files (README, SOURCES, LICENSE, ... as .md / .txt / .rst / .tsv or bare) are not listed;
    they go to ``skipped`` when it is given."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if not p.is_dir():
            out.append(p)
            continue
        units: list[Path] = []
        for f in sorted(p.rglob("*")):
            if not f.is_file() or any(part.startswith(".") for part in f.relative_to(p).parts):
                continue
            if _DOCUMENTATION_RE.fullmatch(f.name):
                if skipped is not None:
                    skipped.append(f)
            elif tio.EVENT_FILE_RE.match(f.name):
                if f.parent not in units:
                    units.append(f.parent)
            else:
                units.append(f)
        out.extend(units)
    return out


def iter_conversations(
    paths: Iterable[str | os.PathLike[str]],
    *,
    format: str | None = None,
    on_error: OnError = "skip",
    scrub: bool | ScrubConfig | Scrubber = True,
    report: ValidationReport | None = None,
    dedup: bool = True,
    mapping: str | os.PathLike[str] | Mapping | TextMapping | None = None,
) -> Iterator[Conversation]:
    """Stream validated, scrubbed, deduplicated conversations from ``paths`` (files or directories).

    ``paths`` are one batch: content a file refers to and another file holds (a Claude Code session's
    sub-agent threads, ``subagent_not_read``) is looked for in every file of it, in any order, so those errors
    come once the last file is read (the referring file's conversations were already yielded; its report entry
    turns ``partial``).

    Args:
        format: a registered format name, or None to detect per file.
        on_error: "skip" reports bad input and goes on; "fail" raises ``TraceError`` at the first error.
        scrub: True (defaults), False, a ``ScrubConfig`` or a ``Scrubber`` (shared placeholders).
        report: the report to fill (a new one is made when None; pass one to read it afterwards).
        mapping: a declared mapping (``drafters/traces/mapping.py``), as its file or already checked
            (``parse_mapping``), to read every file with instead of detecting formats.
    Raises:
        TraceError only with on_error="fail", for a bad ``mapping`` file (code ``bad_mapping``) or a ``format``
        given with a ``mapping`` (``format_and_mapping``); KeyError
        for an unknown ``format`` name.
    """
    report = report if report is not None else ValidationReport(on_error)
    scrubber: Scrubber | None
    if isinstance(scrub, Scrubber):
        scrubber = scrub
    elif isinstance(scrub, ScrubConfig):
        scrubber = Scrubber(scrub)
    else:
        scrubber = Scrubber() if scrub else None
    if format and mapping is not None:
        raise TraceError("format_and_mapping", "give a format or a mapping, not both: the mapping says how to "
                         "read the files", where="format")
    forced: TraceFormat | None = get_format(format) if format else None
    if mapping is not None:
        forced = (mapping if isinstance(mapping, (Mapping, TextMapping)) else load_mapping(mapping)).format()
    seen: dict[bytes, str] = {}  # conversation content hash -> the file it was first read from
    skipped: list[Path] = []
    try:
        for path in expand_paths(paths, skipped):
            report.counts["files"] += 1
            marks, chars = _file_marks(report), dict(report.chars)
            dup_of: set[str] = set()
            tried: list[dict[str, str]] = []
            fmt_name = yield from _read_file(path, forced, report, scrubber, seen if dedup else None, dup_of, tried)
            after = _file_marks(report)
            report.add_file(str(path), fmt_name, *(a - b for a, b in zip(after, marks, strict=True)),
                            chars={k: v - chars[k] for k, v in report.chars.items()},
                            duplicate_of=sorted(dup_of - {str(path)}),  # repeats inside a file are not "of" it
                            candidates=tried)
        for doc in skipped:
            report.warning("documentation_skipped", f"{doc.name}: a directory's documentation file, not read as "
                           "traces (give the file itself to read it)", Source("", str(doc)))
        report.resolve()  # what a file referred to (a sub-agent's thread) and no file of the batch held
    finally:
        report.close()


def _read_file(path: Path, forced: TraceFormat | None, report: ValidationReport, scrubber: Scrubber | None,
               seen: dict[bytes, str] | None, dup_of: set[str], tried: list[dict[str, str]]
               ) -> Generator[Conversation, None, str | None]:
    """Detect, parse, check, deduplicate (when ``seen`` is given) and scrub one file's conversations.

    The candidate formats (``detect.candidate_formats``, or only ``forced``) are tried in order; the first
    that gives a usable conversation reads the file, and each one before it declined (``tried`` gets
    ``{format, declined}`` for every candidate tried, and a ``format_fallthrough`` warning names them).
    When every candidate declines, the first one's problems are reported. Returns the format's name (None
    when none was recognized); every problem goes to ``report``."""
    name = str(path)
    try:
        if forced is not None:
            candidates = [forced]
        else:
            head = tio.read_head(path)
            try:
                candidates = candidate_formats(head, path.name)
            except TraceError as exc:
                bad = json_problem(head, path.name, whole=len(head.encode()) < tio.HEAD_BYTES - 4)
                if exc.code == "unknown_format" and bad is not None:  # not JSON at all: say where
                    msg, line, col = bad
                    report.error("invalid_json", f"the file is not JSON (nor JSON lines): {msg} at line {line} "
                                 f"column {col}", Source("", name, line=line))
                    return None
                report.error(exc.code, exc.message, Source("", name))  # unknown_format, empty_file
                return None
        return (yield from _candidates(path, candidates, report, scrubber, seen, dup_of, tried))
    except TraceError:
        raise
    except (OSError, EOFError, UnicodeError) as exc:
        report.counts["files_unreadable"] += 1
        report.error("unreadable_file", f"cannot read file: {type(exc).__name__}: {exc}", Source("", name))
    except Exception as exc:  # noqa: BLE001 - a zstd/gzip error or a parser bug: report, keep going
        if type(exc).__module__.startswith("zstandard") or "zstd" in type(exc).__name__.lower():
            report.counts["files_unreadable"] += 1
            report.error("unreadable_file", f"cannot decompress file: {exc}", Source("", name))
        else:
            report.error("parser_error", f"parser failed: {type(exc).__name__}: {exc}", Source("", name))
    return None


def _candidates(path: Path, candidates: list[TraceFormat], report: ValidationReport, scrubber: Scrubber | None,
                seen: dict[bytes, str] | None, dup_of: set[str], tried: list[dict[str, str]]
                ) -> Generator[Conversation, None, str]:
    """Try each candidate in turn (see ``_read_file``); returns the name of the format that read the file, or
    of the most confident one when all declined (its problems are then reported)."""
    name = str(path)
    declined: list[tuple[TraceFormat, TrialSink, _FileTally]] = []
    for fmt in candidates:
        trial, tally = TrialSink(report), _FileTally(0, 0)
        yield from _try_format(fmt, path, trial, tally, declined, scrubber, seen, dup_of)
        tried.append({"format": fmt.name, "declined": "" if trial.committed else trial.reason()})
        if trial.committed:
            _check_file(tally, fmt, name, report)
            return fmt.name
        declined.append((fmt, trial, tally))
    # Nobody read it: the most confident reader says why, unless a later one got as far as a recorded stream
    # it refused to join (stream_incomplete / stream_not_joined: the file's real problem, docs/traces.md), or
    # the ones before it only found the file is not of their shape and it found content it refused.
    fmt, trial, tally = next((d for d in declined if d[1].codes.keys() & _STREAM_CODES), None) or \
        next((d for d in declined if d[1].codes.keys() - _NOT_ITS_SHAPE), declined[0])
    report.formats[fmt.name] += 1
    tally.errors_before, tally.warnings_before = _error_count(report), _error_count(report, "warning")
    trial.commit()
    if len(declined) > 1:
        report.warning("candidates_declined", "every candidate reader declined this file: " + _declined(declined),
                       Source(fmt.name, name))
    _check_file(tally, fmt, name, report)
    return fmt.name


_STREAM_CODES = frozenset({"stream_incomplete", "stream_not_joined"})
_NOT_ITS_SHAPE = frozenset({"not_an_object", "no_messages_found", "unknown_format"})  # a reader's "not mine"


def _declined(declined: list[tuple[TraceFormat, TrialSink, _FileTally]]) -> str:
    return "; ".join(f"{fmt.name} ({trial.reason()})" for fmt, trial, _ in declined)


def _try_format(fmt: TraceFormat, path: Path, trial: TrialSink, tally: _FileTally,
                declined: list[tuple[TraceFormat, TrialSink, _FileTally]], scrubber: Scrubber | None,
                seen: dict[bytes, str] | None, dup_of: set[str]) -> Iterator[Conversation]:
    """Read ``path`` as ``fmt`` through ``trial``: committed (and the earlier candidates named in a
    ``format_fallthrough`` warning) at the first conversation that passes the checks. A parser crash
    before that is this candidate declining (``parser_error``); after it, it propagates."""
    report, name = trial.report, str(path)
    held: Conversation | None = None  # the last conversation, kept back until the next shows it is not a prefix
    merged = 0
    try:
        with tio.open_text(path) as stream:
            for conv in fmt.parse(stream, name, trial):
                tally.parsed += 1
                if _check(conv, trial, tally) is None:  # type: ignore[arg-type]
                    trial.count("conversations_dropped")
                    continue
                if not trial.committed:
                    tally.errors_before, tally.warnings_before = _error_count(report), _error_count(report, "warning")
                    trial.commit()
                    report.formats[fmt.name] += 1
                    if declined:
                        report.warning("format_fallthrough", f"read as {fmt.name} after the more specific "
                                       f"reader(s) declined it: {_declined(declined)}", Source(fmt.name, name))
                if held is not None and _extends(conv, held):
                    merged += 1
                elif held is not None:
                    yield from _keep(held, report, scrubber, seen, dup_of, name)
                held = conv
        if held is not None:
            yield from _keep(held, report, scrubber, seen, dup_of, name)
        if merged:
            report.count("history_rows_merged", merged)
            report.warning("history_rows_merged", f"{merged} record(s) were the history of the record after them "
                           "(per-call rows repeating the conversation so far): each is read once, as part of the "
                           "longer record, so no call is counted twice", Source(fmt.name, name))
    except TraceError:
        raise
    except (OSError, EOFError, UnicodeError):
        raise
    except Exception as exc:  # a parser bug before any conversation: this candidate declines
        if trial.committed or type(exc).__module__.startswith("zstandard"):
            raise
        trial.error("parser_error", f"parser failed: {type(exc).__name__}: {exc}", Source(fmt.name, name))


def _extends(conv: Conversation, prefix: Conversation) -> bool:
    """True when ``conv``'s transcript starts with all of ``prefix``'s (same tools, no explicit calls): the
    rows of a per-call export, each repeating the history so far. Every call of ``prefix`` is then a call of
    ``conv`` with the same context, so reading both would count its answers twice."""
    if conv.explicit_calls is not None or prefix.explicit_calls is not None or conv.tools != prefix.tools:
        return False
    n = len(prefix.messages)  # role and parts: a logged answer carries a model name its copy in the next row lacks
    return len(conv.messages) > n and all(a.role == b.role and a.parts == b.parts
                                          for a, b in zip(conv.messages, prefix.messages))


def _keep(conv: Conversation, report: ValidationReport, scrubber: Scrubber | None, seen: dict[bytes, str] | None,
          dup_of: set[str], name: str) -> Iterator[Conversation]:
    """Deduplicate (when ``seen`` is given), scrub, count and yield one checked conversation."""
    if seen is not None:
        digest = bytes.fromhex(conv.content_hash())
        if digest in seen:
            report.counts["duplicates_dropped"] += 1
            dup_of.add(seen[digest])
            return
        seen[digest] = name
    if scrubber is not None:
        before = scrubber.counts.copy()
        conv = scrubber.scrub_conversation(conv)
        report.add_scrub_counts(scrubber.counts - before)
    report.observe(conv)
    yield conv


def _file_marks(report: ValidationReport) -> tuple[int, int, int, int]:
    """(conversations, calls, errors, warnings) so far: differences give one file's share."""
    return (report.counts["conversations"], report.counts["calls"], _error_count(report),
            _error_count(report, "warning"))


@dataclass
class _FileTally:
    """What one file gave: conversations parsed, parts seen and parts that are placeholders."""

    errors_before: int
    warnings_before: int
    parsed: int = 0
    parts: int = 0
    unsupported: int = 0


def _error_count(report: ValidationReport, severity: str = "error") -> int:
    return sum(n for k, n in report.problem_counts.items() if k.startswith(severity + ":"))


def _check_file(tally: _FileTally, fmt: TraceFormat, name: str, report: ValidationReport) -> None:
    """File-level loss checks: ``ok`` must mean the file's content was understood.

    A recognized file that yields no conversation without saying why, or whose parts are mostly
    placeholders, is an error: either way what the drafter would train on is not what the file holds.
    """
    where = Source(fmt.name, name)
    if tally.parsed == 0 and _error_count(report) == tally.errors_before:
        warned = _error_count(report, "warning") - tally.warnings_before
        why = f"the {warned} warning(s) about it say why" if warned else "a newer or different variant of the format?"
        report.error("no_conversations", f"the file was recognized as {fmt.name} but gave no conversation "
                     f"to train on ({why})", where)
    if tally.parts and 2 * tally.unsupported > tally.parts:
        report.error("mostly_unsupported", f"{tally.unsupported} of {tally.parts} content parts are placeholders "
                     "for content that is not trained on: most of this file would be lost", where)


def _content_messages(conv: Conversation) -> list:
    """Every message of the conversation once: the transcript, plus explicit calls' contexts and completions."""
    if conv.explicit_calls is None:
        return conv.messages
    seen: dict[int, object] = {id(m): m for m in conv.messages}
    for call in conv.explicit_calls:
        for m in [*call.context, call.completion]:
            seen.setdefault(id(m), m)
    return list(seen.values())


def _has_content(part: object) -> bool:
    if isinstance(part, (TextPart, ReasoningPart)):
        return bool(part.text)
    return isinstance(part, (ToolCallPart, ToolResultPart))


def _check(conv: Conversation, report: ValidationReport, tally: _FileTally | None = None) -> Conversation | None:
    """Validate one conversation; report problems; None when it must be dropped (nothing to train on, or
    content the parser did not understand)."""
    src = conv.source
    messages = conv.messages
    if not messages and not conv.explicit_calls:
        report.error("empty_conversation", "conversation has no messages", src)
        return None
    all_messages = _content_messages(conv)
    stripped = strip_turn_tokens(all_messages)
    if stripped:
        report.warning("template_tokens_stripped", f"{stripped} answer(s) held the chat template's own header or "
                       "end-of-turn token (<|im_end|>, <|eot_id|>, ...: a server not skipping special tokens): read "
                       "without them", src)
    lost: Counter[str] = Counter()
    first_lost: tuple[int, str] | None = None  # (message index, role): where to look in the file
    for i, m in enumerate(all_messages):
        for p in m.parts:
            if tally is not None:
                tally.parts += p.count if isinstance(p, UnsupportedPart) else 1
            if isinstance(p, UnsupportedPart):
                if tally is not None:
                    tally.unsupported += p.count
                if p.lost:
                    lost[p.kind] += p.count
                    first_lost = first_lost or (i, m.role)
    if lost and first_lost is not None:
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(lost.items()))
        report.error("unknown_content", f"{sum(lost.values())} content part(s) of a type the {src.format} reader "
                     f"does not understand ({kinds}; the first in message {first_lost[0] + 1} of the conversation, the "
                     f"{first_lost[1]}'s): their text, reasoning or tool calls would be lost", src)
        return None
    if not any(_has_content(p) for m in all_messages for p in m.parts):
        report.error("content_lost", "no message has any text, reasoning, tool call or tool result left", src)
        return None
    if not any(m.role == "assistant" for m in messages) and not conv.explicit_calls:
        report.error("no_assistant_message", "conversation has no assistant message (no LLM call)", src)
        return None
    if next(iter(conv.calls()), None) is None:
        report.error("no_llm_call", "no assistant message has a context before it (the log starts with the "
                     "model's answer): no LLM call to train on", src)
        return None
    if not _check_tool_pairing(conv, report):
        return None  # a call whose result the reading did not reach: later contexts lack it (or hold it raw)
    cut = cut_completions(conv)
    if cut:
        report.warning("reply_cut", f"{cut} answer(s) cut by the output length limit (a stop reason of length / "
                       "max_tokens, or a tool call's arguments stopping mid-JSON): their calls are read, their context "
                       "exact; regeneration has the target write them whole (rendered as recorded, the template would "
                       "close them with tokens the model never wrote)", src)
    # each call once, not again in every later context that copies it
    n_calls = len({p.id or (p.name, compact_json(p.arguments)) for m in all_messages for p in m.parts
                   if isinstance(p, ToolCallPart)})
    has_defs = bool(conv.tools) or any(c.tools for c in conv.explicit_calls or [])
    if n_calls and not has_defs:
        report.warning("no_tool_definitions", f"{n_calls} tool call(s) but no tool definitions: the rendered "
                       "context will lack the tool list the model saw when serving", src)
    unsupported = sum(p.count for m in messages for p in m.parts if isinstance(p, UnsupportedPart))
    if unsupported:
        report.warning("unsupported_content",
                       f"{unsupported} unsupported part(s) (images, audio, files, server-side tools) "
                       "replaced by counted placeholders", src)
    return conv


def _check_tool_pairing(conv: Conversation, report: ValidationReport) -> bool:
    """Warn about tool calls without results, results without calls and arguments that are not JSON. False (the
    conversation is refused) when a file read by shape or by a mapping has a call whose result was not found: the
    reading did not reach it, so a later call's context lacks it, or holds it unlinked (a raw record as text)."""
    src = conv.source
    messages = conv.messages
    call_ids: dict[str, int] = {}
    answered: set[str] = set()
    for i, m in enumerate(messages):
        for p in m.parts:
            if isinstance(p, ToolCallPart):
                if p.arguments is None:
                    report.warning("arguments_not_json",
                                   f"tool call {p.name!r} arguments are not a JSON object (kept raw)", src,
                                   field=f"messages[{i}]")
                if p.id is not None:
                    call_ids[p.id] = i
            elif isinstance(p, ToolResultPart) and p.call_id is not None:
                if p.call_id not in call_ids:
                    report.warning("tool_result_without_call",
                                   "tool result answers no earlier tool call", src, field=f"messages[{i}]")
                answered.add(p.call_id)
    last_assistant = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    # Read by shape or by a declared mapping, a result that is nowhere to be found is where the reading did not
    # look (an agent step's observation, a response stored beside its input): content lost, not a log cut short.
    by_shape = src.format == "generic" or src.format.startswith("mapping:")
    linked = True
    unlinked, called = None, False
    # A result with no id and no call before it: read by shape, its call is where the reading did not look; in a
    # module's format, when no call was read anywhere in the conversation (ToolACE's calls written as text; a client
    # that sent an answer back without its call, llm.rb's, still had the call read as the answer before)
    linked_somewhere = not by_shape and any(isinstance(p, ToolCallPart) for m in _content_messages(conv)
                                            for p in m.parts)
    for i, m in enumerate([] if linked_somewhere else messages):
        if unlinked is None and not called and any(isinstance(p, ToolResultPart) and p.call_id is None for p in m.parts):
            unlinked = i
        called = called or any(isinstance(p, ToolCallPart) for p in m.parts)
    if unlinked is not None:  # docs/traces.md: a tool result that is not linked to its call is never kept
        report.error("tool_result_without_call", "a tool result answers no tool call the reading found (the call "
                     "written as text, or under a key the mapping does not read): its call would be lost; "
                     "conversation not kept", src, field=f"messages[{unlinked}]")
        linked = False
    for cid, i in call_ids.items():
        # A call in the final assistant message may be unanswered because the log ends there.
        if cid not in answered and i != last_assistant:
            if messages[i].failed:  # the turn records its own failure (an error stop reason): never run
                report.warning("unpaired_tool_call", "tool call has no result: its assistant message records a "
                               "failed request (stop reason / error message), so it was never run", src,
                               field=f"messages[{i}]")
            elif by_shape:
                report.error("tool_result_not_found", "tool call has no result: the mapping (declared or inferred) "
                             "does not reach where this file keeps tool results; conversation not kept", src,
                             field=f"messages[{i}]")
                linked = False
            else:
                report.warning("unpaired_tool_call", "tool call has no result", src, field=f"messages[{i}]")
    return linked


def ingest(
    paths: Iterable[str | os.PathLike[str]],
    *,
    format: str | None = None,
    on_error: OnError = "skip",
    scrub: bool | ScrubConfig | Scrubber = True,
    heldout_fraction: float = 0.1,
    problems_path: str | os.PathLike[str] | None = None,
    target_model: str | None = None,
    mapping: str | os.PathLike[str] | Mapping | TextMapping | None = None,
    dedup: bool = True,
) -> IngestResult:
    """Ingest every file into memory: ``IngestResult(conversations, report, split)``.

    ``target_model``, when given, adds the "traces were produced by a different model than the target"
    warning (code ``model_mismatch``). See ``iter_conversations`` for the other arguments and errors.
    """
    report = ValidationReport(on_error, problems_path=problems_path)
    convs = list(iter_conversations(paths, format=format, on_error=on_error, scrub=scrub, report=report,
                                    mapping=mapping, dedup=dedup))
    if target_model:
        report.check_target(target_model)
    return IngestResult(convs, report, heldout_fraction)


def ingest_as_uploaded(paths: Sequence[Path], **options: Any) -> IngestResult:
    """``ingest`` of ``paths`` read under the names a dataset of them reads them under (``tio.upload_names``),
    through links in a temporary directory: the conversation ids, and so the held-out split, are then a dataset's
    of these files. ``options``: ``ingest``'s."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tracedraft-upload-") as tmp:
        links = [Path(tmp) / name for name in tio.upload_names(paths)]
        for link, path in zip(links, paths):
            link.symlink_to(Path(path).resolve())
        return ingest(links, **options)


def write_canonical(conversations: Iterable[Conversation], path: str | os.PathLike[str]) -> int:
    """Write conversations as JSONL of ``conversation_to_dict`` (the canonical stored form); returns the
    number written. Written to a temporary name and renamed, so a reader never sees half a file."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for conv in conversations:
            f.write(compact_json(conversation_to_dict(conv)) + "\n")
            n += 1
    os.replace(tmp, path)
    return n


def read_canonical(path: str | os.PathLike[str]) -> Iterator[Conversation]:
    """Stream conversations back from ``write_canonical``'s file (gzip/zstd-compressed copies too).

    Raises TraceError("invalid_json") with the line when the file is corrupt."""
    with tio.open_text(path) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield conversation_from_dict(json.loads(line))
            except (ValueError, KeyError, TypeError) as exc:
                raise TraceError("invalid_json", f"corrupt canonical record: {exc}", f"{path}:{lineno}") from exc


def split_conversations(
    conversations: list[Conversation], heldout_fraction: float = 0.1, min_heldout: int = 1
) -> tuple[list[Conversation], list[Conversation]]:
    """(train, heldout) by the stable hash split of ``split_of``, with at least ``min_heldout`` held out.

    Small datasets can hash every conversation into train; then the conversations whose id hashes are
    closest to the held-out range are moved over (still a pure function of the ids, so re-ingesting the
    same data gives the same split). At least one conversation always stays in train.
    """
    train = [c for c in conversations if split_of(c.id, heldout_fraction) == "train"]
    held = [c for c in conversations if split_of(c.id, heldout_fraction) == "heldout"]
    want = min(min_heldout, len(conversations) - 1)
    if len(held) < want:
        key = lambda c: hashlib.sha256(c.id.encode("utf-8")).digest()
        moved = sorted(train, key=key)[: want - len(held)]
        held += moved
        moved_ids = {c.id for c in moved}
        train = [c for c in train if c.id not in moved_ids]
    return train, held
