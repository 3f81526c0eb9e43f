"""The general path: any JSON / JSONL document read by the shape of its records.

Tried after every format module (it is last in the registry), for files no module recognizes (and for files
a more specific reader declined: ``ingest._read_file`` falls through). It infers the file's shape from its
first records (``_shapes.infer``): request/response records (one LLM call each, chained into conversations),
agent steps with observations, one message per line (in an envelope or not), the file as the message list,
Responses API item lists, or one message list per record. Every shape but the last is read with the
declared mapping inferred for it (``drafters/traces/mapping.py``), so ``tracedraft datasets infer-mapping``
writes exactly what was read.

Message lists in records are read here directly, in the common spellings: lists of objects that all carry a
role (``role`` / ``from`` / ``speaker`` / ``author`` / ``sender`` / ``type`` with values such as user, human,
assistant, ai, gpt, model, bot, tool, function, ...; see ``_spellings.py``) and at least one assistant turn;
content (``content`` / ``value`` / ``text`` / ``message`` / ``parts`` / ``data.content``), tool calls
(``tool_calls``, ``function_call``, content blocks), tool results, and a record-level system prompt
(``system`` / ``preamble`` / ...) beside the list.

What it does not guess:

- records that fit two readings (``chosen``/``rejected`` lists, two item lists) are refused with
  ``ambiguous_shape`` naming the candidates: write a declared mapping;
- a record without any message list is ``no_messages_found``;
- a message whose fields were not read (no known content key, nothing understood) makes its conversation
  an error ``content_not_mapped`` naming the keys, never a silently empty turn.

Every file read this way gets one ``generic_mapping`` warning stating where the messages were found and the
inferred mapping, and which keys were not read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from itertools import chain, islice
from typing import IO, Any

from drafters.traces.cut_replies import stopped_by_length
from drafters.traces.formats import (
    _exchanges,
    _joined_by_id,
    _previous_responses,
    _reading,
    _shapes,
    _snapshots,
    _step_events,
    _streams,
    _update_events,
)
from drafters.traces.formats._batches import history_in_text
from drafters.traces.formats._call_io import call_free, nested_thread, settings_only
from drafters.traces.formats._content import tool_defs
from drafters.traces.formats._embedded_json import embedded_records
from drafters.traces.formats._general_message import content_key_of, message_of, richer_parts
from drafters.traces.formats._generic_sniff import NAME, sniff, spellings_as_messages
from drafters.traces.formats._model_messages import expanded_records
from drafters.traces.formats._named_speakers import agent_names, as_named, named_speakers, speaker_key
from drafters.traces.formats._pair_turns import pair_documents
from drafters.traces.formats._record_shapes import MESSAGE_CHAT_KEYS, chats_in_list, covering
from drafters.traces.formats._rendered_chats import rendered_messages
from drafters.traces.formats._spellings import (
    CALL_KEYS,
    CONTENT_KEYS,
    MEDIA_LIST_KEYS,
    RESULT_ID_KEYS,
    RESULT_NOT_READ,
    RESULT_TEXT_KEYS,
    ROLE_KEYS,
    args_not_read,
    executed_key,
    failed_turn,
    first,
    get,
    newest_first,
    role_of,
    summary_texts,
)
from drafters.traces.formats._system_prompts import (
    SYSTEM_KEYS,
    linked_system,
    sibling_system,
    system_not_read,
)
from drafters.traces.formats._text_beside import (
    answer_beside,
    holders,
    message_texts,
    text_beside,
    turn_text_beside,
)
from drafters.traces.formats._text_calls import with_text_tool_calls
from drafters.traces.formats._turns import TURN_KEYS, display_only, join_turns, warn_display_only, warn_joined
from drafters.traces.formats._wrapped_messages import serialized_messages, untagged_variants
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.json_paths import jsonpath
from drafters.traces.mapping_records import value_records
from drafters.traces.model import (
    Conversation,
    Message,
    Source,
    TextPart,
    ToolResultPart,
    UnsupportedPart,
    compact_json,
)

MAX_DEPTH = 6
_READ_KEYS = {"name", "id", "tool_results", "tool_call_ids", "channels", *TURN_KEYS, *MEDIA_LIST_KEYS} | {
    k.split(".")[0] for k in CALL_KEYS + RESULT_ID_KEYS}


@dataclass
class _Found:
    """A message list in a record: its JSONPath, the list, and the keys that give role and content."""

    path: str
    messages: list
    role_key: str
    content_key: str | None


@dataclass
class _Tally:
    """What the file's records had in common, for the one ``generic_mapping`` warning."""

    paths: Counter = field(default_factory=Counter)
    role_keys: Counter = field(default_factory=Counter)
    content_keys: Counter = field(default_factory=Counter)
    roles: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    tools: Counter = field(default_factory=Counter)
    record_skipped: Counter = field(default_factory=Counter)
    not_calls: int = 0  # records holding no part of a call (a metadata header line): counted, not read


def _role_key(items: list) -> str | None:
    dicts = [m for m in items if isinstance(m, dict)]
    if len(dicts) < 2 or len(dicts) != len(items):
        return None
    for key in ROLE_KEYS:
        roles = [role_of(get(m, key)) for m in dicts]
        if all(roles) and "assistant" in roles:
            return key
    return None


def find_message_lists(value: Any, path: str = "$", depth: int = 0) -> list[_Found]:
    """Every message list in ``value`` (not looking inside a found list's messages)."""
    if depth > MAX_DEPTH:
        return []
    if isinstance(value, list):
        key = _role_key(value)
        if key is not None:
            content = next((k for k in CONTENT_KEYS if any(get(m, k) is not None for m in value)), None)
            return [_Found(path, value, key, content)]
        out: list[_Found] = []
        for i, item in enumerate(value[:1000]):
            out += find_message_lists(item, f"{path}[{i}]", depth + 1)
        return out
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            if isinstance(v, (list, dict)):
                out += find_message_lists(v, f"{path}.{k}", depth + 1)
        return out
    return []


def _message_outside(value: Any, skip: str | set[str], path: str = "$", depth: int = 0,
                     known: list | None = None) -> str | None:
    """The path of the first message (an object with a role in a known spelling) in ``value`` outside the
    subtrees at ``skip`` that is no copy of a ``known`` message (a checkpoint's last writes beside its
    transcript), or None."""
    if path in ({skip} if isinstance(skip, str) else skip) or depth > MAX_DEPTH:
        return None
    if isinstance(value, dict):
        if path != "$" and _is_message(value) and value not in (known or []) and not settings_only([value]):
            return path
        items = [(f"{path}.{k}", v) for k, v in value.items() if isinstance(v, (dict, list))]
    elif isinstance(value, list):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(value[:1000]) if isinstance(v, (dict, list))]
    else:
        return None
    return next((hit for p, v in items if (hit := _message_outside(v, skip, p, depth + 1, known)) is not None), None)


def _used_keys(raw: dict, found: _Found, parts_read: bool, content_key: str | None) -> set[str]:
    """The keys of a message that ``message_of`` reads."""
    used = {found.role_key.split(".")[0], (content_key or "").split(".")[0]} | _READ_KEYS
    if parts_read:
        used |= {"parts", "toolInvocations"}  # v4's toolInvocations: the parts' tool invocations again, or read
    if summary_texts(raw) is not None:
        used |= {"summary"}
    return used


def _unread(raw: dict, found: _Found, parts_read: bool, content_key: str | None) -> list[str]:
    used = _used_keys(raw, found, parts_read, content_key)
    return [k for k, v in raw.items() if k not in used and v not in (None, "", [], {})]


def conversation_of(found: _Found, source: Source, conv_id: str, tools: Any, problems: ProblemSink,
                    tally: _Tally | None = None) -> Conversation | None:
    """The conversation of a found message list; None (reported) when a message's content was not mapped."""
    messages: list[Message] = []
    raws: list[Any] = []
    executed_before_text = 0
    indexed = list(enumerate(found.messages))
    if newest_first(found.messages):  # read oldest first; errors keep each message's own index
        indexed.reverse()
        problems.warning("messages_newest_first", "the messages are written newest first (their times fall): "
                         "read oldest first", source, found.path)
    last_reply = max((k for k, (_, raw) in enumerate(indexed) if role_of(get(raw, found.role_key)) == "assistant"),
                     default=len(indexed))
    shown = sum(display_only(raw) for _, raw in indexed)
    for k, (i, raw) in enumerate(indexed):
        if display_only(raw):
            continue
        role = role_of(get(raw, found.role_key))
        content_key = content_key_of(raw, found.content_key, role)
        richer = richer_parts(raw, content_key)
        executed = executed_key(raw, _used_keys(raw, found, richer is not None, content_key)) \
            if role == "assistant" else None
        message = message_of(raw, role, content_key, richer, executed[1] if executed else None)  # type: ignore[arg-type]
        executed_before_text += executed is not None and any(isinstance(p, TextPart) for p in message.parts)
        if role == "assistant" and failed_turn(raw):
            if not message.parts and not message.tool_calls:  # a request that failed before any output
                problems.warning("failed_turn_skipped", f"message {i} is an assistant message with no content that "
                                 "records a failed request (stop reason / error message): no model turn, not read",
                                 source, f"{found.path}[{i}]")
                continue
            message.failed = True  # its calls that no tool message answers were never run
        message.cut = role == "assistant" and stopped_by_length(raw)  # cut_replies: reported
        unread = [k for k in _unread(raw, found, richer is not None, content_key) if not executed or k != executed[0]]
        if tally is not None:
            tally.roles[role] += 1
            tally.skipped.update(unread)
        empty = not message.parts or (role == "tool" and not any(
            p.content for p in message.parts if isinstance(p, ToolResultPart)))
        if any(isinstance(p, UnsupportedPart) and p.kind == RESULT_NOT_READ for p in message.parts):
            problems.error("content_not_mapped", f"message {i} has a tool result block with no result text in a "
                           f"known spelling ({', '.join(RESULT_TEXT_KEYS)}): it is not read as an empty result",
                           source, f"{found.path}[{i}]")
            return None
        if empty and unread and k > last_reply and role != "tool":
            problems.warning("trailing_record_not_read", f"message {i}, after the last reply, has no content in a "
                             f"known spelling ({', '.join(sorted(unread)[:8])}): a record no call saw, not read",
                             source, f"{found.path}[{i}]")
            continue
        if empty and unread:
            problems.error("content_not_mapped", f"message {i} has no content in a known spelling; its keys "
                           f"{', '.join(sorted(unread)[:8])} were not read", source, f"{found.path}[{i}]")
            return None
        unread_args = args_not_read(first(raw, CALL_KEYS)) if role == "assistant" else []
        if unread_args:  # arguments under a key no spelling reads: the calls would be read with none
            problems.error("content_not_mapped", f"message {i} has tool calls whose arguments are under "
                           f"{', '.join(unread_args)}, which the general path does not read: declare them in a "
                           "mapping file (--mapping; tool_call: {arguments: KEY})", source, f"{found.path}[{i}]")
            return None
        nested = nested_thread({k: raw[k] for k in unread if k in raw}, (), f"{found.path}[{i}]")
        if nested is not None:  # a sub-agent's thread kept inside the message answering its call
            problems.error("content_not_mapped", f"message {i} keeps a conversation of its own at {nested} (a "
                           "sub-agent's, say), which the general path does not read: its calls would be lost", source,
                           nested)
            return None
        lost = _shapes.calls_not_read([raw], unread)
        if lost:  # tool calls under a key no rule reads: the call would be lost, the file reported ok
            problems.error("content_not_mapped", f"message {i} holds tool calls under {', '.join(lost)}, which the "
                           "general path does not read: declare them in a mapping file (--mapping; tool_calls: KEY)",
                           source, f"{found.path}[{i}]")
            return None
        context = text_beside({k: raw[k] for k in unread if k in raw}, message_texts([message]), turns=False)
        if context is not None:  # a retrieved context, an attached file's text: in the prompt, in no message
            problems.error("content_not_mapped", f"message {i} keeps text under {context} that the model read with "
                           "it and no message holds: it would be lost; declare it in a mapping file (--mapping)",
                           source, f"{found.path}[{i}].{context}")
            return None
        if role == "tool" and messages and messages[-1].role == "tool":
            messages[-1].parts.extend(message.parts)
        else:
            messages.append(message)
            raws.append(raw)
    turns = join_turns(messages, raws, found.role_key, "join")
    if turns.why is not None:
        problems.error("ambiguous_turns", f"{turns.why} (docs/traces.md, consecutive assistant messages); declare "
                       "the reading in a mapping file (--mapping)", source, found.path)
        return None
    warn_joined(turns, problems, source, found.path)
    warn_display_only(shown, problems, source, found.path)
    if executed_before_text:
        problems.warning("executed_calls_before_text", f"{executed_before_text} assistant message(s) hold tool calls "
                         "recorded with their results beside a text: read as run before the text (each call answered "
                         "before the next, the text the reply after the last result)", source, found.path)
    messages = turns.messages
    return Conversation(id=conv_id, source=source, tools=tool_defs(tools), messages=messages)


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and any(role_of(get(value, k)) for k in ROLE_KEYS) and not find_message_lists(value)


def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """The file's conversations, read by the shape its first records have (``_shapes.infer``): message lists
    in records by the common spellings (below), every other shape by the inferred mapping; see the module
    docstring."""
    lead = ""
    while (ch := stream.read(1)).isspace():
        lead += ch
    stream = _reading.Prefixed(lead + ch, stream)
    if ch and ch not in "{[":  # a text log printing JSON records whole (formats/_embedded_json.py)
        text = stream.read()
        found = embedded_records(text)
        if found is not None:
            records, unread = found
            if unread:
                problems.warning("text_not_read", f"{unread} line(s) of the log between its JSON records are its own "
                                 "text (headers, a run's output), no message: not read", Source(NAME, filename))
            yield from read_records(((Source(NAME, filename, line=n), v) for n, v in records), filename, problems)
            return
        stream = _reading.Prefixed(text, stream)
    yield from read_records(_reading.load_json_or_lines(stream, filename, problems, NAME), filename, problems)


def read_records(records: Iterator[tuple[Source, Any]], filename: str, problems: ProblemSink
                 ) -> Iterator[Conversation]:
    """The conversations of a file's records (a JSON or JSONL file's, or a table's rows: ``csv_rows``), read by
    the shape the first records have; a record value that is a list of ``[user, assistant]`` text pairs is read
    as those messages (``_pair_turns.pair_turns``), a Gemini ``contents`` shorthand as its user turn
    (``_spellings.contents_shorthand``), messages typed as calls or results as those (``_typed_messages``), named
    speakers beside a user as the model's agents (``_named_speakers``); recorded HTTP exchanges whose status is an
    error are skipped (``_exchanges``); recorded streams are joined first, whatever the file's syntax (a YAML
    recording's SSE body as a JSON file's: ``_streams``)."""
    changed: list[bool] = []  # of the first records: whether these rewrites changed it
    records = pair_documents(records)  # a file that is one Gradio history: one record
    head = list(islice(records, _shapes.SAMPLE))
    records = chain(head, records)
    if _update_events.is_update_stream(v for _, v in head):  # objects re-sent as they change: their last versions
        records, changed = _update_events.folded(records, filename, problems, NAME), [True]
    records = _streams.joined_records(((source, _exchanges.decoded_bodies(value)) for source, value in records),
                                      problems, NAME)
    records = _snapshots.longest_snapshots(records, problems)  # a thread's state history: each thread once
    records = _previous_responses.chained_responses(records, problems)  # server-side state: contexts rebuilt
    records, joined = _joined_by_id.joined_records(records, problems, Source(NAME, filename))  # requests and responses logged apart
    changed += [joined]
    templated: list[bool] = []  # of the first records: whether a text rendered by a chat template was read as turns
    records = ((source, _rewritten(value, changed, templated))
               for source, value in _named_records(expanded_records(_exchanges_kept(records, problems)),
                                                   filename, problems))
    sample = list(islice(records, _shapes.SAMPLE))
    note = REWRITTEN if any(changed) else ""  # the inferred mapping is then of the rewritten records
    if any(templated):
        problems.warning("chat_template_read", "texts rendered by a chat template (its special tokens between the "
                         "turns) are read as their turns", Source(NAME, filename))
    if _step_events.is_step_log([v for _, v in sample]):  # model output logged as loop step events
        conv = _step_events.read(chain(sample, records), filename, problems)
        if conv is not None:
            yield conv
        return
    shape = _shapes.infer(sample)
    if isinstance(shape, _shapes.Ambiguous):
        problems.error("ambiguous_shape", f"the records fit more than one reading ({'; '.join(shape.candidates)}): "
                       "which one holds the conversation is not guessed; declare it in a mapping file (--mapping; "
                       "`tracedraft datasets infer-mapping` writes a first one)", Source(NAME, filename))
        return
    copied = _copied_context(sample, shape) if isinstance(shape, _shapes.Inferred) else 0
    if copied:
        problems.error("copied_context", f"{copied} message(s) are flagged as copied from another context "
                       "(is_copied_context: an agent's handoff): which turns are this file's own LLM calls is not "
                       "guessed, and reading them all would count copied answers as calls", Source(NAME, filename))
        return
    wrapped = shape is not None and "." in shape.mapping.role  # roles inside a wrapper: the mapping reads them
    if shape is not None and (shape.shape not in ("record_lists", "file_list") or shape.mapping.items != "messages"
                              or wrapped or shape.mapping.observation  # observations: only the mapping reads them
                              or "[*]" in shape.mapping.messages  # one list per item of an array: the mapping
                              or history_in_text([v for _, v in sample], shape.mapping.messages, shape.mapping.role)
                              or shape.mapping.nested  # runs nested in records: the mapping takes them out
                              or shape.mapping.role not in ROLE_KEYS):  # a boolean role key: the mapping
        rest = chain(sample, records)
        if shape.mapping.records == "file":  # the file is the list: its items are one record
            rest = iter([(Source(NAME, filename, record="$"), [value for _, value in rest])])
        yield from _by_mapping(shape, rest, filename, problems, note)
        return
    rest = chain(sample, records)
    if shape is not None and shape.mapping.records == "values":  # an object of records keyed by id: its values
        rest = value_records(rest, shape.mapping.lists)
    yield from _by_spellings(rest, filename, problems, shape, note)


#: Said of an inferred mapping found in records the general path rewrote first (``read_records``).
REWRITTEN = (" (of the records as the general path rewrites them: pair histories, turn objects, serialized or typed "
             "messages; --mapping reads the file as written, so this mapping does not read it)")


def _rewritten(value: Any, changed: list[bool], templated: list[bool]) -> Any:
    """``value`` with its pair histories or turn objects, Gemini ``contents`` shorthand, typed calls, serialized
    messages and texts rendered by a chat template as messages; for the first records, whether that changed it is
    appended to ``changed`` (a template's text aside: a declared mapping reads it too) and to ``templated``."""
    new = spellings_as_messages(serialized_messages(value))
    turns = rendered_messages(new)
    if len(changed) < _shapes.SAMPLE:
        changed.append(new != value)
        templated.append(turns != new)
    return turns


COPIED_KEYS = ("is_copied_context", "copied_context", "is_copied")


def _copied_context(records: list[tuple[Any, Any]], shape: _shapes.Inferred) -> int:
    """Messages at the shape's messages path flagged as copied from another context (ATIF steps a handoff
    repeats, ``is_copied_context: true``): context, not calls of this file; the general path refuses them."""
    if shape.mapping.records == "messages":
        return 0
    n = 0
    for _, value in records[:_shapes.SAMPLE]:
        for _, msgs in jsonpath(value, shape.mapping.messages) if isinstance(value, (dict, list)) else []:
            n += sum(1 for m in (msgs if isinstance(msgs, list) else []) if isinstance(m, dict) and
                     any(m.get(k) is True for k in COPIED_KEYS))
    return n


def _exchanges_kept(records: Iterator[tuple[Source, Any]], problems: ProblemSink) -> Iterator[tuple[Source, Any]]:
    """The records without the recorded HTTP exchanges whose status is an error (``_exchanges``), warned
    ``error_response``: dropped before the shape is inferred, whose sample they would mislead."""
    for source, value in records:
        kept, dropped = _exchanges.without_failed(value)
        _exchanges.warn_skipped(problems, dropped, source)
        if kept is not None:
            yield source, kept


def _named_records(records: Iterator[tuple[Source, Any]], filename: str, problems: ProblemSink
                   ) -> Iterator[tuple[Source, Any]]:
    """The records with lists of named-speaker messages (``_named_speakers``) in the common spelling: an array
    document's items by the speaker key its first items have, any other record's list on its own; warned
    ``named_speakers_as_assistant`` with the names."""
    head = list(islice(records, _shapes.SAMPLE))
    found = speaker_key([v for _, v in head]) if head and head[0][0].record == "$[0]" else None
    names: list[str] = []
    for source, value in chain(head, records):
        if found is not None:
            names += agent_names([value], found[0])
            value = as_named(value, *found) if isinstance(value, dict) and found[0] in value else value
        else:
            value, more = named_speakers(value)
            names += more
        yield source, value
    if names:
        problems.warning("named_speakers_as_assistant", "speakers named, not given a role, beside the user: "
                         f"{', '.join(list(dict.fromkeys(names))[:8])}: read as agents of the model (each their "
                         "own calls, their turns in the context of the others')", Source(NAME, filename))


def _by_mapping(shape: _shapes.Inferred, records: Iterator[tuple[Source, Any]], filename: str,
                problems: ProblemSink, note: str = "") -> Iterator[Conversation]:
    """A shape other than message lists in records, read with the mapping inferred for it (stated in the
    report: the same mapping, written by ``infer-mapping``, reads the file the same way; ``note``: unless the
    records were rewritten first, ``REWRITTEN``)."""
    if shape.calls_not_read:  # reading without them would lose the calls: say which key to declare
        problems.error("content_not_mapped", f"messages hold tool calls under {', '.join(shape.calls_not_read)}, "
                       f"which the inferred mapping does not read (as {shape.shape}): declare them (tool_calls: KEY) "
                       "in the mapping `tracedraft datasets infer-mapping` writes", Source(NAME, filename))
        return
    mapping = replace(shape.mapping, label=NAME)
    yield from mapping.read(records, filename, problems)
    problems.warning("generic_mapping", f"read by the general path as {shape.shape} with the inferred mapping "
                     f"{compact_json(shape.mapping.to_dict())}{note}; message keys not read: "
                     f"{', '.join(shape.keys_not_read) or 'none'}", Source(NAME, filename))


def _by_spellings(records: Iterator[tuple[Source, Any]], filename: str, problems: ProblemSink,
                  shape: _shapes.Inferred | None, note: str = "") -> Iterator[Conversation]:
    """One conversation per record whose single message list is found (a bare message list: the file's)."""
    stem = filename.rsplit("/", 1)[-1]
    tally = _Tally()
    for source, value in records:
        if source.record == "$[0]" and _is_message(value):  # the document is one bare message list
            source, value = Source(NAME, filename, record="$"), [value] + [v for _, v in records]
        yield from _record(source, value, stem, problems, tally)
    if tally.not_calls and tally.paths:
        problems.warning("records_not_calls", f"{tally.not_calls} record(s) hold no message and no part of a call "
                         "(a metadata header, an event of another kind): not read", Source(NAME, filename))
    if tally.paths:
        inferred = f"; inferred mapping {compact_json(shape.mapping.to_dict())}{note}" if shape is not None else ""
        problems.warning("generic_mapping", f"read by the general path: messages at {_top(tally.paths)}; "
                         f"role from {_top(tally.role_keys)}; content from {_top(tally.content_keys)}; "
                         f"roles {_top(tally.roles)}; tool definitions: {_top(tally.tools) or 'none'}; "
                         f"message keys not read: {_top(tally.skipped, 16) or 'none'}; record keys not read: "
                         f"{_top(tally.record_skipped, 16) or 'none'}{inferred}",
                         Source(NAME, filename))


def _record(source: Source, value: Any, stem: str, problems: ProblemSink, tally: _Tally) -> Iterator[Conversation]:
    value = untagged_variants(value)  # messages written as serde enum variants: the messages they hold
    every = find_message_lists(value)
    found = [f for f in every if not settings_only(f.messages)] or every  # not LobeChat's sessions
    if not found and call_free(value) and value not in ({}, []):
        tally.not_calls += 1  # reported once for the file (records_not_calls), or the file reads nothing
        return
    if not found:
        problems.error("no_messages_found", "no list of messages with roles (and an assistant turn) in this "
                       "record", source)
        return
    full = _covering(found) if len(found) > 1 else None
    if len(found) > 1 and full is None:
        paths = ", ".join(f.path for f in found[:5]) + (" ..." if len(found) > 5 else "")
        problems.error("ambiguous_shape", f"{len(found)} message lists in one record ({paths}): which one is "
                       "the conversation is not guessed; declare it in a mapping file (--mapping)", source)
        return
    f = full or found[0]
    elsewhere = _message_outside(value, {g.path for g in every}, known=f.messages)  # copies of f's: no loss
    if elsewhere is not None:  # a call's answer beside its input, another entry's messages: never dropped quietly
        problems.error("content_not_mapped", f"the record holds a message at {elsewhere}, outside the message list "
                       f"{f.path} read as its conversation: it would be lost; declare where it belongs in a mapping "
                       "file (--mapping; `tracedraft datasets infer-mapping` writes a first one)", source, elsewhere)
        return
    beside = turn_text_beside(holders(value, f.path)[:1], f.messages, f.content_key)
    if beside is not None:  # a prompt or a reply kept beside the list: a turn the list does not hold
        problems.error("content_not_mapped", f"the record holds text under {beside} beside the message list "
                       f"{f.path}, and no message of the list holds it: it may be a turn of the conversation the "
                       "list does not hold; declare where it belongs in a mapping file (--mapping)", source,
                       _beside_path(f.path, beside))
        return
    response = _exchanges.response_beside(value, f.path)
    if response is not None:  # a recorded exchange: the request's list read alone would lose the answers
        problems.error("content_not_mapped", f"the message list {f.path} is a recorded request's, and the exchange "
                       f"keeps its response at {response}, in a spelling no reader knows: the answers would be lost; "
                       "declare them in a mapping file (--mapping; response: PATH)", source, response)
        return
    answer = answer_beside(holders(value, f.path)[:1], f.messages, f.role_key)
    if answer is not None:  # the list is a call's input; its output is elsewhere, in a spelling not read
        problems.error("content_not_mapped", f"the message list {f.path} ends before the model's answer and the "
                       f"record holds text under {answer}: the answer to that input would be lost; declare it in a "
                       "mapping file (--mapping; response: PATH)", source,
                       _beside_path(f.path, answer))
        return
    tally.paths[f.path] += 1
    tally.role_keys[f.role_key] += 1
    tally.content_keys[f.content_key or "(none)"] += 1
    tools = first(value, ("tools", "functions", "tool_definitions")) if isinstance(value, dict) else None
    for t in tools if isinstance(tools, list) else []:
        schema = first(t, ("parameters", "input_schema", "inputSchema", "function.parameters")) \
            if isinstance(t, dict) else None
        tally.tools["with parameters" if isinstance(schema, dict) else "without a parameter schema"] += 1
    if isinstance(value, dict):
        used = {f.path.split(".")[1].split("[")[0] if "." in f.path else "", "tools", "functions", "tool_definitions",
                *SYSTEM_KEYS}
        tally.record_skipped.update(k for k, v in value.items() if k not in used and v not in (None, "", [], {}))
    loc = source.line if source.line is not None else source.record
    chats = chats_in_list(f.messages)  # messages naming their sessions (LobeChat's state.messages): one each
    for name, msgs in chats or [("", f.messages)]:
        conv = conversation_of(replace(f, messages=msgs), source, f"{NAME}:{stem}:{loc}" + (f"#{name}" if name else ""),
                               tools, problems, tally)
        for holder in holders(value, f.path) if conv is not None else ():  # a system prompt beside the list, on
            prompt, not_read = sibling_system(holder, conv.messages)        # an object holding it (the nearest), or
            prompt, not_read = (prompt, not_read) if prompt or not_read else linked_system(  # on the session the
                holder, msgs, MESSAGE_CHAT_KEYS, conv.messages)                              # messages name
            if prompt or not_read:
                conv.messages[:0] = prompt
                system_not_read(not_read, source, problems)
                break
        if conv is not None:
            yield conv


def _beside_path(path: str, key: str) -> str:
    """The path of ``key`` on the object holding the list at ``path`` (``$.text[3].context`` -> ``$.text[3].KEY``;
    the bare key for a record's own list): a mapping reading the list's holder answers it."""
    holder = path.rsplit(".", 1)[0]
    return f"{holder}.{key}" if holder not in ("$", "") else key


def _covering(found: list[_Found]) -> _Found | None:
    """Of a record's message lists, the one holding every message of each other list in the same order (a
    transcript beside its turns' copies of the replies: FLE's ``messages`` beside ``turns[*].assistant``;
    ``_record_shapes.covering``), else None: reading it loses nothing the others hold."""
    k = covering([f.messages for f in found])
    return None if k is None else found[k]


def _top(counts: Counter, n: int = 4) -> str:
    return ", ".join(f"{k} ({c})" for k, c in counts.most_common(n))


FORMAT = TraceFormat(
    name=NAME,
    description="General path: message lists found by their shape in any JSON/JSONL (common spellings)",
    sniff=sniff,
    parse=with_text_tool_calls(parse),
)
