"""Request/response readings of an example reply (``infer_example``): the mappings reading it as the output of a
record that keeps one call's input and output side by side (``response: PATH``), the input being the record's message
list or its prompt text; where the record keeps several calls, the items of a list or the values of an object keyed
by id as the records (``records: lists`` / ``values``), and answers sampled for one prompt as a call each
(docs/traces.md, "A mapping learned from one reply"). Standard library only."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

from drafters.traces.formats import _shapes
from drafters.traces.formats._call_io import SAMPLE_KEYS, answers_beside, message_lists
from drafters.traces.formats._chains import rebuilt_prompts, turn_counter
from drafters.traces.formats._shapes import message_keys
from drafters.traces.formats._spellings import CALL_KEYS, get, is_message, role_key, role_of
from drafters.traces.infer_example_places import Hit, Learned, holding, normal, path_of, value_at
from drafters.traces.infer_text_example import REFERENCE_WORDS
from drafters.traces.json_paths import child_path, jsonpath, path_steps
from drafters.traces.mapping_records import expanded
from drafters.traces.model import Source

#: Words of a key naming a call's input text, and words naming something about a text (``prompt_hash``,
#: ``prompt_id``), not the text.
INPUT_WORDS = {"prompt", "input", "instruction", "question", "query", "request"}
TASK_WORDS = {"task"}  # an input only over a prompt's length (``names_input``)
HTTP_METADATA = {"method", "headers", "header", "cookies", "trailers"}  # an HTTP message's own, beside its body
NOT_TEXT_WORDS = {"id", "hash", "name", "type", "template", "version", "tokens", "count", "len", "length", "url",
                  "uri", "path", "file", *HTTP_METADATA}
#: A request's settings beside its prompt (``request.model``: a model's name, no text the model was sent).
SETTING_WORDS = {"model", "engine", "provider"}
#: Keys whose text is no prompt (an environment's observation, an output, a reference answer), and the shortest
#: text taken as the prompt where no input key names it (characters).
NOT_PROMPT = re.compile(r"observ|output|result|respon|answer|reason|target|reference|label|judg|summar",
                        re.IGNORECASE)
MIN_GUESSED_PROMPT = 40
#: Words of a key naming a call's output (a record's own ``Output`` beside the batch it holds).
OUTPUT_WORDS = {"output", "response", "completion", "answer", "reply", "generation"}
#: Records whose inputs are compared (an instruction repeated each step), whose turns are counted and whose texts at
#: the example's place a candidate must read.
SIBLING_RECORDS = 20


def response_readings(sample: list, hit: Hit, label: str) -> Iterator[Learned]:
    """Mappings reading the example as a request/response record's output: the response path the reply's string
    (or the message holding it), the input the record's message list, an input text, else the other speaker's column
    beside it (``_counterpart``) or its longest other text."""
    record = _without_copies(sample[hit.record], hit)
    sampled = _sample_step(record, hit) if isinstance(record, dict) else None
    if not isinstance(record, dict) or _several_calls(record, hit, sampled):
        return  # a record of several calls, or one keeping the reply twice (which call is it?)
    if any(isinstance(step, str) and _keyed_by_id(value_at(record, hit.steps[:k])) for k, step in enumerate(hit.steps)):
        return  # under an id (a step keyed by its id): a path naming it reads one file; records: values instead
    # inside a tool call (the reply is a call's arguments: ProAgent's ``function_call``), the message holding the call
    top = next((k for k, step in enumerate(hit.steps) if step in CALL_STEPS), len(hit.steps))
    ends = ([len(hit.steps)] if top == len(hit.steps) else []) + [
        k for k in range(min(top, len(hit.steps) - 1), 0, -1) if isinstance(value_at(record, hit.steps[:k]), dict)]
    ends = [k for k in ends if sampled is None or k > sampled]  # inside the sample: each sample's answer
    responses = {path_of(hit, k if k < len(hit.steps) else None, star_at=sampled): value_at(record, hit.steps[:k])
                 for k in ends}
    reply_root = hit.steps[0]
    # the roles of the list at that place in every record sampled (the first turn's holds the user's alone)
    inputs = [(p, [], keys, msgs) for p, msgs in message_lists({k: v for k, v in record.items() if k != reply_root},
                                                               need_assistant=False)
              if (keys := _list_keys(msgs + _lists_at(sample, p, hit.record))) is not None
              and not newest_first(msgs, keys) and _asks(msgs, keys)]
    text_keys: dict[str, Any] = {"role": "role", "roles": {"user": "user"}}  # a prompt text is the user's message
    prompt = _prompt_text(record, hit)
    group = _shapes.chat_group(sample)  # rows of a prompt and its reply: each continues the rows of its session
    numbered = None if group else turn_counter(sample)  # or the rows before it in a dialogue numbered 1, 2, ...
    turns = None if numbered and prompt and rebuilt_prompts(sample, numbered, prompt[0]) else numbered
    if group or turns:
        text_keys = {**text_keys, **({"group": group} if group else {"turns": turns})}
    if numbered:  # a message list in each numbered row: whose messages the next row repeats is not known,
        inputs = [i for i in inputs if _lists_grow(sample, numbered, i[0])]  # unless each turn's holds its history
    if prompt is not None and any(_within(prompt[0], p) for p, *_ in inputs):
        prompt = None  # a text of a message list found (``input[0].text``): the list is the input, not one message
    if prompt is not None:
        where, guessed = prompt
        said = [f"# PROMPT: guessed (no key names an input), {where}: check it is the model's input"
                ] if guessed else []
        inputs.append((where, said + _texts_not_read(record, hit, where), text_keys, None))
    for where, notes, keys, msgs in inputs:
        if _repeated_input(sample, where):
            continue
        for response, held in responses.items():
            if keys is text_keys and answers_beside(record, (where, response)):
                continue  # other answers beside a prompt and its reply (a checker's raw replies): they would be lost
            # the reply's message: its tool-call keys are read too
            read = (_list_keys([*msgs, held]) or keys) if msgs is not None and is_message(held) else keys
            yield Learned({"name": label, "messages": where, **read, "response": response}, path_of(hit), [], notes)


def _lists_at(sample: list, where: str, skip: int) -> list:
    """The messages of the lists at ``where`` in the sampled records other than record ``skip``."""
    return [m for i, r in enumerate(sample) if i != skip and isinstance(r, dict)
            for _, v in jsonpath(r, where) if isinstance(v, list) for m in v]


def _within(path: str, root: str) -> bool:
    """Whether JSONPath ``path`` is ``root`` or under it (``$.input[0].text`` under ``$.input``)."""
    return path == root or path.startswith(root) and path[len(root)] in ".["


def _lists_grow(sample: list, turns: str, where: str) -> bool:
    """Whether, in records numbered by ``turns`` (``turn_counter``), each record following the one before it (its
    number one more) holds a longer message list at ``where``: every turn's list carries the dialogue so far (an
    eval's items, MT-RAG's ``input`` of 1, 3, 5 messages), so a record is read alone, not as the next turn."""
    rows = [(str(n[0][1]), len(m[0][1])) for r in sample if isinstance(r, dict)
            and (n := jsonpath(r, turns)) and (m := jsonpath(r, where)) and isinstance(m[0][1], list)]
    pairs = [(a[1], b[1]) for a, b in pairwise(rows) if a[0].isdigit() and b[0] == str(int(a[0]) + 1)]
    return bool(pairs) and all(after > before for before, after in pairs)


#: Keys under which a message holds its tool calls: an example found below one is a call's arguments, not a text.
CALL_STEPS = frozenset({*CALL_KEYS, "functionCall", "tool_use", "toolUse"})
CALL_BLOCKS = ("tool_use", "tool_call", "function_call", "toolCall", "server_tool_use")  # a content block's types


def _without_copies(record: Any, hit: Hit) -> Any:
    """The record as the learner reads it: where it keeps the reply's text again in copies of the object holding it
    at the example's place (a cache keeping the response parsed and as the raw body: ``response_data`` and
    ``request_metadata.response_body``, equal; a sampled answer's text kept again as the best one), without the
    copies; the record as it is where the copies are items of one list (equal samples of one prompt: the list's
    readings judge); None where another place holds it otherwise."""
    text = normal(value_at(record, hit.steps))
    places = list(holding(record, text, ()))
    if len(places) == 1:
        return record
    sampled = _sample_step(record, hit)
    if sampled is not None:  # a sample's text chosen again outside its list (``best_full_model_response``): a copy
        copies = [p for p in places if p[:sampled] != hit.steps[:sampled]]
        if not all(isinstance(p[-1], str) and normal(value_at(record, p)) == text for p in copies):
            return None
        view = copy.deepcopy(record)
        for p in copies:
            del value_at(view, p[:-1])[p[-1]]
        return view
    same = 0  # the steps every place ends with (content[0].text): the objects above them must be equal
    while all(len(p) > same + 1 for p in places) and len({p[len(p) - same - 1] for p in places}) == 1:
        same += 1
    holders = [p[:len(p) - same] for p in places]
    if same == 0 or not all(isinstance(value_at(record, h), dict) and value_at(record, h) == value_at(record, holders[0])
                            for h in holders):
        return None
    if all(isinstance(h[-1], int) and h[:-1] == holders[0][:-1] for h in holders):
        return record
    view = copy.deepcopy(record)
    for h in (h for h in holders if h != hit.steps[:len(hit.steps) - same]):
        del value_at(view, h[:-1])[h[-1]]
    return view


def _prompt_text(record: dict, hit: Hit) -> tuple[str, bool] | None:
    """The path of the prompt text of a request/response record and whether it is a guess: searched from the object
    holding the reply outwards, the longest text under a key naming an input (``agent_input_prompt``,
    ``instruction``), else the record's longest text of at least ``MIN_GUESSED_PROMPT`` characters under a key
    naming no output; None without one."""
    texts: list[tuple[str, str]] = []
    for k in range(len(hit.steps) - 1, -1, -1):
        holder = value_at(record, hit.steps[:k])
        if not isinstance(holder, dict):
            continue
        at = path_of(hit, k)
        # any text under a key naming an input ("12?", a tutoring row's short question); a guess needs more
        level = [(p, v) for p, v in _texts(holder, hit.steps[k], at, shortest=1) if p not in dict(texts)]
        named = [(p, v) for p, v in level if names_input(_leaf(p), v) and not NOT_TEXT_WORDS & key_words(_leaf(p))]
        named = named or [(p, v) for p, v in level if names_input(p[len(at):], v) and not (NOT_TEXT_WORDS | SETTING_WORDS)
                          & key_words(_leaf(p)) and not NOT_PROMPT.search(p[len(at):])]  # under an input: Input[0].Value
        named = [(p, v) for p, v in named if INPUT_WORDS & key_words(_leaf(p))] or named  # a task: the last resort
        if named:
            return max(named, key=lambda pv: len(pv[1]))[0], False
        other = _counterpart(level, hit.steps[-1]) if k == len(hit.steps) - 1 else None
        if other is not None:  # the other speaker's column of a dialogue row, however short: said to be a guess
            return other, True
        texts += level
    guesses = [(p, v) for p, v in texts if len(v) >= MIN_GUESSED_PROMPT and not NOT_PROMPT.search(p)
               and len(v.split()) > 1]  # words, not an identifier (a URI, an op's name, a hash)
    return (max(guesses, key=lambda pv: len(pv[1]))[0], True) if guesses else None


def _counterpart(level: list[tuple[str, str]], reply_key: str | int) -> str | None:
    """The path of the one text beside the reply under a key spelled as the reply's with another speaker's word in
    one place (``student_msg`` beside ``tutor_msg``, ``user_utterance`` beside ``agent_utterance``): the other side
    of a dialogue row; None where none or several are, or the word names an output or a reference."""
    mine = _WORD.findall(str(reply_key))
    found = []
    for path, _ in level:
        theirs = _WORD.findall(_leaf(path))
        differ = [(a.lower(), b.lower()) for a, b in zip(mine, theirs) if a.lower() != b.lower()]
        if len(mine) >= 2 and len(theirs) == len(mine) and len(differ) == 1 and \
                not (OUTPUT_WORDS | REFERENCE_WORDS | NOT_TEXT_WORDS) & key_words(differ[0][1]):
            found.append(path)
    return found[0] if len(found) == 1 else None


def names_input(key: str, text: str) -> bool:
    """Whether a key (or a path) names a call's input text: a word of ``INPUT_WORDS`` (``user_question``), or
    ``task`` over a text of a prompt's length (``MIN_GUESSED_PROMPT``; a short one is a benchmark's name, ``gsm8k``)
    naming no output (``task_result``)."""
    words = key_words(key)
    if INPUT_WORDS & words:
        return True
    return bool(TASK_WORDS & words) and len(text) >= MIN_GUESSED_PROMPT and not NOT_PROMPT.search(key)


_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+(?![a-z])")  # a key's words: snake_case, camelCase, ACRONYMs


def key_words(key: str) -> set[str]:
    """A key's (or a path's) words, lower case, plurals also singular (``agent_input_prompt``,
    ``agentInputPrompt`` -> agent, input, prompt; ``prompts`` -> prompts, prompt)."""
    words = {w.lower() for w in _WORD.findall(key)}
    return words | {w[:-1] for w in words if w.endswith("s") and len(w) > 3}


def _leaf(path: str) -> str:
    """The last key of a JSONPath (``$.a['llm.input.prompts'][0]`` -> ``llm.input.prompts``)."""
    return next((s.strip(".[]'\"") for s in reversed(path_steps(path)) if not s.strip("[]").isdigit()), "")


def _texts_not_read(record: dict, hit: Hit, prompt: str) -> list[str]:
    """A comment naming the record's other long texts (at least ``MIN_GUESSED_PROMPT`` characters) that the mapping
    reads neither as the prompt nor as the reply (a task description, few-shot examples the model may have seen)."""
    reply = path_of(hit)
    other = [(p, v) for p, v in _texts(record, None, "$") if p not in (prompt, reply) and len(v) >= MIN_GUESSED_PROMPT
             and " " in v.strip() and not NOT_TEXT_WORDS & key_words(p.rsplit(".", 1)[-1])]  # not a hash, id or url
    if not other:
        return []
    named = ", ".join(f"{p} ({len(v)} characters)" for p, v in other[:4])
    return [(f"# NOT READ: other texts of the record: {named}; if the model saw them, declare them: "
             "prompt: {system: PATH, user: PATH} (docs/traces.md)")]


def _asks(msgs: list, reading: dict[str, Any]) -> bool:
    """Whether a message list can be a call's input: some message is the user's or the system's (a span's list of the
    tools it called, ``type: FUNCTION`` each, is no request)."""
    return any(reading["roles"].get(flat(m).get(reading["role"])) in ("user", "system") for m in msgs
               if isinstance(m, dict))


def _list_keys(msgs: list) -> dict[str, Any] | None:
    """An input message list's own keys (role, roles, content, tool calls: ``_shapes.message_keys``), or None when
    its messages share no role key or a role value nobody spells."""
    try:
        keys, _ = message_keys([m for m in msgs if isinstance(m, dict)])
    except ValueError:
        return None
    return keys if all(keys["roles"].values()) else None


def batch_readings(sample: list, hit: Hit, label: str) -> Iterator[Learned]:
    """Request/response readings of the items of a list the record holds (``records: lists``: an eval's
    ``{"examples": [{"problem", "model_response"}, ...]}``, a trace's ``spans``) or of the values of an object keyed
    by id (``records: values``: a run's steps keyed by step id), each item one call, the innermost collection first
    (a trace's spans before its list of traces: an item's place in its list is no path); ``lists`` names the object
    holding that list (or the keyed object), every list index above it ``[*]``."""
    record = sample[hit.record]
    for k in range(len(hit.steps) - 2, 0, -1):
        above, step = value_at(record, hit.steps[:k]), hit.steps[k]
        if isinstance(step, int) and isinstance(hit.steps[k - 1], str) and \
                sum(isinstance(i, dict) for i in above) >= 2:
            items, mode, lists, index = above, "lists", path_of(hit, k - 1, star=True), step
        elif isinstance(step, str) and _keyed_by_id(above):
            items, mode, lists, index = list(above.values()), "values", path_of(hit, k, star=True), list(above).index(step)
        else:
            continue
        if _alike_beside(record, hit.steps[:k - 1], hit.steps[k - 1]) if mode == "lists" else \
                _alike_beside(record, hit.steps[:k]):
            continue  # the collection is one of several alike under named keys: the others' records would be lost
        for learned in response_readings(items, Hit(index, hit.steps[k + 1:]), label):
            where = {"lists": lists} if lists != "$" else {}
            yield Learned({"name": label, "records": mode, **where, **{key: v for key, v in learned.mapping.items()
                                                                       if key != "name"}}, path_of(hit), [], learned.notes)


def unread_prompts(sample: list, mapping: dict[str, Any]) -> str | None:
    """For a mapping reading the items of lists or an object's values as records (``records: lists`` / ``values``),
    the path of a prompt those of the first records that hold no response keep: a text of at least
    ``MIN_GUESSED_PROMPT`` characters under a key naming an input (Moonshot's ``metrics[*]`` beside its ``data``,
    each annotator call's ``eval_prompt``), none of the prompts read; or one the file's records keep outside the batch
    beside an output of their own (WebThinker's own ``prompt`` and ``Output`` beside its ``WebExplorer`` calls; a
    ``system_prompt`` shared by the batch's calls, alone, is none); None where there is none (a trace's
    chain span beside its LLM span holds no prompt). Calls kept there would be lost."""
    if mapping.get("records") not in ("lists", "values"):
        return None
    source = Source("learned", "", record="$")
    records = [r for _, r in expanded(((source, v) for v in sample), mapping["records"], mapping.get("lists", "$"))]
    read = {normal(str(v)) for r in records if isinstance(r, (dict, list)) for _, v in jsonpath(r, mapping["messages"])}
    inside = {normal(value_at(r, steps)) for r in records for steps in holding(r, "", ())}
    for i, value in enumerate(sample):  # the records holding the batch: a call of their own beside it?
        texts = ((steps, normal(value_at(value, steps))) for steps in holding(value, "", ()))
        outside = [(steps, key_words(_last_key(steps) or ""), text) for steps, text in texts if text not in inside]
        prompts = [steps for steps, _, text in outside if names_input(_last_key(steps) or "", text)
                   and len(text) >= MIN_GUESSED_PROMPT]
        if prompts and any(OUTPUT_WORDS & words for _, words, _ in outside):  # a shared system_prompt alone is none
            return f"record {i + 1}, {path_of(Hit(i, prompts[0]))}, outside the batch"
    for i, record in enumerate(records):
        if not isinstance(record, (dict, list)) or jsonpath(record, mapping["response"]):
            continue
        for steps in holding(record, "", ()):
            key = _last_key(steps) or ""
            text = normal(value_at(record, steps))
            if len(text) >= MIN_GUESSED_PROMPT and names_input(key, text) and text not in read:
                return f"record {i + 1} of the batch, {path_of(Hit(i, steps))}"
    return None


def _alike_beside(record: Any, steps: tuple[str | int, ...], list_key: str | None = None) -> bool:
    """Whether the object at ``steps`` (keyed by id; or holding the records' list under ``list_key``) sits under a
    named key beside other keys holding the same kind of object (LightRAG's cache ``{"default": {HASH: entry},
    "hybrid": {HASH: entry}}``, ``{"train": {"examples": [...]}, "test": {"examples": [...]}}``): a ``lists`` path
    naming one key would read one of them."""
    if not steps or not isinstance(steps[-1], str):
        return False
    parent = value_at(record, steps[:-1])

    def alike(value: Any) -> bool:
        if list_key is None:
            return _keyed_by_id(value)
        items = value.get(list_key) if isinstance(value, dict) else None
        return isinstance(items, list) and bool(items) and all(isinstance(i, dict) for i in items)
    return isinstance(parent, dict) and any(key != steps[-1] and alike(v) for key, v in parent.items())


def _keyed_by_id(value: Any) -> bool:
    """Whether ``value`` is an object of records keyed by id: every key holds a digit (a uuid, a number), every
    value an object."""
    return isinstance(value, dict) and bool(value) and all(
        _shapes.ID_LIKE_KEY.match(str(key)) and isinstance(v, dict) for key, v in value.items())


#: A record's key numbering independent runs of one prompt (``run_index``, ``sample_id``, ``seed``, ``trial``).
SAMPLE_INDEX = re.compile(r"^(?:run|sample|trial|seed|repeat|repetition|attempt|rollout|draw)"
                          r"(?:[_ ]?(?:index|idx|id|no|num|number|n))?$", re.IGNORECASE)


def _repeated_input(sample: list, where: str) -> bool:
    """Whether the first records all hold the same input at ``where`` (two or more): steps of one run (an
    episode's instruction repeated each step) whose context the records do not hold, not calls of their own.
    Records numbered as independent runs of that prompt (a ``SAMPLE_INDEX`` key, a different value in each:
    ``run_index`` 1 to 15 of a belief-elicitation harness) are calls of their own, each its conversation."""
    records = [r for r in sample[:SIBLING_RECORDS] if isinstance(r, dict)]
    seen = [repr(v) for record in records for _, v in jsonpath(record, where)]
    if len(seen) < 2 or len(set(seen)) != 1:
        return False
    runs = [k for k in records[0] if isinstance(k, str) and SAMPLE_INDEX.match(k)]
    return not any(len({repr(r.get(k)) for r in records if k in r}) == len(records) for k in runs)


def _several_calls(record: dict, hit: Hit, sampled: int | None = None) -> bool:
    """Whether the record holds other texts under the key the reply sits under (``file_traj.response`` beside
    ``edit_loc_traj.response``; the request's messages apart), or the reply sits in one item of a list of several
    objects each holding text, or a value, at the same place (an LLM span's tool call beside another's text): a
    record of several calls, of which one response path would read one. The list of sampled answers at step
    ``sampled`` (``_sample_step``), read whole, is not one of those."""
    key = _last_key(hit.steps)
    samples = hit.steps[:sampled] if sampled is not None else None
    alike = [steps for steps in holding(record, "", ()) if _last_key(steps) == key and value_at(record, steps).strip()
             and not in_prompt(record, steps) and (samples is None or steps[:len(samples)] != samples)
             and not (_under_reference(steps) and not _under_reference(hit.steps))]
    if key is not None and len(alike) > (1 if samples is None else 0):  # the reply itself, unless a sample
        return True
    for k, step in enumerate(hit.steps):
        if isinstance(step, int) and k != sampled:
            items = value_at(record, hit.steps[:k])
            tail = hit.steps[k + 1:]
            if isinstance(items, list) and sum(1 for i in items if _reaches(i, tail, any_value=True)) >= 2:
                return True
    return False


def _under_reference(steps: tuple[str | int, ...]) -> bool:
    """Whether a text's place is under a key naming a reference answer (``targets[0].text``)."""
    return any(isinstance(step, str) and REFERENCE_WORDS & key_words(step) for step in steps[:-1])


def _sample_step(record: dict, hit: Hit) -> int | None:
    """The step of the example's index in a list of answers sampled for one prompt (a key of
    ``_call_io.SAMPLE_KEYS``: reasoning-gym's ``completions: [{model_answer, full_model_response}, ...]``), each
    sample holding a text at the example's place: each one a call of its own, the response read at ``[*]`` there;
    None where the example is in no such list."""
    for k, step in enumerate(hit.steps):
        if isinstance(step, int) and k and hit.steps[k - 1] in SAMPLE_KEYS:
            items = value_at(record, hit.steps[:k])
            if len(items) >= 2 and all(_reaches(i, hit.steps[k + 1:]) for i in items):
                return k
    return None


def in_prompt(record: dict, steps: tuple[str | int, ...]) -> bool:
    """Whether the text at ``steps`` is in a message of the input's side (an item of a list with a role, under any
    key the spellings know, ``role`` or LangChain's ``type: human``, that they give the user, the system or a tool:
    the request's messages, not another call's reply)."""
    for k, step in enumerate(steps):
        item = value_at(record, steps[:k + 1]) if isinstance(step, int) else None
        key = role_key([item]) if isinstance(item, dict) else None
        if key is not None and role_of(get(item, key)) in ("user", "system", "tool"):
            return True
    return False


def _last_key(steps: tuple[str | int, ...]) -> str | None:
    return next((step for step in reversed(steps) if isinstance(step, str)), None)


def _reaches(value: Any, steps: tuple[str | int, ...], any_value: bool = False) -> bool:
    """Whether ``steps`` lead to a string under ``value`` (with ``any_value``, to any non-empty value: an LLM span
    whose output is a tool call beside one whose output is text)."""
    try:
        found = value_at(value, steps)
    except (KeyError, IndexError, TypeError):
        return False
    return isinstance(found, str) or any_value and bool(found) and isinstance(found, (dict, list))


def _texts(holder: dict, skip: str | int | None, at: str, shortest: int = 8) -> list[tuple[str, str]]:
    """The strings of an object (at the JSONPath ``at``) outside its ``skip`` key of at least ``shortest``
    characters, as ``(path, text)``, the longest first (not inside lists of several items: an input is one text; a list of one,
    LangChain's ``prompts: [TEXT]``, an input list ``[{"Value": TEXT}]``, is read at ``[0]``)."""
    out: list[tuple[str, str]] = []

    def walk(value: Any, path: str, depth: int) -> None:
        if isinstance(value, str) and len(value.strip()) >= shortest:
            out.append((path, value))
        elif isinstance(value, dict) and depth < 4:
            for k, v in value.items():
                walk(v, child_path(path, str(k)), depth + 1)
        elif isinstance(value, list) and len(value) == 1 and depth < 4:
            walk(value[0], f"{path}[0]", depth + 1)

    for key, value in holder.items():
        if key != skip:
            walk(value, child_path(at, str(key)), 1)
    return sorted(out, key=lambda pv: -len(pv[1]))


def newest_first(items: list, reading: dict[str, Any]) -> bool:
    """Whether the list opens with the assistant's message and ends with the user's: a history written newest first,
    or one whose last answer is kept elsewhere in the record; read oldest first, calls would be lost or misplaced."""
    roles = [reading["roles"].get(flat(i).get(reading["role"])) for i in items if isinstance(i, dict)]
    return len(roles) >= 2 and roles[0] == "assistant" and roles[-1] == "user"


def flat(item: dict) -> dict[str, Any]:
    """An object's keys and, for its objects, their keys one level down (``author.role``)."""
    out = dict(item)
    for key, value in item.items():
        if isinstance(value, dict):
            out.update({f"{key}.{k}": v for k, v in value.items()})
    return out
