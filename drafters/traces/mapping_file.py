"""Reading and checking a declared mapping file (docs/traces.md, "A declared mapping"): YAML or JSON, every
value type-checked and bounded (``MAX_VALUES``, ``MAX_NAME``: an uploaded mapping is untrusted), into the
``Mapping`` that drafters.traces.mapping applies to records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from drafters.traces.formats._turns import ADJACENT_ANSWERS
from drafters.traces.json_paths import jsonpath
from drafters.traces.mapping import Mapping
from drafters.traces.mapping_text import TextMapping, text_mapping_from_dict
from drafters.traces.report import TraceError

_ROLES = ("system", "user", "assistant", "tool")
_KEYS = {"name", "messages", "role", "roles", "content", "reasoning", "tool_calls", "tool_call", "tool_result",
         "tools", "id", "records", "group", "turns", "response", "observation", "prompt", "unflatten", "items", "tree",
         "adjacent_answers", "lists", "nested", "whole_prompts"}
_TEXT_KEYS = ("name", "messages", "role", "content", "reasoning", "tool_calls", "tools", "id", "group", "turns",
              "response", "observation", "lists")
_RECORDS = ("each", "file", "messages", "lists", "entries", "values")
_ITEMS = ("messages", "openai_responses")
_SUB_KEYS = {"tool_call": {"id", "name", "arguments"}, "tool_result": {"id", "content"}, "prompt": {"system", "user"},
             "tree": {"parent", "children", "message", "id", "current"}}
MAX_VALUES = 2000  # values in a mapping file, aliases counted at each use (an upload is untrusted)
MAX_NAME = 40  # characters of a mapping's name ("mapping:NAME" is stored as a dataset's format)


def load_mapping(path: str | Path) -> Mapping | TextMapping:
    """Read and check a mapping file (YAML, or JSON by its content).

    Raises:
        TraceError("bad_mapping") naming the file and the field at fault.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise TraceError("bad_mapping", f"cannot read the mapping file: {exc}", str(path)) from exc
    return parse_mapping(text, str(path))


def parse_mapping(text: str, where: str = "mapping") -> Mapping | TextMapping:
    """Check a mapping file's text (YAML, or JSON by its content); ``where`` names the file in errors and
    gives the mapping its name when it declares none.

    Raises:
        TraceError("bad_mapping") naming ``where`` and the field at fault.
    """
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else _yaml(text)
    except ValueError as exc:
        raise TraceError("bad_mapping", f"the mapping file is not valid YAML/JSON: {exc}", where) from exc
    except RecursionError:  # brackets nested thousands deep: no mapping looks like that
        raise TraceError("bad_mapping", "the mapping file nests too deep to be a mapping", where) from None
    return mapping_from_dict(data, where)


def _yaml(text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc


def mapping_from_dict(data: Any, where: str = "mapping") -> Mapping | TextMapping:
    """Check a mapping given as a dict (it may come from an untrusted upload: every value's type is
    checked, and its size is bounded by ``MAX_VALUES``); one with a ``text`` key is a text mapping
    (drafters/traces/mapping_text.py).

    Raises:
        TraceError("bad_mapping") with ``where`` and the field at fault.
    """

    def bad(field_name: str, why: str) -> TraceError:
        return TraceError("bad_mapping", f"{field_name}: {why}", f"{where} ({field_name})")

    if not isinstance(data, dict):
        raise bad("(file)", "a mapping is an object with the keys messages, role, roles, content, ...")
    if _values_beyond(data, MAX_VALUES):
        raise bad("(file)", f"more than {MAX_VALUES} values (a mapping has a few dozen; each use of a YAML "
                  "alias counts)")
    if "text" in data:
        if data.get("name") is not None and not (isinstance(data["name"], str) and 0 < len(data["name"]) <= MAX_NAME):
            raise bad("name", f"a non-empty string of at most {MAX_NAME} characters")
        return text_mapping_from_dict(data, where, data.get("name") or Path(where).stem[:MAX_NAME])
    unknown = {str(k)[:100] for k in data} - _KEYS
    if unknown:
        raise bad(min(unknown), f"unknown key; the keys are {', '.join(sorted(_KEYS))} (or name and text: a text "
                  "mapping)")
    for key in ("messages", "role", "roles"):
        if key not in data:
            raise bad(key, "required")
    for key in _TEXT_KEYS:
        if data.get(key) is not None and not (isinstance(data[key], str) and data[key]):
            raise bad(key, "a non-empty string")
    if len(data.get("name") or "") > MAX_NAME:
        raise bad("name", f"at most {MAX_NAME} characters (it names the format: mapping:NAME)")
    for key in ("messages", "tools", "id"):
        if data.get(key) is not None:
            try:
                jsonpath({}, data[key])
            except ValueError as exc:
                raise bad(key, str(exc)) from exc
    roles = data["roles"]
    if not isinstance(roles, dict) or not roles:
        raise bad("roles", "a map from the source's role values to system, user, assistant or tool")
    wrong = {k: v for k, v in roles.items() if not isinstance(v, str) or v not in (*_ROLES, "skip")}
    if wrong:
        raise bad("roles", f"{wrong} map to something other than {', '.join(_ROLES)} or skip (a record of another "
                  "kind, not read)")
    for key, allowed in _SUB_KEYS.items():
        sub = data.get(key)
        if sub is not None and (not isinstance(sub, dict) or not set(sub) <= allowed
                                or not all(isinstance(v, str) and v for v in sub.values())):
            raise bad(key, f"an object naming the keys {', '.join(sorted(allowed))} (strings)")
    _check_shape_keys(data, bad)
    defaults = Mapping("", "$", "", {})
    return Mapping(
        name=data.get("name") or Path(where).stem[:MAX_NAME], messages=data["messages"], role=data["role"],
        roles={str(k).lower() if isinstance(k, bool) else str(k): v for k, v in roles.items()}, content=data.get("content"), reasoning=data.get("reasoning"),
        tool_calls=data.get("tool_calls"), tool_call={**defaults.tool_call, **(data.get("tool_call") or {})},
        tool_result={**defaults.tool_result, **(data.get("tool_result") or {})}, tools=data.get("tools"),
        id=data.get("id"), records=data.get("records") or "each", lists=data.get("lists") or "$",
        group=data.get("group"), turns=data.get("turns"), nested=data.get("nested"),
        response=data.get("response"), observation=data.get("observation"), prompt=dict(data.get("prompt") or {}),
        unflatten=bool(data.get("unflatten", False)), items=data.get("items") or "messages",
        tree=dict(data.get("tree") or {}), adjacent_answers=data.get("adjacent_answers") or "separate",
        whole_prompts=bool(data.get("whole_prompts", False)))


def _check_shape_keys(data: dict, bad) -> None:
    """Check the keys that declare a shape other than message lists in records (``records``, ``group``,
    ``response``, ``prompt``, ``unflatten``, ``items``); ``bad(field, why)`` makes the ``bad_mapping`` error."""
    if data.get("records", "each") not in _RECORDS:
        raise bad("records", f"one of {', '.join(_RECORDS)}")
    if data.get("lists") and data.get("records") not in ("lists", "values"):
        raise bad("lists", "only with records: lists or values (it says where the object of lists of records, or of "
                  "records, is)")
    if data.get("nested") is not None and (not isinstance(data["nested"], str) or not data["nested"]
                                           or data.get("records") in ("messages", "file")):
        raise bad("nested", "a key (a run's child runs: child_runs), with records each, lists, entries or values")
    if data.get("id") and data.get("records") == "messages":  # it would be silently unread (a new user's trial)
        raise bad("id", "not read with records: messages (each record is one message, not a conversation); where a "
                  "value such as a session id changes to start a new conversation, declare group: PATH")
    if data.get("group") and data.get("records") != "messages" and not data.get("response"):
        raise bad("group", "only with records: messages (it says which message records form one conversation) or "
                  "with response (records of a prompt text and its response continuing one conversation)")
    if data.get("turns") and not data.get("response"):
        raise bad("turns", "only with response (records of a prompt text and its response, numbered as one "
                  "dialogue's turns)")
    for key in ("group", "turns", "response", "lists", *(f"prompt.{k}" for k in data.get("prompt") or {})):
        path = data.get("prompt", {}).get(key.split(".", 1)[1]) if key.startswith("prompt.") else data.get(key)
        if path is not None:
            try:
                jsonpath({}, path)
            except ValueError as exc:
                raise bad(key, str(exc)) from exc
    if data.get("adjacent_answers", "separate") not in ADJACENT_ANSWERS:
        raise bad("adjacent_answers", f"one of {', '.join(ADJACENT_ANSWERS)} (two assistant messages with nothing "
                  "between them: two calls, one call, or refused)")
    tree = data.get("tree")
    if tree is not None and not ({"parent", "children"} & set(tree)):
        raise bad("tree", "name the key linking nodes: parent (a node's parent id) and/or children (its children's ids)")
    if tree and tree.get("current") is not None:
        try:
            jsonpath({}, tree["current"])
        except ValueError as exc:
            raise bad("tree.current", str(exc)) from exc
    if tree and (data.get("response") or data.get("records") not in (None, "each", "file") or data.get("items")
                 not in (None, "messages")):
        raise bad("tree", "a tree is read from records of messages (records: each or file, no response, items: "
                  "messages)")
    for key in ("unflatten", "whole_prompts"):
        if not isinstance(data.get(key, False), bool):
            raise bad(key, "true or false")
    if data.get("items", "messages") not in _ITEMS:
        raise bad("items", f"one of {', '.join(_ITEMS)}")


def _values_beyond(data: Any, limit: int) -> bool:
    """True when ``data`` holds more than ``limit`` values, counting a shared (aliased) value each time it
    is reached: an iterative walk that stops at the limit, so a YAML alias bomb costs ``limit`` steps."""
    stack, seen = [data], 0
    while stack:
        value = stack.pop()
        seen += 1
        if seen > limit:
            return True
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False
