"""How well a target writes tool calls: greedy replay of held-out calls, and the counts of what it wrote.

``measure_tool_calls`` replays held-out calls greedily with an in-process transformers model. The tool
calls of each answer are found, parsed and checked against the tools the call offered by
``drafters.toolcalls``, the checks regeneration applies too: the renderer's own labelling of the template's
tool-call markup (for examples/chat_templates/chatml_tools.jinja, the Hermes / Qwen convention, one
``<tool_call>`` block per call), and JSON Schema validation of the arguments. It counts:

- the tool-call rate: the share of calls whose output holds at least one tool call, over the calls whose
  recorded answer was a tool call and over all calls;
- the share of emitted tool calls that parse (a name and arguments in the template's markup, one JSON value
  or key/value pairs as GLM writes them; a call cut before the end of its arguments does not) and that
  validate (the name is one of the offered tools, the arguments, pairs typed by its schema, satisfy its
  parameter schema).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from drafters.toolcalls import check_tool_calls, find_tool_calls
from drafters.traces.model import LLMCall, ToolCallPart


@dataclass
class CallOutcome:
    """What the target answered to one held-out call.

    ``recorded_tool_call``: the logged answer held a tool call; ``recorded_names``: its tool names;
    ``text``: the greedy output (special tokens kept, cut after the end-of-turn token); ``tool_calls``: the
    number of tool calls in it, ``parsed`` and ``valid`` how many of them parse and validate;
    ``problems``: ``"<code>: <detail>"`` of each invalid one (the codes of ``drafters.toolcalls``).
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


def outcome_of(call: LLMCall, text: str, renderer: Any) -> CallOutcome:
    """Find, parse and check the tool calls of ``text``, the target's answer to ``call``.

    renderer: the ``drafters.render.Renderer`` whose template rendered the prompt (its probed markup says
    how a tool call is written; ``drafters.toolcalls.find_tool_calls``)."""
    from drafters.render import tools_to_openai

    found = check_tool_calls(find_tool_calls(renderer, text), tools_to_openai(call.tools))
    names = recorded_tool_names(call)
    return CallOutcome(
        call_id=call.id,
        recorded_tool_call=bool(names),
        recorded_names=names,
        text=text,
        tool_calls=len(found),
        parsed=sum(c.parsed for c in found),
        valid=sum(c.error is None for c in found),
        first_name=found[0].name if found else None,
        problems=[f"{c.error}: {c.detail}" for c in found if c.error],
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
    would, and its markup finds the tool calls); max_new_tokens: the answer's token limit (a tool call it
    cuts before the end of its arguments does not parse); batch_size: see ``greedy_answers``. Calls the
    template cannot render raise ``RenderError``.
    """
    t0 = time.perf_counter()
    prompts = [renderer.render_prompt(call).prompt_ids for call in calls]
    texts = greedy_answers(model, tokenizer, prompts, max_new_tokens, batch_size)
    outcomes = [outcome_of(call, text, renderer) for call, text in zip(calls, texts)]
    return figures_of(outcomes, max_new_tokens, time.perf_counter() - t0)
