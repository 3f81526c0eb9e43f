"""What one reading of a file with a declared or inferred mapping keeps track of (drafters/traces/mapping.py):
where its problems go, the required keys found absent, and each optional key's use across the file, so that a
key matched nowhere while other keys hold data is reported rather than read as empty."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from drafters.traces.formats._call_io import call_shaped, nested_thread
from drafters.traces.formats._content import function_declarations, tool_defs
from drafters.traces.formats._record_shapes import holds_data
from drafters.traces.formats._spellings import get
from drafters.traces.formats.base import ProblemSink
from drafters.traces.json_paths import jsonpath
from drafters.traces.model import Source, ToolDef, compact_json

ABSENT = object()  # get()'s default: a mapped key that is not in the record


@dataclass
class PathUse:
    """One file's use of an optional mapped key: the objects it was looked for in, those where it matched,
    and the unmapped keys holding data on the others (where a misspelt key's content sits)."""

    name: str  # the mapping's field, e.g. "tool_calls"
    key: str  # its value, the key looked up
    holder: str  # what it is looked for in, e.g. "assistant message"
    looked: int = 0
    matched: int = 0
    unmapped: Counter[str] = field(default_factory=Counter)

    def observe(self, obj: dict, found: Any, mapped: set[str]) -> None:
        """Tally one lookup of ``key`` in ``obj`` (``found``: its value, or ``ABSENT``)."""
        self.looked += 1
        if found is not ABSENT:
            self.matched += 1
            return
        mapped = mapped | {self.key.split(".")[0]}
        self.unmapped.update(str(k) for k, v in obj.items() if k not in mapped and holds_data(v))

    def report(self, source: Source, problems: ProblemSink) -> None:
        """``mapping_field_never_matched`` when the key matched nowhere in the file while the objects held
        other, unmapped data: the content under them (calls, arguments) would be lost."""
        if self.matched or not self.unmapped:
            return
        keys = ", ".join(f"{k!r} x{n}" for k, n in self.unmapped.most_common(5))
        problems.error("mapping_field_never_matched",
                       f"the mapping's {self.name} key {self.key!r} is in none of the file's {self.looked} "
                       f"{self.holder}s, which hold unmapped data under {keys}: that content would be lost "
                       "(is the key misspelt?)", source, self.name)


@dataclass
class Reading:
    """What reading one file's records with a mapping needs: where problems go and what is tallied."""

    source: Source
    problems: ProblemSink
    tool_calls: PathUse | None
    arguments: PathUse
    missing: int = 0  # required mapped keys found absent so far

    def required(self, obj: dict, key: str, name: str, at: str) -> Any:
        """The value of a required mapped ``key`` in ``obj`` (``at`` is its JSONPath); when absent,
        ``mapping_field_missing`` is reported and None returned (the caller's conversation is dropped)."""
        value = get(obj, key, ABSENT)
        if value is ABSENT:
            self.missing += 1
            self.problems.error("mapping_field_missing", f"the mapping's {name} key {key!r} is not in this "
                                f"record ({at}.{key}): its content would be lost", self.source, f"{at}.{key}")
            return None
        return value

    def unread_calls(self, raw: dict, read: set[str], role: str, at: str) -> None:
        """Report tool calls a message keeps under a key outside ``read`` (``_call_io.call_shaped``; LobeChat keeps
        the call on the tool message that answers it): read without them they would be lost, so it is
        ``content_not_mapped`` and counts as a missing key (the caller's conversation is dropped). So is a conversation
        of its own kept inside the message (a sub-agent's messages on the tool message answering its call)."""
        key = next((str(k) for k, v in raw.items() if str(k) not in read and v not in (None, [], {})
                    and call_shaped(v)), None)
        nested = nested_thread(raw, read, at) if key is None else None
        if nested is not None:  # a sub-agent's thread kept inside the message that answers its call
            self.missing += 1
            self.problems.error("content_not_mapped", f"the message keeps a conversation of its own at {nested} (a "
                                "sub-agent's, say), which the mapping does not read: its calls would be lost",
                                self.source, nested)
            return
        if key is None:
            return
        self.missing += 1
        fix = (f"declare tool_calls: {key} and tool_call" if role == "assistant" else
               f"a mapping reads calls on the assistant's messages only, so a {role} message keeping them needs a "
               "reader of its own")
        self.problems.error("content_not_mapped", f"the message keeps tool calls under {key!r}, which the mapping "
                            f"does not read ({at}.{key}): {fix}", self.source, f"{at}.{key}")


def tools_at(record: Any, path: str, reading: Reading) -> list[ToolDef]:
    """The tool definitions at a mapping's ``tools`` path in ``record``; an entry with a schema but no definition the
    readers know (a name and parameters: OpenAI, Converse, Gemini or flat form) is ``tools_not_understood``, an
    error: the rendered context would lack the tool list the model saw. A hosted tool (``{"type": "web_search"}``,
    Gemini's ``{"googleSearch": {}}``) has no schema to keep and is not flagged."""
    found = jsonpath(record, path)
    if not found:
        return []
    raw = found[0][1]
    entries = raw if isinstance(raw, list) else [raw] if isinstance(raw, dict) else []
    unread = [e for e in entries if isinstance(e, dict) and not tool_defs([e]) and not function_declarations(e)
              and "type" not in e and any(isinstance(v, (dict, list)) and v for v in e.values())]
    if unread:
        reading.problems.error("tools_not_understood", f"the mapping's tools path {path} holds {len(unread)} "
                               f"entr{'y' if len(unread) == 1 else 'ies'} with a schema but no tool definition the "
                               "readers know (a name and parameters: OpenAI, Converse, Gemini or flat form), first "
                               f"{compact_json(unread[0])[:120]}: the tool list would be lost", reading.source, "tools")
    return tool_defs(raw)
