"""Tool calls written by the target: found in generated text, parsed and checked against the call's tools.

Regeneration and evaluation both ask the same questions of an answer the target wrote: did it call a tool,
does each call parse, does it name a tool the conversation defines, do its arguments validate against that
tool's JSON schema? The calls are the ones the renderer's labelling of generated text finds (the
template's tool-call markup learned by probe renders, ``Renderer.generated_calls``), so a call counted
here is exactly a call whose tokens the drafter is trained and measured on as ``tool_args``.

Arguments are read in the form the template writes them (the renderer's ``Dialect``): one JSON value, or
key/value pairs (GLM-4.5/4.6: ``<arg_key>k</arg_key>`` ``<arg_value>v</arg_value>``). A pair's value is
text: the template writes strings verbatim and other values as JSON, so ``3`` may be the string or the
number. It is typed by the tool's schema in ``check_tool_calls``: a property typed ``string`` keeps the
text, another typed property is parsed as JSON (or as a Python literal where the template writes values
so, Qwen3-Coder's ``True`` and ``['a', 'b']``); a property the schema does not type is JSON when it
parses, else the text.

A call that fails any check is kept and labelled with a stable code, never dropped:
``unparseable`` (the template's call opening is there but no name/arguments follow), ``invalid_json``
(the arguments are not one JSON value), ``invalid_pairs`` (key/value arguments that do not end with the
call's closing markup: cut short, or a key without a value; or a key written twice), ``unknown_tool`` (no
definition of that name in the call's tools), ``schema_mismatch`` (the arguments do not validate against
the tool's ``parameters`` schema, or a pair's value is not JSON where the schema types it other than
string).
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from drafters.render.markup import ParsedCall

__all__ = ["GeneratedToolCall", "ToolCallStats", "check_tool_calls", "find_tool_calls"]


@dataclass
class GeneratedToolCall:
    """One tool call in generated text. ``arguments_text`` is the arguments as written (for key/value
    arguments, from the first key to the last value); ``arguments`` the parsed value (None when it did not
    parse); ``pairs`` the key/value arguments' texts as written (None for JSON arguments), which
    ``check_tool_calls`` types by the tool's schema; ``error`` is None for a valid call, else one of the
    module's codes with ``detail`` saying why."""

    name: str | None
    arguments_text: str | None
    arguments: Any = None
    error: str | None = None
    detail: str = ""
    pairs: dict[str, str] | None = None
    python_values: bool = False  # the template writes some pair values as Python literals (Qwen3-Coder)

    @property
    def parsed(self) -> bool:
        """Whether a name and arguments were read (valid or not against the tools)."""
        return self.error not in ("unparseable", "invalid_json", "invalid_pairs")


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


def _call_opening(call_prefix: str) -> str:
    """The literal that opens a tool call in this template's markup (``<tool_call>`` of
    ``'<tool_call>\\n{"name": "'``): the prefix up to its first JSON brace or line break."""
    p = call_prefix.lstrip()
    cut = min((i for i in (p.find("{"), p.find("\n")) if i > 0), default=len(p))
    return p[:cut].strip() or p


def find_tool_calls(renderer, text: str) -> list[GeneratedToolCall]:
    """Tool calls in ``text`` (decoded generated tokens), in order, parsed but not checked against tools.

    renderer: the ``drafters.render.Renderer`` whose template generated the text (its probed dialect says
    how calls and their arguments are written). Openings of the template's call markup that are not
    followed by a name and arguments are returned as ``unparseable`` calls, so a broken call is counted,
    not lost.
    """
    dialect = renderer.dialect
    if not dialect.call_prefix or dialect.call_mid is None:
        return []
    pairs = dialect.arg_key_end is not None  # the markup parser reads key/value arguments exactly then
    python = "python" in dialect.value_forms.values()
    calls: list[GeneratedToolCall] = []
    for found in renderer.generated_calls(text):
        name = text[found.name.start:found.name.end]
        if pairs:
            calls.append(_parse_pairs(name, text, found, python))
        elif found.args:
            calls.append(_parse(name, text[found.args[0].start:found.args[0].end]))
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


def _parse_pairs(name: str, text: str, found: ParsedCall, python: bool) -> GeneratedToolCall:
    """A call with key/value arguments (``found.args``: key, value, key, value, ...). Values are typed
    without a schema until ``check_tool_calls``; ``python``: the template writes some values as Python
    literals, read as such where they are not JSON."""
    args = found.args
    arguments_text = text[args[0].start:args[-1].end] if args else ""
    if not found.closed or len(args) % 2:
        return GeneratedToolCall(name, arguments_text, error="invalid_pairs",
                                 detail="the key/value arguments are not followed by the call's closing markup "
                                        "(cut short, or a key without a value)")
    pairs: dict[str, str] = {}
    for key, value in zip(args[::2], args[1::2]):
        k = text[key.start:key.end]
        if k in pairs:
            return GeneratedToolCall(name, arguments_text, error="invalid_pairs",
                                     detail=f"key {k!r} is written twice")
        pairs[k] = text[value.start:value.end]
    arguments = {k: _typed_value(v, (), python)[0] for k, v in pairs.items()}
    return GeneratedToolCall(name, arguments_text, arguments=arguments, pairs=pairs, python_values=python)


def _typed_value(raw: str, types: Sequence[str], python: bool) -> tuple[Any, bool]:
    """(value, ok) of a key/value argument's text for a property of JSON Schema ``types`` (empty: the schema
    does not type it): the text itself when ``string`` is among them; else its JSON value (or, with
    ``python``, its Python literal: ``True``, ``['a', 'b']``, ``None``), and when it is neither, the text
    with ok False if the property is typed (the target wrote no value of that type)."""
    if "string" in types:
        return raw, True
    try:
        return json.loads(raw), True
    except ValueError:
        pass
    if python:
        try:
            return ast.literal_eval(raw.strip()), True
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    return raw, not types


def _property_types(schema: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """The JSON Schema ``type`` of property ``key`` of an object schema, as a tuple (empty when untyped)."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    prop = props.get(key) if isinstance(props, Mapping) else None
    t = prop.get("type") if isinstance(prop, Mapping) else None
    if isinstance(t, str):
        return (t,)
    return tuple(x for x in t if isinstance(x, str)) if isinstance(t, list) else ()


def _type_pairs(call: GeneratedToolCall, schema: Mapping[str, Any]) -> None:
    """Set ``call.arguments`` from its key/value texts typed by the tool's ``schema``; a value that is not
    JSON for a property typed other than string is a ``schema_mismatch``."""
    call.arguments = {}
    for key, raw in call.pairs.items():
        types = _property_types(schema, key)
        value, ok = _typed_value(raw, types, call.python_values)
        if not ok and call.error is None:  # the first such value is the one reported
            shown = types[0] if len(types) == 1 else list(types)
            call.error, call.detail = "schema_mismatch", f"{key}: {raw!r} is not JSON of type {shown!r}"
        call.arguments[key] = value


def check_tool_calls(calls: Sequence[GeneratedToolCall],
                     tools: Sequence[Mapping[str, Any]] | None) -> list[GeneratedToolCall]:
    """Validate parsed calls against the conversation's tools (OpenAI form: ``{"type": "function",
    "function": {"name", "parameters"}}``, as ``drafters.render.tools_to_openai`` gives). Key/value
    arguments are first typed by the tool's schema (module docstring). Sets ``error`` to ``unknown_tool``
    or ``schema_mismatch`` (JSON Schema, the draft the schema names, else 2020-12); calls that already
    failed keep their error. Returns the same list."""
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
        if call.pairs is not None:
            _type_pairs(call, schemas[call.name])
        if call.error is None:
            _validate(call, schemas[call.name])
    return calls


def _validate(call: GeneratedToolCall, schema: Mapping[str, Any]) -> None:
    """Set ``schema_mismatch`` on ``call`` when its arguments do not validate against ``schema``."""
    import jsonschema

    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        error = jsonschema.exceptions.best_match(cls(schema).iter_errors(call.arguments))
    except jsonschema.exceptions.SchemaError as e:  # the tool's own schema is broken: not the call's fault
        error, call.detail = None, f"tool schema not checkable: {e.message}"
    if error is not None:
        path = "/".join(str(p) for p in error.absolute_path)
        call.error, call.detail = "schema_mismatch", f"{path or '(arguments)'}: {error.message}"
