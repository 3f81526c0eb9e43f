"""Request/response records chained into conversations.

Many tools log one record per LLM call: the input messages and the output side by side (LangSmith runs'
``inputs.messages`` / ``outputs``, OpenInference spans, proxy logs, cassettes). Each record is one
``LLMCall``; a call whose input starts with the previous call's input plus its output continues that
call's conversation (an agent loop); any other call starts a new one (another agent, a rewritten history).
Records of a prompt text numbered as a dialogue's turns (``turn_counter``) continue the record before them,
unless their prompts are rebuilt whole from one template (``rebuilt_prompts``).

Not a format (no ``FORMAT``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from os.path import commonprefix
from typing import Any

from drafters.traces.formats._content import link_models
from drafters.traces.formats.base import ProblemSink
from drafters.traces.json_paths import jsonpath
from drafters.traces.model import (
    Conversation,
    LLMCall,
    Message,
    ReasoningPart,
    Source,
    ToolCallPart,
    ToolDef,
    compact_json,
)


def same_messages(a: list[Message], b: list[Message]) -> bool:
    """Message lists equal in role and parts (a logged output carries a model name its later copy lacks)."""
    return len(a) == len(b) and all(x.role == y.role and x.parts == y.parts for x, y in zip(a, b))


def _message_key(message: Message) -> bytes:
    """A message's role and parts as bytes (not its model name), for fingerprints of contexts."""
    return repr((message.role, message.parts)).encode() + b"\0"


def _fingerprint(context: list[Message]) -> tuple[int, str]:
    """(length, digest) of a context, as ``CallChains.calls_dropped`` compares prefixes."""
    digest = hashlib.sha256()
    for message in context:
        digest.update(_message_key(message))
    return len(context), digest.hexdigest()


def _extends(context: list[Message], prev: list[Message], shared_history: bool) -> bool:
    """Whether ``context`` starts with ``prev`` (both without their system messages with ``shared_history``), the
    last of ``prev`` (the previous call's answer) as the client sent it back (``same_reply``)."""
    if shared_history:
        context, prev = [m for m in context if m.role != "system"], [m for m in prev if m.role != "system"]
    if not prev:
        return True
    n = len(prev)
    return len(context) >= n and same_messages(context[: n - 1], prev[:-1]) and same_reply(context[n - 1], prev[-1])


def same_reply(sent_back: Message, answer: Message) -> bool:
    """Whether ``sent_back`` is the model's ``answer`` as a client sends it back in the next request: the same
    role, text and tool calls (by name and arguments: a call id the log of the answer lacks, or one the reader gave
    it, and the arguments' spacing aside), its reasoning dropped or not (DeepSeek's API asks clients to drop it)."""
    if same_messages([sent_back], [answer]):
        return True
    if sent_back.role != answer.role:
        return False

    def kept(m: Message) -> list:
        return [(p.name, p.arguments if p.arguments is not None else p.raw_arguments) if isinstance(p, ToolCallPart)
                else p for p in m.parts if not isinstance(p, ReasoningPart)]
    return kept(sent_back) == kept(answer)


#: Keys naming a request of a results list (an eval's task, a run's id), compared by ``CallChains._two_requests``.
_NAME_KEYS = ("name", "id", "task_id", "task_name", "run_id", "request_id", "example_id", "uuid",
              "timestamp", "created_at", "createdAt")  # a time: the same request sent again (a button pressed twice)
_KIND_KEYS = ("type", "kind", "run_type", "object", "span_kind", "event")
#: A key naming the benchmark item a record answers (``figure_id``: the image the model saw, not in the record): two
#: records of one kind naming different items are two requests, whatever else they share.
_ITEM_KEY = re.compile(r"(?:^|_)(?:figure|image|img|question|sample|item|example|instance|problem|case)_?id$",
                       re.IGNORECASE)


@dataclass
class _Chain:
    id: str
    source: Source
    tools: list[ToolDef]
    key: object = None
    calls: list[LLMCall] = field(default_factory=list)


@dataclass
class _Added:
    """One ``CallChains.add``'s arguments, kept to replay the log in another order (``relink_out_of_order``)."""

    conv_id: str
    source: Source
    key: object
    call: LLMCall  # its tools, context and completion


@dataclass
class CallChains:
    """Calls added in log order, grouped into conversations (``add``, then ``conversations``)."""

    chains: list[_Chain] = field(default_factory=list)
    added: list[_Added] = field(default_factory=list)
    kinds: dict[int, str | None] = field(default_factory=dict)  # id(call) -> its record's type (for the reader)
    records: dict[int, str] = field(default_factory=dict)  # id(call) -> its whole record's JSON (for the reader)
    positions: dict[int, int] = field(default_factory=dict)  # id(call) -> its record's ordinal in the log
    at: int = 0  # the ordinal of the record being read (set by the reader before ``add``)
    identical: int = 0  # exact repeats dropped whose records are identical copies (set by drop_repeats)
    copies_guessed: bool = False  # identical copies read as one record (a declared mapping's reading), not refused
    groups: dict[str, LLMCall] = field(default_factory=dict)  # a mapping's group value -> its last call (the reader)
    samples: set[int] = field(default_factory=set)  # id(call) of each of one record's sampled answers (the reader)
    turn: tuple[int | None, int] = (None, 0)  # a mapping's turns: the last record's turn number, and its run

    def turn_group(self, value: Any) -> str:
        """The conversation of a record counted as turn ``value`` of a dialogue (a mapping's ``turns``): the
        previous record's where ``value`` is one more than that record's number, else a new one (its first turn,
        or a number out of order). Returns the group's key."""
        text = str(value).strip()
        number = int(text) if text.isdigit() else None
        last, run = self.turn
        if number is None or last is None or number != last + 1:
            run += 1
        self.turn = (number, run)
        return f"turns {run}"

    def add(self, conv_id: str, source: Source, tools: list[ToolDef], context: list[Message],
            completion: Message, key: object = None, shared_history: bool = False) -> LLMCall:
        """One call: appended to the latest conversation of the same ``key`` (a trace id, say) whose last call
        it extends, else the first of a new conversation (``conv_id``, ``source``). With ``shared_history``
        (agents handing one message history to each other, each with its own system prompt: a LangGraph
        supervisor's specialists), a call extending any call of a conversation, its system messages aside,
        continues it. Returns the call."""
        chain = next((c for c in reversed(self.chains) if c.key == key and any(
            _extends(context, [*d.context, d.completion], shared_history)
            for d in (c.calls if shared_history else c.calls[-1:]))), None)
        if chain is None:
            chain = _Chain(conv_id, source, tools, key)
            self.chains.append(chain)
        chain.calls.append(LLMCall(chain.id, len(chain.calls), tools, context, completion))
        self.added.append(_Added(conv_id, source, key, chain.calls[-1]))
        self.positions[id(chain.calls[-1])] = self.at
        return chain.calls[-1]

    def relink_out_of_order(self) -> bool:
        """A log not written in call order (an event export sorted by time, descending; records shuffled by a
        store) leaves calls unlinked, since a call is only linked to one logged before it. Where taking the
        records in order of context length (a call's context is longer than that of each call it continues; ties
        keep the log's order) links more calls (fewer conversations), the chains are rebuilt that way. Returns
        whether they were (the reader says so in a warning)."""
        if len(self.chains) < 2:
            return False
        order = sorted(self.added, key=lambda a: len(a.call.context))
        replay = CallChains()
        for a in order:
            replay.add(a.conv_id, a.source, a.call.tools, a.call.context, a.call.completion, a.key)
        if len(replay.chains) >= len(self.chains):
            return False
        for old, new in zip(order, replay.added):  # the reader's notes on each call follow it
            for notes in (self.kinds, self.records, self.positions):
                if id(old.call) in notes:
                    notes[id(new.call)] = notes.pop(id(old.call))
            if id(old.call) in self.samples:
                self.samples.add(id(new.call))
        self.chains, self.added = replay.chains, replay.added
        return True

    def drop_repeats(self) -> int:
        """Drop each one-call chain whose call another record repeats or extends: the same completion after the
        same context (an event logged twice: a trace restating its generation) or after a beginning of it that
        the completion does not follow (a parent span: the run's first input and last output). The first of
        exact repeats is kept. Two identical records with others between them are two calls (the same request
        made twice: a recorder's log, a test suite's snapshot), not a repeat. Returns the number dropped."""
        dropped = 0
        for c in list(self.chains):
            if len(c.calls) != 1:
                continue
            call = c.calls[0]
            n = len(call.context)
            for other in self.chains:
                if other is c:
                    continue
                if any(same_messages([call.completion], [d.completion]) and len(d.context) >= n
                       and same_messages(call.context, d.context[:n])
                       and (len(d.context) > n and not same_messages(d.context[n:n + 1], [call.completion])
                            or len(d.context) == n and self.chains.index(other) < self.chains.index(c))
                       and not self._made_twice(call, d) and not self._samples_of_one(call, d)
                       and not self._two_requests(call, d) for d in other.calls):
                    self.chains.remove(c)
                    dropped += 1
                    rec = self.records.get(id(call))
                    self.identical += rec is not None and any(self.records.get(id(d)) == rec for d in other.calls)
                    break
        return dropped

    def calls_dropped(self) -> int:
        """How many calls record an output without tool calls where a later call's context, holding this call's
        context, sends the model's answer at that place with its text and tool calls (myagent's log: the reply's text
        plus `` Tools: [...]``, the calls themselves only in the next request)."""
        calls = [call for c in self.chains for call in c.calls]
        by_context = {_fingerprint(call.context): call for call in calls if not call.completion.tool_calls}
        dropped: set[int] = set()
        for d in calls:
            prefix = hashlib.sha256()
            for n, message in enumerate(d.context):
                if message.role == "assistant" and message.tool_calls:
                    earlier = by_context.get((n, prefix.hexdigest()))  # the same answer, its text at least
                    if earlier is not None and earlier is not d and message.text.strip() in earlier.completion.text:
                        dropped.add(id(earlier))
                prefix.update(_message_key(message))
        return len(dropped)

    def _two_requests(self, a: LLMCall, b: LLMCall) -> bool:
        """Whether two calls come from records of one kind (the same keys and ``type``) that name different
        requests (their ``name`` / ``id`` / ``timestamp`` values differ) and neither refers to the other (no parent's id in its
        child), or name different benchmark items (``_ITEM_KEY``): two tasks that sent the same prompt and got the
        same answer (an eval's results), not one call restated."""
        ra, rb = (json.loads(r) if (r := self.records.get(id(c))) else None for c in (a, b))
        if not isinstance(ra, dict) or not isinstance(rb, dict) or set(ra) != set(rb) or \
                any(ra[k] != rb[k] for k in _KIND_KEYS if k in ra):  # a trace's record beside its generation's
            return False
        if any(ra[k] != rb[k] for k in ra if isinstance(k, str) and _ITEM_KEY.search(k)):
            return True  # two items of a benchmark (HallusionBench: one question about two figures, answered alike)
        named = [k for k in ra if k in _NAME_KEYS and isinstance(ra[k], str) and isinstance(rb[k], str)]
        return bool(named) and all(ra[k] != rb[k] for k in named) and \
            not any(compact_json(ra[k]) in self.records[id(b)] or compact_json(rb[k]) in self.records[id(a)]
                    for k in named)  # records are kept as compact JSON: a value quoted the same way

    def _samples_of_one(self, a: LLMCall, b: LLMCall) -> bool:
        """Whether two calls are sampled answers of one record (two models answering one prompt alike)."""
        return id(a) in self.samples and id(b) in self.samples and \
            self.positions.get(id(a)) == self.positions.get(id(b))

    def _made_twice(self, a: LLMCall, b: LLMCall) -> bool:
        """Whether two calls come from identical records that other records separate in the log."""
        rec = self.records.get(id(a))
        return rec is not None and rec == self.records.get(id(b)) and \
            abs(self.positions.get(id(a), 0) - self.positions.get(id(b), 0)) > 1

    def conversations(self) -> Iterator[Conversation]:
        """Each chain as a conversation with explicit calls (the transcript: the last call's context and
        completion); context copies of earlier completions get their model name back (``link_models``)."""
        for c in self.chains:
            link_models(c.calls)
            last = c.calls[-1]
            yield Conversation(id=c.id, source=c.source, tools=c.tools, messages=[*last.context, last.completion],
                               explicit_calls=c.calls)

    def finished(self, problems: ProblemSink, source: Source, drop_repeats: bool = True) -> Iterator[Conversation]:
        """The conversations of a file's chained calls, once every record is added: relinked when the records
        were not in call order, repeats dropped (unless ``drop_repeats`` is False: records that are distinct
        requests by construction), none when records are identical copies or calls of several record kinds do
        not repeat each other (``ambiguous_shape``); each step reported at ``source``."""
        if self.relink_out_of_order():
            problems.warning("calls_out_of_order", "the records are not in call order (a call written before the one "
                             "it continues: a log sorted newest first): read in order of context length, so each "
                             "conversation's calls follow each other", source)
        repeated = self.drop_repeats() if drop_repeats else 0
        kinds = sorted({k for c in self.chains for call in c.calls if (k := self.kinds.get(id(call))) is not None})
        if self.identical and not self.copies_guessed:  # by shape: a call made twice or written twice, not guessed
            problems.error("ambiguous_shape", f"{self.identical} record(s) are identical copies of another record "
                           "(same input, same output, same fields): whether the call was made twice (a recorder) or "
                           "one record was written twice is not guessed", source)
            return
        if len(kinds) > 1:  # a trace beside its generations, whose calls it does not simply restate
            problems.error("ambiguous_shape", f"calls were read from records of {len(kinds)} kinds (type "
                           f"{', '.join(kinds[:5])}) that do not repeat each other: whether one kind restates the "
                           "other's calls (a trace or parent span over its generations) is not guessed, and reading "
                           "both could count a call twice", source)
            return
        dropped = self.calls_dropped()
        if dropped:
            problems.error("tool_calls_not_recorded", f"{dropped} recorded output(s) hold no tool call where the next "
                           "request sends the model's answer at that place with tool calls (a log writing the reply's "
                           "text only, or a suffix naming the tools): the calls would be lost, so the file is not "
                           "read; declare where they are in a mapping (docs/traces.md)", source)
            return
        if repeated:
            problems.warning("repeated_calls", f"{repeated} record(s) repeat another record's call (the same output "
                             "after the same input, or after a beginning of it: a trace or parent span restating its "
                             "generation): each call is read once", source)
        yield from self.conversations()


#: Keys counting the turns of one dialogue (``turn``, ``step``, ``round``, ``turn_id``), and the first records
#: whose numbers are compared.
TURN_KEY = re.compile(r"(^|_)(turn|step|round)s?(_?(id|no|index|number))?$", re.IGNORECASE)
TURN_RECORDS = 20


def turn_counter(values: list) -> str | None:
    """For records of a prompt text and its reply: the path of a key counting the turns of dialogues, its values
    running 1, 2, 3, ... (or from 0), each dialogue counting again, over the first ``TURN_RECORDS`` records in
    order (a tutoring table's ``turn`` beside the student's and the tutor's texts; a harness's ``step`` of prompts
    sent one after another in one chat), else None. Each such record continues the one before it (mapping key
    ``turns``; docs/traces.md, "Supported formats")."""
    records = [v for v in values[:TURN_RECORDS] if isinstance(v, dict)]
    for key in records[0] if records else ():
        if TURN_KEY.search(str(key)):
            numbers = [str(r.get(key, "")).strip() for r in records]
            if numbers[0] in ("0", "1") and all(n.isdigit() for n in numbers) and _counts_turns(numbers):
                return f"$.{key}" if re.fullmatch(r"[A-Za-z_]\w*", str(key)) else f"$['{key}']"
    return None


#: Characters two prompts of turns in a row open alike where each is rebuilt whole from one template.
REBUILT_PREFIX = 200


def rebuilt_prompts(values: list, turns: str, prompt: str) -> bool:
    """Whether, in records numbered by ``turns`` (``turn_counter``), a record following the one before it (its
    number one more) holds a prompt (at ``prompt``) opening like that record's for ``REBUILT_PREFIX`` characters: an
    agent loop's step prompt rebuilt whole from one template (AppAgent's ``{step, prompt, response}``), each step a
    call of its own, not a dialogue's next turn (whose prompt says only what is new)."""
    rows = []  # (turn number, prompt text) of each record holding both
    for value in (v for v in values[:TURN_RECORDS] if isinstance(v, dict)):
        number, text = jsonpath(value, turns), jsonpath(value, prompt)
        if number and text and str(number[0][1]).strip().isdigit() and isinstance(text[0][1], str):
            rows.append((int(str(number[0][1]).strip()), text[0][1]))
    return any(n == m + 1 and len(commonprefix([a, b])) >= REBUILT_PREFIX for (m, a), (n, b) in pairwise(rows))


def _counts_turns(numbers: list[str]) -> bool:
    """Whether each number follows the one before it or starts the count again, at least one following."""
    steps = list(pairwise(numbers))
    return any(int(b) == int(a) + 1 for a, b in steps) and all(int(b) in (int(a) + 1, int(numbers[0]))
                                                                for a, b in steps)
