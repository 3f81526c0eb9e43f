"""The draft vocabulary: the token ids a DSpark proposer may draft (FR-Spec, arXiv 2502.14856; EAGLE-3's
reduced draft vocabulary). The drafter's LM head and Markov bias are then computed on these rows only,
which is most of a drafting round's cost (docs/dspark.md 5.5)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from drafters.errors import TracedraftError

#: Default size: the most frequent 8192 ids of the organization's training outputs (all of them when fewer).
DEFAULT_SIZE = 8192


def draft_vocabulary(outputs: Iterable[Sequence[int]], size: int = DEFAULT_SIZE,
                     always: Iterable[int] = ()) -> list[int]:
    """The ``size`` most frequent token ids of ``outputs`` (e.g. ``training_outputs(rows)``: the assistant
    tokens the drafter learns to draft; ties broken by the smaller id), plus ``always`` (e.g. the
    end-of-turn ids). Sorted. Raises TracedraftError(code="bad_config") for size < 1."""
    if size < 1:
        raise TracedraftError("bad_config", f"the draft vocabulary size must be >= 1, got {size}",
                              "draft_vocab_size")
    counts = Counter(int(t) for seq in outputs for t in seq)
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:size]
    return sorted({t for t, _ in top} | {int(t) for t in always})


def coverage(vocab: Iterable[int], sequences: Iterable[Sequence[int]]) -> float | None:
    """Share of the tokens of ``sequences`` whose id is in ``vocab`` (None when there are none): an upper
    bound on how much of an answer a drafter restricted to ``vocab`` can draft."""
    ids = set(vocab)
    total = inside = 0
    for seq in sequences:
        total += len(seq)
        inside += sum(1 for t in seq if int(t) in ids)
    return inside / total if total else None
