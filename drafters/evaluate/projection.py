"""The speed an evaluation's proposers would reach on another machine, projected (docs/speed.md,
"Projecting to another machine"). With greedy decoding, tau and the tokens verified per round depend on the
target, the proposer and the calls, not on the hardware; r and c depend on the hardware. So, from a report
measured anywhere and a cost table measured on the other machine (``benchmarks/bench_draft_cost.py --out``):

    projected decoding speed-up = tau / (r(n) + c)        (docs/dspark.md 5.5)

n: the tokens verified per round (drafts + the anchor), measured in the report; r(n): a verification round
of n tokens in plain steps, interpolated in the table; c: a drafting round in plain steps, from the table
(the DSpark drafter's shipped round; suffix decoding's round for the model-free proposers, which stand in
for all of them as the cheapest measured model-free round). A projection, never a measurement: it leaves out
what the table does not time (the loop's own work per round, the prefill), and the table's context length
is the nearest measured one.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from drafters.errors import TracedraftError

#: The line-up's proposers that run no model (drafters/evaluate/lineup.py); a cascade is recognised by its
#: ``picks``; every other proposer that is not a what-if runs a DSpark drafter each round.
MODEL_FREE = frozenset({"ngram", "suffix", "suffix@block", "schema", "suffix+schema"})


@dataclass(frozen=True)
class CostTable:
    """One machine's costs for one target shape at one context length and batch, in plain decoding steps of
    that batch. machine: the table's own record (device, processor, ...); batch: requests per target forward;
    verify: {tokens n per request: r(n)}; draft: {drafter layers: c of the shipped DSpark round}; suffix: c of
    a suffix-decoding round. At a batch above 1 the drafting and suffix rounds are the batch's requests'
    rounds one after another (both proposers draft request by request here), so c is an upper bound."""

    machine: dict
    shape: str
    context: int
    plain_ms: float
    verify: dict[int, float]
    draft: dict[int, float]
    suffix: float
    batch: int = 1

    @classmethod
    def from_rows(cls, data: Mapping[str, Any], shape: str, context: int, batch: int = 1) -> CostTable:
        """The table of ``shape`` at the measured context nearest ``context`` (tokens) and ``batch``, from
        ``bench_draft_cost.py --out``'s JSON ({"machine", "rows": [{shape, context, batch, op, ms, steps}]}; a
        row without ``batch`` is batch 1). Raises TracedraftError(code="bad_cost_table") when the shape, the
        batch or one of its operations is missing."""
        rows = [r for r in data.get("rows") or () if r.get("shape") == shape]
        if not rows:
            raise TracedraftError("bad_cost_table", f"no rows for shape {shape!r}", "rows")
        near = min({r["context"] for r in rows}, key=lambda c: (abs(c - context), c))
        at = {(r.get("batch", 1), r["op"]): r for r in rows if r["context"] == near}
        plain = at.get((batch, "plain step"))
        verify = {int(op.split()[1]): r["steps"] for (b, op), r in at.items() if b == batch and op.startswith("verify ")}
        # per-request rounds, timed at batch 1: B of them per round of the batch, in the batch's plain steps
        scale = batch * at[(1, "plain step")]["ms"] / plain["ms"] if plain and (1, "plain step") in at else 0.0
        draft = {int(op.split()[1][:-1]): r["steps"] * scale for (b, op), r in at.items()
                 if b == 1 and op.startswith("dspark ") and "vocab" in op}
        suffix = [r["steps"] * scale for (b, op), r in at.items() if b == 1 and op.startswith("suffix decoding round")]
        if plain is None or not verify or not draft or not suffix:
            raise TracedraftError("bad_cost_table", f"shape {shape!r} at context {near}, batch {batch}, lacks the "
                                  "plain step, a verification round, a shipped drafting round or a suffix round",
                                  "rows")
        return cls(dict(data.get("machine") or {}), shape, near, plain["ms"], verify, draft, suffix[0], batch)

    def r(self, n: float) -> float:
        """Verification cost of ``n`` tokens in plain steps: linear between measured sizes (r(1) = 1, a plain
        step), extended along the last two measured sizes beyond the largest."""
        pts = sorted({1: 1.0, **self.verify}.items())
        for (x0, y0), (x1, y1) in itertools.pairwise(pts):
            if n <= x1 or (x1, y1) == pts[-1]:
                return y0 + (y1 - y0) * (n - x0) / (x1 - x0)
        return pts[0][1]


@dataclass(frozen=True)
class Projection:
    """One proposer projected: tau and ``verified`` (tokens per round) as measured; r, c and ``speedup``
    projected; ``drafter_share`` the rounds a drafter drafted; ``measured`` the decoding speed-up measured
    on the report's own machine (None where not measured)."""

    proposer: str
    tau: float
    verified: float
    drafter_share: float
    r: float
    c: float
    speedup: float
    measured: float | None


def drafter_share(name: str, entry: Mapping[str, Any]) -> float:
    """The fraction of verification rounds in which a DSpark drafter drafted: a cascade's drafter picks over
    all its picks, 0 for MODEL_FREE proposers, 1 for any other (a drafter)."""
    picks = entry.get("picks")
    if isinstance(picks, Mapping) and sum(picks.values()):
        return picks.get("drafter", 0) / sum(picks.values())
    return 0.0 if name in MODEL_FREE else 1.0


def project(report: Mapping[str, Any], table: CostTable, drafter_layers: int = 1) -> list[Projection]:
    """Every proposer of ``report`` (an evaluation report: "proposers", "speed") but the what-if ones,
    projected onto ``table``; c = suffix round + drafter share x the ``drafter_layers``-layer round (a
    cascade asks its cheap proposers every round). Raises TracedraftError(code="bad_cost_table") when the
    table has no drafting round of that depth."""
    if drafter_layers not in table.draft:
        raise TracedraftError("bad_cost_table", f"no {drafter_layers}-layer drafting round measured (have "
                              f"{sorted(table.draft)})", "rows")
    costs = ((report.get("speed") or {}).get("proposers")) or {}
    out = []
    for name, e in report["proposers"].items():
        if e.get("what_if") or not e.get("rounds"):
            continue
        verified = (e.get("mean_proposed") or 0.0) + 1.0
        share = drafter_share(name, e)
        r, c = table.r(verified), table.suffix + share * table.draft[drafter_layers]
        measured = ((costs.get(name) or {}).get("cost") or {}).get("decode_speedup")
        out.append(Projection(name, e["tau"], verified, share, r, c, e["tau"] / (r + c), measured))
    return out


def mean_context(report: Mapping[str, Any]) -> int:
    """The mean context length (tokens) of the report's held-out calls, from any proposer's per-call rows."""
    for e in report["proposers"].values():
        ctx = [c["context_len"] for c in e.get("per_call") or () if c.get("context_len")]
        if ctx:
            return round(sum(ctx) / len(ctx))
    raise TracedraftError("bad_report", "no per-call context lengths in the report", "proposers")


def format_projection(rows: Sequence[Projection], table: CostTable, source: str) -> str:
    """The projection as a Markdown table, labelled as a projection and naming where each input came from."""
    m = table.machine
    where = ", ".join(str(v) for v in (m.get("cuda") or m.get("processor"), m.get("device"), m.get("torch")) if v)
    lines = [f"PROJECTION, not a measurement. tau and tokens verified per round: measured in {source}. "
             f"r(n) and c: measured by bench_draft_cost on {where or 'an unnamed machine'}, shape {table.shape}, "
             f"context {table.context}, batch {table.batch}"
             + (" (c: the batch's per-request rounds one after another, an upper bound)" if table.batch > 1 else "")
             + f" (plain step {table.plain_ms:.2f} ms; suffix round "
             f"c = {table.suffix:.3f}; drafting round c = "
             + ", ".join(f"{k} layer(s) {v:.3f}" for k, v in sorted(table.draft.items())) + ").", "",
             ("| proposer | tau (measured) | tokens verified | drafter rounds | r(n) | c | projected speed-up "
             "| measured decoding speed-up (report's machine) |"), "|---|---|---|---|---|---|---|---|"]
    for p in rows:
        meas = "-" if p.measured is None else f"{p.measured:.2f}x"
        lines.append(f"| {p.proposer} | {p.tau:.2f} | {p.verified:.2f} | {p.drafter_share:.0%} | {p.r:.2f} | "
                     f"{p.c:.3f} | {p.speedup:.2f}x | {meas} |")
    return "\n".join(lines)
