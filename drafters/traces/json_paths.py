"""The JSONPath subset a declared mapping uses (docs/traces.md, "Declared mappings"), and the two value
transforms its paths see through: dotted keys nested (``unflatten``, flattened span attributes) and JSON
held in a string decoded (``decoded``, an envelope's ``payload``). Pure functions over parsed JSON.

Paths: ``$``, ``.key``, ``['key']`` / ``["key"]``, ``[N]``, ``[*]``.
"""

from __future__ import annotations

import re
from typing import Any

from drafters.traces.formats import _reading

# A dotted step is any key without a dot or a bracket: the concrete paths ``jsonpath`` returns write every key
# that way (``$.step_wise_dict.0``, ``$.component 0``), and they are read back (``holder_of``).
_STEP = re.compile(r"\.([^.\[\]'\"]+)|\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]|\[(\d+)\]|\[\*\]")


def jsonpath(value: Any, path: str, raw: bool = False) -> list[tuple[str, Any]]:
    """``(concrete path, value)`` for every match of ``path`` (the subset in the module docstring); a value that
    is JSON held in a string is decoded unless ``raw`` (the text as written: a model's answer that is JSON).

    Raises ValueError when ``path`` is not in that subset."""
    current: list[tuple[str, Any]] = [("$", value)]
    for m in _steps(path):
        nxt: list[tuple[str, Any]] = []
        key = m.group(1) or m.group(2) or m.group(3)
        for where, v in current:
            v = decoded(v)
            if key is not None and isinstance(v, dict) and key in v:
                nxt.append((f"{where}.{key}", v[key]))
            elif m.group(4) is not None and isinstance(v, list) and int(m.group(4)) < len(v):
                nxt.append((f"{where}[{m.group(4)}]", v[int(m.group(4))]))
            elif m.group(0) == "[*]" and isinstance(v, list):
                nxt.extend((f"{where}[{i}]", item) for i, item in enumerate(v))
        current = nxt
    return current if raw else [(where, decoded(v)) for where, v in current]


def path_steps(path: str) -> list[str]:
    """The steps of a JSONPath of the module's subset as written: ``$.a['b c'][0]`` -> ``['.a', "['b c']",
    '[0]']``. Raises ValueError when ``path`` is not in that subset."""
    return [m.group(0) for m in _steps(path)]


def _steps(path: str) -> list[re.Match[str]]:
    if not path.startswith("$"):
        raise ValueError(f"a JSONPath starts with '$': {path!r}")
    steps, pos = [], 1
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None:
            raise ValueError(f"unsupported JSONPath step at {path[pos:]!r} in {path!r}")
        steps.append(m)
        pos = m.end()
    return steps


def unflatten(value: Any) -> Any:
    """Dotted keys nested: ``{"llm.input_messages.0.message.role": "user"}`` -> ``{"llm": {"input_messages":
    [{"message": {"role": "user"}}]}}`` (an object whose keys are all indices becomes a list, in index order).
    Values without dotted keys are returned as they are; nested objects are unflattened too."""
    if isinstance(value, list):
        return [unflatten(v) for v in value]
    if not isinstance(value, dict):
        return value
    if not any(isinstance(k, str) and "." in k for k in value):
        return {k: unflatten(v) for k, v in value.items()}
    tree: dict[str, Any] = {}
    for key, v in value.items():
        node, steps = tree, str(key).split(".")
        for step in steps[:-1]:
            nxt = node.get(step)
            if not isinstance(nxt, dict):
                nxt = node[step] = {} if nxt is None else {"": nxt}
            node = nxt
        node[steps[-1]] = unflatten(v)
    return _listify(tree)


def _listify(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    node = {k: _listify(v) for k, v in node.items()}
    if node and all(k.isdigit() for k in node):
        return [node[k] for k in sorted(node, key=int)]
    return node


def decoded(value: Any) -> Any:
    """A string holding a JSON object or array (an envelope's ``payload``, a message list stored as text),
    decoded (blank lines before it too: a proxy's keep-alive padding, as ``decoded_tree`` reads it); any other
    value as it is."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "[") and value.rstrip()[-1:] in ("}", "]"):
        try:
            return _reading.loads(value)
        except ValueError:
            return value
    return value


def child_path(path: str, key: str) -> str:
    """``path`` one key down: ``$.key``, or ``$['key']`` for a key that is not a plain name (a digit first, a
    space, a dot: ``$['0']``, ``$['component 0']``; ``$["it's"]`` for a key holding a quote)."""
    if (key[:1].isalpha() or key[:1] == "_") and key.replace("_", "a").replace("-", "a").isalnum():
        return f"{path}.{key}"
    return f'{path}["{key}"]' if "'" in key else f"{path}['{key}']"


def holder_of(value: Any, where: str) -> dict | None:
    """The object holding what the concrete JSONPath ``where`` names (``$.messages`` -> ``value`` itself, as
    ``jsonpath`` writes paths); None for the document itself or an item of a list."""
    m = re.match(r"^(.*?)(?:\.[^.\[\]'\"]+|\['[^']*'\]|\[\"[^\"]*\"\])$", where)
    if m is None:
        return None
    found = jsonpath(value, m.group(1) or "$")
    return found[0][1] if found and isinstance(found[0][1], dict) else None


def root_key(path: str) -> str:
    """The record key a JSONPath starts with (``$.a.b`` -> ``a``, ``$['a b'][0]`` -> ``a b``)."""
    m = re.match(r"^\$(?:\.([^.\[]+)|\['([^']*)'\]|\[\"([^\"]*)\"\])", path)
    return (m.group(1) or m.group(2) or m.group(3)) if m else ""
