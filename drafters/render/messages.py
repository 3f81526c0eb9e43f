"""Canonical messages and tools in the form a chat template receives them (OpenAI-style dicts), with the
argument type, empty-content convention and tool-call id form the template's `Dialect` asks for."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any

from drafters.render.records import Dialect, RenderError
from drafters.traces.model import (
    LLMCall,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
)

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def tools_to_openai(tools: Iterable[ToolDef]) -> list[dict[str, Any]] | None:
    """Tool definitions as an OpenAI-compatible server passes them to the template (``None`` when empty)."""
    out = [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]
    return out or None


class IdMap:
    """Tool-call ids for one conversation, in the form the template needs, consistent across calls.

    Modes: ``passthrough`` (the recorded id), ``alnum9`` (Mistral: exactly nine alphanumerics) and
    ``functions_index`` (Kimi-K2 writes every call as ``functions.NAME:IDX``, IDX its position in the
    message, whatever id it is given, while a tool result shows the id it is given: the result is given
    that same form so the two pair up).
    """

    def __init__(self, mode: str, conversation_id: str):
        self.mode = mode
        self.conversation_id = conversation_id
        self.known: dict[str, str] = {}

    def get(self, original: str | None, ordinal: int, name: str = "", position: int = 0) -> str:
        """The template-side id of tool call ``original`` (``None``: the ``ordinal``-th call without one);
        ``name`` and ``position`` (its index among the message's calls) are the call's, for
        ``functions_index``."""
        key = original if original is not None else f"#{ordinal}"
        if key in self.known:
            return self.known[key]
        if self.mode == "alnum9":
            if original is not None and len(original) == 9 and original.isalnum():
                new = original
            else:
                digest = hashlib.sha256(f"{self.conversation_id}\0{key}".encode()).digest()
                new = "".join(_ALNUM[b % len(_ALNUM)] for b in digest[:9])
        elif self.mode == "functions_index":
            new = f"functions.{name}:{position}"
        else:
            new = original if original else f"call_{ordinal}"
        self.known[key] = new
        return new


def reasoning_chunks(reasoning: str, text: str) -> list[dict[str, str]]:
    """An assistant's content as Mistral's chunks: a ``thinking`` chunk, then a ``text`` chunk when there is
    text (Ministral-3 Reasoning reads reasoning only from such chunks, never ``reasoning_content``)."""
    chunks = [{"type": "thinking", "thinking": reasoning}]
    return chunks + [{"type": "text", "text": text}] if text else chunks


def dict_reasoning(m: dict[str, Any]) -> str:
    """The reasoning of a template message dict: ``reasoning_content``, or its ``thinking`` chunks."""
    c = m.get("content")
    if isinstance(c, list):
        return "".join(b.get("thinking") or "" for b in c if isinstance(b, dict) and b.get("type") == "thinking")
    return m.get("reasoning_content") or ""


def dict_text(m: dict[str, Any]) -> str:
    """The text of a template message dict: its string content, or its ``text`` chunks."""
    c = m.get("content")
    if isinstance(c, list):
        return "".join(b.get("text") or "" for b in c if isinstance(b, dict) and b.get("type") == "text")
    return c or ""


def has_tool_content(call: LLMCall) -> bool:
    """Whether the call offers tools or its messages hold a tool call or a tool result."""
    if call.tools:
        return True
    for m in list(call.context) + [call.completion]:
        for p in m.parts:
            if isinstance(p, (ToolCallPart, ToolResultPart)):
                return True
    return False


def _args_value(call: ToolCallPart, mode: str) -> Any:
    """The arguments in the type the template expects, so they are serialized exactly once
    (vortico/flama#258, oumi-ai/oumi#2599, mudler/LocalAI#10256, QwenLM/Qwen3-Coder#444)."""
    if mode == "string":
        return call.raw_arguments
    if call.arguments is None:
        raise RenderError(
            "invalid_tool_arguments",
            f"tool call {call.name!r} has arguments that are not a JSON object and the template needs a mapping",
            where=call.id,
        )
    return call.arguments


def to_dicts(messages: list[Message], ids: IdMap, dialect: Dialect, prepare: Callable[[dict], dict],
             ends: list[int] | None = None) -> list[dict]:
    """Canonical messages as chat-template message dicts, with the dialect's argument type, empty content
    convention and id form (README of the chat template fixtures: "Argument type", "content: None vs \"\"",
    "Keys that are present but None"), each passed through ``prepare`` (`ChatTemplate.prepare`: the plain
    form the template sees). The conversion reads messages left to right with no lookahead, so the dicts of
    a prefix of ``messages`` are a prefix of the dicts; ``ends`` (when given) receives the number of dicts
    after each message. Raises RenderError(code="invalid_tool_arguments") (see `_args_value`)."""
    builder = _DictBuilder(ids, dialect, prepare)
    for m in messages:
        builder.add(m)
        if ends is not None:
            ends.append(len(builder.out))
    return builder.out


class _DictBuilder:
    """The state of one left-to-right conversion: tool-call ordinals, the name of each call id, and the
    calls still waiting for a result (for results that lack a call id)."""

    def __init__(self, ids: IdMap, dialect: Dialect, prepare: Callable[[dict], dict]):
        self.ids = ids
        self.dialect = dialect
        self.prepare = prepare
        self.out: list[dict[str, Any]] = []
        self.ordinal = 0
        self.names: dict[str, str] = {}
        self.pending: list[str] = []

    def add(self, m: Message) -> None:
        if m.role == "assistant":
            self._assistant(m)
            return
        results = [p for p in m.parts if isinstance(p, ToolResultPart)]
        self._results(results)
        text = "".join(p.text for p in m.parts if isinstance(p, TextPart))
        if m.role == "tool":
            if text and not results:
                cid = self.pending.pop(0) if self.pending else self.ids.get(None, self.ordinal)
                self.out.append(self.prepare({"role": "tool", "tool_call_id": cid, "content": text,
                                              "name": self.names.get(cid, "")}))
            return
        if text or not results:
            self.out.append(self.prepare({"role": m.role, "content": text}))

    def _assistant(self, m: Message) -> None:
        text = "".join(p.text for p in m.parts if isinstance(p, TextPart))
        reasoning = "".join(p.text for p in m.parts if isinstance(p, ReasoningPart) and not p.redacted)
        calls = [p for p in m.parts if isinstance(p, ToolCallPart)]
        msg: dict[str, Any] = {"role": "assistant"}
        if reasoning and self.dialect.reasoning_chunks:
            msg["content"] = reasoning_chunks(reasoning, text)
        else:
            if text or not calls or self.dialect.empty_content == "empty":
                msg["content"] = text
            if reasoning:
                msg["reasoning_content"] = reasoning
        if calls:
            tcs = []
            for k, c in enumerate(calls):
                cid = self.ids.get(c.id, self.ordinal, c.name, k)
                self.ordinal += 1
                self.names[cid] = c.name
                self.pending.append(cid)
                tcs.append({"id": cid, "type": "function",
                            "function": {"name": c.name, "arguments": _args_value(c, self.dialect.args)}})
            msg["tool_calls"] = tcs
        self.out.append(self.prepare(msg))

    def _results(self, results: list[ToolResultPart]) -> None:
        for r in results:
            if r.call_id is not None:
                cid = self.ids.get(r.call_id, self.ordinal, r.name or "")
            else:
                cid = self.pending[0] if self.pending else self.ids.get(None, self.ordinal)
            if cid in self.pending:
                self.pending.remove(cid)
            tmsg: dict[str, Any] = {"role": "tool", "tool_call_id": cid, "content": r.content}
            name = r.name or self.names.get(cid)
            if name:
                tmsg["name"] = name
            self.out.append(self.prepare(tmsg))
