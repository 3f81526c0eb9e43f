"""The canonical conversation model every trace format is normalized into.

A trace format module turns raw records into `Conversation`s; everything downstream (scrubbing, the
validation report, rendering through a chat template) only ever sees this model. It is plain
dataclasses and the standard library: the API imports it, so it must stay torch-free and cheap.

The unit of training is one LLM call (`LLMCall`): the exact context the agent sent and the assistant
message that came back. A conversation either derives its calls from one growing transcript
(append-only) or carries them explicitly, when the source recorded each request (API cassettes,
OpenTelemetry spans, Langfuse generations) and the agent rewrote its history between calls.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Union

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class Source:
    """Where a conversation (or a problem) came from: format name, file, and line or record path."""

    format: str
    file: str
    line: int | None = None  # 1-based line number for line-oriented files
    record: str | None = None  # a path inside a structured file, e.g. "$[3].traj" or "interactions[2]"

    def where(self) -> str:
        """A human-readable location such as ``traces.jsonl:12`` or ``run.json#$[3]``."""
        if self.line is not None:
            return f"{self.file}:{self.line}"
        if self.record:
            return f"{self.file}#{self.record}"
        return self.file


@dataclass
class TextPart:
    """Plain text: what a human typed, a system prompt, or the assistant's free text."""

    text: str
    type: Literal["text"] = "text"


@dataclass
class ReasoningPart:
    """Model reasoning. ``signature`` (Anthropic, Gemini) or ``encrypted`` (OpenAI) blobs are kept verbatim."""

    text: str
    signature: str | None = None
    redacted: bool = False
    type: Literal["reasoning"] = "reasoning"


@dataclass
class ToolCallPart:
    """One tool call. ``arguments`` is the parsed JSON object when the source held valid JSON
    (an object), else None; ``raw_arguments`` is the string exactly as logged (for object-typed
    sources: its compact JSON serialization, key order preserved)."""

    id: str | None
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str
    type: Literal["tool_call"] = "tool_call"

    @classmethod
    def from_raw(cls, id: str | None, name: str, arguments: Any) -> ToolCallPart:
        """Build from a source value that is either a JSON string or an already-parsed object.

        A JSON string that itself encodes a string holding JSON (double encoding, seen in some logs)
        is unwrapped once. Invalid JSON keeps ``arguments=None`` and the raw text.
        """
        if isinstance(arguments, str):
            raw = arguments
            parsed = _loads_object(arguments)
            if parsed is None:
                try:
                    inner = json.loads(arguments)
                except ValueError:
                    inner = None
                if isinstance(inner, str):
                    parsed = _loads_object(inner)
            return cls(id=id, name=name, arguments=parsed, raw_arguments=raw)
        if arguments is None:
            return cls(id=id, name=name, arguments={}, raw_arguments="{}")
        if isinstance(arguments, dict):
            return cls(id=id, name=name, arguments=arguments, raw_arguments=compact_json(arguments))
        # A list or scalar is valid JSON but not an arguments object: keep it raw only.
        return cls(id=id, name=name, arguments=None, raw_arguments=compact_json(arguments))

    @property
    def arguments_valid(self) -> bool:
        """True when the arguments parsed as a JSON object."""
        return self.arguments is not None


@dataclass
class ToolResultPart:
    """The result of a tool call, paired by ``call_id`` (None where the format has no ids)."""

    call_id: str | None
    content: str
    is_error: bool = False
    name: str | None = None
    type: Literal["tool_result"] = "tool_result"


# Kinds of content deliberately left out of training (media, provider-side tools): a counted placeholder
# for them is expected. A placeholder of any other kind is a part type the parser did not understand:
# its text, reasoning or tool call is lost, which ingestion reports as an error (code ``unknown_content``).
DELIBERATE_UNSUPPORTED_KINDS = frozenset({
    "image", "audio", "video", "file", "document", "server_tool_use", "server_tool_result",
    "source",  # a provider's citation attached to a reply (the AI SDK's source-url parts)
})


@dataclass
class UnsupportedPart:
    """A counted placeholder for content we do not train on (images, audio, files), or, with a kind
    outside ``DELIBERATE_UNSUPPORTED_KINDS``, for a part of a type the parser did not understand."""

    kind: str  # "image", "audio", "file", ... or the source's own type name for an unknown part
    count: int = 1
    type: Literal["unsupported"] = "unsupported"

    @property
    def lost(self) -> bool:
        """True when this placeholder stands for content of an unknown type (lost, not left out)."""
        return self.kind not in DELIBERATE_UNSUPPORTED_KINDS


Part = Union[TextPart, ReasoningPart, ToolCallPart, ToolResultPart, UnsupportedPart]
PART_TYPES: dict[str, type] = {
    "text": TextPart,
    "reasoning": ReasoningPart,
    "tool_call": ToolCallPart,
    "tool_result": ToolResultPart,
    "unsupported": UnsupportedPart,
}


@dataclass
class Message:
    """One message of a conversation. ``model`` is the model that wrote an assistant message, if known."""

    role: Role
    parts: list[Part] = field(default_factory=list)
    model: str | None = None
    # True for text the agent injected in this role that nobody typed (Claude Code meta/hook/command/caveat
    # lines, compaction summaries, injected environment context): context, never "the human".
    meta: bool = False
    # False for an assistant message the source marked as not to be trained (OpenAI fine-tuning
    # ``"weight": 0``, LLaMA-Factory ``"loss_weight": 0``): it stays in later calls' context but is
    # never a call's completion.
    supervised: bool = True
    # True for an assistant message the source records as failed (a stop reason error / aborted, an error
    # message beside it: _spellings.failed_turn): tool calls in it that no tool message answers were never run.
    failed: bool = False
    # True for an assistant message the source records as stopped by the output length limit (``finish_reason:
    # "length"``, ``stop_reason: "max_tokens"``): set by readers, turned by ingestion into ``supervised=False``
    # (drafters/traces/cut_replies.py), so not part of the stored form.
    cut: bool = False

    @property
    def text(self) -> str:
        """All text parts joined (reasoning and tool parts excluded)."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def reasoning(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, ReasoningPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [p for p in self.parts if isinstance(p, ToolResultPart)]


@dataclass
class ToolDef:
    """A tool the agent offered the model: name, description and JSON schema of its parameters."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass
class LLMCall:
    """The unit of training and evaluation: the context sent to the model and the message it returned.

    ``index`` is the call's position in its conversation (0-based); ``context`` ends with the message
    the model answered (usually user or tool).
    """

    conversation_id: str
    index: int
    tools: list[ToolDef]
    context: list[Message]
    completion: Message

    @property
    def id(self) -> str:
        return f"{self.conversation_id}/{self.index}"


@dataclass
class Conversation:
    """A normalized agent conversation.

    ``messages`` is the transcript in order. ``explicit_calls``, when set, lists the calls exactly as
    the source recorded them (each with its own context); otherwise every assistant message is one
    call whose context is every message before it.
    """

    id: str
    source: Source
    tools: list[ToolDef] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    explicit_calls: list[LLMCall] | None = None

    def calls(self) -> Iterator[LLMCall]:
        """Yield the conversation's LLM calls in order."""
        if self.explicit_calls is not None:
            yield from self.explicit_calls
            return
        index = 0
        for i, message in enumerate(self.messages):
            if message.role == "assistant" and i > 0 and message.supervised:
                yield LLMCall(self.id, index, self.tools, self.messages[:i], message)
                index += 1

    @property
    def append_only(self) -> bool:
        """True when every call's context extends the previous call's context plus its completion."""
        if self.explicit_calls is None:
            return True
        previous: list[Message] | None = None
        for call in self.explicit_calls:
            if previous is not None and call.context[: len(previous)] != previous:
                return False
            previous = call.context + [call.completion]
        return True

    @property
    def models(self) -> set[str]:
        """Names of the models that wrote the assistant messages."""
        msgs = [c.completion for c in self.calls()] if self.explicit_calls is not None else self.messages
        return {m.model for m in msgs if m.role == "assistant" and m.model}

    def content_hash(self) -> str:
        """sha256 of the conversation's content (not its id or source): equal for exact duplicates."""
        # Shallow dicts (no deep copies as ``asdict`` makes): the same JSON, several times faster, and
        # messages shared between explicit calls are serialized once.
        memo: dict[int, dict[str, Any]] = {}

        def msg(m: Message) -> dict[str, Any]:
            out = memo.get(id(m))
            if out is None:
                out = memo[id(m)] = _message_payload(m)
            return out

        payload = {
            "tools": [_shallow(t) for t in self.tools],
            "messages": [msg(m) for m in self.messages],
            "calls": None
            if self.explicit_calls is None
            else [[msg(m) for m in c.context + [c.completion]] for c in self.explicit_calls],
        }
        return hashlib.sha256(compact_json(payload, sort_keys=True).encode()).hexdigest()


# --------------------------------------------------------------------------------------- (de)serialization


def inline_reasoning_spans(text: str, open_: str = "<think>", close: str = "</think>") -> list[tuple[int, int]]:
    """(start, end) of each reasoning block written inline in an assistant's text, wrapper included: from
    ``open_`` to just after ``close``, or to the end of the text when it is not closed. Agents that log a
    model's raw output keep ``<think>...</think>`` inside the message content, next to its text and tool
    calls: those characters are reasoning, not text (counted so in the validation report, labelled so by
    drafters.render)."""
    spans = []
    pos = 0
    while (i := text.find(open_, pos)) >= 0:
        j = text.find(close, i + len(open_))
        j = len(text) if j < 0 else j + len(close)
        spans.append((i, j))
        pos = j
    return spans


def message_to_dict(message: Message) -> dict[str, Any]:
    data = {"role": message.role, "model": message.model, "parts": [asdict(p) for p in message.parts]}
    if message.meta:  # only when set, so hashes of ordinary messages do not change
        data["meta"] = True
    if not message.supervised:
        data["supervised"] = False
    if message.failed:
        data["failed"] = True
    return data


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _shallow(obj: Any) -> dict[str, Any]:
    """``asdict`` one level deep for flat dataclasses (fields are JSON values): same JSON, no copies."""
    names = _FIELD_NAMES.get(type(obj))
    if names is None:
        from dataclasses import fields

        names = _FIELD_NAMES[type(obj)] = tuple(f.name for f in fields(obj))
    return {n: getattr(obj, n) for n in names}


def _message_payload(message: Message) -> dict[str, Any]:
    """``message_to_dict`` without deep copies (for hashing)."""
    data = {"role": message.role, "model": message.model, "parts": [_shallow(p) for p in message.parts]}
    if message.meta:
        data["meta"] = True
    if not message.supervised:
        data["supervised"] = False
    if message.failed:
        data["failed"] = True
    return data


def message_from_dict(data: dict[str, Any]) -> Message:
    parts = [PART_TYPES[p["type"]](**p) for p in data["parts"]]
    return Message(role=data["role"], parts=parts, model=data.get("model"), meta=bool(data.get("meta", False)),
                   supervised=bool(data.get("supervised", True)), failed=bool(data.get("failed", False)))


def conversation_to_dict(conv: Conversation) -> dict[str, Any]:
    """A JSON-able dict; ``conversation_from_dict`` inverts it exactly (the canonical on-disk form)."""
    return {
        "id": conv.id,
        "source": asdict(conv.source),
        "tools": [asdict(t) for t in conv.tools],
        "messages": [message_to_dict(m) for m in conv.messages],
        "explicit_calls": None
        if conv.explicit_calls is None
        else [
            {
                "index": c.index,
                "tools": [asdict(t) for t in c.tools],
                "context": [message_to_dict(m) for m in c.context],
                "completion": message_to_dict(c.completion),
            }
            for c in conv.explicit_calls
        ],
    }


def conversation_from_dict(data: dict[str, Any]) -> Conversation:
    calls = None
    if data.get("explicit_calls") is not None:
        calls = [
            LLMCall(
                conversation_id=data["id"],
                index=c["index"],
                tools=[ToolDef(**t) for t in c["tools"]],
                context=[message_from_dict(m) for m in c["context"]],
                completion=message_from_dict(c["completion"]),
            )
            for c in data["explicit_calls"]
        ]
    return Conversation(
        id=data["id"],
        source=Source(**data["source"]),
        tools=[ToolDef(**t) for t in data["tools"]],
        messages=[message_from_dict(m) for m in data["messages"]],
        explicit_calls=calls,
    )


def compact_json(value: Any, sort_keys: bool = False) -> str:
    """JSON with no spaces and non-ASCII kept, key order preserved unless ``sort_keys``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)


def _loads_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
