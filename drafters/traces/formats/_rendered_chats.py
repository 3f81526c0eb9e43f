"""Conversations kept as text rendered by a chat template: the prompt a server was sent (llama.cpp's ``/completion``
``prompt``, a completion API's log) or a fine-tuning row's ``text``, with the template's special tokens between the
turns (ChatML ``<|im_start|>user ... <|im_end|>``, Llama 3 headers, Gemma turns, Phi-3 / Zephyr tags, Mistral
``[INST]``, DeepSeek's ``<｜User｜>``). Read as a plain user message, such a text would be rendered again around its
own tokens when a drafter is trained; read here as its messages (docs/traces.md, "Prompts rendered by a chat
template").

The rule: the whole text, but for begin-of-text tokens and whitespace between turns, is turns of one template, each
a known role; a prompt ends with the assistant's header and nothing after it (the generation prompt), a
conversation with the assistant's closed turn. Anything else (text outside the turns, an unknown role, two
templates, an answer cut before its end token) is not read this way. Not a format (no ``FORMAT``); torch-free.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Message, Source, TextPart, ToolCallPart, ToolResultPart

_ROLES = {"system": "system", "developer": "system", "user": "user", "human": "user", "assistant": "assistant",
          "model": "assistant", "gpt": "assistant", "tool": "tool", "ipython": "tool", "function": "tool"}


class _Template(NamedTuple):
    """A chat template's grammar: ``turn`` matches one closed turn (groups: role, text), ``opening`` the
    assistant's header left open at the end of a prompt; ``mark`` is a token only this template writes."""

    name: str
    mark: str
    turn: re.Pattern[str]
    opening: re.Pattern[str]


_NO_THINK = r"(?:<think>\s*</think>\s*)?"  # Qwen 3's generation prompt with thinking off
_TEMPLATES = (
    _Template("chatml", "<|im_start|>",  # and Phi-4's ``<|im_sep|>`` after the role
              re.compile(r"<\|im_start\|>(\w+)(?:\n|<\|im_sep\|>)(.*?)<\|im_end\|>", re.DOTALL),
              re.compile(r"<\|im_start\|>assistant(?:\n|<\|im_sep\|>)?" + _NO_THINK + r"\Z")),
    _Template("llama3", "<|start_header_id|>",  # a turn ending a built-in tool's call: <|eom_id|> (Llama 3.1)
              re.compile(r"<\|start_header_id\|>(\w+)<\|end_header_id\|>\n\n?(.*?)<\|(?:eot|eom)_id\|>", re.DOTALL),
              re.compile(r"<\|start_header_id\|>assistant<\|end_header_id\|>\n{0,2}\Z")),
    _Template("gemma", "<start_of_turn>", re.compile(r"<start_of_turn>(\w+)\n(.*?)<end_of_turn>", re.DOTALL),
              re.compile(r"<start_of_turn>model\n?\Z")),
    _Template("phi3", "<|end|>", re.compile(r"<\|(system|user|assistant)\|>\n?(.*?)<\|end\|>", re.DOTALL),
              re.compile(r"<\|assistant\|>\n?\Z")),
    _Template("zephyr", "</s>", re.compile(r"<\|(system|user|assistant)\|>\n(.*?)</s>", re.DOTALL),
              re.compile(r"<\|assistant\|>\n?\Z")),
)
#: Special tokens of the templates: a text holding one is turns of a template or
#: refused, never read as one message holding them (``holds_template_tokens``).
_TOKENS = re.compile(r"<\|im_start\|>|<\|im_end\|>|<\|start_header_id\|>|<\|eot_id\|>|<start_of_turn>|<end_of_turn>"
                     r"|<\|im_sep\|>|<｜(?:User|Assistant)｜>|\[/INST\]|<\|(?:user|assistant)\|>\n")
#: A user's turn opening in one of the templates: a text file holding it is read by ``rendered_chat`` or refused.
TEMPLATE_HEAD = re.compile(r"<\|im_start\|>user(\n|<\|im_sep\|>)|<\|start_header_id\|>user<\|end_header_id\|>"
                           r"|<start_of_turn>user\n")
_BEGIN = re.compile(r"\A\s*(?:<s>|<bos>|<\|begin_of_text\|>|<\|endoftext\|>|<\|startoftext\|>)?")
_EOS = re.compile(r"\s*(?:<\|endoftext\|>|</s>|<eos>|<\|end_of_text\|>)?\s*\Z")  # after the last turn
_INST = re.compile(r"\[INST\](.*?)\[/INST\]", re.DOTALL)  # Mistral / Llama 2: the user's turn
_RESULTS = re.compile(r"\[TOOL_RESULTS\](.*?)\[/TOOL_RESULTS\]", re.DOTALL)  # Mistral's tool results
_SYS = re.compile(r"\s*<<SYS>>\n?(.*?)\n?<</SYS>>\s*", re.DOTALL)  # Llama 2's system prompt in the first [INST]
_DS_BEGIN, _DS_USER, _DS_ASSISTANT, _DS_END = ("<｜begin▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
                                              "<｜end▁of▁sentence｜>")


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
    if text[_BEGIN.match(text).end():].lstrip().startswith("[INST]"):  # type: ignore[union-attr]
        return _inst_chat(text)
    if _DS_USER in text:
        return _deepseek_chat(text)
    for template in _TEMPLATES:
        if template.mark not in text:
            continue
        found = _turns(text, template)
        if found is not None:
            return found
    return None


#: A template's end-of-turn token closing an answer, and its own header opening it (a server that did not skip
#: special tokens returns them). Not ``</s>``: HTML's strike-through closes with it.
_END_TOKEN = re.compile(r"(?:<\|im_end\|>|<\|eot_id\|>|<end_of_turn>|<\|end\|>|<\|endoftext\|>|<\|end_of_text\|>"
                        r"|<｜end▁of▁sentence｜>)+\s*\Z")
_HEADER = re.compile(r"\A(?:<\|im_start\|>assistant\n|<\|start_header_id\|>assistant<\|end_header_id\|>\n\n?"
                     r"|<start_of_turn>model\n)")


def strip_turn_tokens(messages: list[Message]) -> int:
    """In place: each assistant text without the template's header opening it and end token closing it (the
    template's tokens, never the model's text). Returns how many texts changed."""
    changed = 0
    for m in messages:
        texts = [p for p in m.parts if isinstance(p, TextPart)] if m.role == "assistant" else []
        if not texts:
            continue
        head = _HEADER.match(texts[0].text)
        if head:
            texts[0].text = texts[0].text[head.end():]
        end = _END_TOKEN.search(texts[-1].text)  # after the head is cut: one text may hold both
        if end:
            texts[-1].text = texts[-1].text[:end.start()]
        changed += bool(head or end)
    return changed


def holds_template_tokens(text: object) -> bool:
    """Whether ``text`` holds a chat template's special tokens (then, unless ``rendered_chat`` reads it, it is
    refused: read as one message, its tokens would be rendered twice)."""
    return isinstance(text, str) and _TOKENS.search(text) is not None


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
    if not prompt and _EOS.fullmatch(rest) is None:
        return None  # text outside the turns, or an answer cut before its end token
    return _checked(Rendered(template.name, turns, prompt))


def _inst_chat(text: str) -> Rendered | None:
    """``<s>[INST] user [/INST] answer</s>[INST] ... [/INST]``: the user's turns between the tags, each answer after
    them up to ``</s>`` or the next turn (the last one absent in a prompt); Mistral's ``[TOOL_RESULTS]`` turns; Llama
    2's ``<<SYS>>`` block opening the first user turn is the system prompt (Mistral's template marks none: a system
    prompt it wrote into the first turn stays there)."""
    turns: list[tuple[str, str]] = []
    at = _BEGIN.match(text).end()  # type: ignore[union-attr]
    prompt = False
    while at < len(text):
        at += re.match(r"\s*(?:<s>)?\s*", text[at:]).end()  # type: ignore[union-attr]
        if at >= len(text):
            break
        m = _INST.match(text, at) or _RESULTS.match(text, at)
        if m is None:
            return None
        if m.re is _INST:
            sys = _SYS.match(m.group(1)) if not turns else None
            turns += [("system", sys.group(1))] if sys else []
            turns.append(("user", m.group(1)[sys.end() if sys else 0:].strip()))
        else:
            turns.append(("tool", _result_text(m.group(1).strip())))
        nxt = [i for i in (text.find("</s>", m.end()), text.find("[INST]", m.end()), text.find("[TOOL_RESULTS]", m.end()))
               if i >= 0]
        end = min(nxt) if nxt else len(text)
        answer = text[m.end():end].strip()
        if not answer and end == len(text):
            prompt = True
            break
        if not answer:
            return None  # a turn with no answer before the next one
        if end == len(text):
            return None  # an answer without its end token: cut, or text this reading does not know
        turns.append(("assistant", answer))
        at = end + (len("</s>") if text.startswith("</s>", end) else 0)
    return _checked(Rendered("mistral", turns, prompt))


def _deepseek_chat(text: str) -> Rendered | None:
    """DeepSeek V3 / R1: ``<｜begin▁of▁sentence｜>SYSTEM<｜User｜>q<｜Assistant｜>a<｜end▁of▁sentence｜><｜User｜>...``,
    a prompt ending with ``<｜Assistant｜>`` (R1's forced ``<think>`` after it is not read: the answer beside it
    would begin inside the thinking). Its tool-call tokens are not read either (the text is then refused)."""
    body = text.strip().removeprefix(_DS_BEGIN)
    if "<｜tool" in body:
        return None
    system, _, rest = body.partition(_DS_USER)
    turns = [("system", system)] if system.strip() else []
    chunks = rest.split(_DS_USER)
    for i, chunk in enumerate(chunks):
        question, sep, answer = chunk.partition(_DS_ASSISTANT)
        if not sep:
            return None
        turns.append(("user", question))
        if i == len(chunks) - 1 and not answer.strip():
            return _checked(Rendered("deepseek", turns, True))
        if not answer.rstrip().endswith(_DS_END) or _DS_END in answer.rstrip()[:-len(_DS_END)]:
            return None  # an answer cut before its end, or text after it
        turns.append(("assistant", answer.rstrip()[:-len(_DS_END)]))
    return _checked(Rendered("deepseek", turns, False))


def _result_text(body: str) -> str:
    """A Mistral tool result's content (``{"content": ..., "call_id": ...}``), else the text as written."""
    try:
        value = json.loads(body)
    except ValueError:
        return body
    return value["content"] if isinstance(value, dict) and isinstance(value.get("content"), str) else body


def mistral_calls(text: str) -> list[dict] | None:
    """The tool calls of an answer written as Mistral's ``[TOOL_CALLS] [{"name", "arguments"}, ...]``, else None."""
    if not text.startswith("[TOOL_CALLS]"):
        return None
    try:
        calls = json.loads(text[len("[TOOL_CALLS]"):].strip())
    except ValueError:
        return None
    ok = isinstance(calls, list) and calls and all(isinstance(c, dict) and isinstance(c.get("name"), str)
                                                   and "arguments" in c for c in calls)
    return calls if ok else None


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
    """The turns as ``{"role", "content"}`` messages (Mistral's ``[TOOL_CALLS]`` answer as ``tool_calls``)."""
    out = []
    for role, text in found.turns:
        calls = mistral_calls(text) if role == "assistant" else None
        out.append({"role": role, "content": text} if calls is None else {"role": role, "content": "", "tool_calls": [
            {"id": c.get("id"), "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls]})
    return out


def rendered_turns(found: Rendered) -> list[Message]:
    """The turns as messages: a tool's turn a result of no call id (the template writes none), Mistral's
    ``[TOOL_CALLS]`` answer its calls, the others text."""
    out = []
    for role, text in found.turns:
        calls = mistral_calls(text) if role == "assistant" else None
        if calls is not None:
            out.append(Message("assistant", [ToolCallPart.from_raw(c.get("id"), c["name"], c["arguments"])
                                             for c in calls]))
        else:
            out.append(Message("tool", [ToolResultPart(None, text)]) if role == "tool"
                       else Message(role, [TextPart(text)]))  # type: ignore[arg-type]
    return out


def rendered_text(text: object, where: str, answered: bool, problems: ProblemSink, source: Source) -> list[Message] | None:
    """A declared mapping's messages found as text (``where``): the turns when a template rendered it (a prompt
    only where the mapping declares where its answer is, ``answered``), reported ``chat_template_read``; ``[]``,
    reported, when it is a prompt without a declared answer (``no_assistant_message``) or holds a template's tokens
    that no template reads (``chat_template_not_read``); None for any other value (not a template's text)."""
    found = rendered_chat(text)
    if found is not None and (answered or not found.prompt):
        problems.warning("chat_template_read", f"the text at {where} is rendered by the {found.template} chat "
                         f"template: read as its {len(found.turns)} turns", source, where)
        return rendered_turns(found)
    if found is not None:
        problems.error("no_assistant_message", f"the text at {where} is a prompt rendered by the {found.template} "
                       "template, ending with the assistant's header: its answer is not read (declare where it is: "
                       "response: PATH)", source, where)
        return []
    if holds_template_tokens(text):
        problems.error("chat_template_not_read", f"the text at {where} holds a chat template's special tokens but is "
                       "not wholly turns of a template the readers know (docs/traces.md, prompts rendered by a chat "
                       "template): read as one message, its tokens would be rendered twice; not read", source, where)
        return []
    return None
