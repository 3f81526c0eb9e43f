"""Batch documents for the general path's shape inference (``_shapes.infer``): an object of lists of records (a
batch upload, a trace's spans) and the records it holds, with the two helpers that look into records for it (a
message anywhere, JSON text decoded). Not a format (no ``FORMAT``)."""

from __future__ import annotations

import json
from typing import Any

from drafters.traces.formats._call_io import input_output, items_call, message_lists
from drafters.traces.formats._spellings import get, is_message, role_of
from drafters.traces.json_paths import child_path, jsonpath, path_steps, unflatten


def batch_at(doc: Any) -> tuple[str, list] | None:
    """(path, records) of a batch document (``batch_records``): the document itself, or the one object value of a
    document without lists of its own (an eval export's ``{"evalId", "results": {"prompts": [...], "results":
    [...]}, "config": {...}}``)."""
    records = batch_records([doc])
    if records is not None or not isinstance(doc, dict) or any(isinstance(v, list) for v in doc.values()):
        return ("$", records) if records is not None else None
    inner = [(k, batch_records([v])) for k, v in doc.items() if isinstance(v, dict)]
    found = [(child_path("$", k), r) for k, r in inner if r is not None]
    return found[0] if len(found) == 1 else None


def batch_records(values: list) -> list | None:
    """The records of a document that is an object of lists of records (LangSmith's batch upload
    ``{"post": [runs], "patch": [runs]}``, an ingestion API's ``{"batch": [events], "metadata": {...}}``: values
    that are not lists are the batch's metadata), those holding only a call's input that a record with an output
    repeats left out (a run posted, then patched: the mapping reads it once) and those holding no message at all
    (other events: the mapping skips them, counted); None for any other document."""
    doc = values[0]
    if not isinstance(doc, dict) or not doc or not any(isinstance(v, list) for v in doc.values()):
        return None
    items = [i for v in doc.values() if isinstance(v, list) for i in v]
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    flat = [unflatten(i) for i in items]
    answered = [input_output(i) or items_call(i) for i in flat]  # items_call: Responses API items, a call only
    inputs = [[m for _, m in message_lists(i, need_assistant=False)] for i in flat]
    done = [inp for inp, io in zip(inputs, answered) if io is not None]
    if not done or any(io is None and not (inp and any(all(m in d for m in inp) for d in done))
                       and holds_message(i) for i, inp, io in zip(flat, inputs, answered)):
        return None
    return [i for i, io in zip(items, answered) if io is not None]


def holds_message(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` holds a message anywhere (an object with a role in a known spelling), as JSON text
    too: a record without one is another kind of event, not a call."""
    if depth > 8:
        return False
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        value = decoded_tree(value)
    if isinstance(value, dict):
        return is_message(value) or any(holds_message(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(holds_message(v, depth + 1) for v in value[:1000])
    return False


def decoded_tree(value: Any, budget: list[int] | None = None) -> Any:
    """``value`` with every string that holds a JSON object or array decoded (span attributes and envelopes
    store messages as JSON text); the mapping's JSONPath decodes the same strings when it reads them. At most
    2 MB of such text is decoded per record."""
    budget = budget if budget is not None else [2_000_000]
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]") and len(stripped) <= budget[0]:
            budget[0] -= len(stripped)
            try:
                return decoded_tree(json.loads(stripped), budget)
            except (ValueError, RecursionError):
                return value
        return value
    if isinstance(value, list):
        return [decoded_tree(v, budget) for v in value]
    if isinstance(value, dict):
        return {k: decoded_tree(v, budget) for k, v in value.items()}
    return value


def history_in_text(values: list, messages: str, role: str) -> bool:
    """Whether in every record the message list at ``messages`` sits inside JSON text (a history a tool keeps as
    text in its own record, Semantic Kernel's ``chat_history``: a mapping's JSONPath decodes it, the spellings'
    reading does not) and ends with the model's reply (role key ``role``); a request body kept as text, ending with
    the user's or a tool's turn and its reply elsewhere (a mock server's spec, an inference store's row), is not."""
    for value in values:
        msgs = jsonpath(value, messages) if _through_text(value, messages) else []
        last = msgs[0][1][-1] if msgs and isinstance(msgs[0][1], list) and msgs[0][1] else None
        if role_of(get(last, role)) != "assistant":
            return False
    return bool(values)


def _through_text(value: Any, path: str) -> bool:
    """Whether ``path``, walked through ``value``, meets a string before its end."""
    for step in path_steps(path):
        if isinstance(value, str):
            return True
        key = step.strip(".[]'\"")
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return False
    return False
