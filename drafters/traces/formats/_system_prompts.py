"""System prompts stored beside a message list, at the same level (docs/traces.md, "System prompts beside the
list"): which keys hold one, its text, and the conversation's first system message it makes. One helper for the
OpenAI chat reader, the general path and declared mappings. Not a format (no ``FORMAT``); standard library only.
"""

from __future__ import annotations

import re
from typing import Any

from drafters.traces.formats._spellings import block_parts
from drafters.traces.model import Message, TextPart

# A conversation's system prompt stored beside its message list, at the same level (Anthropic / Bedrock ``system``,
# OpenAI Responses ``instructions``, Gemini ``systemInstruction``, Cohere ``preamble``, agent session files'
# ``system_prompt`` / ``systemPrompt``): the first of these holding text is the conversation's first system message.
SYSTEM_KEYS = ("system", "system_prompt", "systemPrompt", "system_message", "systemMessage", "systemInstruction",
               "system_instruction", "instructions", "preamble", "sys_prompt", "_sys_prompt",  # _sys_prompt: AgentScope
               "promptPrefix", "systemRole")  # LibreChat's custom instructions, LobeChat's agent prompt
# Objects beside the list holding a chat's settings, a system prompt among them (LibreChat's ``options.promptPrefix``,
# LobeChat's ``config.systemRole``): looked in after the record's own keys.
SETTINGS_KEYS = ("options", "config", "settings", "chatSettings", "modelConfig", "model_config", "agentConfig",
                 "agent_config", "preset")


PROVIDER_NAME = re.compile(r"^[a-z][a-z0-9_.-]{1,30}$")  # "openai", "aws.bedrock": a one-word name, no prompt


def system_prompt(key: str, value: Any) -> str | None:
    """The system prompt under ``key`` (one of ``SYSTEM_KEYS``): its text, or None where it holds none or where a
    ``system`` key names the provider (OpenInference's ``llm.system``, GenAI's ``gen_ai.system``: ``openai``)."""
    text = system_text(value)
    return None if text is None or key == "system" and PROVIDER_NAME.match(text) else text


def system_text(value: Any) -> str | None:
    """The text of a system prompt value: a string, a list of text blocks (or strings), or one object holding
    them (``{"text": ...}``, Gemini's ``{"parts": [...]}``, ``{"content": ...}``); None when it holds no text or
    anything besides text (a config object is no prompt)."""
    if isinstance(value, dict) and "type" not in value and "text" not in value and isinstance(value.get("parts"), list):
        value = value["parts"]
    parts = block_parts(value)
    if not parts or not all(isinstance(p, TextPart) for p in parts):
        return None
    text = "".join(p.text for p in parts)
    return text if text.strip() else None


def sibling_system(record: Any, messages: list | None = None) -> tuple[list, list[str]]:
    """``(prompt, not_read)`` for a record holding a message list: ``prompt`` is ``[Message("system", ...)]`` from
    the first ``SYSTEM_KEYS`` key holding text, unless the list (the canonical ``messages``, when given) already
    starts with a system message of that text; ``not_read`` names the keys holding a system text that is not in
    the conversation (a second, different prompt; one the list's own first system message contradicts), for a
    ``system_prompt_not_read`` warning: never dropped silently (docs/traces.md, system prompts beside the list)."""
    if not isinstance(record, dict):
        return [], []
    found = [(k, t) for k in SYSTEM_KEYS if (t := system_prompt(k, record.get(k))) is not None]
    found += [(f"{s}.{k}", t) for s in SETTINGS_KEYS if isinstance(record.get(s), dict)
              for k in SYSTEM_KEYS if (t := system_prompt(k, record[s].get(k))) is not None]
    if not found:
        return [], []
    head = messages[0] if messages else None
    head_text = "".join(p.text for p in head.parts if isinstance(p, TextPart)) \
        if head is not None and head.role == "system" else None
    _, text = found[0]
    if head_text is not None:  # the list has its own system prompt: the sibling is a copy, or not what was sent
        return [], [k for k, t in found if t.strip() != head_text.strip()]
    return [Message("system", [TextPart(text)])], [k for k, t in found[1:] if t.strip() != text.strip()]


def system_not_read(keys: list[str], source: Any, problems: Any) -> None:
    """Report the system-prompt keys ``sibling_system`` found holding text the conversation does not read."""
    if keys:
        problems.warning("system_prompt_not_read", f"the record holds a system prompt under {', '.join(keys)} that "
                         "differs from the one the conversation starts with and is not read: which one the model saw "
                         "is not known", source)


def linked_system(holder: dict, raws: list, keys: tuple[str, ...], messages: list) -> tuple[list, list[str]]:
    """``sibling_system`` (with the conversation's ``messages``) of the object, in a list beside the raw messages
    ``raws`` in ``holder``, whose ``id`` they name as their session (one of ``keys`` on the first: LobeChat's
    ``state.sessions[i].config.systemRole`` for messages naming ``sessionId``); ``([], [])`` when there is none."""
    first = raws[0] if raws and isinstance(raws[0], dict) else {}
    named = {str(first[k]) for k in keys if first.get(k) not in (None, "")}
    for value in holder.values():  # the first object of a named id that holds a prompt (a topic holds none)
        for item in value if isinstance(value, list) and value is not raws else []:
            if isinstance(item, dict) and item.get("id") is not None and str(item.get("id")) in named:
                found = sibling_system(item, messages)
                if found != ([], []):
                    return found
    return [], []
