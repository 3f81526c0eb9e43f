"""Near-duplicate conversations across the train / held-out split (docs/traces.md, "Held-out split").

A held-out conversation whose assistant turns nearly repeat a training conversation's (the same tool calls
with the same arguments, almost the same summaries: common in synthetic function-calling sets) measures
memory, not generalisation. Each conversation's assistant side (text and tool calls, in order; no user,
system or tool text) is cut into word 3-shingles; two conversations are near duplicates when the Jaccard
similarity of their shingle sets is at least ``THRESHOLD``. Candidates come from prefix filtering (the
exact similarity join of Chaudhuri et al. 2006 / Bayardo et al. 2007): with shingles ordered rarest first,
two sets at Jaccard >= t share a shingle among the first |x| - ceil(t |x|) + 1 of each, so indexing only
those prefixes misses no pair; every candidate's Jaccard is then computed exactly.
"""

from __future__ import annotations

import hashlib
import json
import re
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from drafters.traces.model import Conversation, TextPart, ToolCallPart

#: Jaccard similarity of assistant-side word 3-shingles at or above which two conversations are near duplicates.
THRESHOLD = 0.7
SHINGLE = 3
#: Fewer shingles than this (an assistant side under 7 words, e.g. "ok") say nothing about memory: never a
#: near duplicate.
MIN_SHINGLES = 5
NEAR_DUPLICATE_RULE = (f"a held-out conversation whose assistant turns (text and tool calls) share word {SHINGLE}-"
                       f"shingles with a training conversation's at Jaccard >= {THRESHOLD} moves to train (both "
                       f"sides with at least {MIN_SHINGLES} shingles)")
_WORD = re.compile(r"\w+|[^\w\s]")


@dataclass
class NearDuplicate:
    """A held-out conversation that nearly duplicates a training one, with their exact Jaccard similarity."""

    heldout_id: str
    train_id: str
    similarity: float


def assistant_text(conv: Conversation) -> str:
    """The assistant side of a conversation: text parts and tool calls (name and compact arguments), in order."""
    out = []
    for m in conv.messages:
        if m.role != "assistant":
            continue
        for p in m.parts:
            if isinstance(p, TextPart):
                out.append(p.text)
            elif isinstance(p, ToolCallPart):
                out.append(p.name + " " + (json.dumps(p.arguments, sort_keys=True) if p.arguments is not None
                                           else p.raw_arguments))
    return "\n".join(out)


def shingles(text: str, k: int = SHINGLE) -> set[int]:
    """Hashes (32-bit) of the lower-cased word k-shingles of ``text`` (a shorter text is one shingle)."""
    words = _WORD.findall(text.lower())
    grams = [" ".join(words[i:i + k]) for i in range(max(1, len(words) - k + 1))] if words else []
    return {int.from_bytes(hashlib.blake2b(g.encode(), digest_size=4).digest(), "little") for g in grams}


def jaccard(a: set[int], b: set[int]) -> float:
    """|a & b| / |a | b| (0 for two empty sets)."""
    return len(a & b) / len(a | b) if a or b else 0.0


def _prefix(sh: set[int], rank: dict[int, tuple[int, int]], threshold: float) -> list[int]:
    """The first |sh| - ceil(threshold |sh|) + 1 shingles of ``sh``, rarest first (prefix filtering)."""
    ordered = sorted(sh, key=rank.__getitem__)
    return ordered[: len(ordered) - math.ceil(threshold * len(ordered)) + 1]


def near_duplicates(heldout: Sequence[Conversation], train: Sequence[Conversation],
                    threshold: float = THRESHOLD) -> list[NearDuplicate]:
    """For each held-out conversation with a training conversation at Jaccard >= ``threshold`` (module
    docstring), its most similar one. Conversations with fewer than MIN_SHINGLES assistant shingles are never
    near duplicates.
    Raises ValueError for a threshold outside (0, 1]."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    def eligible(c: Conversation) -> set[int]:
        sh = shingles(assistant_text(c))
        return sh if len(sh) >= MIN_SHINGLES else set()

    train_sh = [eligible(c) for c in train]
    held_sh = [eligible(c) for c in heldout]
    freq = Counter(x for sh in (*train_sh, *held_sh) for x in sh)
    rank = {x: (n, x) for x, n in freq.items()}
    index: dict[int, list[int]] = defaultdict(list)
    for j, sh in enumerate(train_sh):
        for x in _prefix(sh, rank, threshold) if sh else ():
            index[x].append(j)
    out = []
    for conv, sh in zip(heldout, held_sh):
        if not sh:
            continue
        cands = {j for x in _prefix(sh, rank, threshold) for j in index.get(x, ())}
        best = max(((jaccard(sh, train_sh[j]), j) for j in cands), default=(0.0, -1))
        if best[0] >= threshold:
            out.append(NearDuplicate(conv.id, train[best[1]].id, best[0]))
    return out


def split_without_near_duplicates(train: Sequence[Conversation], heldout: Sequence[Conversation],
                                  threshold: float = THRESHOLD
                                  ) -> tuple[list[Conversation], list[Conversation], list[NearDuplicate]]:
    """(train, held-out, moved): held-out conversations that nearly duplicate a training conversation move to
    train, so the held-out calls measure what the drafter did not see; ``moved`` lists them."""
    found = near_duplicates(heldout, train, threshold)
    moved = {d.heldout_id for d in found}
    return ([*train, *(c for c in heldout if c.id in moved)], [c for c in heldout if c.id not in moved], found)
