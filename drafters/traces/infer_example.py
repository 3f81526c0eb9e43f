"""``tracedraft datasets infer-mapping FILE --reply TEXT``: a declared mapping learned from one of the model's
replies, as the user copied it from the file.

Where no shape fits a file (its roles are named as nobody spells them, its prompt and answer sit under keys of its
own), the user knows what the general path cannot guess: which text the model wrote. Given one reply (whole, or a
piece of it on one line), this finds every string of the file's first records holding it and, for each place,
writes the mappings that would read it as the model's reply:

- a message list: the reply is a message of a list of objects sharing a key with 2 to 8 short values (the role);
  that message's value is the assistant's, the values the common spellings know are theirs, and a single other
  value nobody spells is the user's unless it names another side (more are written ``"?"`` for the user to name);
  the file itself may be the list (one message a record: ``records: messages``);
- a request/response record: the reply is the record's output (``response: PATH``) and the input is the message
  list the record holds, or the longest text under a key with an input word nearest the reply (``prompt``,
  ``agent_input_prompt``, ``instruction``, ...), else the other speaker's column beside the reply (``student_msg``
  beside ``tutor_msg``) or the record's longest other text (said in a comment: a guess to check); the record's
  other long texts are named in a ``# NOT READ`` comment; the items of a list the record keeps at its top level may
  be those records (``records: lists``).

Each candidate is tried by reading the file with it; the first that reads without an error, returns the example
as one of the assistant's messages, and leaves unread nothing the general path refuses is written
(``drafters/traces/mapping.py`` reads it with ``--mapping``). Readings one example cannot vouch for (a record of
several calls, inputs all the same, a history written newest first, calls under a key not read) are not offered:
docs/traces.md, "A mapping learned from one reply". Where the example sits: ``infer_example_places``; the
request/response readings (the records, sampled answers): ``infer_example_records``. Torch-free, standard library
plus PyYAML.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from itertools import islice, pairwise
from typing import Any

from drafters.traces import io as tio
from drafters.traces.formats import _shapes
from drafters.traces.formats._call_io import call_shaped, message_lists
from drafters.traces.formats._chains import TURN_KEY
from drafters.traces.formats._shapes import call_keys, calls_not_read
from drafters.traces.formats._spellings import CALL_KEYS, get, is_message, role_of
from drafters.traces.infer import general_path_errors, losses, mapping_name
from drafters.traces.infer_example_places import Hit, Learned, holding, normal, path_of, value_at
from drafters.traces.infer_example_records import (
    CALL_BLOCKS,
    SIBLING_RECORDS,
    batch_readings,
    flat,
    newest_first,
    response_readings,
    unread_prompts,
)
from drafters.traces.infer_text_example import RESTATED, learn_text_mapping
from drafters.traces.json_paths import child_path, jsonpath, path_steps
from drafters.traces.mapping_records import file_records
from drafters.traces.report import Problem, TraceError, ValidationReport

#: The shortest example accepted (characters, whitespace collapsed): a shorter one is found everywhere.
MIN_EXAMPLE = 12
#: Role keys: how many distinct values, how long each may be (characters).
MAX_ROLE_VALUES = 8
MAX_ROLE_LENGTH = 40
#: Role values that name a side other than the user's, and keys whose values are no sides.
NOT_USER = re.compile(r"tool|function|observ|env|result|output|system|event|start|end", re.IGNORECASE)
#: (a setting, a class or an outcome of the record: ``reasoning_effort: low``, HuixiangDou's ``reason: success``)
NOT_ROLE_KEY = re.compile(r"model|(^|_)id$|Id$|effort|level|status|categor|difficult|split|label|lang|priority|tier"
                          r"|reason|verdict|outcome|judge|grade|score|pred|code$|^method$|^(?:uri|url|path)$",
                          re.IGNORECASE)  # an HTTP verb; a judge's grade of the answer (simple-evals' judge_answer)
#: Words of a key naming a call's input text, and words naming something about a text (``prompt_hash``,
#: Two replies in a row are one call (a thought, then the tool call), as the general path reads them (warned).
JOINED = {"adjacent_answers": "join"}
ID_KEY = re.compile(r"(^|_)id$|[a-z]Id$")  # a key naming an id: client_id, sessionId
#: Conversations read to check a candidate mapping (at least).
CHECK_CONVERSATIONS = 200




def learn_mapping(path: str | os.PathLike[str], reply: str, name: str | None = None,
                  refused: list[Problem] | None = None) -> Learned:
    """The declared mapping that reads ``reply`` (a text the model wrote, as it appears in the file, whole or a
    piece on one line) as one of the assistant's messages, learned from where it sits in the file's first records.
    ``refused``: the general path's errors beyond the file's shape (``infer.general_path_errors``), where the caller
    has them already (a caller trying several replies); read here otherwise.

    Raises:
        TraceError("example_too_short") for an example under ``MIN_EXAMPLE`` characters;
        TraceError("example_not_found") when no string of the first records holds it;
        TraceError("example_not_read") when it is found but no candidate mapping reads the file without an error
        with it as the assistant's (the message names the places and the first candidate's first problem);
        OSError when the file cannot be read.
    """
    want = normal(reply)
    if len(want) < MIN_EXAMPLE:
        raise TraceError("example_too_short", f"the example reply has {len(want)} characters; give at least "
                         f"{MIN_EXAMPLE} of one reply (a distinctive piece of it)", "--reply")
    label = mapping_name(path, name, "learned")
    problems = ValidationReport()
    with tio.open_text(path) as stream:
        sample = [v for _, v in islice(file_records(stream, str(path), problems, "generic", "each"), _shapes.SAMPLE)]
    hits = [Hit(i, steps) for i, value in enumerate(sample) for steps in holding(value, want, ())]
    if not hits and any(p.code == "invalid_json" for p in problems.errors):
        return _learn_text(path, want, label)  # text, not JSON: learn its marker lines
    if not hits:
        why = f" (first problem: {problems.errors[0].code}: {problems.errors[0].message})" if problems.errors else ""
        raise TraceError("example_not_found", f"no text of the file's first {len(sample)} records holds the example "
                         f"reply{why}: copy it from the file as written (a piece on one line is enough)", str(path))
    first_problem = ""
    unnamed: Learned | None = None
    if refused is None:  # content the general path refuses: a candidate must read it or say so
        refused = general_path_errors(path)
    first_text = normal(value_at(sample[hits[0].record], hits[0].steps))  # the text where the example is first found
    calls_at = next((p for record in sample if (p := _tool_calls_in(record)) is not None), None)
    for hit in hits[:20]:
        for learned in (*_list_readings(sample, hit, label), *response_readings(sample, hit, label),
                        *batch_readings(sample, hit, label)):
            if learned.unnamed:
                unnamed = unnamed or learned  # cannot be tried until the user names a role
                continue
            lost = _lost_calls(learned.mapping, sample)
            unread = unread_prompts(sample, learned.mapping) if not lost else None
            siblings = _siblings(sample, hit) if "response" in learned.mapping else []
            # found again elsewhere (a page quoting the reply): the reading must still read its first place
            first = first_text if path_of(hit, star=True) != path_of(hits[0], star=True) else None
            problem = (f"tool calls under {', '.join(lost)} would not be read" if lost else
                       f"records it does not read keep prompts ({unread}): their calls would be lost" if unread else
                       _check(path, learned.mapping, want, siblings, refused, first, calls_at))
            if problem is None:
                return _with_whole_prompts(path, learned)
            first_problem = first_problem or f"{learned.found_at}: {problem}"
    if unnamed is not None:
        return unnamed
    places = ", ".join(dict.fromkeys(path_of(h) for h in hits[:5]))
    why = first_problem or "no list of messages with a role key, and no request/response record, holds it"
    raise TraceError("example_not_read", f"the example reply is found at {places} (record {hits[0].record + 1}, "
                     f"counted from 1), but no mapping reading it as the model's reply reads the file: {why}", str(path))


def _learn_text(path: str | os.PathLike[str], want: str, label: str) -> Learned:
    """The text mapping learned from the marker lines above the example (drafters/traces/infer_text_example.py;
    raises its TraceErrors)."""
    learned = learn_text_mapping(path, want, label)
    return Learned(learned.mapping, learned.found_at, [], learned.notes)




def _list_readings(sample: list, hit: Hit, label: str) -> Iterator[Learned]:
    """Mappings reading the example as a message of a list of objects with a role key, the innermost list first;
    the records themselves as the list where each record is one message (``records: messages``)."""
    record = sample[hit.record]
    for k in range(len(hit.steps) - 1, -1, -1):
        if not isinstance(hit.steps[k], int):
            continue
        items, inside = value_at(record, hit.steps[:k]), hit.steps[k + 1:]
        content = _content_key(inside)
        if content is None or not isinstance(items, list) or _beside_other_lists(record, hit.steps[:k]):
            continue
        # the roles are learned from every list at the same place (one of two turns repeats no role value)
        lists = [found for v in sample if isinstance(v, (dict, list)) for _, found in
                 jsonpath(v, path_of(hit, k, star=True)) if isinstance(found, list)]
        pool = [m for found in lists for m in found] or items
        for reading in _role_readings(pool, items[hit.steps[k]], content):  # type: ignore[index]
            if newest_first(items, reading) or _sides_not_apart(pool, reading):
                continue
            yield Learned({"name": label, "messages": path_of(hit, k, star=True), **reading, **JOINED}, path_of(hit),
                          [v for v, r in reading["roles"].items() if r == "?"], _swapped(reading))
    content = _content_key(hit.steps)
    if content is not None and isinstance(record, dict) and all(isinstance(step, str) for step in hit.steps):
        # the record itself one message: its text under keys only (inside a list, the record is no message)
        records = [v for v in sample if isinstance(v, dict)]
        for reading in _role_readings(records, record, content):
            if _sides_not_apart(records, reading):
                continue
            group = _group_key(records, reading["role"])
            said = [f"# a new conversation where {group} changes"] if group else []
            yield Learned({"name": label, "records": "messages", "messages": "$", **reading, **JOINED,
                           **({"group": child_path("$", group)} if group else {})}, path_of(hit),
                          [v for v, r in reading["roles"].items() if r == "?"], said + _swapped(reading))


def _beside_other_lists(record: Any, steps: tuple[str | int, ...]) -> bool:
    """Whether a key on the way to the example's list has siblings holding message lists too (chats kept under
    their ids, one of them the example's): a mapping naming that one key would leave the others unread."""
    for j, step in enumerate(steps):
        parent = value_at(record, steps[:j])
        if isinstance(step, str) and isinstance(parent, dict) and any(
                message_lists(v, need_assistant=False) for key, v in parent.items() if key != step):
            return True
    return False


#: A speaker's label opening a message's text: ``**user**``, ``[Assistant]``, ``User:``.
_LABEL = re.compile(r"\s*(?:(?:\*\*|__|\[)\s*([A-Za-z]+)\s*(?:\*\*|__|\])|([A-Za-z]+)\s*:)")


def _sides_not_apart(items: list, reading: dict[str, Any]) -> bool:
    """Whether a reading's role key does not tell the sides apart: the messages of one role value open with speaker
    labels of both sides (a notebook's markdown cells, ``**user**`` and ``**assistant**`` alike, read as the
    model's), or those read as the user's hold no word (a log's latency entries read as prompts)."""
    sides: dict[str, set[str | None]] = {}
    worded: dict[str, bool] = {}
    for item in items:
        value = flat(item).get(reading["role"]) if isinstance(item, dict) else None
        text = get(item, reading["content"]) if isinstance(value, str) else None
        text = "".join(t for t in text if isinstance(t, str)) if isinstance(text, list) else text
        if not isinstance(text, str):
            continue
        label = _LABEL.match(text)
        sides.setdefault(value, set()).add(role_of(label.group(1) or label.group(2)) if label else None)
        worded[value] = worded.get(value, False) or re.search(r"[^\W\d_]{2}", text) is not None
    if any({"user", "assistant"} <= found for found in sides.values()):
        return True
    return any(r == "user" and not worded.get(v, True) for v, r in reading["roles"].items())


def _swapped(reading: dict[str, Any]) -> list[str]:
    """The comment a reading whose sides swap carries (``_roles``): the model speaks as the user."""
    swapped = [v for v, r in reading["roles"].items() if r == "assistant" and role_of(v) == "user"]
    if not swapped:
        return []
    return [(f"# the example is under {reading['role']}: {swapped[0]!r}, a name of the user's side: the file's model "
             "speaks as the user (an LLM user simulator), so its turns are read as the replies and the other side's "
             "as its prompts; swap the roles back if the model is the other side")]


def _group_key(records: list[dict], role: str) -> str | None:
    """The key of records one message each whose value opens a new conversation when it changes, or None. Without a
    turn column, the first of the general path's conversation-id keys (``session_id``, ``thread_id``, ...) every
    record has. With one (``turn_number``), of the keys naming an id that several records share, the one changing
    least under which no conversation repeats a turn with the same role (a study's session holding several
    dialogues, each numbered from 1: its ``client_id`` is the dialogue's, not its ``session_id``)."""
    turn = next((k for k in records[0] if TURN_KEY.search(str(k))), None) if records else None
    keys = [k for k in (records[0] if records else ()) if k in _shapes.GROUP_KEYS or turn and ID_KEY.search(str(k))]
    keys = [k for k in keys if all(r.get(k) not in (None, "") for r in records)
            and len({str(r[k]) for r in records}) < len(records)]  # shared: a message's own id is no group
    if turn is None:
        return next((k for k in _shapes.GROUP_KEYS if k in keys), None)

    def one_dialogue_each(key: str) -> bool:
        marks = [(str(r[key]), str(r.get(turn)), str(flat(r).get(role))) for r in records]
        return len(set(marks)) == len(marks)

    fits = [k for k in keys if one_dialogue_each(k)]
    return min(fits, key=lambda k: sum(a[k] != b[k] for a, b in pairwise(records)), default=None)


def _content_key(inside: tuple[str | int, ...]) -> str | None:
    """The content key of a message from the steps inside it down to the reply: the dotted keys, up to the first
    list (content blocks, read by the common spellings); None when the message is the string itself."""
    keys: list[str] = []
    for step in inside:
        if isinstance(step, int):
            break
        keys.append(step)
    return ".".join(keys) or None


def _role_readings(items: list, example: Any, content: str) -> Iterator[dict[str, Any]]:
    """``role``, ``roles``, ``content`` (and spelled tool-call keys) for ``items`` read as messages, ``example`` the
    reply's message: of the keys (dotted one level down) holding 2 to ``MAX_ROLE_VALUES`` short values across the
    items, the one whose values the common spellings know most, then the fewest values (nothing when none fits)."""
    dicts = [i for i in items if isinstance(i, dict)]
    if len(dicts) < 2 or not isinstance(example, dict):
        return
    keys = [k for k, v in flat(example).items() if isinstance(v, str) and k != content.split(".")[0]
            and not content.startswith(k + ".")]
    ranked = []
    for key in keys:
        if NOT_ROLE_KEY.search(key.rsplit(".", 1)[-1]):
            continue  # a model's name or an id repeats too, but says who answered, not which side
        values = [flat(i).get(key) for i in dicts]
        distinct = list(dict.fromkeys(v for v in values if isinstance(v, str)))
        if not (2 <= len(distinct) <= MAX_ROLE_VALUES and len(distinct) < len(dicts)
                and all(len(v) <= MAX_ROLE_LENGTH for v in distinct) and all(isinstance(v, str) for v in values)
                and all(v == v.strip() for v in distinct)):  # "C\n": a text written by someone, no side's name
            continue
        if all(v.strip().isdigit() for v in distinct):
            continue  # numbers (a table's turn column) count turns, they name no side
        ranked.append((-sum(role_of(v) is not None for v in distinct), len(distinct), key, distinct))
    for _, _, key, distinct in sorted(ranked):
        roles = _roles(distinct, flat(example)[key])
        if roles is not None:  # the best key only: where its roles need naming, the user names them
            yield {"role": key, "roles": roles, "content": content, **_tool_keys(dicts, key, content)}
            return


def _tool_keys(items: list[dict], role: str, content: str) -> dict[str, Any]:
    """``tool_calls`` and ``tool_call`` where the messages keep calls under a key the common spellings name
    (``tool_calls``, ``function_call``, ...); calls under other keys are found by ``_check`` (never read as text)."""
    key = next((k for k in CALL_KEYS if k not in (role, content) and any(get(m, k) not in (None, [], {}) for m in items)),
               None)
    return {} if key is None else {"tool_calls": key, "tool_call": call_keys([get(m, key) for m in items])}


def _roles(values: list[str], replied: str) -> dict[str, str] | None:
    """Each role value's role: ``replied`` (the example's) the assistant's, the common spellings', and one value
    left nobody spells the user's, unless it names another side (``TOOL_END``, ``env``); the others ``"?"``, as is
    another value the spellings call the assistant's (which of the two wrote the replies?). None when the
    spellings give ``replied`` another role than the user's. Where they give it the user's, the sides swap (the
    file's model speaks as the user: an LLM user simulator, the example one of its turns): ``replied`` the
    assistant's, the value spelled as the assistant's the user's (``_swapped`` says so)."""
    if role_of(replied) == "user":
        swapped = {v: "assistant" if v == replied else "user" if role_of(v) == "assistant" else
                   role_of(v) if role_of(v) in ("system", "tool") else "?" for v in values}
        return swapped if "user" in swapped.values() else None
    if role_of(replied) not in (None, "assistant"):
        return None
    roles = {v: "assistant" if v == replied else (role_of(v) or "?") for v in values}
    roles = {v: "?" if r == "assistant" and v != replied else r for v, r in roles.items()}
    left = [v for v, r in roles.items() if r == "?"]
    if len(left) == 1 and "user" not in roles.values() and not NOT_USER.search(left[0]) and \
            role_of(left[0]) is None:
        roles[left[0]] = "user"
    return roles




def _siblings(sample: list, hit: Hit) -> list[str]:
    """The texts at the example's place in the first records, every list index ``[*]`` (the other replies, if the
    example's place is where replies are kept); the messages' own lists are not followed past the content."""
    where = path_of(hit, star=True)
    return [normal(v) for record in sample[:SIBLING_RECORDS] if isinstance(record, (dict, list))
            for _, v in jsonpath(record, where) if isinstance(v, str) and v.strip()]


def _lost_calls(mapping: dict[str, Any], sample: list) -> list[str]:
    """The message keys holding tool calls that a message-list mapping does not read (``_shapes.calls_not_read``),
    or, for a response read as a text, the keys beside it of the message holding it that hold tool calls (ProAgent's
    ``function_call`` beside the reply's ``content``)."""
    if "response" in mapping:
        steps = path_steps(mapping["response"])
        holder, blocks = "$" + "".join(steps[:-1]), "$" + "".join(steps[:-2])
        beside = [f"{holder}.{key}" for record in sample if isinstance(record, (dict, list)) and steps
                  for _, held in jsonpath(record, holder) if is_message(held)
                  for key, value in held.items() if key in CALL_KEYS and value not in (None, "", [], {})]
        if len(steps) >= 2 and steps[-2].startswith("["):  # one block of a content list: its call blocks
            beside += [f"{blocks}[*]" for record in sample if isinstance(record, (dict, list))
                       for _, held in jsonpath(record, blocks) if isinstance(held, list)
                       and any(isinstance(b, dict) and b.get("type") in CALL_BLOCKS for b in held)]
        return sorted(set(beside))
    records = sample if mapping.get("records") == "messages" else [
        m for record in sample if isinstance(record, (dict, list))
        for _, msgs in jsonpath(record, mapping["messages"]) if isinstance(msgs, list) for m in msgs]
    msgs = [m for m in records if isinstance(m, dict)]
    read = {mapping["role"].split(".")[0], mapping["content"].split(".")[0], mapping.get("tool_calls", "")}
    return calls_not_read(msgs, sorted({k for m in msgs for k in m if k not in read}))


def _conversations(path: str | os.PathLike[str], declared: Any, problems: ValidationReport,
                   at_least: int = 0) -> list:
    """The file's first conversations (``CHECK_CONVERSATIONS``, or ``at_least``) as the declared mapping reads them
    (problems reported to ``problems``)."""
    with tio.open_text(path) as stream:
        return list(islice(declared.format().parse(stream, str(path), problems), max(CHECK_CONVERSATIONS, at_least)))


def _with_whole_prompts(path: str | os.PathLike[str], learned: Learned) -> Learned:
    """``learned`` with ``whole_prompts: true`` where the second prompt of a conversation it reads opens like the
    first for ``RESTATED`` characters or more and quotes the first reply (``_quotes``: a long instruction rebuilt for
    every call with the history inside it, each prompt sent whole, not a chat's next turn, which may restate a
    context block but not the reply it follows), said in a comment; else as it is."""
    from drafters.traces.mapping_file import mapping_from_dict

    if "response" in learned.mapping:
        return learned  # a call's input and output side by side: its calls are explicit
    convs = _conversations(path, mapping_from_dict(learned.mapping), ValidationReport())
    turns = next(([m for m in c.messages if m.role in ("user", "assistant")] for c in convs
                  if sum(m.role == "user" for m in c.messages) >= 2), [])
    prompts = [m.text for m in turns if m.role == "user"]
    reply = next((m.text for m in turns[1:] if m.role == "assistant"), "")
    shared = len(os.path.commonprefix(prompts[:2])) if len(prompts) >= 2 else 0
    if shared < RESTATED or not _quotes(prompts[1], reply):
        return learned
    note = (f"# the first two prompts open alike ({shared} characters) and the second quotes the first reply: each "
            "prompt is rebuilt whole, the history inside it, so each opens a new conversation (whole_prompts); "
            "remove it if they continue a chat")
    return Learned({**learned.mapping, "whole_prompts": True}, learned.found_at, learned.unnamed, [*learned.notes, note])


def _quotes(prompt: str, reply: str) -> bool:
    """Whether ``prompt`` holds the reply: the reply whole, or at least half of its lines of 30 characters or more."""
    lines = [line.strip() for line in reply.splitlines() if len(line.strip()) >= 30]
    return bool(reply.strip()) and (reply.strip() in prompt or bool(lines) and
                                    2 * sum(line in prompt for line in lines) >= len(lines))


def _tool_calls_in(value: Any, path: str = "$", depth: int = 0) -> str | None:
    """The path of the first tool call a record holds in a structured spelling (a ``tool_calls`` / ``function_call``
    value shaped as calls, a ``tool_use`` block), or None."""
    if depth > 12:
        return None
    if isinstance(value, dict):
        if value.get("type") in CALL_BLOCKS and "name" in value:
            return path
        for key, v in value.items():
            found = (child_path(path, str(key)) if key in CALL_KEYS and v and call_shaped(v) else
                     _tool_calls_in(v, child_path(path, str(key)), depth + 1) if isinstance(v, (dict, list)) else None)
            if found:
                return found
    elif isinstance(value, list):
        return next((p for i, v in enumerate(value[:2000]) if isinstance(v, (dict, list))
                     and (p := _tool_calls_in(v, f"{path}[{i}]", depth + 1))), None)
    return None


def _check(path: str | os.PathLike[str], mapping: dict[str, Any], want: str, siblings: list[str],
           refused: list[Problem], first: str | None = None, calls_at: str | None = None) -> str | None:
    """None when ``mapping`` reads the file's first conversations without an error, with the example as one of
    the assistant's messages (a call's completion, or a first reply whose context the file does not hold) and every
    text at the example's place (``siblings``) as the assistant's too, the text at the example's first place in the
    file (``first``, where the reading learned from a later place) in some message, and nothing the general path
    ``refused`` left unread (``infer.losses``: a turn kept beside the list), and some tool call read where the
    file's first records hold one in a structured spelling (``calls_at``: ChainForge's raw responses beside the
    texts it summarises them into); else what went wrong (a record of several calls read as one, messages read as
    the wrong side, a quote of the reply read as it)."""
    from drafters.traces.mapping_file import mapping_from_dict

    try:
        declared = mapping_from_dict(mapping)
    except TraceError as exc:
        return f"{exc.code}: {exc.message}"
    problems = ValidationReport()
    convs = _conversations(path, declared, problems, len(siblings))  # each text where the example is: one each
    if problems.errors:
        return f"{problems.errors[0].code}: {problems.errors[0].message}"
    replies = [m for conv in convs for m in conv.messages if m.role == "assistant"] + [
        call.completion for conv in convs for call in conv.explicit_calls or []]
    if not any(want in normal(m.text) or any(want in normal(c.raw_arguments) for c in m.tool_calls)
               for m in replies):
        return "the example is not one of the assistant's messages it reads"
    if not any(True for conv in convs for _ in conv.calls()):  # every answer first, nothing before it: no call
        return "it reads no LLM call: no assistant message has a context before it"
    if first is not None and not any(first in normal(m.text) for conv in convs for m in conv.messages):
        return "the text where the example is first found is read nowhere: the place learned from quotes it"
    read = {normal(m.text) for m in replies}
    missed = [t for t in siblings if not any(t in r for r in read)]
    if missed:
        return (f"it reads {len(siblings) - len(missed)} of the {len(siblings)} texts found where the example is "
                f"(every list index): the others would be lost or read as another side's")
    if calls_at is not None and not any(m.tool_calls for m in replies):
        return f"it reads no tool call, but the file holds tool calls ({calls_at}): they would be lost"
    lost = losses(refused, declared, set())
    return f"the general path refuses content it does not read ({lost[0]})" if lost else None


def learned_yaml(learned: Learned, source: str = "the example reply") -> str:
    """The learned mapping as a commented YAML mapping file (``source``: what it was learned from)."""
    import yaml

    check = ("the prompt (messages) and response paths" if "response" in learned.mapping else
             "the markers (a line beginning with one opens a message)" if "text" in learned.mapping else
             "the roles (a value not listed is an error)")
    head = [f"# learned from {source}, found at {learned.found_at}",
            f"# check {check}, then ingest with --mapping THIS_FILE", *learned.notes]
    if learned.unnamed:
        head.append(f"# Replace each role marked \"?\" ({', '.join(learned.unnamed)}) with system, user, assistant or "
                    "tool: --mapping refuses it until then")
    body = yaml.safe_dump(learned.mapping, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return "\n".join(head) + "\n" + body
