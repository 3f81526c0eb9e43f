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

Other shapes, with the optional keys:

    records: file                  # the whole file is one record: with messages: $, the file IS the message list
    records: messages              # each record (line / array item) is ONE message, at the messages path
    records: lists                 # the document is an object of lists of records ({"post": [...], "patch": [...]})
    group: $.session_id            #   ... and a change of this value starts a new conversation
    response: $.outputs.choices[0].message   # a call's output beside its input (messages = the call's input);
                                   #   calls whose input extends the previous input + output form one conversation
    observation: observation       # key of an agent step (assistant message) holding its tool calls' result
    prompt: {system: $.system_prompt, user: $.task}   # messages put before the list (a task beside its steps)
    roles: {"*": assistant}        # "*": the role of every message whose role value is absent or not listed
    items: openai_responses        # the list holds OpenAI Responses API items (function_call, reasoning, ...)
    tree:                          # the messages path finds a message TREE: nodes (an object keyed by node id,
      parent: parent               #   or a list of nodes with an id) linked by a parent id and/or
      children: children           #   a list of children ids (at least one of the two), each node holding
      message: message             #   its message under this key (absent: the node is the message; null: none)
      current: $.current_node      #   optional JSONPath of the current node's id: the transcript's leaf

JSONPath here is the common subset: ``$`` (the record), ``.key``, ``['key with spaces']``, ``[0]`` and
``[*]``; a step into a string holding JSON (an envelope's ``payload`` written as text) decodes it. Records
are the lines of a JSONL file, the elements of a top-level array, or the document (``records: file``: the
document even when it is an array). ``tracedraft datasets infer-mapping FILE`` writes the mapping the general
path inferred for a file, as a starting point.
With ``response``, a string at the ``messages`` path is the call's input as the user's text (a run's input).
With ``records: lists``, an item that holds no message at all (another kind of event) is skipped, counted in a
``records_not_calls`` warning. With ``response``, a record that repeats another record's call (the same
output, after the same input or a beginning of it: a trace or parent span restating its generation) is read
once (``repeated_calls`` warning).
A tree is read as one conversation per record: every assistant message is one LLM call whose context is the
messages of its ancestors (root first; a run of assistant nodes each the only child of the one before is one
answer), so each branch's calls are read with their own context and none twice; the transcript is the path to
the ``current`` node (else to the last leaf). A parent id that names no node, a cycle, or a ``current`` id
that names no node is ``tree_broken``.
A role value the mapping does not list is an error (``unknown_role``) naming the value and where; a path
that finds nothing is ``no_messages_found``; a required key that is not in a record (``content`` of a message
without tool calls, the tool call's ``name``, the tool result's ``content``) is ``mapping_field_missing`` at that
record and field, and its conversation is dropped; an optional key (``tool_calls``, ``tool_call.arguments``) that
matches nowhere in a file whose messages or calls hold other, unmapped data is ``mapping_field_never_matched``
for the file, and so is a declared ``tools`` or ``id`` path that finds nothing in any record of the file
(docs/traces.md: ``ok`` means the content was understood); a tool call whose result is never found is
``tool_result_not_found`` (the mapping does not reach the results: declare ``observation`` or the tool
messages); a ``response`` path that finds nothing in a record is ``mapping_field_missing``; a mapping file with a
mistake raises
``TraceError`` (``bad_mapping``) before anything is read.

Use: ``tracedraft datasets validate --mapping support-bot.mapping.yaml traces/*.jsonl`` or
``ingest(paths, mapping="support-bot.mapping.yaml")``. The service keeps a mapping with its dataset (the
``mapping`` part of ``POST /v1/datasets``, ``tracedraft datasets upload --mapping``, ``tracedraft run
--mapping``): checked here when uploaded, stored content-addressed, and used by every validation of that
dataset. A mapping file is untrusted input there: drafters.traces.mapping_file reads it, type-checks and
bounds its values (``MAX_VALUES``, ``MAX_NAME``), and its paths only ever address the records' JSON, never files.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import IO, Any

from drafters.traces.formats import _reading
from drafters.traces.formats._chains import CallChains
from drafters.traces.formats._content import as_list, as_text, tool_defs
from drafters.traces.formats._spellings import (
    ROLE_KEYS,
    SYSTEM_KEYS,
    block_parts,
    failed_turn,
    get,
    role_of,
    sibling_system,
    summary_texts,
    system_not_read,
    system_text,
)
from drafters.traces.formats._text_calls import with_text_tool_calls
from drafters.traces.formats._turns import join_turns, split_at_results
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.formats.openai_responses import items_to_messages
from drafters.traces.json_paths import jsonpath, unflatten
from drafters.traces.model import (
    Conversation,
    LLMCall,
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
    records: str = "each"  # each | file | messages (see the module docstring)
    group: str | None = None  # records: messages: a JSONPath whose value starts a new conversation when it changes
    response: str | None = None  # JSONPath of a call's output beside its input messages
    observation: str | None = None  # key of an agent step (assistant message) holding its tool calls' result
    prompt: dict[str, str] = field(default_factory=dict)  # {system|user: JSONPath}: messages put before the list
    unflatten: bool = False  # records' dotted keys (span attributes "llm.input_messages.0.message.role") nested
    items: str = "messages"  # messages | openai_responses (the list holds Responses API items, not messages)
    tree: dict[str, str] = field(default_factory=dict)  # {parent, children, message, id, current}: a message tree
    label: str | None = None  # the format name in reports (the general path's "generic"); default mapping:NAME
    # the general path: two unflagged assistant messages with nothing between them are refused (ambiguous_turns)
    # instead of read as two calls (formats/_turns.py)
    strict_turns: bool = False

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
        for key in ("records", "messages", "group", "role", "roles", "content", "reasoning", "tool_calls", "tool_call",
                    "tool_result", "observation", "response", "prompt", "tools", "id", "unflatten", "items", "tree"):
            value = getattr(self, key)
            if value != getattr(defaults, key) or key in ("messages", "role", "roles"):
                out[key] = value
        return out

    def parse(self, stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
        """The file's conversations (see ``read``)."""
        yield from self.read(self._records(stream, filename, problems, self.format_name), filename, problems)

    def read(self, records: Iterator[tuple[Source, Any]], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
        """The conversations of a file's records: one per message list the ``messages`` path finds in each
        record; with ``records: messages`` one per run of message records (``group``); with ``response`` the
        calls, chained into conversations (``formats._chains``)."""
        fmt = self.format_name
        stem = filename.rsplit("/", 1)[-1]
        if self.unflatten:
            records = ((source, unflatten(record)) for source, record in records)
        reading_uses = self._optional_uses()
        record_paths = [_PathUse(name, path, "record") for name, path in
                        (("tools", self.tools), ("id", self.id), ("response", self.response),
                         *((f"prompt.{k}", v) for k, v in self.prompt.items())) if path]
        if self.records == "messages":
            yield from self._message_records(records, filename, fmt, problems, reading_uses)
        else:
            chains = CallChains() if self.response else None
            starts: list[tuple[Conversation, Source]] = []  # inputs without output, until a later record answers
            merged = other_events = 0
            for source, record in (self._batch_items(records) if self.records == "lists" else records):
                if self.records == "lists" and not jsonpath(record, self.messages) and not _holds_message(record):
                    other_events += 1  # an event of another kind in the batch (a score, a span without messages)
                    continue
                for use in record_paths:  # a declared record path that finds nothing anywhere is a mapping mistake
                    use.observe(record if isinstance(record, dict) else {}, jsonpath(record, use.key) or _ABSENT,
                                {_root_key(self.messages)})
                for conv in self._record(record, source, stem, fmt, _Reading(source, problems, *reading_uses)):
                    if chains is None:
                        yield conv
                    elif not self._add_call(chains, record, conv, _Reading(source, problems, *reading_uses)):
                        starts.append((conv, source))
                    else:  # the same call's start, written before it (a run posted, then patched): read once
                        merged += sum(1 for c, _ in starts if c.messages == conv.messages)
                        starts = [(c, s) for c, s in starts if c.messages != conv.messages]
            for _, source in starts:
                problems.error("mapping_field_missing", f"the mapping's response path {self.response} finds nothing "
                               "in this record: the call's output would be lost", source, self.response)
            if merged:
                problems.warning("run_starts_merged", f"{merged} record(s) held only the input of a call that a later "
                                 "record repeats with its output (a run posted, then updated): each is read once, "
                                 "as that later record", Source(fmt, filename))
            if other_events:
                problems.warning("records_not_calls", f"{other_events} record(s) of the batch hold no message (events "
                                 "of another kind): not read", Source(fmt, filename))
            if chains is not None:
                repeated = chains.drop_repeats()
                kinds = sorted({k for c in chains.chains for call in c.calls
                                if (k := chains.kinds.get(id(call))) is not None})
                if chains.identical:  # read by shape: a call made twice or one record written twice, not guessed
                    problems.error("ambiguous_shape", f"{chains.identical} record(s) are identical copies of another "
                                   "record (same input, same output, same fields): whether the call was made twice "
                                   "(a recorder) or one record was written twice is not guessed", Source(fmt, filename))
                    chains.chains.clear()
                    repeated = 0
                elif len(kinds) > 1:  # a trace beside its generations, whose calls it does not simply restate
                    problems.error("ambiguous_shape", f"calls were read from records of {len(kinds)} kinds (type "
                                   f"{', '.join(kinds[:5])}) that do not repeat each other: whether one kind restates "
                                   "the other's calls (a trace or parent span over its generations) is not guessed, "
                                   "and reading both could count a call twice", Source(fmt, filename))
                    chains.chains.clear()
                    repeated = 0
                if repeated:
                    problems.warning("repeated_calls", f"{repeated} record(s) repeat another record's call (the same "
                                     "output after the same input, or after a beginning of it: a trace or parent span "
                                     "restating its generation): each call is read once", Source(fmt, filename))
                yield from chains.conversations()
        for use in [*reading_uses, *record_paths]:
            if use is not None:
                use.report(Source(fmt, filename), problems)

    def _records(self, stream: IO[str], filename: str, problems: ProblemSink, fmt: str) -> Iterator[tuple[Source, Any]]:
        """The file's records: lines, array items or the document (``each``, ``messages``), or the whole file as
        one record (``file``: a top-level array stays one list)."""
        if self.records == "file":
            doc = _reading.load_json(stream, filename, problems, fmt)
            if doc is not None:
                yield Source(fmt, filename, record="$"), doc
            return
        yield from _reading.load_json_or_lines(stream, filename, problems, fmt)

    def _record(self, record: Any, source: Source, stem: str, fmt: str, reading: _Reading) -> Iterator[Conversation]:
        """The conversations of one record (one per message list found)."""
        found = jsonpath(record, self.messages)
        if not found:
            reading.problems.error("no_messages_found", f"the mapping's messages path {self.messages} finds nothing",
                                   source)
            return
        for where, msgs in found:
            if self.response and isinstance(msgs, str) and msgs.strip() and not self.tree:
                conv: Conversation | None = Conversation(id="", source=source, tools=self._tools(record),
                                                         messages=self._prompt(record) + [Message("user", [TextPart(msgs)])])
            elif self.tree:
                conv = self._tree_conversation(record, where, msgs, reading)
            elif not isinstance(msgs, list):
                reading.problems.error("not_an_object", f"{where} is a {type(msgs).__name__}, not a list of "
                                       "messages", source, where)
                continue
            else:
                conv = self._conversation(record, where, msgs, reading)
            beside = None if self.tree else self._answer_beside(record, where, conv)
            if beside is not None:
                reading.problems.error("mapping_field_never_matched", f"the record holds an assistant answer at "
                                       f"{beside}, beside the messages the mapping reads, which end before it: the "
                                       "call's output would be lost (declare it: response: PATH)", source, "response")
                continue
            if conv is not None:
                loc = source.line if source.line is not None else source.record
                suffix = f"#{where}" if len(found) > 1 else ""
                cid = as_text(jsonpath(record, self.id)[0][1]) if self.id and jsonpath(record, self.id) else loc
                conv.id = f"{fmt}:{stem}:{cid}{suffix}"
                for call in conv.explicit_calls or []:
                    call.conversation_id = conv.id
                yield conv

    def _answer_beside(self, record: Any, where: str, conv: Conversation | None) -> str | None:
        """Without a declared ``response``, the path of an assistant message stored beside a message list that
        ends before the model's answer (a request/response record read as if it were a transcript), else None."""
        if self.response or conv is None or not conv.messages or conv.messages[-1].role == "assistant":
            return None
        assistant = {v for v, r in self.roles.items() if r == "assistant"}
        return _assistant_path(record, where, self.role, assistant)

    def _add_call(self, chains: CallChains, record: Any, conv: Conversation, reading: _Reading) -> bool:
        """``conv`` is one call's input; its output is at the ``response`` path (a message, a list of messages
        or the assistant's text). False for a record without it: ``read`` reports it (``mapping_field_missing``,
        the call is lost) unless a later record repeats the input with its output."""
        found = jsonpath(record, self.response or "$")
        out = found[0][1] if found else _ABSENT
        if out is _ABSENT or out is None:
            return False  # reported by ``read`` unless a later record holds this call's output
        raws = out if isinstance(out, list) else [out]
        parts: list = []
        if self.items == "openai_responses":
            raws, parts = [], [p for m in items_to_messages(out if isinstance(out, list) else [out]) for p in m.parts]
        for i, raw in enumerate(raws):
            if isinstance(raw, dict):
                parts += self._message(raw, "assistant", f"{found[0][0]}[{i}]", reading).parts
            else:
                parts += block_parts(raw)
        model = next((m for m in (get(r, "model") for r in raws if isinstance(r, dict)) if isinstance(m, str)), None)
        kind = record.get("type") if isinstance(record, dict) else None
        pieces, _ = split_at_results([Message("assistant", parts, model=model)], [None])
        if not any(m.role == "assistant" for m in pieces):
            pieces = [Message("assistant", parts, model=model)]
        context = conv.messages
        for piece in pieces:  # tool results inside the output end a call; what follows them is the next call
            if piece.role == "assistant":
                call = chains.add(conv.id, conv.source, conv.tools, context, piece)
                chains.kinds[id(call)] = kind if isinstance(kind, str) else None
                if self.label == "generic":
                    chains.records[id(call)] = compact_json(record, sort_keys=True)
            context = [*context, piece]
        return True

    def _batch_items(self, records: Iterator[tuple[Source, Any]]) -> Iterator[tuple[Source, Any]]:
        """``records: lists``: the document is an object of lists whose items are the records (a batch upload,
        LangSmith's ``{"post": [runs], "patch": [runs]}``); a value that is not a list is not read."""
        for source, doc in records:
            for key, items in (doc.items() if isinstance(doc, dict) else []):
                for i, item in enumerate(items if isinstance(items, list) else []):
                    yield replace(source, record=f"$.{key}[{i}]", line=None), item

    def _message_records(self, records: Iterator[tuple[Source, Any]], filename: str, fmt: str, problems: ProblemSink,
                         uses: tuple[_PathUse | None, _PathUse]) -> Iterator[Conversation]:
        """``records: messages``: each record holds one message (at the ``messages`` path); consecutive records
        with the same ``group`` value form one conversation. Records where the path finds nothing (session
        metadata, usage events) are not messages: they are counted in one ``records_not_messages`` warning."""
        current: tuple[Any, Source, list] | None = None  # (group value, first source, raw messages)
        skipped, stem = 0, filename.rsplit("/", 1)[-1]
        for source, record in records:
            found = jsonpath(record, self.messages)
            if not found or not isinstance(found[0][1], dict):
                if self.label == "generic" and _holds_message(record):  # read by shape: never skip a message
                    problems.error("content_not_mapped", f"the record holds a message outside {self.messages}, "
                                   "where the file's other messages are: it is not read by the inferred mapping",
                                   source)
                skipped += 1
                continue
            key = as_text(jsonpath(record, self.group)[0][1]) if self.group and jsonpath(record, self.group) else None
            if current is not None and key != current[0]:
                yield from self._run(current, stem, fmt, problems, uses)
                current = None
            if current is None:
                current = (key, source, [])
            current[2].append(found[0][1])
        if current is not None:
            yield from self._run(current, stem, fmt, problems, uses)
        if skipped:
            problems.warning("records_not_messages", f"{skipped} record(s) hold no message at {self.messages} "
                             "(metadata or other events): not read", Source(fmt, filename))

    def _run(self, run: tuple[Any, Source, list], stem: str, fmt: str, problems: ProblemSink,
             uses: tuple[_PathUse | None, _PathUse]) -> Iterator[Conversation]:
        key, source, msgs = run
        conv = self._conversation({}, "$", msgs, _Reading(source, problems, *uses))
        if conv is not None:
            loc = source.line if source.line is not None else source.record
            conv.id = f"{fmt}:{stem}:{key if key is not None else loc}"
            yield conv

    def _optional_uses(self) -> tuple[_PathUse | None, _PathUse]:
        """(tool_calls, tool_call.arguments): the optional keys whose never matching in a file is checked
        (``_PathUse.report``); None when the mapping declares no tool calls. (``reasoning`` is not checked:
        a model that never reasons leaves it unmatched with nothing lost.)"""
        calls = _PathUse("tool_calls", self.tool_calls, "assistant message") if self.tool_calls else None
        return calls, _PathUse("tool_call.arguments", self.tool_call.get("arguments", "arguments"), "tool call")

    def _conversation(self, record: Any, where: str, msgs: list, reading: _Reading) -> Conversation | None:
        """The record's messages at ``where``; None (reported) when one cannot be read or a required mapped
        key is absent (its content would be lost)."""
        messages: list[Message] = []
        raws: list[Any] = []  # the raw message of each message (None: an observation), for formats._turns
        source, problems = reading.source, reading.problems
        missing_before = reading.missing
        if self.items == "openai_responses":
            return self._items_conversation(record, where, msgs, reading)
        handoff: tuple[int, str, Any] | None = None  # (messages kept, path, step id) of a context handoff
        for i, raw in enumerate(msgs):
            at = f"{where}[{i}]"
            if not isinstance(raw, dict):
                problems.error("not_an_object", f"message is a {type(raw).__name__}, not an object", source, at)
                return None
            value = get(raw, self.role)
            value = str(value).lower() if isinstance(value, bool) else value  # a boolean role key: "true" / "false"
            role = self.roles.get(value) if isinstance(value, str) else None
            role = role or self.roles.get("*")  # the declared role of every message not otherwise listed
            if role is None:
                why = (f"has no role key {self.role!r}" if value is _ABSENT or value is None
                       else f"has role {value!r} (key {self.role}), which is not in the mapping's roles")
                problems.error("unknown_role", f"the message {why}", source, at)
                return None
            message = self._message(raw, role, at, reading)
            if role == "assistant" and failed_turn(raw):
                if not message.parts:  # a request that failed before any output: no model turn, no context
                    problems.warning("failed_turn_skipped", "an assistant message with no content records a "
                                     "failed request (stop reason / error message): no model turn, not read",
                                     source, at)
                    continue
                message.failed = True  # its calls that no tool message answers were never run
            if handoff is None and handed_off(raw, self.observation, role):
                # the context after this step is recorded elsewhere: cut before a handoff step, after a call's step
                handoff = (len(messages) + (role == "assistant"), at, raw.get("step_id"))
            if role == "assistant" and messages and messages[-1].role == "assistant" and \
                    _response_id(raw) is not None and _response_id(raw) == _response_id(msgs[i - 1]):
                messages[-1].parts.extend(message.parts)  # one response written as several records (one per block)
                continue
            for m in [message, *self._observation(raw, message)]:
                if m.role == "tool" and messages and messages[-1].role == "tool":
                    messages[-1].parts.extend(m.parts)
                else:
                    messages.append(m)
                    raws.append(raw if m is message else None)
        if reading.missing > missing_before:
            return None
        if handoff is not None:
            messages = _cut_at_handoff(messages, handoff, reading)
        messages, why = join_turns(messages, raws[:len(messages)], self.role, strict=self.strict_turns)
        if why is not None:
            problems.error("ambiguous_turns", f"{why} (docs/traces.md, consecutive assistant messages)", source, where)
            return None
        tools = jsonpath(record, self.tools) if self.tools else []
        return Conversation(id="", source=source, tools=tool_defs(tools[0][1]) if tools else [],
                            messages=self._prompt(record, where, messages, reading) + messages)

    def _tools(self, record: Any) -> list:
        tools = jsonpath(record, self.tools) if self.tools else []
        return tool_defs(tools[0][1]) if tools else []

    def _tree_conversation(self, record: Any, where: str, nodes: Any, reading: _Reading) -> Conversation | None:
        """``tree``: the record's message tree as one conversation with explicit calls (see the module
        docstring); None (reported) for a broken tree or a message that cannot be read."""
        tree, problems, source = self.tree, reading.problems, reading.source
        id_key = tree.get("id", "id")
        nested: dict[str, str | None] | None = None  # a nested tree: each node's parent, by where it sits
        if isinstance(nodes, dict):
            items = [(str(k), n, f"{where}['{k}']") for k, n in nodes.items()]
        elif isinstance(nodes, list) and "children" in tree and any(
                isinstance(c, dict) for n in nodes for c in as_list(get(n, tree["children"]))):
            items, nested = self._nested_items(nodes, where, id_key)
        elif isinstance(nodes, list):
            items = [(as_text(get(n, id_key)), n, f"{where}[{i}]") for i, n in enumerate(nodes)]
        else:
            problems.error("not_an_object", f"{where} is a {type(nodes).__name__}, not a collection of tree nodes",
                           source, where)
            return None

        def broken(why: str, at: str) -> None:
            problems.error("tree_broken", f"the message tree {why}: which messages each call saw is not known",
                           source, at)

        parent: dict[str, str | None] = {}
        for nid, node, at in items:
            if not isinstance(node, dict) or not nid:
                return broken("has a node that is not an object with an id", at)
            value = get(node, tree["parent"]) if "parent" in tree and nested is None else None
            # a nil id ("", "00000000-0000-...") names no parent: the node is a root
            parent[nid] = as_text(value) if value is not None and as_text(value).strip("0-") else None
            if nested is not None:
                parent[nid] = nested[nid]
        for nid, node, at in items:
            for child in as_list(get(node, tree["children"])) if "children" in tree and nested is None else []:
                child = as_text(child)
                if child not in parent:
                    return broken(f"names a child {child!r} that is not one of its nodes", at)
                if parent[child] not in (None, nid):
                    return broken(f"gives node {child!r} two parents", at)
                parent[child] = nid
        children: dict[str | None, list[str]] = {}
        for nid, p in parent.items():
            if p is not None and p not in parent:
                return broken(f"names a parent {p!r} that is not one of its nodes", where)
            children.setdefault(p, []).append(nid)
        messages: dict[str, Message] = {}
        missing = reading.missing
        for nid, node, at in items:
            raw = get(node, tree["message"]) if "message" in tree else node
            if raw is None:
                continue  # a node without a message (the root)
            msgs = self._conversation(record, at, [raw], reading)
            if msgs is None:
                return None
            if msgs.messages and (msgs.messages[-1].parts or msgs.messages[-1].role == "assistant"):
                messages[nid] = msgs.messages[-1]  # an empty system or user message (a hidden prompt) is no turn
        if reading.missing > missing:
            return None

        def joined(nid: str) -> bool:  # an assistant node continuing its parent's answer (its only child)
            p = parent[nid]
            return p is not None and nid in messages and p in messages and messages[nid].role == "assistant" == \
                messages[p].role and len(children.get(p, [])) == 1

        def path(nid: str | None) -> list[Message]:
            ids: list[str] = []
            seen: set[str] = set()
            while nid is not None:
                if nid in seen:
                    raise ValueError(nid)
                seen.add(nid)
                ids.append(nid)
                nid = parent[nid]
            out: list[Message] = []
            for i in reversed(ids):
                m = messages.get(i)
                if m is None:
                    continue
                if out and (joined(i) or (m.role == "tool" == out[-1].role)):
                    out[-1] = Message(out[-1].role, [*out[-1].parts, *m.parts], model=out[-1].model or m.model)
                else:
                    out.append(m)
            return out

        tools, prompt = self._tools(record), self._prompt(record)
        calls: list[LLMCall] = []
        try:
            for nid, _, _ in items:
                if nid not in messages or messages[nid].role != "assistant" or joined(nid):
                    continue
                end = nid
                while len(children.get(end, [])) == 1 and joined(children[end][0]):
                    end = children[end][0]
                answer = path(end)[-1]
                context = prompt + path(parent[nid])
                if context:
                    calls.append(LLMCall("", len(calls), tools, context, answer))
            leaf = None
            if "current" in tree:
                found = jsonpath(record, tree["current"])
                leaf = as_text(found[0][1]) if found and found[0][1] is not None else None
                if leaf is not None and leaf not in parent:
                    return broken(f"has no node {leaf!r}, which {tree['current']} names as the current one",
                                  tree["current"])
            if leaf is None:
                leaves = [nid for nid, _, _ in items if not children.get(nid)]
                leaf = leaves[-1] if leaves else None
            transcript = prompt + path(leaf)
        except ValueError as exc:
            return broken(f"has a cycle through node {exc}", where)
        return Conversation(id="", source=source, tools=tools, messages=transcript,
                            explicit_calls=calls)

    def _nested_items(self, nodes: list, where: str, id_key: str) -> tuple[list, dict[str, str | None]]:
        """A nested tree's nodes (children holding the child nodes), depth first, as (id, node, path), and each
        node's parent id (the node holding it)."""
        key = self.tree["children"]
        items: list[tuple[str, Any, str]] = []
        parents: dict[str, str | None] = {}
        stack = [(n, f"{where}[{i}]", None) for i, n in reversed(list(enumerate(nodes)))]
        while stack:
            node, at, up = stack.pop()
            nid = as_text(get(node, id_key)) if isinstance(node, dict) else ""
            items.append((nid, node, at))
            parents[nid] = up
            kids = get(node, key) if isinstance(node, dict) else None
            stack += [(k, f"{at}.{key}[{j}]", nid) for j, k in reversed(list(enumerate(kids)))] \
                if isinstance(kids, list) else []
        return items, parents

    def _items_conversation(self, record: Any, where: str, msgs: list, reading: _Reading) -> Conversation:
        """``items: openai_responses``: the list holds Responses API items (``message``, ``reasoning``,
        ``function_call``, ``function_call_output``, ...), read by the Responses reader (an item type it does not
        know is a counted placeholder that ingestion reports as ``unknown_content``)."""
        tools = jsonpath(record, self.tools) if self.tools else []
        messages = items_to_messages(msgs)
        return Conversation(id="", source=reading.source, tools=tool_defs(tools[0][1]) if tools else [],
                            messages=self._prompt(record, where, messages, reading) + messages)

    def _prompt(self, record: Any, where: str | None = None, messages: list[Message] | None = None,
                reading: _Reading | None = None) -> list[Message]:
        """The messages the ``prompt`` paths give (system, then user), put before the message list. Without a
        declared ``prompt.system``, a system prompt beside the list at ``where`` (``_spellings.SYSTEM_KEYS`` in the
        object holding the list) is the first message; one that is not read is reported, never dropped silently."""
        out = []
        for role in ("system", "user"):
            found = jsonpath(record, self.prompt[role]) if role in self.prompt else []
            text = system_text(found[0][1]) if found and role == "system" else None
            parts = [TextPart(text)] if text is not None else block_parts(found[0][1]) if found else []
            if parts:
                out.append(Message(role, parts))  # type: ignore[arg-type]
        holder = _holder(record, where) if where is not None and reading is not None else None
        if holder is not None and reading is not None:
            declared = {p.split(".")[-1] for p in self.prompt.values()}  # read as declared, not twice
            rest = {k: v for k, v in holder.items() if k not in declared}
            head = out[:1] if out and out[0].role == "system" else messages
            prompt, not_read = sibling_system(rest, head)
            if "system" not in self.prompt:
                out[:0] = prompt
            elif prompt:  # a declared system path that found nothing here: the other keys are not read
                not_read = [k for k in SYSTEM_KEYS if system_text(rest.get(k)) is not None]
            system_not_read(not_read, reading.source, reading.problems)
        return out

    def _message(self, raw: dict, role: str, at: str, reading: _Reading) -> Message:
        """One message; a required mapped key that is absent is reported (``mapping_field_missing``)."""
        if role == "tool":
            key = self.tool_result.get("content", "content")
            content = reading.required(raw, key, "tool_result.content", at)
            if isinstance(content, dict) and "type" not in content and "text" not in content:
                inner = next((content[k] for k in ("parts", "content") if isinstance(content.get(k), list)), None)
                content = inner if inner is not None else content  # a message object given as the result: its parts
            blocks = block_parts(content) if isinstance(content, list) else []
            if blocks and all(isinstance(p, ToolResultPart) for p in blocks):
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
        return Message(role, thought + parts + calls)  # type: ignore[arg-type]

    def _observation(self, raw: dict, message: Message) -> list[Message]:
        """An agent step's tool result (the ``observation`` key beside its calls) as the tool message after it: a
        list holds one result per call, in order; anything else is the result of the step's (first) call."""
        if not self.observation or message.role != "assistant":
            return []
        value = get(raw, self.observation, _ABSENT)
        if value is _ABSENT or value is None:
            return []
        calls = message.tool_calls
        listed = _result_list(value)
        if listed is not None:  # ATIF: {"results": [{"source_call_id", "content"}, ...]}
            if not calls:  # no call to answer: the environment's reply (a parser's complaint) is the next input
                text = "\n".join(c for _, c in listed if c)
                return [Message("user", [TextPart(text)])] if text else []
            by_id = {c.id: c for c in calls if c.id}
            results = []
            for i, (rid, content) in enumerate(listed):
                call = by_id.get(rid) if rid is not None else calls[i] if i < len(calls) else None
                results.append(ToolResultPart(call.id if call else rid, content, name=call.name if call else None))
            return [Message("tool", results)]
        values = value if isinstance(value, list) and len(value) == len(calls) > 1 else [value]
        results = [ToolResultPart(calls[i].id if i < len(calls) else None, v if isinstance(v, str) else as_text(v),
                                  name=calls[i].name if i < len(calls) else None) for i, v in enumerate(values)]
        return [Message("tool", results)]

    def _reasoning(self, raw: dict) -> list[ReasoningPart]:
        """The assistant message's reasoning (the ``reasoning`` key's text), when the mapping declares it."""
        if not self.reasoning and summary_texts(raw) is not None:  # a reasoning record: its summary texts
            return [ReasoningPart(t) for t in summary_texts(raw) or []]
        text = as_text(get(raw, self.reasoning)) if self.reasoning else ""
        return [ReasoningPart(text)] if text else []

    def _calls(self, raw: dict, at: str, reading: _Reading) -> list[ToolCallPart]:
        """The assistant message's tool calls; their absence and an absent name are tallied/reported."""
        keys = self.tool_call
        found = get(raw, self.tool_calls or "", _ABSENT)
        if reading.tool_calls is not None:
            reading.tool_calls.observe(raw, found, self._message_keys())
        out = []
        calls = [found] if isinstance(found, dict) else as_list(None if found is _ABSENT else found)  # one, or a list
        for k, call in enumerate(calls):
            if not isinstance(call, dict):
                continue
            where = f"{at}.{self.tool_calls}[{k}]"
            arguments = get(call, keys.get("arguments", "arguments"), _ABSENT)
            reading.arguments.observe(call, arguments, {keys.get(f, f).split(".")[0] for f in ("id", "name")})
            name = reading.required(call, keys.get("name", "name"), "tool_call.name", where)
            out.append(ToolCallPart.from_raw(as_text(get(call, keys.get("id", "id"))) or None, as_text(name),
                                             None if arguments is _ABSENT else arguments))
        return out

    def _message_keys(self) -> set[str]:
        """The top-level keys of a non-tool message that the mapping reads."""
        return {k.split(".")[0] for k in (self.role, self.content, self.reasoning, self.tool_calls) if k}


_ABSENT = object()  # get()'s default: a mapped key that is not in the record
_RESULT_IDS = ("source_call_id", "tool_call_id", "call_id", "tool_use_id", "id")
SUBAGENT_KEYS = ("subagent_trajectory_ref", "subagent_trajectory_refs")  # ATIF: a result kept in another file


def handed_off(raw: dict, observation: str | None, role: str) -> bool:
    """Whether an agent step's observation says the context went on in another trajectory (ATIF
    ``observation.results[].subagent_trajectory_ref``): on a step that is not the agent's (Harbor's
    terminus-2 writes its context summarization as a ``system`` step referring to the summary, questions and
    answers sub-agents, after which the agent starts again from a summary this file does not hold), or as a
    call's result whose content is left to the sub-agent's trajectory (what the agent was shown is not here)."""
    value = get(raw, observation, None) if observation else None
    items = value.get("results") if isinstance(value, dict) else None
    for r in items if isinstance(items, list) else []:
        if isinstance(r, dict) and any(r.get(k) not in (None, [], {}, "") for k in SUBAGENT_KEYS) and \
                (role != "assistant" or all(r.get(k) in (None, "") for k in ("content", "output", "result"))):
            return True
    return False


def _cut_at_handoff(messages: list[Message], handoff: tuple[int, str, Any], reading: _Reading) -> list[Message]:
    """The messages before a context handoff, when calls follow it: their contexts are what the agent saw after
    the handoff (a summary, a sub-agent's answer), which another trajectory file records; reading them on
    from the steps before would give them contexts the model never saw, so they are refused
    (``handoff_context_not_recorded``, naming the file and step). Nothing is cut when no call follows."""
    kept, at, step_id = handoff
    refused = sum(1 for m in messages[kept:] if m.role == "assistant")
    if not refused:
        return messages
    step = f"step {step_id} ({at})" if step_id is not None else at
    reading.problems.error(
        "handoff_context_not_recorded",
        f"{reading.source.where()}: {step} hands the context off to another trajectory (subagent_trajectory_ref: a "
        f"context summarization or a delegated result); the {refused} LLM call(s) after it saw a context this file "
        "does not record, so they are refused (the calls before it are read)", reading.source, at)
    return messages[:kept]


def _result_list(value: Any) -> list[tuple[str | None, str]] | None:
    """An observation written as a list of results (ATIF ``{"results": [{"source_call_id", "content"}]}``):
    ``(call id or None, text)`` per result; None for any other observation."""
    items = value.get("results") if isinstance(value, dict) else None
    if not isinstance(items, list) or not items or not all(isinstance(r, dict) for r in items):
        return None
    if not all(any(k in r for k in ("content", "output", "result", *_RESULT_IDS)) for r in items):
        return None
    out = []
    for r in items:
        rid = next((r[k] for k in _RESULT_IDS if isinstance(r.get(k), str) and r[k]), None)
        content = next((r[k] for k in ("content", "output", "result") if k in r), None)
        text = "".join(p.text for p in block_parts(content) if isinstance(p, TextPart)) \
            if isinstance(content, list) else as_text(content) if content is not None else ""
        out.append((rid, text))
    return out
_RESPONSE_IDS = ("message_id", "messageId", "response_id", "responseId", "requestId", "message.id", "id")


def _response_id(raw: Any) -> str | None:
    """The id of the model response an assistant record belongs to, when the record carries one."""
    value = next((get(raw, k) for k in _RESPONSE_IDS if isinstance(get(raw, k), str) and get(raw, k)), None)
    return value if isinstance(value, str) else None


def _assistant_path(value: Any, skip: str, role_key: str, assistant: set, path: str = "$", depth: int = 0) -> str | None:
    """The first path (outside ``skip``) of an object whose ``role_key`` is an assistant role value."""
    if depth > 5 or path == skip:
        return None
    if isinstance(value, dict):
        if get(value, role_key) in assistant:
            return path
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value[:50])  # type: ignore[assignment]
    else:
        return None
    for k, v in items:
        hit = _assistant_path(v, skip, role_key, assistant, f"{path}[{k}]" if isinstance(k, int) else f"{path}.{k}",
                              depth + 1)
        if hit is not None:
            return hit
    return None


def _holds_message(value: Any, depth: int = 0) -> bool:
    """Whether a record holds a message anywhere (an object with a role in a known spelling)."""
    if depth > 8:
        return False
    if isinstance(value, dict):
        if any(role_of(value.get(k)) for k in ROLE_KEYS):
            return True
        value = list(value.values())
    return isinstance(value, list) and any(_holds_message(v, depth + 1) for v in value[:1000])


def _holds_data(value: Any) -> bool:
    """True for a value that can hold calls or arguments: a non-empty object or list, or JSON text of one."""
    if isinstance(value, str):
        return value.lstrip()[:1] in ("{", "[")
    return isinstance(value, (dict, list)) and bool(value)


def _holder(record: Any, where: str) -> dict | None:
    """The object holding the list found at the concrete JSONPath ``where`` (``$.messages`` -> the record); None
    for a list that is the record itself or an item of a list."""
    m = re.match(r"^(.*?)(?:\.[A-Za-z0-9_\-]+|\['[^']*'\])$", where)
    if m is None:
        return None
    found = jsonpath(record, m.group(1) or "$")
    return found[0][1] if found and isinstance(found[0][1], dict) else None


def _root_key(path: str) -> str:
    """The record key a JSONPath starts with (``$.a.b`` -> ``a``, ``$['a b'][0]`` -> ``a b``)."""
    m = re.match(r"^\$(?:\.([^.\[]+)|\['([^']*)'\])", path)
    return (m.group(1) or m.group(2)) if m else ""


@dataclass
class _PathUse:
    """One file's use of an optional mapped key: the objects it was looked for in, those where it matched,
    and the unmapped keys holding data on the others (where a misspelt key's content sits)."""

    name: str  # the mapping's field, e.g. "tool_calls"
    key: str  # its value, the key looked up
    holder: str  # what it is looked for in, e.g. "assistant message"
    looked: int = 0
    matched: int = 0
    unmapped: Counter[str] = field(default_factory=Counter)

    def observe(self, obj: dict, found: Any, mapped: set[str]) -> None:
        """Tally one lookup of ``key`` in ``obj`` (``found``: its value, or ``_ABSENT``)."""
        self.looked += 1
        if found is not _ABSENT:
            self.matched += 1
            return
        mapped = mapped | {self.key.split(".")[0]}
        self.unmapped.update(str(k) for k, v in obj.items() if k not in mapped and _holds_data(v))

    def report(self, source: Source, problems: ProblemSink) -> None:
        """``mapping_field_never_matched`` when the key matched nowhere in the file while the objects held
        other, unmapped data: the content under them (calls, arguments) would be lost."""
        if self.matched or not self.unmapped:
            return
        keys = ", ".join(f"{k!r} x{n}" for k, n in self.unmapped.most_common(5))
        problems.error("mapping_field_never_matched",
                       f"the mapping's {self.name} key {self.key!r} is in none of the file's {self.looked} "
                       f"{self.holder}s, which hold unmapped data under {keys}: that content would be lost "
                       "(is the key misspelt?)", source, self.name)


@dataclass
class _Reading:
    """What reading one file's records with a mapping needs: where problems go and what is tallied."""

    source: Source
    problems: ProblemSink
    tool_calls: _PathUse | None
    arguments: _PathUse
    missing: int = 0  # required mapped keys found absent so far

    def required(self, obj: dict, key: str, name: str, at: str) -> Any:
        """The value of a required mapped ``key`` in ``obj`` (``at`` is its JSONPath); when absent,
        ``mapping_field_missing`` is reported and None returned (the caller's conversation is dropped)."""
        value = get(obj, key, _ABSENT)
        if value is _ABSENT:
            self.missing += 1
            self.problems.error("mapping_field_missing", f"the mapping's {name} key {key!r} is not in this "
                                f"record ({at}.{key}): its content would be lost", self.source, f"{at}.{key}")
            return None
        return value
