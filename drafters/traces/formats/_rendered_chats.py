"""Conversations kept as text rendered by a chat template: the prompt a server was sent (llama.cpp's ``/completion``
``prompt``, a completion API's log) or a fine-tuning row's ``text``, with the template's special tokens between the
turns (ChatML ``<|im_start|>user ... <|im_end|>``, Llama 3 headers, Gemma turns, Phi-3 / Zephyr tags, Mistral
``[INST]``). Read as a plain user message, such a text would be rendered again around its own tokens when a drafter
is trained; read here as its messages (docs/traces.md, "Prompts rendered by a chat template").

The rule: the whole text, but for begin-of-text tokens and whitespace between turns, is turns of one template, each
a known role; a prompt ends with the assistant's header and nothing after it (the generation prompt), a
conversation with the assistant's closed turn. Anything else (text outside the turns, an unknown role, two
templates, an answer cut before its end token) is not read this way. Not a format (no ``FORMAT``); torch-free.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from drafters.traces.model import Message, TextPart, ToolResultPart

_ROLES = {"system": "system", "developer": "system", "user": "user", "human": "user", "assistant": "assistant",
          "model": "assistant", "gpt": "assistant", "tool": "tool", "ipython": "tool", "function": "tool"}


class _Template(NamedTuple):
    """A chat template's grammar: ``turn`` matches one closed turn (groups: role, text), ``opening`` the
    assistant's header left open at the end of a prompt; ``mark`` is a token only this template writes."""

    name: str
    mark: str
    turn: re.Pattern[str]
    opening: re.Pattern[str]


_TEMPLATES = (
    _Template("chatml", "<|im_start|>", re.compile(r"<\|im_start\|>(\w+)\n(.*?)<\|im_end\|>", re.DOTALL),
              re.compile(r"<\|im_start\|>assistant\n?\Z")),
    _Template("llama3", "<|start_header_id|>",
              re.compile(r"<\|start_header_id\|>(\w+)<\|end_header_id\|>\n\n(.*?)<\|eot_id\|>", re.DOTALL),
              re.compile(r"<\|start_header_id\|>assistant<\|end_header_id\|>(\n\n)?\Z")),
    _Template("gemma", "<start_of_turn>", re.compile(r"<start_of_turn>(\w+)\n(.*?)<end_of_turn>", re.DOTALL),
              re.compile(r"<start_of_turn>model\n?\Z")),
    _Template("phi3", "<|end|>", re.compile(r"<\|(system|user|assistant)\|>\n?(.*?)<\|end\|>", re.DOTALL),
              re.compile(r"<\|assistant\|>\n?\Z")),
    _Template("zephyr", "</s>", re.compile(r"<\|(system|user|assistant)\|>\n(.*?)</s>", re.DOTALL),
              re.compile(r"<\|assistant\|>\n?\Z")),
)
#: A user's turn opening in one of the templates: a text holding it is read by ``rendered_chat`` or refused.
TEMPLATE_HEAD = re.compile(r"<\|im_start\|>user\n|<\|start_header_id\|>user<\|end_header_id\|>|<start_of_turn>user\n")
_BEGIN = re.compile(r"\A\s*(?:<s>|<bos>|<\|begin_of_text\|>|<\|endoftext\|>|<\|startoftext\|>)?")
_INST = re.compile(r"\[INST\](.*?)\[/INST\]", re.DOTALL)  # Mistral / Llama 2: the user's turn; the answer ends with </s>


class Rendered(NamedTuple):
    """A rendered chat read back: its template's name, the turns as ``(role, text)`` and whether it is a prompt
    (ends with the assistant's open header: the answer is stored elsewhere)."""

    template: str
    turns: list[tuple[str, str]]
    prompt: bool


def rendered_chat(text: object) -> Rendered | None:
    """The turns of ``text`` when it is a conversation or a prompt rendered by one known chat template (see the
    module docstring), else None. Turn texts are as rendered, without the template's tokens. At least one user
    turn, and an assistant turn or the open header, must be there."""
    if not isinstance(text, str) or len(text) < 20:
        return None
    if "[INST]" in text:
        return _inst_chat(text)
    for template in _TEMPLATES:
        if template.mark not in text:
            continue
        found = _turns(text, template)
        if found is not None:
            return found
    return None


def _turns(text: str, template: _Template) -> Rendered | None:
    at = _BEGIN.match(text).end()  # type: ignore[union-attr]
    turns: list[tuple[str, str]] = []
    while True:
        gap = re.match(r"\s*", text[at:]).end()  # type: ignore[union-attr]
        m = template.turn.match(text, at + gap)
        if m is None:
            break
        role = _ROLES.get(m.group(1).lower())
        if role is None:
            return None
        turns.append((role, m.group(2)))
        at = m.end()
    rest = text[at:].lstrip()
    prompt = bool(rest) and template.opening.match(rest) is not None
    if rest and not prompt:
        return None  # text outside the turns, or an answer cut before its end token
    return _checked(Rendered(template.name, turns, prompt))


def _inst_chat(text: str) -> Rendered | None:
    """``<s>[INST] user [/INST] answer</s>[INST] ... [/INST]``: the user's turns between the tags, each answer after
    them up to ``</s>`` (the last one absent in a prompt). A system prompt written inside the first ``[INST]`` stays
    in that user turn: the template does not mark it."""
    turns: list[tuple[str, str]] = []
    at = _BEGIN.match(text).end()  # type: ignore[union-attr]
    prompt = False
    while at < len(text):
        m = _INST.match(text, at + re.match(r"\s*", text[at:]).end())  # type: ignore[union-attr]
        if m is None:
            return None
        turns.append(("user", m.group(1).strip()))
        end = text.find("</s>", m.end())
        answer = text[m.end():end if end >= 0 else len(text)]
        if end < 0:
            if answer.strip():
                return None  # an answer without its end token: cut, or text this reading does not know
            prompt = True
            break
        turns.append(("assistant", answer.strip()))
        at = end + len("</s>")
        if not text[at:].strip():
            break
        at = at + re.match(r"\s*(<s>)?", text[at:]).end()  # type: ignore[union-attr]
    return _checked(Rendered("mistral", turns, prompt))


#: A turn that is only tool results in Hermes / Qwen tags (Qwen 2.5 writes them as the user's turn): the tool's.
_TOOL_RESPONSE = re.compile(r"\s*<tool_response>\n?(.*?)\n?</tool_response>\s*", re.DOTALL)


def _tool_turns(turns: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out = []
    for role, text in turns:
        blocks = list(_TOOL_RESPONSE.finditer(text)) if role in ("user", "tool") else []
        if blocks and "".join(m.group(0) for m in blocks) == text:
            out += [("tool", m.group(1)) for m in blocks]  # the environment's output, not the user's words
        else:
            out.append((role, text))
    return out


def _checked(found: Rendered) -> Rendered | None:
    found = found._replace(turns=_tool_turns(found.turns))
    roles = [role for role, _ in found.turns]
    if "user" not in roles or not (found.prompt or roles[-1] == "assistant"):
        return None
    if found.prompt and roles[-1] == "assistant":
        return None  # an open header after the model's own turn: no prompt for it
    return found


def rendered_messages(record: object) -> object:
    """``record`` with each top-level text that is a whole conversation rendered by a chat template (``rendered_chat``,
    not a prompt: a fine-tuning row's ``text``) replaced by its messages (``{"role", "content"}``), so the general
    path finds them; a prompt stays text (read with the answer stored beside it, ``mapping.py``)."""
    if not isinstance(record, dict):
        return record
    out = {}
    for key, value in record.items():
        found = rendered_chat(value)
        out[key] = value if found is None or found.prompt else as_dicts(found)
    return out


def as_dicts(found: Rendered) -> list[dict]:
    """The turns as ``{"role", "content"}`` messages."""
    return [{"role": role, "content": text} for role, text in found.turns]


def rendered_turns(found: Rendered) -> list[Message]:
    """The turns as messages: a tool's turn a result of no call id (the template writes none), the others text."""
    return [Message("tool", [ToolResultPart(None, text)]) if role == "tool" else Message(role, [TextPart(text)])
            for role, text in found.turns]  # type: ignore[arg-type]
