"""Tool calls written by the target: found in generated text, parsed and checked against the call's tools.

Regeneration and evaluation both ask the same questions of an answer the target wrote: did it call a tool,
does each call parse, does it name a tool the conversation defines, do its arguments validate against that
tool's JSON schema? The answer is located with the renderer's own labelling of generated text (the
template's tool-call markup learned by probe renders, ``Renderer.segment_completion``), so a call counted
here is exactly a call whose tokens the drafter is trained and measured on as ``tool_args``.

A call that fails any check is kept and labelled with a stable code, never dropped:
``unparseable`` (the template's call opening is there but no name/arguments follow), ``invalid_json``
(the arguments are not one JSON value), ``unknown_tool`` (no definition of that name in the call's
tools), ``schema_mismatch`` (the arguments do not validate against the tool's ``parameters`` schema).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from drafters.segments import Segment

__all__ = ["GeneratedToolCall", "ToolCallStats", "check_tool_calls", "find_tool_calls"]


@dataclass
class GeneratedToolCall:
    """One tool call in generated text. ``arguments`` is the parsed JSON (None when it did not parse);
    ``error`` is None for a valid call, else one of the module's codes with ``detail`` saying why."""

    name: str | None
    arguments_text: str | None
    arguments: Any = None
    error: str | None = None
    detail: str = ""

    @property
    def parsed(self) -> bool:
        """Whether a name and JSON arguments were read (valid or not against the tools)."""
        return self.error not in ("unparseable", "invalid_json")


@dataclass
class ToolCallStats:
    """Counts over many answers: ``answers``, answers with at least one tool call, tool calls, and the
    calls that failed a check by code."""

    answers: int = 0
    answers_with_calls: int = 0
    calls: int = 0
    failed: Counter = field(default_factory=Counter)

    def add(self, calls: Sequence[GeneratedToolCall]) -> None:
        self.answers += 1
        self.answers_with_calls += bool(calls)
        self.calls += len(calls)
        self.failed.update(c.error for c in calls if c.error)

    def to_dict(self) -> dict[str, Any]:
        valid = self.calls - sum(self.failed.values())
        return {"answers": self.answers, "answers_with_tool_calls": self.answers_with_calls,
                "tool_call_share": round(self.answers_with_calls / self.answers, 4) if self.answers else None,
                "tool_calls": self.calls, "tool_calls_valid": valid,
                "tool_calls_failed": dict(sorted(self.failed.items()))}


def _runs(labels: Sequence[int]) -> Iterable[tuple[int, int, int]]:
    """(start, end, label) of maximal runs of equal labels."""
    start = 0
    for i in range(1, len(labels) + 1):
        if i == len(labels) or labels[i] != labels[start]:
            yield start, i, labels[start]
            start = i


def _call_opening(call_prefix: str) -> str:
    """The literal that opens a tool call in this template's markup (``<tool_call>`` of
    ``'<tool_call>\\n{"name": "'``): the prefix up to its first JSON brace or line break."""
    p = call_prefix.lstrip()
    cut = min((i for i in (p.find("{"), p.find("\n")) if i > 0), default=len(p))
    return p[:cut].strip() or p


def find_tool_calls(renderer, text: str) -> list[GeneratedToolCall]:
    """Tool calls in ``text`` (decoded generated tokens), in order, parsed but not checked against tools.

    renderer: the ``drafters.render.Renderer`` whose template generated the text (its probed dialect says
    how calls are written). Openings of the template's call markup that are not followed by a name and
    arguments are returned as ``unparseable`` calls, so a broken call is counted, not lost.
    """
    dialect = renderer.dialect
    if not dialect.call_prefix or dialect.call_mid is None:
        return []
    labels = renderer.label_generated_text(text)
    calls: list[GeneratedToolCall] = []
    name: str | None = None
    for start, end, label in _runs(labels):
        if label == Segment.TOOL_NAME:
            name = text[start:end]
        elif label == Segment.TOOL_ARGS and name is not None:
            calls.append(_parse(name, text[start:end]))
            name = None
    opening = _call_opening(dialect.call_prefix)
    for _ in range(max(0, text.count(opening) - len(calls))):
        calls.append(GeneratedToolCall(None, None, error="unparseable",
                                       detail=f"'{opening}' without a name and arguments the template writes"))
    return calls


def _parse(name: str, arguments_text: str) -> GeneratedToolCall:
    try:
        value = json.loads(arguments_text)
    except ValueError as e:
        return GeneratedToolCall(name, arguments_text, error="invalid_json", detail=str(e))
    if isinstance(value, str):  # templates that pass arguments as a JSON string (OpenAI's wire form)
        try:
            value = json.loads(value)
        except ValueError:
            pass
    return GeneratedToolCall(name, arguments_text, arguments=value)


def check_tool_calls(calls: Sequence[GeneratedToolCall],
                     tools: Sequence[Mapping[str, Any]] | None) -> list[GeneratedToolCall]:
    """Validate parsed calls against the conversation's tools (OpenAI form: ``{"type": "function",
    "function": {"name", "parameters"}}``, as ``drafters.render.tools_to_openai`` gives). Sets ``error``
    to ``unknown_tool`` or ``schema_mismatch`` (JSON Schema, the draft the schema names, else 2020-12);
    calls that already failed keep their error. Returns the same list."""
    import jsonschema

    schemas = {}
    for tool in tools or ():
        fn = tool.get("function", tool)
        schemas[fn.get("name")] = fn.get("parameters") or {"type": "object"}
    for call in calls:
        if call.error:
            continue
        if call.name not in schemas:
            call.error, call.detail = "unknown_tool", f"no tool named {call.name!r} in the call's tools"
            continue
        schema = schemas[call.name]
        try:
            cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
            error = jsonschema.exceptions.best_match(cls(schema).iter_errors(call.arguments))
        except jsonschema.exceptions.SchemaError as e:  # the tool's own schema is broken: not the call's fault
            error, call.detail = None, f"tool schema not checkable: {e.message}"
        if error is not None:
            path = "/".join(str(p) for p in error.absolute_path)
            call.error, call.detail = "schema_mismatch", f"{path or '(arguments)'}: {error.message}"
    return calls
