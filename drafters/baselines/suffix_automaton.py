"""An occurrence-counting suffix automaton over token sequences: the index behind suffix decoding.

SuffixDecoding (Oliaro et al., arXiv 2411.04975; ArcticInference) keeps suffix trees of bounded depth whose
nodes count how often each substring occurs. A suffix automaton answers the same questions in pure Python
with far fewer objects: every substring of the indexed sequences is one path from the root, the strings of a
state share their end positions (so they have the same occurrence count and the same continuations), and
appending a token costs amortised O(1) plus a walk over at most ``count_depth + 1`` states to update counts.

Counts are exact for every substring of length <= ``count_depth`` (the depth of the paper's trees); longer
strings are still indexed (they can be matched) but their states stop being counted once every string in
them is longer than ``count_depth``, exactly the part a bounded-depth suffix tree does not store.

Several sequences can share one automaton (a generalized suffix automaton): ``start_sequence`` begins a new
one, and no occurrence spans two sequences. Pure Python, no torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from drafters.errors import TracedraftError

ROOT = 0


@dataclass
class Match:
    """The longest suffix (capped at a maximum length) of a token stream that occurs in an automaton.

    state: the automaton state holding that suffix (ROOT when nothing matches); length: its length in tokens.
    """

    state: int = ROOT
    length: int = 0


class SuffixAutomaton:
    """Suffix automaton of one or more token sequences with occurrence counts (see the module docstring).

    State s holds the strings of lengths (length[link[s]], length[s]] that end at the same set of positions;
    ``count(s)`` is the size of that set, i.e. how many times each of its strings occurs (an occurrence that
    ends a sequence counts too, although nothing follows it). ``last_end(s)`` is the latest of those
    positions (a running token index over all sequences), used to break count ties toward recent text.
    Raises TracedraftError(code="bad_config") unless count_depth >= 1.
    """

    def __init__(self, count_depth: int):
        if count_depth < 1:
            raise TracedraftError("bad_config", f"count_depth must be >= 1, got {count_depth}", "count_depth")
        self.count_depth = count_depth
        self._len = [0]
        self._link = [-1]
        self._next: list[dict[int, int]] = [{}]
        self._count = [0]
        self._last_end = [-1]
        # _short[s]: the first state on s's suffix-link path (s included) whose shortest string is at most
        # count_depth long; refreshed lazily because a clone can lengthen a state's shortest string.
        self._short = [0]
        self._last = ROOT
        self.tokens = 0  # tokens appended over all sequences
        self.sequences = 0
        self._best: dict[int, tuple[int, int] | None] = {}  # best_child memo, valid while tokens is unchanged
        self._best_at = 0

    def __len__(self) -> int:
        """Number of states (the root included)."""
        return len(self._len)

    # ----------------------------------------------------------------------------------------- building

    def start_sequence(self) -> None:
        """Begin a new sequence: later tokens never form an occurrence with earlier ones."""
        self._last = ROOT
        self.sequences += 1

    def extend(self, tokens: Iterable[int]) -> None:
        """Append tokens to the current sequence (``append`` each)."""
        for t in tokens:
            self.append(t)

    def _new_state(self, length: int, link: int, nxt: dict[int, int], count: int, last_end: int) -> int:
        s = len(self._len)
        self._len.append(length)
        self._link.append(link)
        self._next.append(nxt)
        self._count.append(count)
        self._last_end.append(last_end)
        self._short.append(s)
        return s

    def _clone(self, q: int, length: int) -> int:
        """Split state q: a clone takes its strings of length <= ``length`` (and its end positions so far)."""
        c = self._new_state(length, self._link[q], dict(self._next[q]), self._count[q], self._last_end[q])
        self._link[q] = c
        return c

    def _redirect(self, p: int, token: int, old: int, new: int) -> None:
        nxt, link = self._next, self._link
        while p != -1 and nxt[p].get(token) == old:
            nxt[p][token] = new
            p = link[p]

    def append(self, token: int) -> None:
        """Append one token to the current sequence (online generalized suffix automaton construction)."""
        token = int(token)
        nxt, link, length = self._next, self._link, self._len
        last = self._last
        q = nxt[last].get(token)
        if q is not None:
            # The extended string already occurs (only at the start of a later sequence): reuse its state,
            # or split it when it also holds longer strings.
            if length[q] == length[last] + 1:
                cur = q
            else:
                cur = self._clone(q, length[last] + 1)
                self._redirect(last, token, q, cur)
        else:
            cur = self._new_state(length[last] + 1, ROOT, {}, 0, -1)
            p = last
            while p != -1 and token not in nxt[p]:
                nxt[p][token] = cur
                p = link[p]
            if p != -1:
                q = nxt[p][token]
                if length[p] + 1 == length[q]:
                    link[cur] = q
                else:
                    c = self._clone(q, length[p] + 1)
                    self._redirect(p, token, q, c)
                    link[cur] = c
        self._last = cur
        self._count_end(cur)
        self.tokens += 1

    def _count_end(self, s: int) -> None:
        """The current position ends every string on s's suffix-link path: count it on the short states."""
        pos = self.tokens
        count, last_end, link = self._count, self._last_end, self._link
        s = self.first_short(s)
        while s > ROOT:
            count[s] += 1
            last_end[s] = pos
            s = link[s]

    def first_short(self, s: int) -> int:
        """The first state on s's suffix-link path (s included) whose shortest string has length <=
        count_depth (ROOT if none): the states whose counts are kept."""
        short, link, length, depth = self._short, self._link, self._len, self.count_depth
        seen = []
        t = short[s]
        while t != ROOT and length[link[t]] >= depth:  # t's shortest string grew past the depth
            seen.append(s)
            s = link[t]
            t = short[s]
        for u in seen:  # path compression: minimal lengths only grow, so skipped states stay skipped
            short[u] = t
        return t

    # ----------------------------------------------------------------------------------------- queries

    def length(self, s: int) -> int:
        """Length of the longest string in state s."""
        return self._len[s]

    def min_length(self, s: int) -> int:
        """Length of the shortest string in state s (0 for the root)."""
        return self._len[self._link[s]] + 1 if s != ROOT else 0

    def link(self, s: int) -> int:
        """The suffix link of s: the state of its longest suffix not in s (-1 for the root)."""
        return self._link[s]

    def count(self, s: int) -> int:
        """Occurrences of each string of s; exact while min_length(s) <= count_depth."""
        return self._count[s]

    def last_end(self, s: int) -> int:
        """Latest end position (running token index) of s's strings; -1 for the root."""
        return self._last_end[s]

    def children(self, s: int) -> dict[int, int]:
        """{next token: state} of s (do not mutate)."""
        return self._next[s]

    def best_child(self, s: int) -> tuple[int, int] | None:
        """(token, state) of the most frequent continuation of s's strings; ties go to the one whose
        latest occurrence is most recent. None when nothing ever followed them."""
        kids = self._next[s]
        if len(kids) <= 1:
            return next(iter(kids.items())) if kids else None
        if self._best_at != self.tokens:  # the index grew since the memo was filled
            self._best, self._best_at = {}, self.tokens
        best = self._best.get(s, False)
        if best is not False:
            return best
        count, last_end = self._count, self._last_end
        key = (-1, -2)
        for tok, c in kids.items():
            k = (count[c], last_end[c])
            if k > key:
                key, best = k, (tok, c)
        self._best[s] = best
        return best

    def state_of(self, pattern: Iterable[int]) -> int | None:
        """The state holding ``pattern``, or None when it does not occur (ROOT for an empty pattern)."""
        s = ROOT
        for t in pattern:
            s = self._next[s].get(int(t))
            if s is None:
                return None
        return s

    def advance(self, m: Match, token: int, max_length: int) -> Match:
        """Matching statistics: the Match of a stream after ``token`` is appended to it, given m for the
        stream before, keeping the match at most ``max_length`` long. Amortised O(1)."""
        nxt, link, length = self._next, self._link, self._len
        s, n = m.state, m.length
        token = int(token)
        while s != ROOT and token not in nxt[s]:
            s = link[s]
            n = length[s]
        t = nxt[s].get(token)
        if t is None:
            return Match(ROOT, 0)
        s, n = t, n + 1
        if n > max_length:
            n = max_length
            if length[link[s]] >= n:  # the capped suffix lives in the parent state (one step: see tests)
                s = link[s]
        return Match(s, n)

    def tail_match(self, max_length: int) -> Match:
        """The Match of the current sequence's own last min(max_length, its length) tokens (they occur
        at least there). Raises TracedraftError(code="bad_config") if max_length > count_depth."""
        if max_length > self.count_depth:
            raise TracedraftError("bad_config", f"max_length {max_length} exceeds count_depth "
                                  f"{self.count_depth}", "max_length")
        n = min(max_length, self._len[self._last])
        if n <= 0:
            return Match(ROOT, 0)
        s = self.first_short(self._last)
        while self._len[self._link[s]] >= n:
            s = self._link[s]
        return Match(s, n)

    def suffix_states(self, s: int, length: int) -> Iterator[tuple[int, int]]:
        """For the string of ``length`` tokens held by state s and each of its suffixes: (state, longest
        length of that string's suffixes in the state), longest first, root excluded."""
        link, lens = self._link, self._len
        while s > ROOT:
            yield s, length
            s = link[s]
            length = lens[s]
