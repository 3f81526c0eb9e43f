"""The regeneration run: every call's answer written by the target, stored, then turned into training rows.

On-policy regeneration (docs/dspark.md section 3.3, done turn by turn inside agent transcripts): for every
training LLM call the target writes the assistant turn from the exact rendered context (system prompt,
tools, recorded history and tool results; tools cannot be re-run, so later turns keep the recorded
history). The training row is then the recorded context's token ids followed by the target's own tokens,
so the drafter's cross-entropy target and the target's distribution agree (docs/dspark.md section 2.1).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from drafters.periodic import every
from drafters.regeneration.backends import Backend, GenerationCancelled, Request
from drafters.regeneration.store import Regeneration, RegenerationStore, Sampling, answer_key, call_seed
from drafters.toolcalls import ToolCallStats, check_tool_calls, find_tool_calls

__all__ = ["RegenerationReport", "cut_at_stop", "regenerate", "regenerated_rows"]

#: Least seconds between two progress reports from inside one batch (a job stores each as an event).
STEP_REPORT_S = 5.0


@dataclass
class RegenerationReport:
    """What a regeneration run did: calls asked for, answers reused from the store and newly generated,
    generated tokens (new ones), answers cut at ``max_tokens`` (kept, marked truncated), engine seconds and
    rate, and the tool calls the target wrote (``drafters.toolcalls``: share of answers with a call, calls
    that fail to parse or validate, by code)."""

    engine: str
    sampling: dict[str, Any]
    calls: int = 0
    reused: int = 0
    generated: int = 0
    tokens: int = 0
    truncated: int = 0
    seconds: float = 0.0
    cancelled: bool = False
    tool_calls: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tokens_per_s"] = round(self.tokens / self.seconds, 1) if self.seconds > 0 else None
        d["seconds"] = round(self.seconds, 2)
        return d


def cut_at_stop(token_ids: Sequence[int], stop_ids: Sequence[int], max_tokens: int) -> tuple[list[int], bool]:
    """The answer up to and including its first stop token, and whether it was truncated (no stop token
    within ``max_tokens``)."""
    stops = set(stop_ids)
    for i, t in enumerate(token_ids[:max_tokens]):
        if t in stops:
            return list(token_ids[: i + 1]), False
    return list(token_ids[:max_tokens]), True


def regenerate(prompts: Sequence[Any], backend: Backend, store: RegenerationStore, *, target_id: str,
               sampling: Sampling, stop_ids: Sequence[int],
               progress: Callable[[float, float | None, str], None] | None = None,
               cancelled: Callable[[], bool] | None = None) -> tuple[dict[str, Regeneration], RegenerationReport]:
    """Regenerate the answer of every prompt (``RenderedPrompt``-like: ``call_id``, ``prompt_ids``).

    Answers already in ``store`` (same target, prompt and sampling) are reused; the others are generated
    ``backend.batch_size`` at a time and stored as each batch returns, so a killed run resumes where it
    stopped. ``progress(fraction, eta_s, message)``: the fraction of the calls done, the seconds left (None
    until they can be estimated) and a line with the rate (tokens/s); it is called after every batch and
    every ``STEP_REPORT_S`` seconds inside one: from the decode steps of a backend that decodes in lock-step
    (``lock_step``: hf), from a clock for the others (their steps estimated at the pace measured). The ETA is
    recomputed each time from the seconds per decode step and how far answers overran their recorded
    lengths, both measured as the run proceeds (``Pace``). ``cancelled()`` is checked
    between batches and, by backends that can, during one (the report then says ``cancelled``; a batch cut short
    is not stored). Returns (call_id -> Regeneration, report).
    Errors of the backend (TracedraftError naming the endpoint and the call) propagate: what was stored stays.
    """
    report = RegenerationReport(engine=backend.name, sampling=asdict(sampling), calls=len(prompts))
    done: dict[str, Regeneration] = {}
    pending: list[tuple[Any, str]] = []
    for p in prompts:
        key = answer_key(target_id, p.prompt_ids, sampling)
        found = store.get(key)
        if found is not None:
            done[p.call_id] = found
            report.reused += 1
        else:
            pending.append((p, key))
    pending.sort(key=lambda pk: _batch_order(pk[0], sampling.max_tokens))
    batches = [pending[b: b + backend.batch_size] for b in range(0, len(pending), backend.batch_size)]
    pace = Pace([max(_batch_order(p, sampling.max_tokens)[0] or sampling.max_tokens for p, _ in batch)
                 for batch in batches], sampling.max_tokens)
    start = time.perf_counter()
    for b, batch in enumerate(batches):
        if cancelled is not None and cancelled():
            report.cancelled = True
            break
        requests = [Request(p.call_id, list(p.prompt_ids), call_seed(sampling.seed, p.prompt_ids)) for p, _ in batch]
        t0 = time.perf_counter()
        flight = _InFlight(progress, report, pace, b, len(batch), t0)
        try:
            # a backend that decodes in lock-step reports its steps; for the others a clock reports the batch
            clock = flight.report if progress is not None and not getattr(backend, "lock_step", False) else None
            with every(STEP_REPORT_S, clock):
                outputs = backend.generate(requests, sampling, cancelled=cancelled, on_step=flight.on_step)
        except GenerationCancelled:  # a partial batch: nothing of it is stored, a resume writes it whole
            report.cancelled = True
            break
        seconds = time.perf_counter() - t0
        for (p, key), raw in zip(batch, outputs, strict=True):
            ids, truncated = cut_at_stop(raw, stop_ids, sampling.max_tokens)
            answer = Regeneration(key, ids, truncated, backend.name, seconds / len(batch))
            store.put(answer)
            done[p.call_id] = answer
            report.generated += 1
            report.tokens += len(ids)
        pace.finish(b, max(min(len(raw), sampling.max_tokens) for raw in outputs), seconds)
        report.seconds = time.perf_counter() - start
        if progress is not None:
            progress(*_progress(report, 0.0, pace.left_after(b)))
    report.truncated = sum(a.truncated for a in done.values())
    return done, report


def _batch_order(prompt: Any, max_tokens: int) -> tuple[int, int]:
    """Sort key of a prompt in the queue: its recorded answer's length (capped at ``max_tokens``; 0 when
    unknown), then its own length. A batch decodes until its longest answer ends, and on a CPU a decode step
    costs several times a prefilled token, so answers of similar length go together (short tool calls
    are not held back by long texts); prompt length comes second, for little padding."""
    recorded = len(getattr(prompt, "completion_ids", None) or ())
    return min(recorded, max_tokens), len(prompt.prompt_ids)


@dataclass
class Pace:
    """The run's work in decode steps, measured as it proceeds. Batch b is expected to decode
    ``expected[b]`` steps (its longest recorded answer, or ``max_tokens`` when unknown); finished batches
    give the seconds per step and how far answers overran what was recorded (``overrun``), and both
    rescale the estimate of what is left, so the ETA follows a machine that slows down and answers that
    run longer than recorded."""

    expected: list[int]
    max_tokens: int
    steps: int = 0  # decode steps of the finished batches (their longest answer)
    expected_done: int = 0
    seconds: float = 0.0

    def finish(self, b: int, steps: int, seconds: float) -> None:
        self.steps += steps
        self.expected_done += self.expected[b]
        self.seconds += seconds

    @property
    def overrun(self) -> float:
        """Decode steps per recorded step of the finished batches (1 before any)."""
        return self.steps / self.expected_done if self.expected_done else 1.0

    def current(self, b: int, tokens: int) -> float:
        """Steps batch b is now expected to take, ``tokens`` decoded: its recorded length times the overrun,
        at least one step more than decoded, at most ``max_tokens``."""
        return min(float(self.max_tokens), max(self.expected[b] * self.overrun, tokens + 1.0))

    def eta(self, b: int, tokens: float, elapsed: float) -> float | None:
        """Seconds left with batch b in flight (``tokens`` decoded in ``elapsed`` s): its rest and every later
        batch, at the seconds per step measured so far (of the batch in flight alone before one finishes)."""
        step_s = self.seconds / self.steps if self.steps else (elapsed / tokens if tokens else None)
        if step_s is None:
            return None
        return step_s * (max(0.0, self.current(b, int(tokens)) - tokens) + sum(self.expected[b + 1:]) * self.overrun)

    def left_after(self, b: int) -> float:
        """Seconds left once batch b has finished: every later batch at the measured pace."""
        return self.seconds / max(1, self.steps) * sum(self.expected[b + 1:]) * self.overrun


class _InFlight:
    """The batch in flight: ``on_step(tokens)`` from a lock-step backend (reported every ``STEP_REPORT_S``),
    ``report()`` from a clock for the others (tokens then estimated from the seconds per step so far)."""

    def __init__(self, progress, report: RegenerationReport, pace: Pace, b: int, rows: int, started: float):
        self.progress, self.run, self.pace, self.b, self.rows, self.started = progress, report, pace, b, rows, started
        self.tokens: int | None = None
        self.last = time.perf_counter()

    def on_step(self, tokens: int) -> None:
        self.tokens = tokens
        now = time.perf_counter()
        if self.progress is not None and now - self.last >= STEP_REPORT_S:
            self.last = now
            self.report()

    def report(self) -> None:
        elapsed = time.perf_counter() - self.started
        tokens: float | None = self.tokens
        if tokens is None and self.pace.steps:
            tokens = elapsed / (self.pace.seconds / self.pace.steps)  # estimated from the measured pace
        expected = self.pace.current(self.b, int(tokens or 0))
        share = min(0.95, (tokens or 0) / expected)
        at = f"at token {int(tokens)}" if self.tokens is not None else (
            f"about token {int(tokens)}" if tokens is not None else f"running for {elapsed:.0f} s")
        note = f", a batch of {self.rows} {at} of about {expected:.0f}"
        self.progress(*_progress(self.run, self.rows * share, self.pace.eta(self.b, tokens or 0.0, elapsed), note))


def _progress(report: RegenerationReport, in_flight: float, eta: float | None,
              batch_note: str = "") -> tuple[float, float | None, str]:
    """(fraction of all calls done, ETA seconds or None, message). ``in_flight``: calls' worth of the batch
    in flight already decoded. The rate counts the answers of finished batches only."""
    fraction = min(1.0, (report.reused + report.generated + in_flight) / max(1, report.calls))
    rate = f", {report.tokens / report.seconds:.0f} tokens/s" if report.seconds > 0 else ""
    return fraction, eta, (f"regenerated {report.reused + report.generated}/{report.calls} calls "
                           f"({report.reused} reused){batch_note}{rate}" +
                           (f", ETA {eta:.0f} s" if eta is not None else ""))


def regenerated_rows(prompts: Sequence[Any], answers: Mapping[str, Regeneration], renderer,
                     tools_of: Mapping[str, Sequence[Mapping[str, Any]] | None]) -> tuple[list, ToolCallStats]:
    """Training rows from regenerated answers, and the tool calls the target wrote.

    prompts: ``RenderedPrompt``s (their ``prompt_ids`` are the recorded context, byte for byte the render
    the serving engine builds). Each row is ``prompt_ids + answer`` [T + n] with loss mask 0 on the context
    and 1 on the answer, the answer labelled by ``renderer.segment_completion`` (the same rules as the
    evaluation's labels). tools_of: call_id -> the call's tools in OpenAI form, to validate tool calls.
    Prompts without an answer (a cancelled run) are skipped.
    """
    from drafters.render import RenderedSequence

    rows, stats = [], ToolCallStats()
    for p in prompts:
        answer = answers.get(p.call_id)
        if answer is None or not answer.token_ids:
            continue
        ids = answer.token_ids
        text = renderer.tokenizer.decode(ids, skip_special_tokens=False)
        stats.add(check_tool_calls(find_tool_calls(renderer, text), tools_of.get(p.call_id)))
        context = list(p.prompt_segments) or [0] * len(p.prompt_ids)
        rows.append(RenderedSequence(p.conversation_id, [p.call_id], list(p.prompt_ids) + ids,
                                     [0] * len(p.prompt_ids) + [1] * len(ids),
                                     context + renderer.segment_completion(ids)))
    return rows, stats
