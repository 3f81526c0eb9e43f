"""Texts a record keeps beside the message list the general path reads (``generic``): a turn the list does not hold
(``message_prompt``, ``final_response``), or the answer to a list that ends before the model's (an agent step log
keeping the reply as a repr string). Either would be lost by reading the list alone, so the record is refused
(``content_not_mapped``). Not a format (no ``FORMAT``)."""

from __future__ import annotations

import json
import re
from typing import Any

from drafters.traces.formats._call_io import call_shaped
from drafters.traces.formats._content import as_text
from drafters.traces.formats._spellings import executed_calls, get, role_of
from drafters.traces.formats._system_prompts import SYSTEM_KEYS
from drafters.traces.json_paths import holder_of
from drafters.traces.model import Message

#: A key beside a message list naming a turn of a conversation by its last word (``message_prompt``,
#: ``final_response``, ``userQuery``; not ``response_format``), or a ``message_`` key; not ``answer`` (an eval's
#: reference answer beside the messages is no turn).
_TURN_KEY = re.compile(r"(^|_|[a-z])(prompt|query|question|instruction|input|completion|response|reply|output)s?$"
                       r"|^message_", re.IGNORECASE)


#: A key beside the messages naming what the model was given to read with them (Ragas' ``retrieved_contexts``,
#: DeepEval's ``retrieval_context``, Continue's ``contextItems``): text the prompt held, in a template the file does
#: not keep. Not a bare ``context(s)``: evidence gathered to check an answer (FactReasoner), or DeepEval's ideal
#: ``context``, is no text the model read.
_CONTEXT_KEY = re.compile(r"^retriev(ed|al)_?(contexts?|docs|documents|chunks|passages|nodes)$|^context_?items$"
                          r"|^attachments$|^sources$|^files$|^source_?(documents|nodes)$", re.IGNORECASE)
#: A turn-named key holding what a reply should have been, for grading (DeepEval's ``expected_output``): no turn.
_REFERENCE_KEY = re.compile(r"^(expected|reference|ideal|gold|target|ground_?truth|correct)", re.IGNORECASE)
#: Keys of an attached or retrieved item holding its text (Claude.ai's ``extracted_content``, Open WebUI's
#: ``document``, Continue's ``content``), not its name or type.
_ITEM_TEXT_KEY = re.compile(r"content|text|document|extract|snippet", re.IGNORECASE)


def turn_text_beside(objects: list[dict], messages: list, content_key: str | None) -> str | None:
    """``text_beside`` for raw messages: their texts under ``content_key``."""
    texts = [as_text(get(m, content_key)).strip() for m in messages if isinstance(m, dict)] if content_key else []
    texts += [json.dumps(m, ensure_ascii=False) for m in messages if isinstance(m, dict)]  # a call's arguments too
    return next((k for holder in objects if (k := text_beside(holder, texts)) is not None), None)


def text_beside(holder: dict, texts: list[str], read: set[str] = frozenset(),  # type: ignore[assignment]
                turns: bool = True) -> str | None:
    """The first key of ``holder`` (not in ``read``, not a system prompt's) whose name says a turn (``_TURN_KEY``)
    or a context the model read (``_CONTEXT_KEY``) and holding text (a string of three words or more, or a list of
    them, or of objects holding one) that none of ``texts`` (the conversation's) holds, else None: a copy of a
    message is no loss, anything else would be lost by reading the messages alone. ``turns=False``: contexts only
    (a message's own keys: ``response`` there is no turn of its own)."""
    for key, value in holder.items():
        if key in read or key in SYSTEM_KEYS or _REFERENCE_KEY.match(key) or \
                not (turns and _TURN_KEY.search(key) or _CONTEXT_KEY.search(key)):
            continue
        turn = turns and bool(_TURN_KEY.search(key))
        for piece in [value] if turn else _texts(value):  # a turn is one string, a context any text
            if isinstance(piece, str) and len(piece.split()) >= 3 and not _copied(piece.strip(), texts, turn):
                return key  # a word or two (a format name, a label) is no turn
    return None


def text_beside_list(record: Any, where: str, texts: list[str], paths: list[str | None]) -> str | None:
    """``text_beside`` on the object holding the message list at the concrete JSONPath ``where`` in ``record``
    (None for none), the keys named in a mapping's ``paths`` read (not checked); else the first other key there
    holding tool calls (DeepEval's ``tools_called`` beside ``input`` / ``actual_output``; not ``expected_tools``)."""
    holder = holder_of(record, where)
    if holder is None:
        return None
    read = {name for p in paths if p for name in re.findall(r"[A-Za-z_][\w-]*", p)}
    return text_beside(holder, texts, read) or next(
        (k for k, v in holder.items() if k not in read and not _REFERENCE_KEY.match(k) and isinstance(v, list) and v
         and (call_shaped(v) or executed_calls(v) is not None) and not _definitions(v)), None)  # a list: not a
    # model object ({name, parameters: {temperature}}: Magnet AI's span)


def _definitions(value: Any) -> bool:
    """Tool definitions, not calls: each item's parameters (or its ``function``'s: Chat Completions tools) a JSON
    schema (``{"type": "object", ...}``, or empty)."""
    items = value if isinstance(value, list) else [value]
    return all(isinstance(i, dict) and any(isinstance(d.get(k), dict) and (not d[k] or "type" in d[k] or
                                                                          "properties" in d[k])
                                           for d in (i, i.get("function") if isinstance(i.get("function"), dict)
                                                     else {})
                                           for k in ("parameters", "input_schema", "inputSchema")) for i in items)


def message_texts(messages: list[Message]) -> list[str]:
    """Every text of ``messages`` a copy beside them may repeat: text, reasoning, tool results, and tool calls'
    arguments (as written, and each string value: a search query kept beside the call)."""
    out = [t for m in messages for t in (m.text, m.reasoning, *(r.content for r in m.tool_results))]
    for call in (c for m in messages for c in m.tool_calls):
        out += [call.raw_arguments, *(v for v in (call.arguments or {}).values() if isinstance(v, str))]
    return out


#: A repr of an object holding the reply (DSPy's ``ModelResponse(id=..., choices=[...])``).
_REPR = re.compile(r"^[A-Z]\w*\(")


def _copied(piece: str, texts: list[str], turn: bool = True) -> bool:
    """``piece`` copies the messages' ``texts``: it is part of one of them; or, for a turn (not a context: a
    retrieved passage quoting the question is no copy), the texts it holds cover half of it or more (a rendered
    prompt) or it is a repr of the reply object holding one; or it is JSON whose every string of three words or
    more is part of a text (the messages dumped as JSON text: escaped quotes and newlines)."""
    if any(piece in t for t in texts):
        return True
    held = [t.strip() for t in texts if len(t.strip()) >= 4 and t.strip() in piece]
    if turn and held and (sum(map(len, set(held))) * 2 >= len(piece) or _REPR.match(piece)):
        return True
    try:
        decoded = json.loads(piece) if piece[:1] in "[{" else None
    except (ValueError, RecursionError):
        return False
    strings = [s for s in _strings(decoded) if len(s.split()) >= 3]
    joined = "\n".join(texts)  # one search per string, not one per string and text
    return bool(strings) and all(s.strip() in joined for s in strings)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for v in items for s in _strings(v)]


def _texts(value: Any, depth: int = 0) -> list[str]:
    """The strings of a context value: itself, a list's strings, or each object's strings under a key naming
    text (``_ITEM_TEXT_KEY``; a list or an object there, or an object under another key, looked into up to three
    levels: ``sources[].document[]``, ``source_nodes[].node.text``, ``files[].file.data.content``)."""
    items = value if isinstance(value, list) else [value]
    out = [i for i in items if isinstance(i, str)]
    for item in (i for i in items if isinstance(i, dict)):
        for key, held in item.items():
            if _ITEM_TEXT_KEY.search(str(key)):
                inner = held if isinstance(held, list) else list(held.values()) if isinstance(held, dict) else [held]
                out += [t for t in inner if isinstance(t, str)]
            elif isinstance(held, dict) and depth < 2:
                out += _texts(held, depth + 1)
    return out


#: A key that says it holds a call's output (``output_text``, ``action``, ``original_response``, ``prediction``).
_OUTPUT_WORD = re.compile(r"output|answer|action|response|completion|result|reply|generation|predict", re.IGNORECASE)


def answer_beside(objects: list[dict], messages: list, role_key: str) -> str | None:
    """Where a record whose list ends before the model's answer (its last message is not the assistant's) holds
    text under a key saying output (itself or one level down): the answer to that input is there, in a spelling
    the general path does not read (an agent step log: the messages sent, and the reply as a repr string)."""
    last = messages[-1] if messages else None
    if not isinstance(last, dict) or role_of(get(last, role_key)) == "assistant":
        return None
    for holder in objects:
        for key, value in holder.items():
            inner = value.items() if isinstance(value, dict) else [(key, value)]
            for name, text in inner:
                if _OUTPUT_WORD.search(f"{key}.{name}") and isinstance(text, str) and len(text.split()) >= 3:
                    return key if name == key else f"{key}.{name}"
    return None


def holders(value: Any, path: str) -> list[dict]:
    """The objects holding the list at ``path`` (``$.agent.memory.content``: the memory, the agent, the record),
    nearest first, up to the nearest list on the way (``$.history[0].messages``: ``history[0]`` only: an object
    above a list holds every item's list, and whose prompt it would be is not guessed)."""
    out, node = [], value
    for key, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path)[:-1]:
        if index:
            out, node = [], node[int(index)] if isinstance(node, list) and int(index) < len(node) else None
            continue
        if not isinstance(node, dict):
            return []
        out.append(node)
        node = node.get(key)
    return ([node] if isinstance(node, dict) else []) + out[::-1]
