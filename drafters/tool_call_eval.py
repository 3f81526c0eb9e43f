"""How well a target writes tool calls: greedy replay of held-out calls, parsing and schema validation.

A tool call is what the tool-aware ChatML template (examples/chat_templates/chatml_tools.jinja, the Hermes /
Qwen convention) writes for an assistant tool call, one block per call:

    <tool_call>
    {"name": NAME, "arguments": {...}}
    </tool_call>

``parse_tool_calls`` finds every block in generated text (an opening marker without its closing marker is a
tool call that does not parse), ``check_tool_call`` validates one against the tool definitions the call
offered (the name is one of them, the arguments satisfy its JSON schema, ``schema_problems``), and
``measure_tool_calls`` replays held-out calls greedily with an in-process transformers model and counts:

- the tool-call rate: the share of calls whose output holds at least one tool call, over the calls whose
  recorded answer was a tool call and over all calls;
- the share of emitted tool calls that parse (a JSON object with a string ``name`` and an object
  ``arguments``) and that validate against the conversation's tool schemas.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from drafters.traces.model import LLMCall, ToolCallPart, ToolDef

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"

#: JSON Schema ``type`` names and the Python values that satisfy them (bool is not a number in JSON).
_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    ),
}


@dataclass
class ParsedToolCall:
    """One tool-call block of generated text.

    ``raw``: the text between the markers (to the end of the text when unterminated); ``name`` and
    ``arguments``: the parsed values when the block parses, else None; ``error``: why it does not parse
    (None when it does).
    """

    raw: str
    name: str | None
    arguments: dict[str, Any] | None
    error: str | None

    @property
    def parsed(self) -> bool:
        return self.error is None


def parse_tool_calls(text: str) -> list[ParsedToolCall]:
    """Every ``<tool_call>...</tool_call>`` block of ``text``, in order.

    A block parses when its content (whitespace stripped) is a JSON object with a string ``name`` and an
    object ``arguments``; a block whose closing marker never came (the end of turn or the token limit cut
    it) is returned with ``error="unterminated"``. Text outside the blocks is ignored.
    """
    out: list[ParsedToolCall] = []
    pos = text.find(TOOL_CALL_OPEN)
    while pos >= 0:
        start = pos + len(TOOL_CALL_OPEN)
        end = text.find(TOOL_CALL_CLOSE, start)
        if end < 0:
            out.append(ParsedToolCall(text[start:], None, None, "unterminated"))
            break
        out.append(_parse_block(text[start:end]))
        pos = text.find(TOOL_CALL_OPEN, end + len(TOOL_CALL_CLOSE))
    return out


def _parse_block(raw: str) -> ParsedToolCall:
    try:
        value = json.loads(raw.strip())
    except ValueError as e:
        return ParsedToolCall(raw, None, None, f"not JSON: {e}")
    if not isinstance(value, dict):
        return ParsedToolCall(raw, None, None, f"not a JSON object but {type(value).__name__}")
    name, args = value.get("name"), value.get("arguments")
    if not isinstance(name, str):
        return ParsedToolCall(raw, None, None, "no string 'name'")
    if not isinstance(args, dict):
        return ParsedToolCall(raw, name, None, "'arguments' is not a JSON object")
    return ParsedToolCall(raw, name, args, None)


def schema_problems(value: Any, schema: Any, where: str = "arguments") -> list[str]:
    """Where ``value`` breaks the JSON ``schema`` (empty list: it validates).

    Checks the keywords tool definitions use: ``type`` (a name or a list of names), ``enum``, ``const``,
    ``properties``, ``required``, ``additionalProperties`` (false or a schema) and ``items`` (a schema).
    Other keywords (``format``, ``pattern``, ``minimum``, ``$ref``...) are not checked: a value can only be
    judged valid too often, never wrongly invalid. A schema that is not an object accepts everything.
    """
    if not isinstance(schema, dict):
        return []
    problems: list[str] = []
    types = schema.get("type")
    names = [types] if isinstance(types, str) else list(types) if isinstance(types, list) else []
    known = [t for t in names if t in _JSON_TYPES]
    if known and not any(_JSON_TYPES[t](value) for t in known):
        return [f"{where}: expected {'/'.join(known)}, got {type(value).__name__}"]
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        problems.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        problems.append(f"{where}: {value!r} is not {schema['const']!r}")
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = schema.get("required") if isinstance(schema.get("required"), list) else []
        problems += [f"{where}: missing required {k!r}" for k in required if k not in value]
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                problems += schema_problems(v, props[k], f"{where}.{k}")
            elif extra is False:
                problems.append(f"{where}: unexpected property {k!r}")
            elif isinstance(extra, dict):
                problems += schema_problems(v, extra, f"{where}.{k}")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(value):
            problems += schema_problems(v, schema["items"], f"{where}[{i}]")
    return problems


def check_tool_call(call: ParsedToolCall, tools: Sequence[ToolDef]) -> list[str]:
    """Why the tool call is not valid for the offered ``tools`` (empty list: it parses, names one of them,
    and its arguments satisfy that tool's parameter schema, see ``schema_problems``)."""
    if not call.parsed:
        return [f"does not parse: {call.error}"]
    by_name = {t.name: t for t in tools}
    if call.name not in by_name:
        return [f"unknown tool {call.name!r} (offered: {sorted(by_name)})"]
    return schema_problems(call.arguments, by_name[call.name].parameters)


# ------------------------------------------------------------------------------------------------ replay


@dataclass
class CallOutcome:
    """What the target answered to one held-out call.

    ``recorded_tool_call``: the logged answer held a tool call; ``recorded_names``: its tool names;
    ``text``: the greedy output (special tokens kept, cut after the end-of-turn token); ``tool_calls``: the
    number of blocks in it, ``parsed`` and ``valid`` how many of them parse and validate;
    ``problems``: the first problem of each invalid block.
    """

    call_id: str
    recorded_tool_call: bool
    recorded_names: list[str]
    text: str
    tool_calls: int
    parsed: int
    valid: int
    first_name: str | None
    problems: list[str] = field(default_factory=list)


@dataclass
class ToolCallFigures:
    """Counts over replayed calls; the rates are fractions in [0, 1] (None when there is nothing to divide).

    ``rate_recorded``: share of the calls whose recorded answer was a tool call that got at least one tool
    call; ``rate_all``: the same share over all calls; ``text_kept``: share of the calls whose recorded
    answer was text that got no tool call; ``parse_share`` / ``valid_share``: share of the emitted tool calls
    that parse / validate; ``name_match``: share of recorded-tool-call calls whose first emitted tool name is
    the recorded first name. ``seconds``: wall time of the replay.
    """

    calls: int
    recorded_tool_calls: int
    calls_with_tool_call: int
    recorded_calls_with_tool_call: int
    text_calls_without_tool_call: int
    tool_calls: int
    parsed: int
    valid: int
    name_matches: int
    max_new_tokens: int
    seconds: float
    outcomes: list[CallOutcome] = field(default_factory=list, repr=False)

    @staticmethod
    def _share(n: int, d: int) -> float | None:
        return None if d == 0 else n / d

    @property
    def rate_recorded(self) -> float | None:
        return self._share(self.recorded_calls_with_tool_call, self.recorded_tool_calls)

    @property
    def rate_all(self) -> float | None:
        return self._share(self.calls_with_tool_call, self.calls)

    @property
    def text_kept(self) -> float | None:
        return self._share(self.text_calls_without_tool_call, self.calls - self.recorded_tool_calls)

    @property
    def parse_share(self) -> float | None:
        return self._share(self.parsed, self.tool_calls)

    @property
    def valid_share(self) -> float | None:
        return self._share(self.valid, self.tool_calls)

    @property
    def name_match(self) -> float | None:
        return self._share(self.name_matches, self.recorded_tool_calls)

    def to_dict(self, outcomes: bool = False) -> dict[str, Any]:
        """JSON-able counts and rates (per-call outcomes only when asked)."""
        d = {k: v for k, v in asdict(self).items() if k != "outcomes"}
        d.update(
            rate_recorded=self.rate_recorded,
            rate_all=self.rate_all,
            text_kept=self.text_kept,
            parse_share=self.parse_share,
            valid_share=self.valid_share,
            name_match=self.name_match,
        )
        if outcomes:
            d["outcomes"] = [asdict(o) for o in self.outcomes]
        return d

    def summary(self) -> str:
        """The figures as a few human lines."""

        def pct(x: float | None) -> str:
            return "n/a" if x is None else f"{100 * x:.1f}%"

        lines = [
            (
                f"held-out calls replayed: {self.calls} ({self.recorded_tool_calls} recorded tool calls), greedy, "
                f"max {self.max_new_tokens} new tokens, {self.seconds:.0f} s"
            ),
            (
                f"tool-call rate on recorded tool calls: {pct(self.rate_recorded)} "
                f"({self.recorded_calls_with_tool_call}/{self.recorded_tool_calls}); same first tool name: "
                f"{pct(self.name_match)}"
            ),
            (
                f"tool-call rate on all calls: {pct(self.rate_all)} ({self.calls_with_tool_call}/{self.calls}); "
                f"text answers kept as text: {pct(self.text_kept)}"
            ),
            (
                f"emitted tool calls: {self.tool_calls}; parse: {pct(self.parse_share)} ({self.parsed}); "
                f"validate against the tool schemas: {pct(self.valid_share)} ({self.valid})"
            ),
        ]
        return "\n".join(lines)


def recorded_tool_names(call: LLMCall) -> list[str]:
    """The tool names of the call's logged answer (empty when it answered with text only)."""
    return [p.name for p in call.completion.parts if isinstance(p, ToolCallPart)]


def outcome_of(call: LLMCall, text: str) -> CallOutcome:
    """Parse and validate the tool calls of ``text``, the target's answer to ``call``."""
    blocks = parse_tool_calls(text)
    checks = [check_tool_call(b, call.tools) for b in blocks]
    names = recorded_tool_names(call)
    return CallOutcome(
        call_id=call.id,
        recorded_tool_call=bool(names),
        recorded_names=names,
        text=text,
        tool_calls=len(blocks),
        parsed=sum(b.parsed for b in blocks),
        valid=sum(not c for c in checks),
        first_name=blocks[0].name if blocks else None,
        problems=[c[0] for c in checks if c],
    )


def figures_of(outcomes: Sequence[CallOutcome], max_new_tokens: int, seconds: float) -> ToolCallFigures:
    """Aggregate per-call outcomes into ``ToolCallFigures``."""
    rec = [o for o in outcomes if o.recorded_tool_call]
    return ToolCallFigures(
        calls=len(outcomes),
        recorded_tool_calls=len(rec),
        calls_with_tool_call=sum(o.tool_calls > 0 for o in outcomes),
        recorded_calls_with_tool_call=sum(o.tool_calls > 0 for o in rec),
        text_calls_without_tool_call=sum(o.tool_calls == 0 for o in outcomes if not o.recorded_tool_call),
        tool_calls=sum(o.tool_calls for o in outcomes),
        parsed=sum(o.parsed for o in outcomes),
        valid=sum(o.valid for o in outcomes),
        name_matches=sum(o.first_name == o.recorded_names[0] for o in rec),
        max_new_tokens=max_new_tokens,
        seconds=seconds,
        outcomes=list(outcomes),
    )


def greedy_answers(
    model: Any, tokenizer: Any, prompts: Sequence[list[int]], max_new_tokens: int, batch_size: int = 8
) -> list[str]:
    """Greedy continuations of ``prompts`` (token id lists) by a transformers causal LM, in input order,
    decoded with special tokens kept and cut after the tokenizer's end-of-turn (eos) token.

    Prompts of similar length are batched (left padding with an attention mask, positions from the mask as
    ``generate`` computes them): several times faster on CPU than one at a time. A padded batch sums in a
    different order than a lone prompt, so a near tie can break the other way; ``batch_size=1`` replays
    each prompt alone.
    """
    import torch

    eos = tokenizer.eos_token_id
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    out: list[str] = [""] * len(prompts)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        width = max(len(prompts[i]) for i in chunk)
        ids = torch.full((len(chunk), width), eos, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for row, i in enumerate(chunk):
            ids[row, width - len(prompts[i]) :] = torch.tensor(prompts[i])
            mask[row, width - len(prompts[i]) :] = 1
        with torch.no_grad():
            gen = model.generate(
                ids.to(model.device),
                attention_mask=mask.to(model.device),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                eos_token_id=eos,
                pad_token_id=eos,
            )
        for row, i in enumerate(chunk):
            new = gen[row, width:].tolist()
            if eos in new:
                new = new[: new.index(eos) + 1]
            out[i] = tokenizer.decode(new, skip_special_tokens=False)
    return out


def measure_tool_calls(
    model: Any,
    tokenizer: Any,
    renderer: Any,
    calls: Sequence[LLMCall],
    *,
    max_new_tokens: int = 128,
    batch_size: int = 8,
) -> ToolCallFigures:
    """Replay ``calls`` greedily and count tool calls (see the module docstring).

    model: a transformers causal LM (the target's ``model``); renderer: a ``drafters.render.Renderer``
    whose template is the one the target serves with (it renders each call's prompt, as the serving engine
    would); max_new_tokens: the answer's token limit (a tool call cut by it counts as one that does not
    parse); batch_size: see ``greedy_answers``. Calls the template cannot render raise ``RenderError``.
    """
    t0 = time.perf_counter()
    prompts = [renderer.render_prompt(call).prompt_ids for call in calls]
    texts = greedy_answers(model, tokenizer, prompts, max_new_tokens, batch_size)
    outcomes = [outcome_of(call, text) for call, text in zip(calls, texts)]
    return figures_of(outcomes, max_new_tokens, time.perf_counter() - t0)
