"""Consecutive assistant messages in the general path: one answer, or two calls, or not known.

A file may write one model turn as several assistant messages with nothing between them: its thinking first
(AI Studio's ``chunkedPrompt`` chunk with ``"isThought": true``, a message of ``type: thinking``), or the
chunks of a streamed reply (``partial: true``). The rule (docs/traces.md, "Consecutive assistant messages"):

- a message flagged as a thought (``THOUGHT_FLAGS`` true, or ``type`` in ``THOUGHT_TYPES`` when ``type`` is not
  the role key) is the reasoning of the assistant turn it precedes: its text becomes reasoning and it is joined
  to the next assistant message, never a call of its own; a thought followed by no answer (the next message is
  not the assistant's, or there is none) is not guessed: ``ambiguous_turns``;
- a message flagged as a chunk of a streamed reply (``CHUNK_FLAGS`` true) is joined with the assistant
  messages after it up to and including the first unflagged one (the reply's end);
- a tool result inside an assistant message (a ``tool_result`` content block after the model's ``tool_use``:
  Claude.ai exports) is the environment's, not the model's: the model's call ends before it, the results
  become a tool message, and what the message holds after them is a new call whose context includes the
  result (``split_at_results``; done first);
- an assistant message re-sent as it grew (a chat app saving each update of a streamed reply: the later record
  holds the earlier one's parts, its last text extended) is that message's last version wherever the two would be
  joined (a chunk, ``join``): joining them would repeat the text (``resent_versions_read_last``);
- two unflagged assistant messages with nothing between them are two calls when each carries evidence of
  a call of its own (``CALL_EVIDENCE``: a step, response or request id of its own, or its own token usage:
  ATIF agent steps); otherwise whether they are one call written in two records or two calls (the second
  without a new input) is not known, so the general path refuses the conversation (``ambiguous_turns``); a
  declared mapping says which (``adjacent_answers``: ``separate``, two calls, its default; ``join``, one call;
  ``refuse``, as the general path, and as the mapping ``infer-mapping`` writes).

Not a format (no ``FORMAT``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import (
    Conversation,
    Message,
    ReasoningPart,
    Source,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    compact_json,
)

THOUGHT_FLAGS = ("isThought", "is_thought", "thought", "isThinking", "is_thinking", "isReasoning", "is_reasoning")
THOUGHT_TYPES = ("thinking", "reasoning", "thought")
CHUNK_FLAGS = ("isChunk", "is_chunk", "partial", "isPartial", "is_partial")
DISPLAY_FLAGS = ("ui_only", "uiOnly")  # a message kept for display, never sent to the model (gptme's ui_only)
TURN_KEYS = THOUGHT_FLAGS + CHUNK_FLAGS + DISPLAY_FLAGS  # message keys the rules read (not "keys not read")
CALL_IDS = ("step_id", "stepId", "response_id", "responseId", "request_id", "requestId")
CALL_AUTHORS = ("author", "agent", "agent_name", "agentName", "agent_id", "agentId", "model", "model_name",
                "name")  # a participant's name (OpenAI's, Semantic Kernel's agents): two names, two speakers
CALL_USAGE = ("usage", "metrics", "usage_metadata", "usageMetadata", "tokenCount", "token_count", "tokens")


def turn_kind(raw: Any, role_key: str = "role") -> str | None:
    """``thought``, ``chunk`` or None for one raw message (flags at its top level)."""
    if not isinstance(raw, dict):
        return None
    if any(raw.get(k) is True for k in THOUGHT_FLAGS):
        return "thought"
    kind = raw.get("type")
    if role_key.split(".")[-1] != "type" and isinstance(kind, str) and kind.lower() in THOUGHT_TYPES:
        return "thought"
    role = raw.get(role_key.split(".")[-1]) if "." not in role_key else None
    if isinstance(role, str) and role.lower() in THOUGHT_TYPES:  # the role itself says reasoning (a reasoning record)
        return "thought"
    if any(raw.get(k) is True for k in CHUNK_FLAGS):
        return "chunk"
    if any(raw.get(k) not in (None, "", {}, []) for k in CALL_IDS + CALL_USAGE):
        return "call"
    return None


def _own_calls(a: Any, b: Any) -> bool:
    """Two raw messages each with evidence of a call of its own (distinct step/response ids, or usage)."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return False
    for k in CALL_IDS:
        if a.get(k) not in (None, "") and b.get(k) not in (None, ""):
            return a[k] != b[k]
    if any(isinstance(a.get(k), str) and isinstance(b.get(k), str) and a[k] != b[k] for k in CALL_AUTHORS):
        return True  # written by two agents (or models): two calls
    return any(a.get(k) not in (None, {}, []) for k in CALL_USAGE) and \
        any(b.get(k) not in (None, {}, []) for k in CALL_USAGE)


def _as_reasoning(message: Message) -> list:
    return [ReasoningPart(p.text) if isinstance(p, TextPart) else p for p in message.parts]


def split_at_results(messages: list[Message], raws: list[Any]) -> tuple[list[Message], list[Any]]:
    """``messages`` with every assistant message that holds tool results split at them: the parts before a
    result are one call's completion, the results (consecutive ones together) a tool message, the parts after
    them the next call's; adjacent tool messages are merged. ``raws`` parallels ``messages`` (a tool message
    split off gets None: it is not the model's)."""
    out: list[Message] = []
    out_raws: list[Any] = []
    for m, raw in zip(messages, raws):
        pieces = [m]
        if m.role == "assistant" and any(isinstance(p, ToolResultPart) for p in m.parts):
            pieces, current = [], []
            for p in [*m.parts, None]:
                if not isinstance(p, ToolResultPart) and p is not None:
                    current.append(p)
                    continue
                if current:
                    pieces.append(Message("assistant", current, model=m.model, meta=m.meta, supervised=m.supervised,
                                          failed=m.failed, cut=m.cut))
                    current = []
                if p is not None:
                    pieces.append(Message("tool", [p]))
            for piece in pieces[:-1]:  # the length limit cut only the answer's last piece
                piece.cut = False
        for piece in pieces:
            if piece.role == "tool" and out and out[-1].role == "tool" and piece is not m:
                out[-1].parts.extend(piece.parts)
                continue
            out.append(piece)
            out_raws.append(raw if piece.role != "tool" or piece is m else None)
    return out, out_raws


#: How two unflagged assistant messages with nothing between them and no call evidence of their own are read.
ADJACENT_ANSWERS = ("separate", "join", "refuse")


class Turns(NamedTuple):
    """The assistant turns of one message list: ``messages`` as read; ``why`` the turns are not known (then
    ``messages`` is meaningless), else None; ``joined``, how many adjacent answers were joined under ``join``;
    ``resent``, how many records re-sent the answer before them and replaced it (``resent_version``)."""

    messages: list[Message]
    why: str | None
    joined: int = 0
    resent: int = 0  # assistant records that re-sent the message before them, grown: read as its last version


def join_turns(messages: list[Message], raws: list[Any], role_key: str, adjacent: str = "separate") -> Turns:
    """``messages`` with tool results split out of assistant messages (``split_at_results``), thoughts and
    stream chunks joined to the assistant turn they belong to, adjacent answers read as ``adjacent`` says
    (``ADJACENT_ANSWERS``). ``raws`` parallels ``messages``: the raw message each was read from (None for one
    that is not: an observation)."""
    messages, raws = split_at_results(messages, raws)
    joined = resent = 0
    kinds = [turn_kind(r, role_key) for r in raws]
    last_raw: Any = None
    out: list[Message] = []
    open_: str | None = None  # the last output message is an assistant turn still open: "thought" / "chunk"
    for i, (m, kind) in enumerate(zip(messages, kinds)):
        if m.role != "assistant":
            if open_ == "thought":
                return Turns(out, f"message {i - 1} is flagged as a thought, and no answer of the model follows it")
            out.append(m)
            open_ = None
            continue
        parts = _as_reasoning(m) if kind == "thought" else list(m.parts)
        last = out[-1] if out else None
        joining = last is not None and last.role == "assistant" and (
            open_ is not None or kind is None and adjacent == "join" and not _own_calls(last_raw, raws[i]))
        if joining and resent_version(last.parts, parts):
            last.parts[:] = parts
            last_raw, resent, open_ = raws[i], resent + 1, kind if kind in ("thought", "chunk") else None
            continue
        if last is not None and last.role == "assistant" and open_ is not None:
            last.parts.extend(parts)
            last.model = last.model or m.model
            last.failed, last.cut = last.failed or m.failed, last.cut or m.cut
            open_ = kind if kind in ("thought", "chunk") else None
            last_raw = raws[i]
            if open_ == "thought" and any(not isinstance(p, ReasoningPart) for p in last.parts):
                return Turns(out, f"message {i} is flagged as a thought after the answer it would precede had begun")
            continue
        if last is not None and last.role == "assistant" and kind in ("thought", "chunk"):
            return Turns(out, f"message {i} is flagged as a thought or a chunk after an answer of the model had ended")
        if last is not None and last.role == "assistant" and adjacent != "separate" and \
                not _own_calls(last_raw, raws[i]):
            if adjacent == "join":  # declared: one answer written as two records
                last.parts.extend(parts)
                last.model, last.failed, last.cut = last.model or m.model, last.failed or m.failed, last.cut or m.cut
                last_raw, joined = raws[i], joined + 1
                continue
            return Turns(out, f"messages {i - 1} and {i} are both the assistant's with nothing between them, neither "
                         "flagged as a thought or a chunk of a streamed reply nor each with a step, response id or "
                         "usage of its own: whether they are one call or two is not known (a mapping says which: "
                         "adjacent_answers: join or separate)")
        out.append(Message("assistant", parts, model=m.model, meta=m.meta, supervised=m.supervised,
                           failed=m.failed, cut=m.cut))
        last_raw = raws[i]
        open_ = kind if kind in ("thought", "chunk") else None
    if open_ == "thought":
        return Turns(out, f"message {len(messages) - 1} is flagged as a thought, and no answer of the model follows it")
    return Turns(out, None, joined, resent)


def resent_version(old: list[Any], new: list[Any]) -> bool:
    """Whether the parts ``new`` are the message of parts ``old`` re-sent as it grew: ``old``'s parts in order at the
    head of ``new``, but that the last of them, a text or a thought, may be extended (a streamed reply saved at each
    update; a trailing space trimmed), or a tool call of the same id and name hold its arguments in full.
    Block-by-block records (a thought, then the text, then a tool call) never begin with the block before them, so
    joining is left to them."""
    if not old or len(new) < len(old) or new[:len(old) - 1] != old[:-1]:
        return False
    last, grown = old[-1], new[len(old) - 1]
    if last == grown:
        return True
    if isinstance(last, ToolCallPart) and isinstance(grown, ToolCallPart):  # its arguments streamed in
        return last.id is not None and (last.id, last.name) == (grown.id, grown.name)
    # a text saved as it grew, a trailing space trimmed by a later save
    return type(last) is type(grown) and isinstance(last, (TextPart, ReasoningPart)) and bool(last.text.strip()) \
        and grown.text.startswith(last.text.rstrip())


def warn_joined(turns: Turns, problems: ProblemSink, source: Source, where: str | None) -> None:
    """The ``adjacent_answers_joined`` warning for a reading that joined adjacent answers (none when it did not):
    the count, and the mapping line that reads them as calls of their own instead; ``resent_versions_read_last``
    for the records that re-sent an answer as it grew."""
    if turns.resent:
        problems.warning("resent_versions_read_last", f"{turns.resent} assistant record(s) re-sent the answer before "
                         "them as it grew (its parts, its last text extended): each read as that answer's last version, "
                         "not joined to it (docs/traces.md, consecutive assistant messages)", source, where)
    if turns.joined:
        problems.warning("adjacent_answers_joined", f"{turns.joined} pair(s) of assistant messages with nothing "
                         "between them and no call id or usage of their own were read as one call each; if each is "
                         "a call of its own, declare `adjacent_answers: separate` in a mapping file (--mapping; "
                         "docs/traces.md, consecutive assistant messages)", source, where)


def link_lone_results(messages: list[Message], raws: list[Any]) -> None:
    """In place: a tool message holding one result without a call id, right after an assistant message with
    exactly one tool call and the only tool message before the next turn, answers that call and takes its id,
    when its raw record (``raws[i]``, aligned with ``messages``) holds that id nowhere (verifiers' results write
    the id on the call only). Any other result without an id is left as it is: a raw record that holds the id
    where the reading did not look is a mapping that missed it, and which call a result answers is never
    guessed (ingestion refuses a conversation whose calls stay unanswered)."""
    for i in range(1, len(messages)):
        m, before = messages[i], messages[i - 1]
        after = messages[i + 1] if i + 1 < len(messages) else None
        calls = [p for p in before.parts if isinstance(p, ToolCallPart)]
        if m.role != "tool" or before.role != "assistant" or len(calls) != 1 or calls[0].id is None or \
                (after is not None and after.role == "tool") or len(m.parts) != 1 or raws[i] is None:
            continue
        part = m.parts[0]
        if isinstance(part, ToolResultPart) and part.call_id is None and calls[0].id not in compact_json(raws[i]):
            m.parts[0] = replace(part, call_id=calls[0].id)


def whole_prompts(conv: Conversation) -> list[Conversation]:
    """``conv`` cut before each user message that follows a reply (a log of prompts each sent whole, rebuilt for every
    call rather than continuing the chat: mapping key ``whole_prompts``), the system messages opening it kept at the
    head of each part; parts without a reply dropped. A conversation with explicit calls is returned as it is."""
    if conv.explicit_calls is not None:
        return [conv]
    head = []
    for m in conv.messages:
        if m.role != "system":
            break
        head.append(m)
    parts: list[list[Message]] = [[]]
    for m in conv.messages[len(head):]:
        if m.role == "user" and any(x.role == "assistant" for x in parts[-1]):
            parts.append([])
        parts[-1].append(m)
    kept = [p for p in parts if any(m.role == "assistant" for m in p)]
    if len(kept) <= 1:
        return [replace(conv, messages=head + kept[0])] if kept else [conv]
    return [replace(conv, id=f"{conv.id}#{k}", messages=head + p) for k, p in enumerate(kept)]


def display_only(raw: Any) -> bool:
    """A message the file marks as shown to the user only, never sent to the model (``DISPLAY_FLAGS``): no turn of
    any call's context."""
    return isinstance(raw, dict) and any(raw.get(k) is True for k in DISPLAY_FLAGS)


def warn_display_only(count: int, problems: ProblemSink, source: Source, where: str | None = None) -> None:
    """``display_only_skipped``: the messages ``display_only`` left out."""
    if count:
        problems.warning("display_only_skipped", f"{count} message(s) marked as shown to the user only (ui_only), "
                         "never sent to the model: in no call's context", source, where)
