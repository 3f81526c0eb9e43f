"""Canonical messages and tools in the form a chat template receives them (OpenAI-style dicts)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from drafters.render.records import RenderError
from drafters.traces.model import LLMCall, ToolCallPart, ToolDef, ToolResultPart

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


class _IdMap:
    """Tool-call ids for one conversation, in the form the template needs, consistent across calls."""

    def __init__(self, mode: str, conversation_id: str):
        self.mode = mode
        self.conversation_id = conversation_id
        self.known: dict[str, str] = {}

    def get(self, original: str | None, ordinal: int) -> str:
        key = original if original is not None else f"#{ordinal}"
        if key in self.known:
            return self.known[key]
        if self.mode == "alnum9":
            if original is not None and len(original) == 9 and original.isalnum():
                new = original
            else:
                digest = hashlib.sha256(f"{self.conversation_id}\0{key}".encode()).digest()
                new = "".join(_ALNUM[b % len(_ALNUM)] for b in digest[:9])
        else:
            new = original if original else f"call_{ordinal}"
        self.known[key] = new
        return new


def _has_tool_content(call: LLMCall) -> bool:
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
