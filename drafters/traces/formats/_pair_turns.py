"""Chat histories kept as ``[user, assistant]`` text pairs (Gradio's tuple-format chatbot history, ChatGLM's
``history``), as bare texts beside the answer (ZeroEval's ``chat_history``) or as turn objects (``[{"turn_idx": 1,
"user": ..., "agent": ...}]``: a dialogue system's run results), and fine-tuning rows of one turn after such a
history, read as messages by the general path (docs/traces.md, "Tables"). Not a format (no ``FORMAT``). Standard
library only."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from itertools import chain, islice
from typing import Any


def pair_turns(record: Any) -> Any:
    """``record`` with each top-level value that is a chat history as ``[user, assistant]`` text pairs (Gradio's
    tuple-format chatbot history, ChatGLM's ``history``: ``[["Hi", "Hello!"], ["2+2?", "4"]]``) replaced by its
    messages (``{"role", "content"}``; a pair whose reply is None or empty is a prompt not yet answered: the user
    message alone), and a record that is such a history as ``{"messages": [...]}``. Every item must be a pair whose
    first item is non-empty text and whose second is text or None, and at least one reply must be text; anything
    else is left as it is. A history of bare texts with its answer beside is read too (``_string_history_chat``)."""
    if isinstance(record, list) and is_pair_history(record):  # a record that is a history (a JSONL of them)
        return {"messages": _pair_messages(record)}
    if not isinstance(record, dict):
        return record
    chat = _history_chat(record) or _string_history_chat(record)
    if chat is not None:
        return chat
    return {k: _pair_messages(v) if is_pair_history(v) else _turn_messages(v) for k, v in record.items()}


#: A turn object's keys naming the user's text and the reply's (``{"user": ..., "agent": ...}``). Not ``question`` /
#: ``answer`` / ``output``: lists of those are references as often as replies (an eval set's QA pairs).
TURN_USER_KEYS = ("user", "human", "user_message", "user_input", "user_utterance", "usr")
TURN_REPLY_KEYS = ("assistant", "agent", "bot", "ai", "chatbot", "assistant_message", "agent_response",
                   "bot_response", "ai_response")
MAX_TURN_META = 40  # characters of any other string a turn object holds: longer is content no message reads


def _turn_messages(value: Any, depth: int = 0) -> Any:
    """``value`` as messages where it is a list of turn objects (``is_turn_list``); an object's values one level
    down likewise (``run_result.dialog_pred``); anything else as it is."""
    if is_turn_list(value):
        user, reply = _turn_keys(value[0])  # type: ignore[misc]
        return _pair_messages([[t[user], t.get(reply)] for t in value])
    if isinstance(value, dict) and depth == 0:
        return {k: _turn_messages(v, 1) for k, v in value.items()}
    return value


def _turn_keys(turn: Any) -> tuple[str, str] | None:
    if not isinstance(turn, dict) or "role" in turn:
        return None
    users = [k for k in TURN_USER_KEYS if isinstance(turn.get(k), str)]
    replies = [k for k in TURN_REPLY_KEYS if k in turn and (turn[k] is None or isinstance(turn[k], str))]
    return (users[0], replies[0]) if len(users) == 1 and len(replies) == 1 else None


def is_turn_list(value: Any) -> bool:
    """A list of turn objects, each one user text and its reply (or None: not answered yet) under the same two keys
    (``TURN_USER_KEYS``, ``TURN_REPLY_KEYS``), no other string over ``MAX_TURN_META`` characters (a turn index, an
    id, a time: metadata; a longer text would be content no message reads), and at least one turn whose prompt and
    reply are both words, not one each (``{"user": "u42", "agent": "planner"}``: names, not a dialogue)."""
    if not isinstance(value, list) or not value:
        return False
    keys = _turn_keys(value[0])
    if keys is None:
        return False
    user, reply = keys
    if not all(_turn_keys(t) == keys and t[user].strip() and all(
            len(v) <= MAX_TURN_META for k, v in t.items() if k not in keys and isinstance(v, str)) for t in value):
        return False
    return any(len(t[user].split()) > 1 and len((t.get(reply) or "").split()) > 1 for t in value)


#: A fine-tuning row of one turn after its history (ChatGLM's ``prompt`` / ``response`` / ``history``, ms-swift's and
#: Qwen's ``system`` / ``query`` / ``response`` / ``history``): the prompt's and the answer's keys.
_TURN_PROMPT_KEYS = ("query", "prompt", "instruction", "question")
_TURN_ANSWER_KEYS = ("response", "output", "completion")


def _history_chat(record: dict) -> dict | None:
    """A row holding one prompt text and its answer after a ``history`` of ``[user, assistant]`` pairs (or none) and
    perhaps a ``system`` text, as ``{"messages": [system, history..., user, assistant], ...other keys}``: every reply
    of the history is a call as the last one is. None for any other record (two prompts: Alpaca's ``input``)."""
    history = record.get("history")
    if "messages" in record or not (isinstance(history, list) and (not history or is_pair_history(history))
                                    or history is None and isinstance(record.get("system"), str)):
        return None
    prompts = [k for k in (*_TURN_PROMPT_KEYS, "input") if isinstance(record.get(k), str) and record[k].strip()]
    answers = [k for k in _TURN_ANSWER_KEYS if isinstance(record.get(k), str) and record[k].strip()]
    if len(prompts) != 1 or len(answers) != 1 or prompts[0] == "input":
        return None
    system = record.get("system")
    head = [{"role": "system", "content": system}] if isinstance(system, str) and system.strip() else []
    messages = [*head, *(_pair_messages(history) if history else []), {"role": "user", "content": record[prompts[0]]},
                {"role": "assistant", "content": record[answers[0]]}]
    rest = {k: v for k, v in record.items() if k not in ("history", "system", prompts[0], answers[0])}
    return {**rest, "messages": messages}


#: Keys of a chat history kept as bare texts, the user's first, then alternating (ZeroEval's and WildBench's
#: ``chat_history``); never ``messages`` or ``turns`` alone, whose string lists are as often steps or log lines.
STRING_HISTORY_KEYS = ("chat_history", "history", "conversation_history", "dialog_history", "dialogue_history")


def _string_history_chat(record: dict) -> dict | None:
    """A record holding a chat history as bare texts (``STRING_HISTORY_KEYS``: user, assistant, user, ...: an odd
    count, ending on the user's turn) and the model's answer to it beside, as text or a list of one text under one
    of ``_TURN_ANSWER_KEYS`` (ZeroEval / WildBench results: ``{"chat_history": [prompt], "output": [answer]}``), as
    ``{"messages": [...], ...other keys}``. None for any other record: an even count (whose turn the answer is, is
    not known), a second prompt text beside (two prompts), or several answers."""
    keys = [k for k in STRING_HISTORY_KEYS if isinstance(record.get(k), list) and record[k]]
    if len(keys) != 1 or "messages" in record:
        return None
    history = record[keys[0]]
    if len(history) % 2 == 0 or not all(isinstance(t, str) and t.strip() for t in history):
        return None
    answers = [k for k in _TURN_ANSWER_KEYS if _one_text(record.get(k))]
    if len(answers) != 1 or any(isinstance(record.get(k), str) and len(record[k].split()) > 1
                                for k in (*_TURN_PROMPT_KEYS, "input")):
        return None
    answer = record[answers[0]]
    system = record.get("system")
    head = [{"role": "system", "content": system}] if isinstance(system, str) and system.strip() else []
    messages = [*head, *({"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(history)),
                {"role": "assistant", "content": answer if isinstance(answer, str) else answer[0]}]
    rest = {k: v for k, v in record.items() if k not in (keys[0], "system", answers[0])}
    return {**rest, "messages": messages}


def _one_text(value: Any) -> bool:
    """Non-empty text, or a list of exactly one (an eval's samples, one drawn)."""
    value = value[0] if isinstance(value, list) and len(value) == 1 else value
    return isinstance(value, str) and bool(value.strip())


def is_pair_history(value: Any) -> bool:
    """A chat history as ``[user, assistant]`` text pairs (``pair_turns``); not a transcript of named speakers'
    turns (``_speaker_turns``)."""
    return isinstance(value, list) and bool(value) and all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and p[0].strip() and
        (p[1] is None or isinstance(p[1], str)) for p in value) and any(p[1] for p in value) and \
        not _speaker_turns(value) and not _scores(value)


def _scores(pairs: list) -> bool:
    """Whether every pair is a number and a flag written as text (lm-eval-harness's ``[["-1.5", "True"], ...]``:
    a choice's log-likelihood and whether it is the greedy answer), no prompt and reply."""
    return all(re.fullmatch(r"\s*-?\d+(\.\d+)?([eE]-?\d+)?\s*", p[0]) for p in pairs)


def _speaker_turns(pairs: list) -> bool:
    """Whether ``[speaker, utterance]`` pairs (a multi-agent simulation's transcript: ``[["Alice", "Hi"], ["Bob",
    "Hello"], ["Alice", ...]]``) rather than a user's prompts and replies: at least three pairs whose first items
    are short names (one line, at most five words, a capital first, no sentence's end) and repeat (fewer distinct
    than pairs), where a user rarely sends the same prompt twice. Which speaker is the model is not guessed."""
    firsts = [p[0].strip() for p in pairs]
    return len(pairs) >= 3 and len(set(firsts)) < len(firsts) and all(
        len(f) <= 40 and "\n" not in f and len(f.split()) <= 5 and f[:1].isupper() and f[-1:] not in ".?!" for f in firsts)


def _pair_messages(pairs: list) -> list[dict]:
    out = []
    for user, reply in pairs:
        out.append({"role": "user", "content": user})
        if reply:
            out.append({"role": "assistant", "content": reply})
    return out


def pair_documents(records: Iterator[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
    """``records`` as read, but a document that is one pair history (Gradio's history saved as the file: its items,
    ``$[i]``, are the pairs) as one record of it. Other records pass as they are."""
    head = list(islice(records, 2))
    if not head or not all(_is_pair(v) and getattr(s, "record", "") and s.record.startswith("$[") for s, v in head):
        yield from chain(head, records)
        return
    items = list(chain(head, records))
    if is_pair_history([v for _, v in items]):
        yield replace(items[0][0], record="$"), [v for _, v in items]
    else:
        yield from items


def _is_pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(v is None or isinstance(v, str) for v in value)
