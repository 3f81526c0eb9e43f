"""Request/response records chained into conversations.

Many tools log one record per LLM call: the input messages and the output side by side (LangSmith runs'
``inputs.messages`` / ``outputs``, OpenInference spans, proxy logs, cassettes). Each record is one
``LLMCall``; a call whose input starts with the previous call's input plus its output continues that
call's conversation (an agent loop); any other call starts a new one (another agent, a rewritten history).

Not a format (no ``FORMAT``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from drafters.traces.formats._content import link_models
from drafters.traces.model import Conversation, LLMCall, Message, Source, ToolDef


def same_messages(a: list[Message], b: list[Message]) -> bool:
    """Message lists equal in role and parts (a logged output carries a model name its later copy lacks)."""
    return len(a) == len(b) and all(x.role == y.role and x.parts == y.parts for x, y in zip(a, b))


@dataclass
class _Chain:
    id: str
    source: Source
    tools: list[ToolDef]
    key: object = None
    calls: list[LLMCall] = field(default_factory=list)


@dataclass
class CallChains:
    """Calls added in log order, grouped into conversations (``add``, then ``conversations``)."""

    chains: list[_Chain] = field(default_factory=list)
    kinds: dict[int, str | None] = field(default_factory=dict)  # id(call) -> its record's type (for the reader)
    records: dict[int, str] = field(default_factory=dict)  # id(call) -> its whole record's JSON (for the reader)
    identical: int = 0  # exact repeats dropped whose records are identical copies (set by drop_repeats)

    def add(self, conv_id: str, source: Source, tools: list[ToolDef], context: list[Message],
            completion: Message, key: object = None) -> LLMCall:
        """One call: appended to the latest conversation of the same ``key`` (a trace id, say) whose last call
        it extends, else the first of a new conversation (``conv_id``, ``source``). Returns the call."""
        chain = None
        for c in reversed(self.chains):
            last = c.calls[-1]
            prev = [*last.context, last.completion]
            if c.key == key and len(context) >= len(prev) and same_messages(context[: len(prev)], prev):
                chain = c
                break
        if chain is None:
            chain = _Chain(conv_id, source, tools, key)
            self.chains.append(chain)
        chain.calls.append(LLMCall(chain.id, len(chain.calls), tools, context, completion))
        return chain.calls[-1]

    def drop_repeats(self) -> int:
        """Drop each one-call chain whose call another record repeats or extends: the same completion after the
        same context (an event logged twice: a trace restating its generation) or after a beginning of it that
        the completion does not follow (a parent span: the run's first input and last output). The first of
        exact repeats is kept. Returns the number dropped."""
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
                       for d in other.calls):
                    self.chains.remove(c)
                    dropped += 1
                    rec = self.records.get(id(call))
                    self.identical += rec is not None and any(self.records.get(id(d)) == rec for d in other.calls)
                    break
        return dropped

    def conversations(self) -> Iterator[Conversation]:
        """Each chain as a conversation with explicit calls (the transcript: the last call's context and
        completion); context copies of earlier completions get their model name back (``link_models``)."""
        for c in self.chains:
            link_models(c.calls)
            last = c.calls[-1]
            yield Conversation(id=c.id, source=c.source, tools=c.tools, messages=[*last.context, last.completion],
                               explicit_calls=c.calls)
