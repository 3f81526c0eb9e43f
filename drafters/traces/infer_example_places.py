"""Where an example reply sits in a file's first records (``infer_example``): the places holding it (``Hit``:
a record and the keys and list indexes down to the string), their JSONPaths, and what a learner returns
(``Learned``). Standard library only."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from drafters.traces.json_paths import child_path


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


def normal(text: str) -> str:
    """``text`` with its whitespace collapsed to single spaces (how examples and texts are compared)."""
    return " ".join(text.split())


def holding(value: Any, want: str, steps: tuple[str | int, ...]) -> Iterator[tuple[str | int, ...]]:
    """The steps down to every string under ``value`` holding ``want`` (whitespace collapsed; ``""``: every string)."""
    if len(steps) > 12:
        return
    if isinstance(value, str):
        if want in normal(value):
            yield steps
    elif isinstance(value, dict):
        for key, v in value.items():
            yield from holding(v, want, (*steps, str(key)))
    elif isinstance(value, list):
        for i, v in enumerate(value[:2000]):
            yield from holding(v, want, (*steps, i))


def path_of(hit: Hit, upto: int | None = None, star: bool = False, star_at: int | None = None) -> str:
    """The JSONPath of ``hit``'s first ``upto`` steps (every list index ``[*]`` with ``star``; the index at step
    ``star_at`` only: a list of sampled answers)."""
    out = "$"
    for k, step in enumerate(hit.steps[:upto]):
        out = f"{out}[{'*' if star or k == star_at else step}]" if isinstance(step, int) else child_path(out, step)
    return out


def value_at(value: Any, steps: tuple[str | int, ...]) -> Any:
    """The value at ``steps`` (keys and list indexes) under ``value``. Raises KeyError / IndexError / TypeError
    where they lead nowhere."""
    for step in steps:
        value = value[step]
    return value
