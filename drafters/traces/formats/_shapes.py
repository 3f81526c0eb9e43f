"""Shape inference for the general path: from a file's first records, the declared mapping that reads it.

The general path (``generic.py``) does not guess a format; it recognises where messages sit by their shape and
writes that down as a ``Mapping`` (``drafters/traces/mapping.py``), so what it inferred is stated in the report
and ``tracedraft datasets infer-mapping FILE`` can write it for the user to correct. Shapes, most specific first:

- ``request_response``: one LLM call per record, the input messages at one path and the output beside them
  (``inputs.messages`` / ``outputs``, ``request`` / ``response``, OpenInference or OpenLLMetry span attributes
  flattened into dotted keys, ``llm.input_messages.0.message.role``), chained into conversations (where a
  record keeps the input and the output: ``_call_io.py``; a prompt and an answer as two texts too);
- ``steps``: a list of agent steps without roles, each holding the model's action and the ``observation``;
- ``message_lines``: one message per record (JSONL), directly or inside an envelope (``data``, ``payload``,
  ``event``, ``record``, ``state``, ``message``, ``item``; a JSON string is decoded), grouped by a session id;
- ``file_list``: the file is the message list (a top-level array of messages);
- ``record_lists``: each record holds one message list (``messages``, ``conversations``, ``turns``, ...).

Records that nest runs of their own kind (a run tree's ``child_runs``, ``mapping_records.nested_key``) are read
as those runs, each a record of one of these shapes (mapping key ``nested``).

Lists of OpenAI Responses API items (``function_call``, ``function_call_output``, ``reasoning`` beside
messages) are recognised in each of these places and read with ``items: openai_responses``.

Two shapes that both fit, or two message lists in a record, are ``Ambiguous`` (named, never guessed).
Not a format (no ``FORMAT``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any

from drafters.traces.formats._batches import batch_at, decoded_tree
from drafters.traces.formats._call_io import (
    answers_beside,
    call_free,
    call_shaped,
    direct_tool_run,
    every_choice,
    input_output,
    item_lists,
    items_call,
    message_lists,
    messages_at,
    note_call_kinds,
    other_kind,
    settings_only,
    settings_tools,
    text_pair,
)
from drafters.traces.formats._chains import rebuilt_prompts, turn_counter
from drafters.traces.formats._entries import entry_items, is_cache
from drafters.traces.formats._exchanges import response_beside
from drafters.traces.formats._record_shapes import (
    CURRENT_KEYS,
    MODEL_CALL_ITEMS,
    RESPONSES_MODEL_ITEMS,
    covering,
    is_items,
    node_collection,
    run_state_call,
    tree_of,
)
from drafters.traces.formats._spellings import (
    CALL_KEYS,
    CONTENT_KEYS,
    EXECUTED_CALL_KEYS,
    MEDIA_LIST_KEYS,
    MESSAGE_WRAPPERS,
    RESULT_ID_KEYS,
    TOOL_MESSAGE_RESULT_KEYS,
    executed_calls,
    failed_turn,
    flag_roles,
    get,
    is_message,
    keyed_by_id,
    role_key,
    role_of,
    role_value,
    tool_invocation,
)
from drafters.traces.formats._system_prompts import SYSTEM_KEYS, system_prompt
from drafters.traces.formats._turns import TURN_KEYS
from drafters.traces.handoff import handed_off
from drafters.traces.json_paths import child_path, jsonpath, path_steps, root_key, unflatten
from drafters.traces.mapping import Mapping
from drafters.traces.mapping_file import mapping_from_dict
from drafters.traces.mapping_records import nested_key, nested_records
from drafters.traces.report import TraceError

ENVELOPES = ("data", "payload", "event", "record", "state", "message", "item", "body", "entry", "turn")
GROUP_KEYS = ("session_id", "sessionId", "conversation_id", "conversationId", "thread_id", "threadId", "chat_id",
              "chatId", "trace_id", "traceId", "run_id")
OBSERVATION_KEYS = ("observation", "observations", "tool_output", "tool_result", "tool_results", "env_output")
ACTION_KEYS = ("action", "actions", "tool_calls", "tool_call", "function_call", "tool", "code_action")
STEP_TEXT_KEYS = ("response", "answer", "final_answer", "output", "model_output", "content", "text")
THOUGHT_KEYS = ("thought", "thoughts", "reasoning", "thinking")
TASK_KEYS = ("task", "query", "question", "instruction", "goal", "prompt", "input")
SAMPLE = 50  # records the shape is inferred from


@dataclass
class Inferred:
    """A shape and the mapping that reads it; ``keys_not_read`` are message keys holding data it does not map,
    ``calls_not_read`` those of them that hold tool calls (the file is then refused, naming them)."""

    shape: str
    mapping: Mapping
    keys_not_read: list[str] = field(default_factory=list)
    calls_not_read: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)  # an ambiguous file's other message paths (infer-mapping)


@dataclass
class Ambiguous:
    """Two readings fit: the candidates (shape and path), for an ``ambiguous_shape`` error naming them; where
    each is a message list's path, ``readings`` holds the offered ones, best first (``_ranked_lists``)."""

    candidates: list[str]
    readings: list[Inferred] = field(default_factory=list)


def message_keys(msgs: list[dict], steps: bool = False) -> tuple[dict[str, Any], list[str]]:
    """The mapping's message keys for a sample of raw messages (role, roles, content, reasoning, tool calls
    and their keys, tool results), and the keys holding data that none of them reads."""
    role = role_key(msgs) if not steps else None
    if role is None and not steps:
        raise ValueError("the messages do not share a role key")
    wrap = next((w for w in MESSAGE_WRAPPERS if w and role and role.startswith(w)), "")
    out: dict[str, Any] = {"role": role or "role"}
    out["roles"] = {"*": "assistant"} if steps else flag_roles(role or "") or {
        v: role_of(v) for v in sorted({get(m, role) for m in msgs if isinstance(get(m, role), str)})}
    content_keys = STEP_TEXT_KEYS if steps else CONTENT_KEYS
    said = [m for m in msgs if not role or role_value(m, role) != "tool"] or msgs  # tool messages: tool_result
    out["content"] = next((wrap + k for k in content_keys if any(get(m, wrap + k) is not None for m in said)),
                          wrap + "content")
    held = [get(m, out["content"]) for m in said if get(m, out["content"]) is not None]
    if held and all(isinstance(v, dict) and isinstance(v.get("parts"), list) for v in held):
        out["content"] += ".parts"  # a content object wrapping its parts ({content_type: text, parts: [...]})
    reasoning = next((wrap + k for k in ("reasoning_content", "reasoning", "thinking", *THOUGHT_KEYS)
                      if any(isinstance(get(m, wrap + k), str) for m in msgs)), None)
    if reasoning:
        out["reasoning"] = reasoning
    calls_key = next((wrap + k for k in (ACTION_KEYS if steps else CALL_KEYS)
                      if any(get(m, wrap + k) not in (None, [], {}) for m in msgs)), None)
    if calls_key:
        out["tool_calls"] = calls_key
        out["tool_call"] = call_keys([get(m, calls_key) for m in msgs])
    tool_msgs = [m for m in msgs if role and role_value(m, role) == "tool"]
    if tool_msgs:
        rid = next((wrap + k.split(".")[-1] for k in RESULT_ID_KEYS if any(get(m, wrap + k.split(".")[-1])
                                                                             is not None for m in tool_msgs)), None)
        rcontent = next((wrap + k for k in CONTENT_KEYS + TOOL_MESSAGE_RESULT_KEYS
                         if all(get(m, wrap + k) is not None for m in tool_msgs)), out["content"])
        rheld = [get(m, rcontent) for m in tool_msgs]
        if all(isinstance(v, dict) and isinstance(v.get("parts"), list) for v in rheld):
            rcontent += ".parts"  # a message object holding the result's parts (Gemini-style functionResponse)
        out["tool_result"] = {"content": rcontent, **({"id": rid} if rid else {})}
    if steps:
        out["observation"] = next(k for k in OBSERVATION_KEYS if any(k in m for m in msgs))
    elif any(role_value(m, role or "") == "assistant" and m.get("observation") not in (None, "", [], {})
             for m in msgs) or any(handed_off(m, "observation", "system") for m in msgs):
        # agent steps with roles (ATIF): the step's observation holds its calls' results, or a context handoff
        # (subagent_trajectory_ref) that the mapping reader refuses the later calls at
        out["observation"] = "observation"
    read = {str(v).split(".")[0] for k, v in out.items() if isinstance(v, str) and k != "roles"}
    read |= {str(v).split(".")[0] for v in (out.get("tool_result") or {}).values()}
    unread = Counter(k for m in msgs for k, v in m.items() if k not in read and v not in (None, "", [], {})
                     and k not in ("id", "name", "type", "timestamp", "created_at", "model", "metadata", *TURN_KEYS,
                                   *MEDIA_LIST_KEYS))
    return out, [k for k, _ in unread.most_common(16)]


def calls_not_read(msgs: list[dict], keys_not_read: list[str]) -> list[str]:
    """The unread message keys that hold tool calls (as calls, as calls recorded with their results, as parts
    holding a call and its result: the AI SDK's ``parts``, or in an object of options: LlamaIndexTS's ``options:
    {toolCall: [...]}``): reading without them would lose the calls."""
    def holds_calls(value: Any, depth: int = 0) -> bool:
        value = decoded_tree(value) if isinstance(value, str) and value.lstrip()[:1] in ("[", "{") else value
        if depth == 0 and isinstance(value, dict) and any(holds_calls(v, 1) for v in value.values()):
            return True
        items = value if isinstance(value, list) else [value]
        nested = [v for i in items if isinstance(i, dict) for k, v in i.items() if k in EXECUTED_CALL_KEYS]
        return call_shaped(value) or executed_calls(value) is not None or bool(nested) and call_shaped(nested) or \
            isinstance(value, list) and any(tool_invocation(b) for b in value) or \
            isinstance(value, list) and any(isinstance(i, dict) and i.get("type") in MODEL_CALL_ITEMS for i in value)
    return [k for k in keys_not_read if any(holds_calls(m.get(k)) for m in msgs if isinstance(m, dict))]


def call_keys(values: list) -> dict[str, str]:
    """``tool_call`` sub-keys from the first call object found (OpenAI ``function.*`` or flat spellings)."""
    calls = [c for v in values for c in (v if isinstance(v, list) else [v]) if isinstance(c, dict)]
    if not calls:
        return {}
    c = calls[0]
    fn = "function." if isinstance(c.get("function"), dict) else "tool_call.function." if isinstance(
        get(c, "tool_call.function"), dict) else ""
    name = next((fn + k for k in ("name", "tool_name", "toolName", "function_name", "tool") if get(c, fn + k) is not None),
                fn + "name")
    args = next((fn + k for k in ("arguments", "args", "input", "parameters", "tool_input", "tool_args", "params")
                 if get(c, fn + k) is not None), fn + "arguments")
    ident = next((k for k in ("id", "call_id", "tool_call_id", "toolCallId", "tool_call.id") if get(c, k) is not None),
                 None)
    return {"name": name, "arguments": args, **({"id": ident} if ident else {})}


def infer(records: list[tuple[Any, Any]], name: str = "inferred") -> Inferred | Ambiguous | None:
    """The shape of a file from its first records (``(source, value)`` pairs as the readers yield them), or
    ``Ambiguous`` naming the candidates, or None when no shape fits."""
    values = [decoded_tree(v) for _, v in records[:SAMPLE]]
    if not values:
        return None
    nested = nested_key(values)
    if nested is not None:  # a run tree: its runs are the records (a chain run, its LLM and tool runs)
        got = infer(list(islice(nested_records(iter(records), nested), SAMPLE)), name)
        if isinstance(got, Inferred) and got.mapping.records == "each":
            return replace(got, mapping=replace(got.mapping, nested=nested))
    array_doc = records[0][0].record == "$[0]"
    if len(values) == 1 and is_cache(values[0]):  # a response cache: each entry one call
        try:
            got = _request_response([decoded_tree(i) for i in entry_items(values[0])], False, name)
        except (ValueError, TraceError):
            got = None
        if isinstance(got, Inferred):
            return replace(got, mapping=replace(got.mapping, records="entries"))
    first = batch_at(values[0])  # an object of lists of records (a batch upload, a trace's spans); each one so
    batches = [first, *(batch_at(v) for v in values[1:])] if first else [None]
    batch = (first[0], [i for b in batches for i in b[1]]) if first and all(batches) and \
        len({b[0] for b in batches}) == 1 else None  # type: ignore[index]
    if batch:  # the shape of the lists' items
        lists, items = batch
        for shape in (_responses_items, _request_response, _steps):
            try:
                got = shape(items, False, name)
            except (ValueError, TraceError):
                continue
            if isinstance(got, Inferred):
                return replace(got, mapping=replace(got.mapping, records="lists", lists=lists))
    by_id = _record_map(values[0]) if len(values) == 1 else None
    if by_id is not None:
        return by_id
    for shape in (_run_state, _responses_items, _request_response, _steps, _tree, _message_lines, _file_list,
                  _record_lists):
        try:
            got = shape(values, array_doc, name)
        except (ValueError, TraceError):  # mixed spellings within one shape, no mapping says it: not this shape
            continue
        if got is not None:
            return None if _one_of_keyed(values, got) else got
    raw = [v for _, v in records[:SAMPLE]]  # a prompt and an answer that is JSON text, read as written
    if all(isinstance(v, dict) and text_pair(v) for v in raw):
        return _request_response(raw, array_doc, name)
    return None


def _one_of_keyed(values: list, got: Inferred | Ambiguous) -> bool:
    """Whether ``got`` reads one value of an object of records keyed by id (its messages path starts at one of
    the ids): the other records would go unread, so no such reading is offered (``_record_map`` reads all)."""
    doc = values[0] if len(values) == 1 else None
    return isinstance(got, Inferred) and isinstance(doc, dict) and len(doc) >= 2 and keyed_by_id(doc) is not None \
        and all(ID_LIKE_KEY.match(k) for k in doc) and root_key(got.mapping.messages) in doc


ID_LIKE_KEY = re.compile(r"^(?=.*\d)\S+$")  # an id, not a field name: holds a digit (a hash, a uuid, a number)


def _record_map(doc: Any, name: str = "inferred") -> Inferred | None:
    """The shape of an object of records keyed by id or name (FireAct's ``{"6238": {"traj": [...], "reward":
    ...}}``), the document or the one value of it beside metadata (a test report's ``results`` beside its
    ``metadata``): every value an object (at least two; no key a field name, ``keyed_by_id``) and one record shape
    reading each of them at the same path (mapping keys ``records: values``, ``lists``: where the object is); None
    for any other document."""
    if not isinstance(doc, dict):
        return None
    places = [("$", doc)]
    held = [k for k, v in doc.items() if keyed_by_id(v) and len(v) >= 2]
    if len(held) == 1 and all(call_free(v) for k, v in doc.items() if k != held[0]):  # beside metadata only
        places.append((child_path("$", held[0]), doc[held[0]]))
    for at, holder in places:
        if keyed_by_id(holder) is None or len(holder) < 2:
            continue
        records = list(holder.values())[:SAMPLE]
        for shape in (_request_response, _steps, _record_lists):
            try:
                got = shape(records, False, name)
            except (ValueError, TraceError):
                continue
            if not isinstance(got, Inferred):
                continue
            try:  # every record read at the path (a tool run beside is no call)
                every = all(jsonpath(r, got.mapping.messages) for r in records if not direct_tool_run(r))
            except ValueError:  # a path through keys a JSONPath cannot spell: not this shape
                every = False
            if every:
                return replace(got, mapping=replace(got.mapping, records="values", lists=at))
    return None


def _mapping(name: str, **keys: Any) -> Mapping:
    """An inferred mapping; adjacent answers without evidence are joined, as the general path reads them, so the
    mapping ``infer-mapping`` writes reads a file the same way until its user declares otherwise."""
    keys = {"adjacent_answers": "join", **keys}
    return mapping_from_dict({"name": name, **{k: v for k, v in keys.items() if v not in (None, {}, "")}}, name)


def _file_list(values: list, array_doc: bool, name: str) -> Inferred | None:
    if not array_doc or not all(is_message(v) for v in values) or not message_lists(values):
        return None
    keys, unread = message_keys(values)
    return Inferred("file_list", _mapping(name, records="file", messages="$", **keys), unread,
                    calls_not_read(values, unread))


def _record_lists(values: list, array_doc: bool, name: str) -> Inferred | Ambiguous | None:
    """Each record holds one message list; records without one (a role value not known) are each refused
    when read (``no_messages_found``), so most of the sample having one is enough."""
    found = [f for f in (message_lists(v) for v in values if isinstance(v, (dict, list))) if f]
    if not found or 2 * len(found) < len(values):
        return None
    found = [_siblings([(p, m) for p, m in f if not settings_only(m)] or f) for f in found]  # not agents' settings
    found = [[f[k]] if len(f) > 1 and (k := covering([m for _, m in f], copies=_one_holder([p for p, _ in f])))
             is not None else f for f in found]
    paths = Counter(_generic_path(f[0][0]) for f in found if len(f) == 1)
    several = next((f for f in found if len(f) > 1), None)
    if several is not None:
        paths = _grouped([p for p, _ in several])
        return Ambiguous([f"record_lists at {p}" for p in paths[:5]], _ranked_lists(values, paths, name))
    (path, _), = paths.most_common(1)
    if _one_item_of_many(values, path):
        return None  # found in one item only (the others' lists have no reply): a per-item reading is not this
    if any(response_beside(v, path) for v in values[:SAMPLE]):
        return None  # recorded requests beside their responses, which this reading would lose (refused per record)
    steps = [sl for sl in (_step_list(v) for v in values) if sl is not None and _has_actions(sl[1])]
    if steps:  # the same run as messages and as agent steps (SWE-agent's history and trajectory): not guessed
        return Ambiguous([f"record_lists at {path}", f"steps at {steps[0][0]}"])
    msgs = [m for f in found for m in f[0][1]][:500]
    keys, unread = message_keys(msgs)
    return Inferred("record_lists", _mapping(name, messages=path, **keys, **_record_extras(values, path)), unread,
                    calls_not_read(msgs, unread))


def _one_item_of_many(values: list, path: str) -> bool:
    """Whether ``path`` picks one item of a list (``results[1].prompt``) whose other items hold a value at the same
    place: an eval's results, each item a prompt and its response, where one prompt's history has a reply; reading
    that item's list alone would read one call of the file's many (ok, a wrong count)."""
    starred = re.sub(r"\[\d+\]", "[*]", path)
    return starred != path and any(len(jsonpath(v, starred)) > 1 for v in values if isinstance(v, (dict, list)))


def _one_holder(paths: list[str]) -> bool:
    """Whether message lists' paths differ in one step only, a key below the record (``$.response.body.candidates``
    and ``$.response.sdk_response.candidates``): copies of a list there are one object written twice; copies in
    parts of a record that differ more (an intermediate call's answer and the final one), or in two items of a list
    (two samples answered alike), may be two calls."""
    try:
        steps = [path_steps(p) for p in paths]
    except ValueError:
        return False
    if len({len(s) for s in steps}) != 1:
        return False
    differ = {i for s in steps for i, (a, b) in enumerate(zip(s, steps[0])) if a != b}
    return len(differ) == 1 and 0 not in differ and not any(re.fullmatch(r"\[(\d+|\*)\]", s[i])
                                                          for s in steps for i in differ)


def _siblings(found: list[tuple[str, list]]) -> list[tuple[str, list]]:
    """Several message lists in a record that are the same key of each item of one array (an export envelope's
    ``history[i].messages``: one conversation per item) as one ``[*]`` path; any other set as it is."""
    if len(found) < 2:
        return found
    starred = {re.sub(r"\[\d+\]", "[*]", p, count=0) for p, _ in found}
    if len(starred) != 1:
        return found
    (star,) = starred
    if star.count("[*]") != 1 or any(re.sub(r"\[\d+\]", "", p) != star.replace("[*]", "") for p, _ in found):
        return found
    return [(star, [m for _, msgs in found for m in msgs])]


def _grouped(paths: list[str]) -> list[str]:
    """``paths`` with those differing only in list indexes (``players[0].conversation``, ``players[1]...``) as one
    ``[*]`` path (one conversation per item), first-seen order."""
    stars = [re.sub(r"\[\d+\]", "[*]", p) for p in paths]
    count = Counter(stars)
    return list(dict.fromkeys(star if count[star] > 1 else p for p, star in zip(paths, stars)))


def _ranked_lists(values: list, paths: list[str], name: str) -> list[Inferred]:
    """The ``record_lists`` reading of each of ``paths`` that holds both sides of a conversation (an assistant
    message and another role: a response's ``choices`` hold answers only) and is not one id of an object keyed by
    id, best first: the fewest ``[*]`` (a state snapshot kept in a history repeats a conversation), the
    shallowest path, the most messages. Only ``infer-mapping`` uses them; the general path refuses the file."""
    ranked = []
    for path in paths:
        msgs = [m for v in values if isinstance(v, (dict, list)) for _, found in jsonpath(v, path)
                if isinstance(found, list) for m in found if isinstance(m, dict)][:500]
        try:
            keys, unread = message_keys(msgs)
        except (ValueError, TraceError):  # mixed spellings no mapping says: not a reading to offer
            continue
        sides = {role_value(m, keys["role"]) for m in msgs}
        reading = Inferred("record_lists", _mapping(name, messages=path, **keys, **_record_extras(values, path)),
                           unread, calls_not_read(msgs, unread))
        if "assistant" in sides and len(sides) > 1 and not _one_of_keyed(values, reading):
            ranked.append(((path.count("[*]"), len(re.findall(r"[.\[]", path)), -len(msgs)), reading))
    return [reading for _, reading in sorted(ranked, key=lambda r: r[0])]


def _generic_path(path: str) -> str:
    """``$[3].messages`` -> ``$.messages`` (records are the array's items)."""
    return re.sub(r"^\$\[\d+\]", "$", path)


def _record_extras(values: list, messages_path: str) -> dict[str, Any]:
    """Record-level keys the mapping can read beside the messages: tool definitions, at the record's top or
    beside the message list (a request body's ``tools``, Bedrock's ``toolConfig.tools``)."""
    top = messages_path.split(".")[1].split("[")[0] if "." in messages_path else ""
    parent = messages_path.rsplit(".", 1)[0] if messages_path.count(".") > 1 else "$"
    extras: dict[str, Any] = {}
    for base in dict.fromkeys((parent, "$") if "[*]" not in parent else ("$",)):  # [*]: one per item, not read
        for key in ("tools", "functions", "tool_definitions", "toolConfig.tools"):
            path = f"{base}.{key}"
            if "tools" not in extras and (base != "$" or key != top) and any(
                    isinstance((jsonpath(v, path) or [(None, None)])[0][1], list) for v in values):
                extras["tools"] = path
    # a request body's system prompt beside its messages (Anthropic, Bedrock, Cohere), or on an object holding them
    # further up, in its settings too (Open WebUI's chat.params.system over chat.history.messages)
    ancestors = [] if "[*]" in parent else [parent[:i] for i in range(len(parent), 0, -1)
                                             if i == len(parent) or parent[i] == "."]
    for base in dict.fromkeys(ancestors + ["$"]):
        for key in (*SYSTEM_KEYS, *(f"{w}.{k}" for w in ("params", "settings") for k in SYSTEM_KEYS)):
            path = f"{base}.{key}"
            if "prompt" not in extras and key != top and any(
                    system_prompt(key.rsplit(".", 1)[-1], (jsonpath(v, path) or [(None, None)])[0][1]) is not None
                    for v in values):
                extras["prompt"] = {"system": path}
    tools = settings_tools(values) if "tools" not in extras else None  # kept with the call's settings (LangSmith's)
    if tools:
        extras["tools"] = tools
    return extras


def _one_message(value: Any) -> bool:
    """A message that holds no conversation (its tool calls and content blocks aside)."""
    if not is_message(value):
        return False
    rest = {k: v for k, v in value.items() if k not in CALL_KEYS and k not in CONTENT_KEYS}
    return not message_lists(rest)


def _envelope(value: Any) -> str | None:
    """The path of the one message a record holds: ``$`` or an envelope key (``$.payload``...)."""
    if _one_message(value):
        role = role_key([value]) or ""
        wrapper = role.split(".")[0] if "." in role else None
        if wrapper in ENVELOPES and _one_message(value.get(wrapper)):
            # the role is the wrapped message's ({"type": "message", "message": {role, content}}): the envelope
            # is the path, so a record without one (a session header, a settings change) is no message, counted
            return f"$.{wrapper}"
        return "$"
    if isinstance(value, dict):
        for key in ENVELOPES:
            found = jsonpath(value, f"$.{key}")
            if found and _one_message(found[0][1]):
                return f"$.{key}"
        # under a key of the tool's own naming, the one key holding a message, or a list of one (AI-Trader's log:
        # {"signature", "new_messages": {role, content}}): a list of more is a conversation, not a line's message
        held = [k for k, v in value.items() if _one_message(v) or isinstance(v, list) and len(v) == 1 and
                _one_message(v[0])]
        if len(held) == 1 and not any(message_lists(v) for k, v in value.items() if k != held[0]):
            return child_path("$", held[0])
    return None


def _message_lines(values: list, array_doc: bool, name: str) -> Inferred | None:
    if array_doc and all(is_message(v) for v in values) and not any(
            len({str(v.get(k)) for v in values}) > 1 for k in GROUP_KEYS if all(v.get(k) is not None for v in values)):
        return None  # the file is the message list (_file_list), unless its messages name sessions (Mastra's threadId)
    where = [_envelope(v) for v in values]
    paths = Counter(w for w in where if w)
    if not paths or sum(paths.values()) < 2:
        return None
    (path, _), = paths.most_common(1)
    held = [jsonpath(v, path)[0][1] for v, w in zip(values, where) if w == path]
    msgs = [m for h in held for m in (h if isinstance(h, list) else [h])]  # a line's list of one message
    if not any(role_value(m, role_key([m]) or "") == "assistant" for m in msgs):
        return None
    group = next((f"$.{k}" for k in GROUP_KEYS
                  if all(isinstance(v, dict) and v.get(k) is not None for v, w in zip(values, where) if w)), None)
    if path == "$" and any(w is None and isinstance(v, dict) and v.get("type") in RESPONSES_MODEL_ITEMS
                           for v, w in zip(values, where)):  # Responses-like items, one per line, beside the messages
        return Inferred("message_lines", _mapping(name, records="messages", messages=path, group=group,
                                                  **ITEMS_MAPPING), [], [])
    keys, unread = message_keys(msgs)
    return Inferred("message_lines", _mapping(name, records="messages", messages=path, group=group, **keys), unread,
                    calls_not_read(msgs, unread))


def _request_response(values: list, array_doc: bool, name: str) -> Inferred | Ambiguous | None:
    # a task span beside the calls' records, a failed request (no output, an error beside): read past
    values = [v for v in values if not call_free(v) and not (failed_turn(v) and input_output(v) is None)]
    dicts = [unflatten(v) if isinstance(v, dict) else v for v in values]
    pairs = [input_output(v) for v in dicts]
    kinds: dict[str, set[str]] = {}  # an application's own records beside the calls' (call_io.other_kind): read past
    for d in (d for d, p in zip(dicts, pairs) if p):
        note_call_kinds(d, kinds)
    kept = [i for i, (d, p) in enumerate(zip(dicts, pairs)) if p or not other_kind(d, kinds)]
    values, dicts, pairs = [values[i] for i in kept], [dicts[i] for i in kept], [pairs[i] for i in kept]
    if not pairs or not all(pairs):
        return None
    ((inp, out), _), = Counter(pairs).most_common(1)
    msgs = [m for v in dicts for path in (inp, out) for m in messages_at(v, path)
            if path == inp or is_message(m)][:500]  # an output object without a role: read as the answer
    if not msgs:  # a prompt and an answer as texts (call_io.text_pair): the user's message, the model's reply
        beside = next((b for v in dicts if isinstance(v, dict) and (b := answers_beside(v, (inp, out)))), None)
        if beside:  # other answers beside the pair (a checker's raw replies): reading the pair would drop them
            return Ambiguous([f"request_response {inp} -> {out}", *(f"answers at {p}" for p in beside[:4])])
        group = chat_group(dicts)  # rows of a session, or numbered as one dialogue's turns: chained
        turns = None if group else turn_counter(dicts)
        turns = None if turns and rebuilt_prompts(dicts, turns, inp) else turns  # an agent loop's steps: apart
        return Inferred("request_response", _mapping(name, messages=inp, response=out, role="role",
                                                     roles={"user": "user"}, content="content", group=group,
                                                     turns=turns), [], [])
    keys, unread = message_keys(msgs)
    flat = dicts != values
    out = every_choice(dicts, out)
    return Inferred("request_response", _mapping(name, messages=inp, response=out, unflatten=flat or None,
                                                 **keys, **_record_extras(dicts, inp)), unread, calls_not_read(msgs, unread))


#: Keys naming a conversation (not a run or a trace: a batch of independent requests shares those).
CHAT_KEYS = tuple(k for k in GROUP_KEYS if k not in ("trace_id", "traceId", "run_id"))


def chat_group(values: list) -> str | None:
    """For records of a prompt text and its reply: the path of a key naming a conversation that every record has and
    several share (a chat log's rows: each prompt continues the rows before it in its session), else None."""
    dicts = [v for v in values if isinstance(v, dict)]
    key = next((k for k in CHAT_KEYS if dicts and all(d.get(k) not in (None, "") for d in dicts)), None)
    return f"$.{key}" if key and len({str(d[key]) for d in dicts}) < len(dicts) else None


ITEMS_MAPPING = {"items": "openai_responses", "role": "role",
                 "roles": {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}}


def _responses_items(values: list, array_doc: bool, name: str) -> Inferred | Ambiguous | None:
    """Responses API item lists: the file is the list, a record holds one, or a record holds a call's
    ``input`` items and ``output`` items side by side."""
    if array_doc and is_items(values):
        return Inferred("file_list", _mapping(name, records="file", messages="$", **ITEMS_MAPPING))
    calls = [items_call(v) for v in values]
    if calls and all(calls) and any(item_lists(v) for v in values):  # some model items: Responses-shaped
        inp, out = Counter(calls).most_common(1)[0][0]  # type: ignore[misc]
        tools = inp.rpartition(".")[0] + ".tools"  # the tool definitions the request carried, beside its input
        tools = tools if all(isinstance(jsonpath(v, tools)[0][1] if jsonpath(v, tools) else None, list)
                             for v in values) else None
        return Inferred("request_response", _mapping(name, messages=inp, response=out, tools=tools,
                                                     **ITEMS_MAPPING))
    found = [item_lists(v) for v in values]
    if not found or not all(found):
        return None
    paths = Counter(tuple(f) for f in found).most_common(1)[0][0]
    if len(paths) == 1:
        return Inferred("record_lists", _mapping(name, messages=paths[0], **ITEMS_MAPPING))
    return Ambiguous([f"openai_responses items at {p}" for p in paths[:5]])


def _steps(values: list, array_doc: bool, name: str) -> Inferred | Ambiguous | None:
    lists = [_step_list(v) for v in values]
    if not lists or not all(lists):
        return None
    path = Counter(p for p, _ in lists).most_common(1)[0][0]  # type: ignore[misc]
    steps = [s for _, ss in lists for s in ss][:500]  # type: ignore[misc]
    if not _has_actions(steps):
        return None
    actions = [s[k] for s in steps for k in ACTION_KEYS if s.get(k) not in (None, "", [], {})]
    if not all(call_shaped(a) for a in actions):
        return None  # actions written as text (a command line): the step's tool call is not a structured call
    lists_beside = [p for v in values for p, _ in message_lists(v)]
    if lists_beside:  # the same run as steps and as a message list (SWE-agent's trajectory and history)
        return Ambiguous([f"steps at {path}", *(f"record_lists at {p}" for p in sorted(set(lists_beside))[:4])])
    keys, unread = message_keys(steps, steps=True)
    task = next((f"$.{k}" for k in TASK_KEYS if all(isinstance(v, dict) and isinstance(v.get(k), str) for v in values)),
                None)
    return Inferred("steps", _mapping(name, messages=path, prompt={"user": task} if task else None, **keys), unread,
                    calls_not_read(steps, unread))


def _has_actions(steps: list) -> bool:
    """Steps that record an action and its observation (not just a list of role-less records)."""
    return any(k in s for s in steps for k in OBSERVATION_KEYS) and any(k in s for s in steps for k in ACTION_KEYS)


def _step_list(value: Any) -> tuple[str, list] | None:
    """(path, steps): a list of role-less dicts with an observation key and an action or answer key."""
    candidates = [("$", value)] if isinstance(value, list) else [
        (f"$.{k}", v) for k, v in value.items() if isinstance(v, list)] if isinstance(value, dict) else []
    for path, items in candidates:
        dicts = [s for s in items if isinstance(s, dict)]
        keys = (*OBSERVATION_KEYS, *ACTION_KEYS, *STEP_TEXT_KEYS, *THOUGHT_KEYS)
        if dicts and len(dicts) == len(items) and not role_key(dicts) and \
                all(any(k in s for k in keys) for s in dicts):
            return path, items
    return None


def _tree(values: list, array_doc: bool, name: str) -> Inferred | None:
    """Records each holding a message tree: nodes (keyed by id, or with an ``id``) linked by parent and/or
    children ids, each holding a message (or none: a root). Read by ``tree`` in the mapping: every assistant
    message is one call whose context is its ancestors' messages (``drafters/traces/mapping.py``)."""
    trees = [tree_of(v) for v in values]
    if not trees or not all(trees):
        return None
    (path, keys), _ = Counter((t[0], tuple(sorted(t[1].items()))) for t in trees).most_common(1)[0]  # type: ignore[index]
    tree = dict(keys)
    nodes_ids = [{i for i, _ in node_collection(jsonpath(v, path)[0][1]) or []} for v in values]
    current = next((k for k in CURRENT_KEYS if all(isinstance(v.get(k), (str, int)) or v.get(k) is None
                                                   for v in values)
                    and any(str(v.get(k)) in ids for v, ids in zip(values, nodes_ids))), None)
    if current:
        tree["current"] = f"$.{current}"
    msgs = [m for t in trees for m in t[2]][:500]  # type: ignore[index]
    keys_, unread = message_keys(msgs)
    unread = [k for k in unread if k not in tree.values()]  # the links the tree reads
    return Inferred("tree", _mapping(name, messages=path, tree=tree, **keys_, **_record_extras(values, path)), unread,
                    calls_not_read(msgs, unread))


def _run_state(values: list, array_doc: bool, name: str) -> Inferred | None:
    """Saved run states (an agent SDK's resumable state): one call, the run's input text and the model's
    output items (``openai_responses``) at separate paths; read with ``response`` (a string input is the
    user's message)."""
    calls = [run_state_call(v) for v in values]
    if not calls or not all(calls):
        return None
    inp, out = Counter(calls).most_common(1)[0][0]  # type: ignore[misc]
    if any(c != (inp, out) for c in calls):
        return None
    return Inferred("run_state", _mapping(name, messages=inp, response=out, **ITEMS_MAPPING))
