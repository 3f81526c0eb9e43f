"""llama-server's speculative counters from ``GET /metrics``, and tau over a pass (docs/serving.md section 3).

Counters, from the vendored server (tools/server/server-task.cpp, server-context.cpp of llama-cpp-python
0.3.36): ``llamacpp:spec_decode_num_drafts_total`` = verification steps (a step with an empty draft is not
counted), ``llamacpp:spec_decode_num_accepted_tokens_total`` = accepted drafts, ``..._num_draft_tokens_total``
= drafted tokens, ``..._accepted_tokens_per_pos_total{position="i"}`` = rounds that accepted slot i+1. A slot's
counters reach /metrics when the slot is released, i.e. before the next queued task (our /metrics GET) runs.
End effects differ from the hf engine (drafters.speculate): llama.cpp drafts at most ``n_predict - generated - 1``
tokens and does not count a final step without drafts as a round (hf records it as a round of length 1);
an end-of-generation draft matched before the last slot ends the round as its corrected token (round length
a + 1, like hf's a on an accepted stop token; common/sampling.cpp ``common_sampler_sample_and_accept_n``).
Compare hf's rounds with proposed > 0 against llama.cpp's tau.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from drafters.errors import TracedraftError

METRIC_ROUNDS = "llamacpp:spec_decode_num_drafts_total"
METRIC_ACCEPTED = "llamacpp:spec_decode_num_accepted_tokens_total"
METRIC_DRAFTED = "llamacpp:spec_decode_num_draft_tokens_total"
METRIC_PER_POS = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
METRIC_PREDICTED = "llamacpp:tokens_predicted_total"

_LINE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)')


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text exposition -> {"name" or "name{labels}": value}. Comment and blank lines skipped;
    values parsed with float() ("nan", "+Inf" and exponent forms included)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def _exact_count(text: str, name: str) -> int | None:
    """The integer value of counter ``name`` in raw /metrics text, None if absent. llama.cpp prints counters
    with C++ stream defaults (6 significant digits), so 1234567 reads "1.23457e+06": refuse it.
    Raises TracedraftError(metrics_precision_lost)."""
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m and m.group(1) == name and not m.group(2):
            raw = m.group(3)
            if "e" in raw.lower() or "." in raw:
                v = float(raw)
                if v != int(v) or "e" in raw.lower():
                    raise TracedraftError("metrics_precision_lost", f"{name} = {raw}: llama-server prints counters "
                                          "with 6 significant digits, this one is rounded; restart the server "
                                          "(one server per pass keeps counters small)", name)
            return int(float(raw))
    return None


@dataclass(frozen=True)
class SpecCounters:
    """Cumulative speculative counters of one llama-server (since start), from GET /metrics.

    rounds: verification steps (``spec_decode_num_drafts_total``); accepted: accepted drafts
    (``spec_decode_num_accepted_tokens_total``); drafted: drafted tokens (``..._num_draft_tokens_total``);
    predicted: generated tokens (``tokens_predicted_total``, None if absent); per_pos: rounds that accepted
    draft slot k (k = 1.. as index k-1), from ``..._accepted_tokens_per_pos_total{position}``."""

    rounds: int
    accepted: int
    drafted: int
    predicted: int | None = None
    per_pos: tuple[int, ...] = ()

    @classmethod
    def from_metrics(cls, text: str) -> SpecCounters:
        """Parse GET /metrics text. A server started without a draft has the counters at 0 (they are
        always printed); missing counters raise TracedraftError(engine_bad_response) (was --metrics set?)."""
        vals = {n: _exact_count(text, n) for n in (METRIC_ROUNDS, METRIC_ACCEPTED, METRIC_DRAFTED, METRIC_PREDICTED)}
        missing = [n for n in (METRIC_ROUNDS, METRIC_ACCEPTED, METRIC_DRAFTED) if vals[n] is None]
        if missing:
            raise TracedraftError("engine_bad_response", f"/metrics lacks {', '.join(missing)} (is llama-server "
                                  "running with --metrics, and a DSpark-capable version?)", "/metrics")
        pos: dict[int, int] = {}
        for key, v in parse_metrics(text).items():
            m = re.match(re.escape(METRIC_PER_POS) + r'\{position="(\d+)"\}$', key)
            if m:
                pos[int(m.group(1))] = int(v)
        per_pos = tuple(pos.get(i, 0) for i in range(max(pos) + 1)) if pos else ()
        return cls(vals[METRIC_ROUNDS], vals[METRIC_ACCEPTED], vals[METRIC_DRAFTED], vals[METRIC_PREDICTED], per_pos)

    def __sub__(self, other: SpecCounters) -> SpecCounters:
        n = max(len(self.per_pos), len(other.per_pos))
        a = list(self.per_pos) + [0] * (n - len(self.per_pos))
        b = list(other.per_pos) + [0] * (n - len(other.per_pos))
        pred = None if self.predicted is None or other.predicted is None else self.predicted - other.predicted
        return SpecCounters(self.rounds - other.rounds, self.accepted - other.accepted, self.drafted - other.drafted,
                            pred, tuple(x - y for x, y in zip(a, b)))


def tau_from_metrics(before: str | SpecCounters, after: str | SpecCounters) -> float:
    """tau over a pass from two /metrics snapshots: 1 + (accepted after - before) / (rounds after - before),
    computed by ``drafters.evaluate.tau_from_counts`` (docs/serving.md 3). Raises TracedraftError(speculation_off)
    when no verification round happened in between."""
    from drafters.evaluate import tau_from_counts

    b = before if isinstance(before, SpecCounters) else SpecCounters.from_metrics(before)
    a = after if isinstance(after, SpecCounters) else SpecCounters.from_metrics(after)
    d = a - b
    return tau_from_counts(d.accepted, d.rounds)
