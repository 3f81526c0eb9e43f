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
  ``agent_input_prompt``, ``instruction``, ...), else the record's longest other text (said in a comment: a guess
  to check); the record's other long texts are named in a ``# NOT READ`` comment; the items of a list the record
  keeps at its top level may be those records (``records: lists``).

Each candidate is tried by reading the file with it; the first that reads without an error, returns the example
as one of the assistant's messages, and leaves unread nothing the general path refuses is written
(``drafters/traces/mapping.py`` reads it with ``--mapping``). Readings one example cannot vouch for (a record of
several calls, inputs all the same, a history written newest first, calls under a key not read) are not offered:
docs/traces.md, "A mapping learned from one reply". Torch-free, standard library plus PyYAML.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice, pairwise
from typing import Any

from drafters.traces import io as tio
from drafters.traces.formats import _shapes
from drafters.traces.formats._call_io import answers_beside, message_lists
from drafters.traces.formats._shapes import call_keys, calls_not_read, message_keys
from drafters.traces.formats._spellings import CALL_KEYS, get, is_message, role_of
from drafters.traces.infer import general_path_errors, losses
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
                          r"|reason|verdict|outcome|code$", re.IGNORECASE)
#: Words of a key naming a call's input text, and words naming something about a text (``prompt_hash``,
#: ``prompt_id``), not the text.
INPUT_WORDS = {"prompt", "input", "instruction", "question", "query", "request"}
NOT_TEXT_WORDS = {"id", "hash", "name", "type", "template", "version", "tokens", "count", "len", "length", "url",
                  "path", "file"}
#: Keys whose text is no prompt (an environment's observation, an output, a reference answer), and the shortest
#: text taken as the prompt where no input key names it (characters).
NOT_PROMPT = re.compile(r"observ|output|result|respon|answer|reason|target|reference|label|judg|summar",
                        re.IGNORECASE)
MIN_GUESSED_PROMPT = 40
#: Two replies in a row are one call (a thought, then the tool call), as the general path reads them (warned).
JOINED = {"adjacent_answers": "join"}
ID_KEY = re.compile(r"(^|_)id$|[a-z]Id$")  # a key naming an id: client_id, sessionId
#: Keys counting the turns of one dialogue (``turn``, ``step``, ``round``, ``turn_id``).
TURN_KEY = re.compile(r"(^|_)(turn|step|round)s?(_?(id|no|index|number))?$", re.IGNORECASE)
#: Conversations read to check a candidate mapping, and records whose texts at the example's place it must read.
CHECK_CONVERSATIONS = 200
SIBLING_RECORDS = 20


@dataclass
class Hit:
    """One place the example was found: the record (0-based, in file order) and the keys and list indexes from
    the record down to the string holding it."""

    record: int
    steps: tuple[str | int, ...]


@dataclass
class Learned:
    """A mapping learned from an example: the mapping file's content, where the example was found (a concrete
    JSONPath in a record), the role values left for the user to name (written ``"?"``) and comment lines."""

    mapping: dict[str, Any]
    found_at: str
    unnamed: list[str]
    notes: list[str]


def learn_mapping(path: str | os.PathLike[str], reply: str, name: str | None = None) -> Learned:
    """The declared mapping that reads ``reply`` (a text the model wrote, as it appears in the file, whole or a
    piece on one line) as one of the assistant's messages, learned from where it sits in the file's first records.

    Raises:
        TraceError("example_too_short") for an example under ``MIN_EXAMPLE`` characters;
        TraceError("example_not_found") when no string of the first records holds it;
        TraceError("example_not_read") when it is found but no candidate mapping reads the file without an error
        with it as the assistant's (the message names the places and the first candidate's first problem);
        OSError when the file cannot be read.
    """
    want = _normal(reply)
    if len(want) < MIN_EXAMPLE:
        raise TraceError("example_too_short", f"the example reply has {len(want)} characters; give at least "
                         f"{MIN_EXAMPLE} of one reply (a distinctive piece of it)", "--reply")
    label = name or os.path.basename(str(path)).split(".")[0][:40] or "learned"
    problems = ValidationReport()
    with tio.open_text(path) as stream:
        sample = [v for _, v in islice(file_records(stream, str(path), problems, "generic", "each"), _shapes.SAMPLE)]
    hits = [Hit(i, steps) for i, value in enumerate(sample) for steps in _holding(value, want, ())]
    if not hits and any(p.code == "invalid_json" for p in problems.errors):
        return _learn_text(path, want, label)  # text, not JSON: learn its marker lines
    if not hits:
        why = f" (first problem: {problems.errors[0].code}: {problems.errors[0].message})" if problems.errors else ""
        raise TraceError("example_not_found", f"no text of the file's first {len(sample)} records holds the example "
                         f"reply{why}: copy it from the file as written (a piece on one line is enough)", str(path))
    first_problem = ""
    unnamed: Learned | None = None
    refused = general_path_errors(path)  # content the general path refuses: a candidate must read it or say so
    first_text = _normal(_at(sample[hits[0].record], hits[0].steps))  # the text where the example is first found
    for hit in hits[:20]:
        for learned in (*_list_readings(sample, hit, label), *_response_readings(sample, hit, label),
                        *_batch_readings(sample, hit, label)):
            if learned.unnamed:
                unnamed = unnamed or learned  # cannot be tried until the user names a role
                continue
            lost = _lost_calls(learned.mapping, sample)
            siblings = _siblings(sample, hit) if "response" in learned.mapping else []
            # found again elsewhere (a page quoting the reply): the reading must still read its first place
            first = first_text if _path(hit, star=True) != _path(hits[0], star=True) else None
            problem = (f"tool calls under {', '.join(lost)} would not be read" if lost else
                       _check(path, learned.mapping, want, siblings, refused, first))
            if problem is None:
                return _with_whole_prompts(path, learned)
            first_problem = first_problem or f"{learned.found_at}: {problem}"
    if unnamed is not None:
        return unnamed
    places = ", ".join(dict.fromkeys(_path(h) for h in hits[:5]))
    why = first_problem or "no list of messages with a role key, and no request/response record, holds it"
    raise TraceError("example_not_read", f"the example reply is found at {places} (record {hits[0].record}), but no "
                     f"mapping reading it as the model's reply reads the file: {why}", str(path))


def _learn_text(path: str | os.PathLike[str], want: str, label: str) -> Learned:
    """The text mapping learned from the marker lines above the example (drafters/traces/infer_text_example.py;
    raises its TraceErrors)."""
    learned = learn_text_mapping(path, want, label)
    return Learned(learned.mapping, learned.found_at, [], learned.notes)


def _normal(text: str) -> str:
    return " ".join(text.split())


def _holding(value: Any, want: str, steps: tuple[str | int, ...]) -> Iterator[tuple[str | int, ...]]:
    """The steps down to every string under ``value`` holding ``want`` (whitespace collapsed; ``""``: every string)."""
    if len(steps) > 12:
        return
    if isinstance(value, str):
        if want in _normal(value):
            yield steps
    elif isinstance(value, dict):
        for key, v in value.items():
            yield from _holding(v, want, (*steps, str(key)))
    elif isinstance(value, list):
        for i, v in enumerate(value[:2000]):
            yield from _holding(v, want, (*steps, i))


def _path(hit: Hit, upto: int | None = None, star: bool = False) -> str:
    """The JSONPath of ``hit``'s first ``upto`` steps (every list index ``[*]`` with ``star``)."""
    out = "$"
    for step in hit.steps[:upto]:
        out = f"{out}[{'*' if star else step}]" if isinstance(step, int) else child_path(out, step)
    return out


def _at(value: Any, steps: tuple[str | int, ...]) -> Any:
    for step in steps:
        value = value[step]
    return value


def _list_readings(sample: list, hit: Hit, label: str) -> Iterator[Learned]:
    """Mappings reading the example as a message of a list of objects with a role key, the innermost list first;
    the records themselves as the list where each record is one message (``records: messages``)."""
    record = sample[hit.record]
    for k in range(len(hit.steps) - 1, -1, -1):
        if not isinstance(hit.steps[k], int):
            continue
        items, inside = _at(record, hit.steps[:k]), hit.steps[k + 1:]
        content = _content_key(inside)
        if content is None or not isinstance(items, list):
            continue
        for reading in _role_readings(items, items[hit.steps[k]], content):  # type: ignore[index]
            if _newest_first(items, reading):
                continue
            yield Learned({"name": label, "messages": _path(hit, k, star=True), **reading, **JOINED}, _path(hit),
                          [v for v, r in reading["roles"].items() if r == "?"], [])
    content = _content_key(hit.steps)
    if content is not None and isinstance(record, dict) and all(isinstance(step, str) for step in hit.steps):
        # the record itself one message: its text under keys only (inside a list, the record is no message)
        records = [v for v in sample if isinstance(v, dict)]
        for reading in _role_readings(records, record, content):
            group = _group_key(records, reading["role"])
            said = [f"# a new conversation where {group} changes"] if group else []
            yield Learned({"name": label, "records": "messages", "messages": "$", **reading, **JOINED,
                           **({"group": child_path("$", group)} if group else {})}, _path(hit),
                          [v for v, r in reading["roles"].items() if r == "?"], said)


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
        marks = [(str(r[key]), str(r.get(turn)), str(_flat(r).get(role))) for r in records]
        return len(set(marks)) == len(marks)

    fits = [k for k in keys if one_dialogue_each(k)]
    return min(fits, key=lambda k: sum(a[k] != b[k] for a, b in pairwise(records)), default=None)


def _newest_first(items: list, reading: dict[str, Any]) -> bool:
    """Whether the list opens with the assistant's message and ends with the user's: a history written newest first,
    or one whose last answer is kept elsewhere in the record; read oldest first, calls would be lost or misplaced."""
    roles = [reading["roles"].get(_flat(i).get(reading["role"])) for i in items if isinstance(i, dict)]
    return len(roles) >= 2 and roles[0] == "assistant" and roles[-1] == "user"


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
    keys = [k for k, v in _flat(example).items() if isinstance(v, str) and k != content.split(".")[0]
            and not content.startswith(k + ".")]
    ranked = []
    for key in keys:
        if NOT_ROLE_KEY.search(key.rsplit(".", 1)[-1]):
            continue  # a model's name or an id repeats too, but says who answered, not which side
        values = [_flat(i).get(key) for i in dicts]
        distinct = list(dict.fromkeys(v for v in values if isinstance(v, str)))
        if not (2 <= len(distinct) <= MAX_ROLE_VALUES and len(distinct) < len(dicts)
                and all(len(v) <= MAX_ROLE_LENGTH for v in distinct) and all(isinstance(v, str) for v in values)):
            continue
        if all(v.strip().isdigit() for v in distinct):
            continue  # numbers (a table's turn column) count turns, they name no side
        ranked.append((-sum(role_of(v) is not None for v in distinct), len(distinct), key, distinct))
    for _, _, key, distinct in sorted(ranked):
        roles = _roles(distinct, _flat(example)[key])
        if roles is not None:  # the best key only: where its roles need naming, the user names them
            yield {"role": key, "roles": roles, "content": content, **_tool_keys(dicts, key, content)}
            return


def _tool_keys(items: list[dict], role: str, content: str) -> dict[str, Any]:
    """``tool_calls`` and ``tool_call`` where the messages keep calls under a key the common spellings name
    (``tool_calls``, ``function_call``, ...); calls under other keys are found by ``_check`` (never read as text)."""
    key = next((k for k in CALL_KEYS if k not in (role, content) and any(get(m, k) not in (None, [], {}) for m in items)),
               None)
    return {} if key is None else {"tool_calls": key, "tool_call": call_keys([get(m, key) for m in items])}


def _flat(item: dict) -> dict[str, Any]:
    """An object's keys and, for its objects, their keys one level down (``author.role``)."""
    out = dict(item)
    for key, value in item.items():
        if isinstance(value, dict):
            out.update({f"{key}.{k}": v for k, v in value.items()})
    return out


def _roles(values: list[str], replied: str) -> dict[str, str] | None:
    """Each role value's role: ``replied`` (the example's) the assistant's, the common spellings', and one value
    left nobody spells the user's, unless it names another side (``TOOL_END``, ``env``); the others ``"?"``, as is
    another value the spellings call the assistant's (which of the two wrote the replies?). None when the
    spellings give ``replied`` another role."""
    if role_of(replied) not in (None, "assistant"):
        return None
    roles = {v: "assistant" if v == replied else (role_of(v) or "?") for v in values}
    roles = {v: "?" if r == "assistant" and v != replied else r for v, r in roles.items()}
    left = [v for v, r in roles.items() if r == "?"]
    if len(left) == 1 and "user" not in roles.values() and not NOT_USER.search(left[0]) and \
            role_of(left[0]) is None:
        roles[left[0]] = "user"
    return roles


def _response_readings(sample: list, hit: Hit, label: str) -> Iterator[Learned]:
    """Mappings reading the example as a request/response record's output: the response path the reply's string
    (or the message holding it), the input the record's message list, an input text, else its longest other text."""
    record = _without_copies(sample[hit.record], hit)
    if not isinstance(record, dict) or _several_calls(record, hit):
        return  # a record of several calls, or one keeping the reply twice (which call is it?)
    # inside a tool call (the reply is a call's arguments: ProAgent's ``function_call``), the message holding the call
    top = next((k for k, step in enumerate(hit.steps) if step in _CALL_STEPS), len(hit.steps))
    ends = ([len(hit.steps)] if top == len(hit.steps) else []) + [
        k for k in range(min(top, len(hit.steps) - 1), 0, -1) if isinstance(_at(record, hit.steps[:k]), dict)]
    responses = {_path(hit, k if k < len(hit.steps) else None): _at(record, hit.steps[:k]) for k in ends}
    reply_root = hit.steps[0]
    inputs = [(p, [], keys, msgs) for p, msgs in message_lists({k: v for k, v in record.items() if k != reply_root},
                                                               need_assistant=False)
              if (keys := _list_keys(msgs)) is not None and not _newest_first(msgs, keys)]
    text_keys = {"role": "role", "roles": {"user": "user"}}  # a prompt text is the user's message: no roles read
    group = _shapes.chat_group(sample)  # rows of a prompt and its reply: each continues the rows of its session
    if group is not None:
        text_keys = {**text_keys, "group": group}
    prompt = _prompt_text(record, hit)
    if prompt is not None:
        where, guessed = prompt
        said = [f"# PROMPT: guessed as the record's longest other text, {where}: check it is the model's input"
                ] if guessed else []
        inputs.append((where, said + _texts_not_read(record, hit, where), text_keys, None))
    if _numbered_turns(sample):
        return  # rows of one dialogue (turn 1, 2, ...): each read as its own call would lose the turns before it
    for where, notes, keys, msgs in inputs:
        if _repeated_input(sample, where):
            continue
        for response, held in responses.items():
            if keys is text_keys and answers_beside(record, (where, response)):
                continue  # other answers beside a prompt and its reply (a checker's raw replies): they would be lost
            # the reply's message: its tool-call keys are read too
            read = (_list_keys([*msgs, held]) or keys) if msgs is not None and is_message(held) else keys
            yield Learned({"name": label, "messages": where, **read, "response": response}, _path(hit), [], notes)


#: Keys under which a message holds its tool calls: an example found below one is a call's arguments, not a text.
_CALL_STEPS = frozenset({*CALL_KEYS, "functionCall", "tool_use", "toolUse"})
_CALL_BLOCKS = ("tool_use", "tool_call", "function_call", "toolCall", "server_tool_use")  # a content block's types


def _without_copies(record: Any, hit: Hit) -> Any:
    """The record as the learner reads it: where it keeps the reply's text again in copies of the object holding it
    at the example's place (a cache keeping the response parsed and as the raw body: ``response_data`` and
    ``request_metadata.response_body``, equal), without the copies; None where another place holds it otherwise."""
    places = list(_holding(record, _normal(_at(record, hit.steps)), ()))
    if len(places) == 1:
        return record
    same = 0  # the steps every place ends with (content[0].text): the objects above them must be equal
    while all(len(p) > same + 1 for p in places) and len({p[len(p) - same - 1] for p in places}) == 1:
        same += 1
    holders = [p[:len(p) - same] for p in places]
    if same == 0 or not all(isinstance(_at(record, h), dict) and _at(record, h) == _at(record, holders[0])
                            for h in holders):
        return None
    view = copy.deepcopy(record)
    for h in (h for h in holders if h != hit.steps[:len(hit.steps) - same]):
        del _at(view, h[:-1])[h[-1]]
    return view


def _prompt_text(record: dict, hit: Hit) -> tuple[str, bool] | None:
    """The path of the prompt text of a request/response record and whether it is a guess: searched from the object
    holding the reply outwards, the longest text under a key naming an input (``agent_input_prompt``,
    ``instruction``), else the record's longest text of at least ``MIN_GUESSED_PROMPT`` characters under a key
    naming no output; None without one."""
    texts: list[tuple[str, str]] = []
    for k in range(len(hit.steps) - 1, -1, -1):
        holder = _at(record, hit.steps[:k])
        if not isinstance(holder, dict):
            continue
        level = [(p, v) for p, v in _texts(holder, hit.steps[k], _path(hit, k)) if p not in dict(texts)]
        named = [(p, v) for p, v in level if INPUT_WORDS & _words(p.rsplit(".", 1)[-1])
                 and not NOT_TEXT_WORDS & _words(p.rsplit(".", 1)[-1])]
        if named:
            return max(named, key=lambda pv: len(pv[1]))[0], False
        texts += level
    guesses = [(p, v) for p, v in texts if len(v) >= MIN_GUESSED_PROMPT and not NOT_PROMPT.search(p)
               and len(v.split()) > 1]  # words, not an identifier (a URI, an op's name, a hash)
    return (max(guesses, key=lambda pv: len(pv[1]))[0], True) if guesses else None


def _words(key: str) -> set[str]:
    """A key's words, lower case (``agent_input_prompt``, ``agentInputPrompt`` -> agent, input, prompt)."""
    return {w.lower() for w in re.findall(r"[A-Za-z][a-z]*|[A-Z]+(?![a-z])", key)}


def _texts_not_read(record: dict, hit: Hit, prompt: str) -> list[str]:
    """A comment naming the record's other long texts (at least ``MIN_GUESSED_PROMPT`` characters) that the mapping
    reads neither as the prompt nor as the reply (a task description, few-shot examples the model may have seen)."""
    reply = _path(hit)
    other = [(p, v) for p, v in _texts(record, None, "$") if p not in (prompt, reply) and len(v) >= MIN_GUESSED_PROMPT
             and " " in v.strip() and not NOT_TEXT_WORDS & _words(p.rsplit(".", 1)[-1])]  # not a hash, id or url
    if not other:
        return []
    named = ", ".join(f"{p} ({len(v)} characters)" for p, v in other[:4])
    return [(f"# NOT READ: other texts of the record: {named}; if the model saw them, declare them: "
             "prompt: {system: PATH, user: PATH} (docs/traces.md)")]


def _list_keys(msgs: list) -> dict[str, Any] | None:
    """An input message list's own keys (role, roles, content, tool calls: ``_shapes.message_keys``), or None when
    its messages share no role key or a role value nobody spells."""
    try:
        keys, _ = message_keys([m for m in msgs if isinstance(m, dict)])
    except ValueError:
        return None
    return keys if all(keys["roles"].values()) else None


def _batch_readings(sample: list, hit: Hit, label: str) -> Iterator[Learned]:
    """Request/response readings of the items of a list a record keeps at its top level, each item one call (an
    eval's ``{"examples": [{"problem", "model_response"}, ...]}``): ``records: lists``."""
    record = sample[hit.record]
    if not (isinstance(record, dict) and len(hit.steps) > 2 and isinstance(hit.steps[1], int)):
        return
    items = record[hit.steps[0]]
    if isinstance(items, list) and sum(isinstance(i, dict) for i in items) >= 2:
        for learned in _response_readings(items, Hit(hit.steps[1], hit.steps[2:]), label):  # type: ignore[arg-type]
            yield Learned({"name": label, "records": "lists", **{k: v for k, v in learned.mapping.items()
                                                                   if k != "name"}}, _path(hit), [], learned.notes)


def _repeated_input(sample: list, where: str) -> bool:
    """Whether the first records all hold the same input at ``where`` (two or more): steps of one run (an
    episode's instruction repeated each step) whose context the records do not hold, not calls of their own."""
    seen = [repr(v) for record in sample[:SIBLING_RECORDS] if isinstance(record, dict)
            for _, v in jsonpath(record, where)]
    return len(seen) >= 2 and len(set(seen)) == 1


def _numbered_turns(sample: list) -> bool:
    """Whether the first records count turns of one dialogue: a key naming a turn, step or round whose values run
    1, 2, 3, ... (or from 0) in file order (a tutoring table's ``turn`` column beside the student's and tutor's
    texts)."""
    records = [r for r in sample[:SIBLING_RECORDS] if isinstance(r, dict)]
    for key in records[0] if records else ():
        if TURN_KEY.search(str(key)):
            values = [str(r.get(key, "")).strip() for r in records]
            if len(values) >= 2 and values[0] in ("0", "1") and values == [str(int(values[0]) + i)
                                                                           for i in range(len(values))]:
                return True
    return False


def _several_calls(record: dict, hit: Hit) -> bool:
    """Whether the record holds other texts under the key the reply sits under (``file_traj.response`` beside
    ``edit_loc_traj.response``; the request's messages apart), or the reply sits in one item of a list of several objects each holding text at
    the same place: a record of several calls, of which one response path would read one."""
    key = _last_key(hit.steps)
    if key is not None and sum(1 for steps in _holding(record, "", ()) if _last_key(steps) == key
                               and _at(record, steps).strip() and not _in_prompt(record, steps)) > 1:
        return True
    for k, step in enumerate(hit.steps):
        if isinstance(step, int):
            items = _at(record, hit.steps[:k])
            tail = hit.steps[k + 1:]
            if isinstance(items, list) and sum(1 for i in items if _reaches(i, tail)) >= 2:
                return True
    return False


def _in_prompt(record: dict, steps: tuple[str | int, ...]) -> bool:
    """Whether the text at ``steps`` is in a message of the input's side (an item of a list with a ``role`` the
    spellings give the user, the system or a tool: the request's messages, not another call's reply)."""
    return any(isinstance(step, int) and role_of(_at(record, steps[:k + 1])) in ("user", "system", "tool")
               for k, step in enumerate(steps))


def _last_key(steps: tuple[str | int, ...]) -> str | None:
    return next((step for step in reversed(steps) if isinstance(step, str)), None)


def _reaches(value: Any, steps: tuple[str | int, ...]) -> bool:
    try:
        return isinstance(_at(value, steps), str)
    except (KeyError, IndexError, TypeError):
        return False


def _texts(holder: dict, skip: str | int | None, at: str) -> list[tuple[str, str]]:
    """The strings of an object (at the JSONPath ``at``) outside its ``skip`` key of at least 8 characters, as
    ``(path, text)``, the longest first (not inside lists: an input is one text)."""
    out: list[tuple[str, str]] = []

    def walk(value: Any, path: str, depth: int) -> None:
        if isinstance(value, str) and len(value.strip()) >= 8:
            out.append((path, value))
        elif isinstance(value, dict) and depth < 4:
            for k, v in value.items():
                walk(v, child_path(path, str(k)), depth + 1)

    for key, value in holder.items():
        if key != skip:
            walk(value, child_path(at, str(key)), 1)
    return sorted(out, key=lambda pv: -len(pv[1]))


def _siblings(sample: list, hit: Hit) -> list[str]:
    """The texts at the example's place in the first records, every list index ``[*]`` (the other replies, if the
    example's place is where replies are kept); the messages' own lists are not followed past the content."""
    where = _path(hit, star=True)
    return [_normal(v) for record in sample[:SIBLING_RECORDS] if isinstance(record, (dict, list))
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
                       and any(isinstance(b, dict) and b.get("type") in _CALL_BLOCKS for b in held)]
        return sorted(set(beside))
    records = sample if mapping.get("records") == "messages" else [
        m for record in sample if isinstance(record, (dict, list))
        for _, msgs in jsonpath(record, mapping["messages"]) if isinstance(msgs, list) for m in msgs]
    msgs = [m for m in records if isinstance(m, dict)]
    read = {mapping["role"].split(".")[0], mapping["content"].split(".")[0], mapping.get("tool_calls", "")}
    return calls_not_read(msgs, sorted({k for m in msgs for k in m if k not in read}))


def _conversations(path: str | os.PathLike[str], declared: Any, problems: ValidationReport) -> list:
    """The file's first conversations as the declared mapping reads them (problems reported to ``problems``)."""
    with tio.open_text(path) as stream:
        return list(islice(declared.format().parse(stream, str(path), problems), CHECK_CONVERSATIONS))


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


def _check(path: str | os.PathLike[str], mapping: dict[str, Any], want: str, siblings: list[str],
           refused: list[Problem], first: str | None = None) -> str | None:
    """None when ``mapping`` reads the file's first conversations without an error, with the example as one of
    the assistant's messages (a call's completion, or a first reply whose context the file does not hold) and every
    text at the example's place (``siblings``) as the assistant's too, the text at the example's first place in the
    file (``first``, where the reading learned from a later place) in some message, and nothing the general path
    ``refused`` left unread (``infer.losses``: a turn kept beside the list); else what went wrong (a record of
    several calls read as one, messages read as the wrong side, a quote of the reply read as it)."""
    from drafters.traces.mapping_file import mapping_from_dict

    try:
        declared = mapping_from_dict(mapping)
    except TraceError as exc:
        return f"{exc.code}: {exc.message}"
    problems = ValidationReport()
    convs = _conversations(path, declared, problems)
    if problems.errors:
        return f"{problems.errors[0].code}: {problems.errors[0].message}"
    replies = [m for conv in convs for m in conv.messages if m.role == "assistant"] + [
        call.completion for conv in convs for call in conv.explicit_calls or []]
    if not any(want in _normal(m.text) or any(want in _normal(c.raw_arguments) for c in m.tool_calls)
               for m in replies):
        return "the example is not one of the assistant's messages it reads"
    if not any(True for conv in convs for _ in conv.calls()):  # every answer first, nothing before it: no call
        return "it reads no LLM call: no assistant message has a context before it"
    if first is not None and not any(first in _normal(m.text) for conv in convs for m in conv.messages):
        return "the text where the example is first found is read nowhere: the place learned from quotes it"
    read = {_normal(m.text) for m in replies}
    missed = [t for t in siblings if not any(t in r for r in read)]
    if missed:
        return (f"it reads {len(siblings) - len(missed)} of the {len(siblings)} texts found where the example is "
                f"(every list index): the others would be lost or read as another side's")
    lost = losses(refused, declared, set())
    return f"the general path refuses content it does not read ({lost[0]})" if lost else None


def learned_yaml(learned: Learned) -> str:
    """The learned mapping as a commented YAML mapping file."""
    import yaml

    check = ("the prompt (messages) and response paths" if "response" in learned.mapping else
             "the markers (a line beginning with one opens a message)" if "text" in learned.mapping else
             "the roles (a value not listed is an error)")
    head = [f"# learned from the example reply, found at {learned.found_at}",
            f"# check {check}, then ingest with --mapping THIS_FILE", *learned.notes]
    if learned.unnamed:
        head.append(f"# Replace each role marked \"?\" ({', '.join(learned.unnamed)}) with system, user, assistant or "
                    "tool: --mapping refuses it until then")
    body = yaml.safe_dump(learned.mapping, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return "\n".join(head) + "\n" + body
