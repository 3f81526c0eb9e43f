"""Declared mappings: ingest an in-house trace format without code, from a small YAML or JSON file that says
where the messages, roles, content, tool calls and tool results sit.

Example (``support-bot.mapping.yaml``) for records like
``{"session": "s1", "turns": [{"speaker": "customer", "utterance": "..."}, {"speaker": "agent",
"utterance": "...", "actions": [{"action_id": "a1", "tool": "lookup", "params": {...}}]}, {"speaker":
"tool", "action_id": "a1", "output": "..."}], "tool_specs": [...]}``::

    name: support-bot              # shown in the report as the format
    messages: $.turns              # JSONPath of the message list in each record; [*] for several lists
    role: speaker                  # key (dotted for nesting, e.g. author.role) holding the role
    roles:                         # every role value that occurs -> system | user | assistant | tool
      customer: user
      agent: assistant
      system: system
      tool: tool
    content: utterance             # key holding a string or a list of content blocks (common spellings)
    reasoning: thoughts            # optional: key holding an assistant message's reasoning text
    tool_calls: actions            # optional: key holding the assistant's calls (a list)
    tool_call:                     # optional: keys inside one call (defaults: id, name, arguments)
      id: action_id
      name: tool
      arguments: params
    tool_result:                   # optional: keys on a tool message (defaults: tool_call_id, content)
      id: action_id
      content: output
    tools: $.tool_specs            # optional: JSONPath of the tool definitions (OpenAI or flat form)
    id: $.session                  # optional: JSONPath of the conversation id

The other shapes (``records: file | messages | lists | entries | values``, ``nested``, ``group``, ``turns``,
``response`` (with ``[*]``: answers sampled for one input), ``observation``, ``prompt``, ``roles: {"*": ...}``,
``items: openai_responses``, ``tree``, ``whole_prompts``), the JSONPath subset, and the error
codes each mistake gives (``unknown_role``, ``no_messages_found``, ``mapping_field_missing``,
``mapping_field_never_matched``, ``tool_result_not_found``, ``tree_broken``; ``bad_mapping`` before anything is
read) are documented in docs/traces.md ("Supported formats", the declared mapping); ``tracedraft datasets infer-mapping FILE``
writes the mapping the general path inferred for a file, as a starting point. Message trees are read by
drafters/traces/mapping_tree.py, records of one message each by drafters/traces/mapping_message_records.py,
content beside the messages that would be lost checked by drafters/traces/mapping_beside.py, context handoffs recognized by drafters/traces/handoff.py; what one reading tracks (required keys absent,
optional keys never matched) is drafters/traces/mapping_reading.py.

Use: ``tracedraft datasets validate --mapping support-bot.mapping.yaml traces/*.jsonl`` or
``ingest(paths, mapping="support-bot.mapping.yaml")``. The service keeps a mapping with its dataset (the
``mapping`` part of ``POST /v1/datasets``, ``tracedraft datasets upload --mapping``, ``tracedraft run
--mapping``): checked here when uploaded, stored content-addressed, and used by every validation of that
dataset. A mapping file is untrusted input there: drafters.traces.mapping_file reads it, type-checks and
bounds its values (``MAX_VALUES``, ``MAX_NAME``), and its paths only ever address the records' JSON, never files.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import IO, Any

from drafters.traces.cut_replies import answer_stopped_by_length, stopped_by_length
from drafters.traces.formats import _exchanges
from drafters.traces.formats._batches import decoded_tree
from drafters.traces.formats._call_io import (
    answer_as_written,
    call_free,
    message_lists,
    note_call_kinds,
    other_kind,
)
from drafters.traces.formats._chains import CallChains
from drafters.traces.formats._content import as_list, as_text
from drafters.traces.formats._record_shapes import (
    chats_in_list,
    holds_role_message,
)
from drafters.traces.formats._rendered_chats import rendered_text
from drafters.traces.formats._spellings import (
    block_parts,
    failed_turn,
    get,
    media_beside,
    response_id,
    summary_texts,
)
from drafters.traces.formats._text_beside import message_texts, text_beside
from drafters.traces.formats._text_calls import with_text_tool_calls
from drafters.traces.formats._turns import (
    display_only,
    join_turns,
    link_lone_results,
    resent_version,
    split_at_results,
    warn_display_only,
    warn_joined,
    whole_prompts,
)
from drafters.traces.formats._wrapped_messages import serialized_messages
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.formats.openai_responses import items_to_messages
from drafters.traces.handoff import cut_at_handoff, handed_off
from drafters.traces.json_paths import decoded, jsonpath, root_key, unflatten
from drafters.traces.mapping_beside import content_beside
from drafters.traces.mapping_message_records import message_records
from drafters.traces.mapping_observation import observation_messages
from drafters.traces.mapping_prompt import prompt_messages
from drafters.traces.mapping_reading import ABSENT, PathUse, Reading, tools_at
from drafters.traces.mapping_records import expanded, file_records
from drafters.traces.mapping_tree import TreeBroken, TreeReading, tree_links, tree_nodes
from drafters.traces.model import (
    Conversation,
    Message,
    ReasoningPart,
    Source,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    compact_json,
)


@dataclass(frozen=True)
class Mapping:
    """A declared mapping (see the module docstring); ``load_mapping`` builds and checks one."""

    name: str
    messages: str
    role: str
    roles: dict[str, str]
    content: str | None = None
    reasoning: str | None = None
    tool_calls: str | None = None
    tool_call: dict[str, str] = field(default_factory=lambda: {"id": "id", "name": "name", "arguments": "arguments"})
    tool_result: dict[str, str] = field(default_factory=lambda: {"id": "tool_call_id", "content": "content"})
    tools: str | None = None
    id: str | None = None
    records: str = "each"  # each | file | messages | lists | entries (see the module docstring)
    lists: str = "$"  # records: lists: JSONPath of the object whose lists hold the records ({"results": {...}})
    group: str | None = None  # records: messages: a JSONPath whose value starts a new conversation when it changes;
    # with response and a prompt text: records of one value continue one conversation (a chat log's rows)
    turns: str | None = None  # with response and a prompt text: a JSONPath of the record's turn number; a record
    # numbered one more than the record before it continues that record's conversation (a dialogue's rows)
    response: str | None = None  # JSONPath of a call's output beside its input messages
    observation: str | None = None  # key of an agent step (assistant message) holding its tool calls' result
    prompt: dict[str, str] = field(default_factory=dict)  # {system|user: JSONPath}: messages put before the list
    unflatten: bool = False  # records' dotted keys (span attributes "llm.input_messages.0.message.role") nested
    nested: str | None = None  # key of a record's nested runs (a run tree's child_runs): records of their own
    items: str = "messages"  # messages | openai_responses (the list holds Responses API items, not messages)
    tree: dict[str, str] = field(default_factory=dict)  # {parent, children, message, id, current}: a message tree
    label: str | None = None  # the format name in reports (the general path's "generic"); default mapping:NAME
    # two unflagged assistant messages with nothing between them: separate (two calls), join (one) or refuse
    # (ambiguous_turns, as the general path reads and infer-mapping writes; formats/_turns.py)
    adjacent_answers: str = "separate"
    whole_prompts: bool = False  # each prompt sent whole (rebuilt for every call): it opens a new conversation

    def format(self) -> TraceFormat:
        """A ``TraceFormat`` that reads files with this mapping (its sniffer accepts every file)."""
        return TraceFormat(name=self.format_name, description=f"declared mapping {self.name}",
                           sniff=lambda head, filename: True, parse=with_text_tool_calls(self.parse))

    @property
    def format_name(self) -> str:
        """The format name in reports: ``label`` (the general path's ``generic``) or ``mapping:NAME``."""
        return self.label or f"mapping:{self.name}"

    def to_dict(self) -> dict[str, Any]:
        """The mapping as a mapping file's content (``mapping_from_dict`` inverts it); defaults left out."""
        defaults = Mapping("", "$", "", {})
        out: dict[str, Any] = {"name": self.name}
        for key in ("records", "lists", "nested", "messages", "group", "turns", "role", "roles", "content",
                    "reasoning", "tool_calls", "tool_call", "tool_result", "observation", "response", "prompt", "tools", "id",
                    "unflatten", "items", "tree", "adjacent_answers", "whole_prompts"):
            value = getattr(self, key)
            if value != getattr(defaults, key) or key in ("messages", "role", "roles"):
                out[key] = value
        return out

    def parse(self, stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
        """The file's conversations (see ``read``)."""
        yield from self.read(file_records(stream, filename, problems, self.format_name, self.records), filename,
                             problems)

    def read(self, records: Iterator[tuple[Source, Any]], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
        """The conversations of a file's records: one per message list the ``messages`` path finds in each
        record; with ``records: messages`` one per run of message records (``group``); with ``response`` the
        calls, chained into conversations (``formats._chains``); with ``whole_prompts`` each cut before every
        prompt that follows a reply (``formats._turns.whole_prompts``)."""
        for conv in self._read(records, filename, problems):
            yield from whole_prompts(conv) if self.whole_prompts else [conv]

    def _read(self, records: Iterator[tuple[Source, Any]], filename: str, problems: ProblemSink
              ) -> Iterator[Conversation]:
        fmt = self.format_name
        stem = filename.rsplit("/", 1)[-1]
        if self.unflatten:
            records = ((source, unflatten(record)) for source, record in records)
        records = ((source, serialized_messages(record)) for source, record in records)  # LangChain's dumpd: the messages
        reading_uses = self._optional_uses()
        record_paths = [PathUse(name, path, "record") for name, path in
                        (("tools", self.tools), ("id", self.id), ("response", self.response),
                         *((f"prompt.{k}", v) for k, v in self.prompt.items())) if path]
        if self.records == "messages":
            yield from message_records(self, records, filename, fmt, problems, lambda msgs, source, sink: self._conversation(
                {}, "$", msgs, Reading(source, sink, *reading_uses)))
        else:
            chains = CallChains(copies_guessed=self.label != "generic") if self.response else None
            starts: list[tuple[Conversation, Source]] = []  # inputs without output, until a later record answers
            merged = other_events = failed_exchanges = 0
            early: list[tuple[Source, Any]] = []  # records holding nothing at the messages path before any call
            kinds: dict[str, set[str]] = {}  # the kind keys' values of the records holding calls (call_io.other_kind)
            exchanges = True  # every record a recorded HTTP exchange: each one a request sent, none a restatement
            for at, (source, record) in enumerate(expanded(records, self.records, self.lists, self.nested)):
                if chains is not None:
                    chains.at = at
                if _exchanges.failed(record):
                    failed_exchanges += 1  # an HTTP error's body: no model turn
                    continue
                exchanges = exchanges and _exchanges.http_status(record) is not None
                held = [v for _, v in jsonpath(record, self.messages) if v is not None]  # null: nothing there
                if not held and (call_free(record) or self.records == "lists" and not holds_role_message(record)
                                 or other_kind(record, kinds)) \
                        and not message_lists(decoded_tree(record)):  # a call elsewhere (JSON text too): not skipped
                    other_events += 1  # an event of another kind (a score, a task span without messages)
                    continue
                if not held and self.response and failed_turn(record) and not jsonpath(record, self.response):
                    problems.warning("failed_turn_skipped", "the record holds no output and records an error: a "
                                     "failed request, no model turn", source)
                    continue
                if not held and not kinds and isinstance(record, dict):
                    early.append((source, record))  # before any call: judged once the calls' kinds are known
                    continue
                if held:
                    note_call_kinds(record, kinds)
                    other_events += self._judged(early, kinds, stem, fmt, problems, reading_uses)
                for use in record_paths:  # a declared record path that finds nothing anywhere is a mapping mistake
                    use.observe(record if isinstance(record, dict) else {}, jsonpath(record, use.key) or ABSENT,
                                {root_key(self.messages)})
                for conv in self._record(record, source, stem, fmt, Reading(source, problems, *reading_uses)):
                    if chains is None:
                        yield conv
                    elif not self._add_call(chains, record, conv, Reading(source, problems, *reading_uses)):
                        if failed_turn(record):  # no output and an error beside the input: a failed request
                            problems.warning("failed_turn_skipped", "the record holds no output and records an "
                                             "error: a failed request, no model turn", source)
                            continue
                        starts.append((conv, source))
                    else:  # the same call's start, written before it (a run posted, then patched): read once
                        merged += sum(1 for c, _ in starts if c.messages == conv.messages)
                        starts = [(c, s) for c, s in starts if c.messages != conv.messages]
            other_events += self._judged(early, kinds, stem, fmt, problems, reading_uses)
            for _, source in starts:
                problems.error("mapping_field_missing", f"the mapping's response path {self.response} finds nothing "
                               "in this record: the call's output would be lost", source, self.response)
            if merged:
                problems.warning("run_starts_merged", f"{merged} record(s) held only the input of a call that a later "
                                 "record repeats with its output (a run posted, then updated): each is read once, "
                                 "as that later record", Source(fmt, filename))
            _exchanges.warn_skipped(problems, failed_exchanges, Source(fmt, filename))
            if other_events:
                problems.warning("records_not_calls", f"{other_events} record(s) of the batch hold no message (events "
                                 "of another kind): not read", Source(fmt, filename))
            if chains is not None:  # a cache's entries and recorded HTTP exchanges are distinct requests
                yield from chains.finished(problems, Source(fmt, filename),
                                           drop_repeats=self.records != "entries" and not exchanges)
        for use in [*reading_uses, *record_paths]:
            if use is not None:
                use.report(Source(fmt, filename), problems)

    def _judged(self, early: list[tuple[Source, Any]], kinds: dict[str, set[str]], stem: str, fmt: str,
                problems: ProblemSink, uses: tuple) -> int:
        """Judge the records holding nothing at the messages path read before any call (a root task span first in
        the file), once the calls' ``kinds`` are known (or the file ends): each of another kind is counted (the
        count is returned), any other reported as ``_record`` reports it; ``early`` is emptied."""
        other = sum(other_kind(record, kinds) for _, record in early)
        for source, record in early:
            if not other_kind(record, kinds):
                list(self._record(record, source, stem, fmt, Reading(source, problems, *uses)))
        early.clear()
        return other

    def _record(self, record: Any, source: Source, stem: str, fmt: str, reading: Reading) -> Iterator[Conversation]:
        """The conversations of one record (one per message list found)."""
        found = jsonpath(record, self.messages)
        if not found:
            elsewhere = [p for p, _ in message_lists(decoded_tree(record))][:3]  # records of another layout
            reading.problems.error("no_messages_found", f"the mapping's messages path {self.messages} finds nothing"
                                   + (f"; the record holds messages at {', '.join(elsewhere)}: its call would be "
                                      "lost (records of two layouts: declare a mapping for each)" if elsewhere else ""),
                                   source)
            return
        lists = [(where, part, chat) for where, msgs in found  # messages naming their sessions: one list each
                 for chat, part in (chats_in_list(msgs) if isinstance(msgs, list) else None) or [("", msgs)]]
        for where, msgs, chat in lists:
            turns = rendered_text(msgs, where, bool(self.response), reading.problems, source) if not self.tree else None
            if turns == []:  # template tokens, not read: reported
                continue
            if turns is not None:
                conv: Conversation | None = Conversation(id="", source=source, tools=self._tools(record, reading),
                                                         messages=self._prompt(record) + turns)
            elif self.response and isinstance(msgs, str) and msgs.strip() and not self.tree:
                conv = Conversation(id="", source=source, tools=self._tools(record, reading),
                                    messages=self._prompt(record) + [Message("user", [TextPart(msgs)])])
            elif self.tree:
                conv = self._tree_conversation(record, where, msgs, reading)
            elif not isinstance(msgs, list):
                reading.problems.error("not_an_object", f"{where} is a {type(msgs).__name__}, not a list of "
                                       "messages", source, where)
                continue
            else:
                conv = self._conversation(record, where, msgs, reading)
            if content_beside(self, record, where, conv, reading):  # reported: it would be lost
                continue
            if conv is not None:
                loc = source.line if source.line is not None else source.record
                suffix = (f"#{where}" if len(found) > 1 else "") + (f"#{chat}" if chat else "")
                cid = as_text(jsonpath(record, self.id)[0][1]) if self.id and jsonpath(record, self.id) else loc
                conv.id = f"{fmt}:{stem}:{cid}{suffix}"
                for call in conv.explicit_calls or []:
                    call.conversation_id = conv.id
                yield conv

    def _add_call(self, chains: CallChains, record: Any, conv: Conversation, reading: Reading) -> bool:
        """``conv`` is one call's input; its output is at the ``response`` path (a message, a list of messages
        or the assistant's text). False for a record without it: ``read`` reports it (``mapping_field_missing``,
        the call is lost) unless a later record repeats the input with its output."""
        found = jsonpath(record, self.response or "$")
        if self.response and "[*]" in self.response and found:  # sampled answers to one input: a call each
            before = len(chains.added)
            for i, (where, out) in enumerate(found):
                sample = replace(conv, id=f"{conv.id}/sample{i}") if len(found) > 1 else conv
                if out is not None:
                    self._add_answer(chains, record, sample, where, answer_as_written(record, where, out), reading)
            chains.samples.update(id(a.call) for a in chains.added[before:])  # two equal samples are no repeat
            return any(out is not None for _, out in found)
        out = found[0][1] if found else ABSENT
        if out is ABSENT or out is None:
            return False  # reported by ``read`` unless a later record holds this call's output
        self._add_answer(chains, record, conv, found[0][0], answer_as_written(record, self.response or "$", out),
                         reading)
        return True

    def _add_answer(self, chains: CallChains, record: Any, conv: Conversation, where: str, out: Any,
                    reading: Reading) -> None:
        """The output ``out`` found at ``where`` read as ``conv``'s answer (see ``_add_call``)."""
        if self._continuation(out):
            self._add_continuation(chains, record, conv, where, out, reading)
            return
        raws = out if isinstance(out, list) else [out]
        parts: list = []
        if self.items == "openai_responses":
            raws, parts = [], [p for m in items_to_messages(out if isinstance(out, list) else [out]) for p in m.parts]
        for i, raw in enumerate(raws):
            if isinstance(raw, dict):
                parts += self._message(raw, "assistant", f"{where}[{i}]", reading).parts
            else:
                parts += block_parts(raw)
        model = next((m for m in (get(r, "model") for r in raws if isinstance(r, dict)) if isinstance(m, str)), None)
        cut = answer_stopped_by_length(record, where)  # the answer's stop reason, or its holders'
        pieces, _ = split_at_results([Message("assistant", parts, model=model, cut=cut)], [None])
        if not any(m.role == "assistant" for m in pieces):
            pieces = [Message("assistant", parts, model=model, cut=cut)]
        self._chain(chains, record, conv, pieces)  # tool results inside the output end a call

    def _continuation(self, out: Any) -> bool:
        """Whether the response is the conversation's continuation: a list of messages that carry the mapping's
        role key, an answer among them (TRL's conversational prompt/completion, verifiers' results: the answers
        with the tool results between them), rather than one answer's message or parts."""
        if self.items != "messages" or not isinstance(out, list) or not out or \
                not all(isinstance(m, dict) for m in out):
            return False  # Responses items are read by their reader (function calls and outputs have no role)
        roles = [get(m, self.role) for m in out]
        return ABSENT not in roles and any(isinstance(r, str) and self.roles.get(r) == "assistant" for r in roles)

    def _add_continuation(self, chains: CallChains, record: Any, conv: Conversation, where: str, raws: list,
                          reading: Reading) -> None:
        """The continuation's messages read with their own roles; a message that cannot be read is reported and
        none of the record's calls is kept."""
        given = jsonpath(record, self.messages)
        given = given[0][1] if given else None
        if isinstance(given, list) and given and raws[:len(given)] == given and len(raws) > len(given):
            raws = raws[len(given):]  # the input restated, then the reply (a cache's stored value): read once
        messages = self._messages(where, raws, reading)
        replies = [m for m in messages or [] if m.role == "assistant"]
        if replies and answer_stopped_by_length(record, where):  # the last reply was cut (its holder says so)
            replies[-1].cut = True
        if messages is not None:
            self._chain(chains, record, conv, messages)

    def _chain(self, chains: CallChains, record: Any, conv: Conversation, after: list[Message]) -> None:
        """Each assistant message of ``after`` is a call whose context is the input and what precedes it; with
        ``group`` and a prompt text, the input continues the last call of the record's group (its context and
        completion before the new prompt: a chat log of one prompt and response a row)."""
        kind = record.get("type") if isinstance(record, dict) else None
        context = conv.messages
        group = self._group_key(record, chains)
        earlier = chains.groups.get(group) if group is not None else None
        if earlier is not None:
            context = [*earlier.context, earlier.completion, *(m for m in context if m.role != "system")]
        for message in after:
            if message.role == "assistant":
                call = chains.add(conv.id, conv.source, conv.tools, context, message)
                if group is not None:
                    chains.groups[group] = call
                chains.kinds[id(call)] = kind if isinstance(kind, str) else None
                chains.records[id(call)] = compact_json(record, sort_keys=True)
            context = [*context, message]

    def _group_key(self, record: Any, chains: CallChains) -> str | None:
        """The record's ``group`` value, or its run of ``turns`` (``CallChains.turn_group``), for a record whose
        input is a prompt text (else None)."""
        held = jsonpath(record, self.messages) if self.group or self.turns else []
        if not held or not isinstance(held[0][1], str):
            return None
        if self.turns:
            number = jsonpath(record, self.turns)
            return chains.turn_group(number[0][1] if number else None)
        value = jsonpath(record, self.group)  # type: ignore[arg-type]
        return as_text(value[0][1]) if value else None

    def _optional_uses(self) -> tuple[PathUse | None, PathUse]:
        """(tool_calls, tool_call.arguments): the optional keys whose never matching in a file is checked
        (``PathUse.report``); None when the mapping declares no tool calls. (``reasoning`` is not checked:
        a model that never reasons leaves it unmatched with nothing lost.)"""
        calls = PathUse("tool_calls", self.tool_calls, "assistant message") if self.tool_calls else None
        return calls, PathUse("tool_call.arguments", self.tool_call.get("arguments", "arguments"), "tool call")

    def _conversation(self, record: Any, where: str, msgs: list, reading: Reading) -> Conversation | None:
        """The record's messages at ``where``, after its prompt, with its tools; None (reported) when one cannot
        be read or a required mapped key is absent (its content would be lost)."""
        if self.items == "openai_responses":
            return self._items_conversation(record, where, msgs, reading)
        messages = self._messages(where, msgs, reading)
        if messages is None:
            return None
        return Conversation(id="", source=reading.source, tools=self._tools(record, reading),
                            messages=self._prompt(record, where, messages, reading, msgs) + messages)

    def _messages(self, where: str, msgs: list, reading: Reading) -> list[Message] | None:
        """The messages of the raw list ``msgs`` at ``where``; None (reported) as for ``_conversation``."""
        messages: list[Message] = []
        raws: list[Any] = []  # the raw message of each message (None: an observation), for formats._turns
        source, problems = reading.source, reading.problems
        missing_before = reading.missing
        handoff: tuple[int, str, Any] | None = None  # (messages kept, path, step id) of a context handoff
        skipped = resent = 0
        shown = sum(display_only(raw) for raw in msgs)
        for i, raw in enumerate(msgs):
            at = f"{where}[{i}]"
            if display_only(raw):
                continue
            if not isinstance(raw, dict):
                problems.error("not_an_object", f"message is a {type(raw).__name__}, not an object", source, at)
                return None
            value = get(raw, self.role)
            value = str(value).lower() if isinstance(value, bool) else value  # a boolean role key: "true" / "false"
            role = self.roles.get(value) if isinstance(value, str) else None
            role = role or self.roles.get("*")  # the declared role of every message not otherwise listed
            if role is None:
                why = (f"has no role key {self.role!r}" if value is ABSENT or value is None
                       else f"has role {value!r} (key {self.role}), which is not in the mapping's roles")
                problems.error("unknown_role", f"the message {why}", source, at)
                return None
            if role == "skip":  # declared a record of another kind (an event, a slot): no message
                skipped += 1
                continue
            message = self._message(raw, role, at, reading)
            read = self._message_keys() | {str(k).split(".")[0] for k in (self.observation, *self.tool_result.values(),
                                                                           *self.tree.values()) if k}
            context = text_beside(raw, message_texts([message]), read, turns=False)
            if context is not None:  # a file the model was shown with the message (Continue's contextItems)
                problems.error("content_not_mapped", f"the message keeps text under {context!r} that the model read "
                               "with it and that no message holds: it would be lost", source, f"{at}.{context}")
                return None
            if role == "assistant" and failed_turn(raw):
                if not message.parts:  # a request that failed before any output: no model turn, no context
                    problems.warning("failed_turn_skipped", "an assistant message with no content records a "
                                     "failed request (stop reason / error message): no model turn, not read",
                                     source, at)
                    continue
                message.failed = True  # its calls that no tool message answers were never run
            message.cut = role == "assistant" and stopped_by_length(raw)  # cut_replies: reported
            if handoff is None and handed_off(raw, self.observation, role):
                # the context after this step is recorded elsewhere: cut before a handoff step, after a call's step
                handoff = (len(messages) + (role == "assistant"), at, raw.get("step_id"))
            if role == "assistant" and messages and messages[-1].role == "assistant" and \
                    response_id(raw) is not None and response_id(raw) == response_id(msgs[i - 1]):
                if resent_version(messages[-1].parts, message.parts):  # the response re-sent as it grew
                    messages[-1].parts[:], resent = message.parts, resent + 1
                else:
                    messages[-1].parts.extend(message.parts)  # one response written as several records (one per block)
                continue
            for m in [message, *observation_messages(self, raw, message, at, reading)]:
                if m.role == "tool" and messages and messages[-1].role == "tool":
                    messages[-1].parts.extend(m.parts)
                else:
                    messages.append(m)
                    raws.append(raw if m is message else None)
        if reading.missing > missing_before:
            return None
        warn_display_only(shown, problems, source, where)
        if skipped:
            problems.warning("messages_not_read", f"{skipped} record(s) of a role the mapping marks skip are not "
                             "read", source, where)
        if handoff is not None:
            messages = cut_at_handoff(messages, handoff, reading.problems, reading.source)
        link_lone_results(messages, raws)
        turns = join_turns(messages, raws[:len(messages)], self.role, self.adjacent_answers)
        turns = turns._replace(resent=turns.resent + resent)
        if turns.why is not None:
            problems.error("ambiguous_turns", f"{turns.why} (docs/traces.md, consecutive assistant messages)", source,
                           where)
            return None
        warn_joined(turns, problems, source, where)
        return turns.messages

    def _tools(self, record: Any, reading: Reading) -> list:
        return tools_at(record, self.tools, reading) if self.tools else []

    def _tree_conversation(self, record: Any, where: str, nodes: Any, reading: Reading) -> Conversation | None:
        """``tree``: the record's message tree as one conversation with explicit calls (drafters/traces/
        mapping_tree.py); None (reported) for a broken tree or a message that cannot be read."""
        problems, source = reading.problems, reading.source
        try:
            items, nested = tree_nodes(nodes, where, self.tree)
        except TypeError:
            problems.error("not_an_object", f"{where} is a {type(nodes).__name__}, not a collection of tree nodes",
                           source, where)
            return None
        try:
            links = tree_links(items, self.tree, nested, where)
            messages: dict[str, Message] = {}
            more: dict[str, list[Message]] = {}  # a node's messages after its first (a tool used within one answer)
            missing = reading.missing
            for node in items:
                raw = get(node.raw, self.tree["message"]) if "message" in self.tree else node.raw
                if raw is None:
                    continue  # a node without a message (the root)
                if self.items == "messages":
                    read = self._messages(node.at, [raw], reading)
                else:  # a Responses item: its own reading, the prompt before it left out
                    conv = self._conversation(record, node.at, [raw], reading)
                    read = None if conv is None else conv.messages[-1:]
                if read is None:
                    return None
                kept = [m for m in read if m.parts or m.role == "assistant"]  # an empty system or user message (a
                if kept:                                                        # hidden prompt) is no turn
                    messages[node.id], more[node.id] = kept[0], kept[1:]
            if reading.missing > missing:
                return None
            tree = TreeReading(items, links, messages, more)
            tools, prompt = self._tools(record, reading), self._prompt(record, where, None, reading, nodes)
            calls = tree.calls(prompt, tools)
            current = None
            if "current" in self.tree:
                found = jsonpath(record, self.tree["current"])
                current = as_text(found[0][1]) if found and found[0][1] is not None else None
            transcript = prompt + tree.path(tree.leaf(current, self.tree.get("current", "")))
        except TreeBroken as e:
            problems.error("tree_broken", f"the message tree {e.why}: which messages each call saw is not known",
                           source, e.at or where)
            return None
        return Conversation(id="", source=source, tools=tools, messages=transcript, explicit_calls=calls)

    def _items_conversation(self, record: Any, where: str, msgs: list, reading: Reading) -> Conversation:
        """``items: openai_responses``: the list holds Responses API items (``message``, ``reasoning``,
        ``function_call``, ``function_call_output``, ...), read by the Responses reader (an item type it does not
        know is a counted placeholder that ingestion reports as ``unknown_content``)."""
        messages = items_to_messages(msgs)
        return Conversation(id="", source=reading.source, tools=self._tools(record, reading),
                            messages=self._prompt(record, where, messages, reading) + messages)

    def _prompt(self, record: Any, where: str | None = None, messages: list[Message] | None = None,
                reading: Reading | None = None, raws: Any = None) -> list[Message]:
        """``mapping_prompt.prompt_messages`` for this mapping."""
        return prompt_messages(self.prompt, record, where, messages, reading, raws)

    def _message(self, raw: dict, role: str, at: str, reading: Reading) -> Message:
        """One message; a required mapped key that is absent is reported (``mapping_field_missing``), and so are
        tool calls under a key the mapping does not read (``content_not_mapped``; LobeChat keeps the call on the
        tool message that answers it)."""
        calls_key = self.tool_calls if role == "assistant" else None  # calls are read on the assistant's only
        reading.unread_calls(raw, {str(k).split(".")[0] for k in (self.role, self.content, calls_key, self.reasoning,
                                                                 self.observation, *self.tool_result.values(),
                                                                 *self.tree.values()) if k},  # a tree's children
                             role, at)
        if role == "tool":
            key = self.tool_result.get("content", "content")
            content = reading.required(raw, key, "tool_result.content", at)
            if isinstance(content, dict) and "type" not in content and "text" not in content:
                inner = next((content[k] for k in ("parts", "content") if isinstance(content.get(k), list)), None)
                content = inner if inner is not None else content  # a message object given as the result: its parts
            blocks = block_parts(content) if isinstance(content, list) else []
            if blocks and all(isinstance(p, ToolResultPart) for p in blocks):
                rid = as_text(get(raw, self.tool_result.get("id", "tool_call_id"))) or None
                if len(blocks) == 1 and blocks[0].call_id is None and rid:  # the message says which call
                    blocks = [replace(blocks[0], call_id=rid)]
                return Message("tool", blocks)  # results as typed blocks, each with its call's id
            text = content if isinstance(content, str) else as_text(content)
            if blocks and len(blocks) == len(content) and all(isinstance(p, TextPart) for p in blocks):
                text = "".join(p.text for p in blocks)  # a result given as text blocks: their text, joined
            return Message("tool", [ToolResultPart(as_text(get(raw, self.tool_result.get("id", "tool_call_id")))
                                                   or None, text)])
        calls = self._calls(raw, at, reading) if role == "assistant" and self.tool_calls else []
        thought = self._reasoning(raw) if role == "assistant" else []
        parts: list = []
        if self.content:
            # Content may be absent only beside tool calls or reasoning (a turn that only thinks and calls).
            value = (get(raw, self.content) if calls or thought
                     else reading.required(raw, self.content, "content", at))
            parts = block_parts(value)
        if role == "user" and parts and all(isinstance(p, ToolResultPart) for p in parts):
            return Message("tool", parts)  # Anthropic-style: tool results are user-role content blocks
        return Message(role, thought + parts + calls + media_beside(raw))  # type: ignore[arg-type]

    def _reasoning(self, raw: dict) -> list[ReasoningPart]:
        """The assistant message's reasoning (the ``reasoning`` key's text), when the mapping declares it."""
        if not self.reasoning and summary_texts(raw) is not None:  # a reasoning record: its summary texts
            return [ReasoningPart(t) for t in summary_texts(raw) or []]
        text = as_text(get(raw, self.reasoning)) if self.reasoning else ""
        return [ReasoningPart(text)] if text else []

    def _calls(self, raw: dict, at: str, reading: Reading) -> list[ToolCallPart]:
        """The assistant message's tool calls; their absence and an absent name are tallied/reported."""
        keys = self.tool_call
        found = get(raw, self.tool_calls or "", ABSENT)
        if reading.tool_calls is not None:
            reading.tool_calls.observe(raw, found, self._message_keys())
        out = []
        calls = [found] if isinstance(found, dict) else as_list(None if found is ABSENT else found)  # one, or a list
        for k, call in enumerate(calls):
            where = f"{at}.{self.tool_calls}[{k}]"
            call = decoded(call)  # a call written as JSON text (verifiers' results)
            if call is None:
                continue
            if not isinstance(call, dict):
                reading.problems.error("not_an_object", f"tool call is a {type(call).__name__}, not an object: "
                                       "its name and arguments cannot be read", reading.source, where)
                reading.missing += 1
                continue
            arguments = get(call, keys.get("arguments", "arguments"), ABSENT)
            reading.arguments.observe(call, arguments, {keys.get(f, f).split(".")[0] for f in ("id", "name")})
            name = reading.required(call, keys.get("name", "name"), "tool_call.name", where)
            out.append(ToolCallPart.from_raw(as_text(get(call, keys.get("id", "id"))) or None, as_text(name),
                                             None if arguments is ABSENT else arguments))
        return out

    def _message_keys(self) -> set[str]:
        """The top-level keys of a non-tool message that the mapping reads."""
        return {k.split(".")[0] for k in (self.role, self.content, self.reasoning, self.tool_calls) if k}
