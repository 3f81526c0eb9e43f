"""The template's tool-call markup: learned from probe renders of one call and of two parallel calls
(`learn`), and the tool calls of generated text found by it (`parse_calls`), so generated tokens are
labelled by the rule of training labels. Markup is literal template text in which a run of digits stands
for any index (Kimi-K2 writes ``functions.NAME:0``, ``:1``, ... before the arguments) and `ID_SLOT` for a
tool-call id (Mistral writes ``"id": "..."`` after them)."""

from __future__ import annotations

import functools
import json
import os
import re
from typing import NamedTuple

from drafters.render.labels import Located
from drafters.render.records import CallRender, Dialect, Span
from drafters.segments import Segment

ID_SLOT = "\x00"  # never in template text
_NAME = re.compile(r"[\w.\-]+")
_DECODER = json.JSONDecoder()


# ------------------------------------------------------------------------------------------------ learn


def learn(d: Dialect, single: CallRender, parallel: CallRender | None, ids: list[str], added_re) -> None:
    """Set ``d``'s call markup (``call_*``, and ``arg_*`` for key/value arguments) from the probe call
    rendered alone (``single``) and, when the template renders them, two parallel calls (``parallel``):
    what a call's suffix is, what separates two calls and what ends the last one. ``ids`` are the probe
    calls' ids as the template got them; ``added_re`` the tokenizer's added tokens (the split between
    suffix and section end never cuts one). Leaves ``d`` as it is when the probe's name or arguments are
    not found."""
    one = _calls(single.spans)
    if not one or not one[0][1]:
        return
    c = single.completion_text
    name, args = one[0]
    d.call_prefix = _slot(c[_prose_end(single.spans, single.sup_start, name.start):name.start], ids)
    d.call_mid = _slot(c[name.end:args[0].start], ids)
    d.call_suffix, d.call_next, d.call_end = _slot(c[args[-1].end:_eot_at(c, d)], ids), None, ""
    if d.arg_form == "pairs" and len(args) >= 3:
        d.arg_key_end = c[args[0].end:args[1].start]
        d.arg_pair_sep = c[args[1].end:args[2].start]
        if len(args) >= 4 and c[args[2].end:args[3].start] != d.arg_key_end:  # DSML's string="false"
            d.arg_key_end_other = c[args[2].end:args[3].start]
    two = _calls(parallel.spans) if parallel is not None else []
    if len(two) == 2 and two[0][1] and two[1][1]:
        t = parallel.completion_text
        between = _slot(t[two[0][1][-1].end:two[1][0].start], ids)
        last = _slot(t[two[1][1][-1].end:_eot_at(t, d)], ids)
        k = _common_prefix(between, last, added_re)
        d.call_suffix, d.call_next, d.call_end = last[:k], between[k:], last[k:]


def learn_prefix_after_reasoning(d: Dialect, reasoned: CallRender, ids: list[str]) -> None:
    """Set ``d.call_prefix_after_reasoning`` from the probe call rendered after reasoning, when the markup
    between the reasoning and the name differs from ``d.call_prefix`` (gpt-oss starts a new message:
    ``<|end|><|start|>assistant to=functions.`` after the analysis, `` to=functions.`` right after the
    prompt's ``<|start|>assistant``)."""
    one = _calls(reasoned.spans)
    if not one:
        return
    name = one[0][0]
    prefix = _slot(reasoned.completion_text[_prose_end(reasoned.spans, reasoned.sup_start, name.start):name.start],
                   ids)
    if prefix.strip() and prefix.lstrip() != (d.call_prefix or "").lstrip():
        d.call_prefix_after_reasoning = prefix


def _prose_end(spans: list[Span], start: int, name_start: int) -> int:
    """End of the last reasoning or text span before a call's name (``start`` when none): the call's
    markup starts there (MiniMax-M2's probe answer closes the reasoning its prompt opened first)."""
    ends = [sp.end for sp in spans if sp.end <= name_start and sp.segment in (Segment.REASONING, Segment.TEXT)]
    return max(ends, default=start)


def _calls(spans: list[Span]) -> list[tuple[Span, list[Span]]]:
    """(name span, argument spans) of each tool call in a rendered completion's spans."""
    out: list[tuple[Span, list[Span]]] = []
    for sp in spans:
        if sp.segment == Segment.TOOL_NAME:
            out.append((sp, []))
        elif sp.segment == Segment.TOOL_ARGS and out:
            out[-1][1].append(sp)
    return out


def _eot_at(text: str, d: Dialect) -> int:
    """Where the end-of-turn token that ends ``text`` starts (``len(text)`` when none does)."""
    for t in d.eot_tokens:
        if text.endswith(t):
            return len(text) - len(t)
    return len(text)


def _slot(markup: str, ids: list[str]) -> str:
    for i in ids:
        if i:
            markup = markup.replace(i, ID_SLOT)
    return markup


def _common_prefix(a: str, b: str, added_re) -> int:
    """Length of the common prefix of ``a`` and ``b``, shortened so it never ends inside an added token
    (``<|tool_call_end|><|tool_call`` is not a prefix of ``<|tool_call_begin|>``)."""
    k = len(os.path.commonprefix([a, b]))
    changed = added_re is not None
    while changed:
        changed = False
        for s in (a, b):
            for m in added_re.finditer(s, 0, min(len(s), k + 64)):
                if m.start() < k < m.end():
                    k, changed = m.start(), True
    return k


# ------------------------------------------------------------------------------------------------ parse


class _Patterns(NamedTuple):
    open: re.Pattern
    mid: re.Pattern
    suffix: re.Pattern | None
    next: re.Pattern | None
    end: re.Pattern | None
    key_end: re.Pattern | None
    pair_sep: re.Pattern | None
    suffix_tail: str  # the suffix's last literal characters, found when the suffix itself is not


def _compile(*markups: str) -> re.Pattern:
    """One pattern for any of ``markups`` (longest first)."""
    def one(markup: str) -> str:
        parts = re.split(r"(\x00|\d+)", markup)
        return "".join(r"\d+" if p.isdigit() else r"[^\n]+?" if p == ID_SLOT else re.escape(p) for p in parts if p)
    return re.compile("|".join(one(m) for m in sorted(markups, key=len, reverse=True)))


@functools.lru_cache(maxsize=64)
def _patterns(prefixes: tuple[str, ...], mid: str, suffix: str | None, nxt: str | None, end: str,
              key_ends: tuple[str, ...], pair_sep: str | None) -> _Patterns:
    tail = (suffix or "").strip()[-12:]
    return _Patterns(
        _compile(*(p.lstrip() for p in prefixes)), _compile(mid), _compile(suffix) if suffix else None,
        _compile(nxt) if nxt else None, _compile(end) if end else None,
        _compile(*key_ends) if key_ends else None, _compile(pair_sep) if pair_sep else None,
        tail if ID_SLOT not in tail else "")


class ParsedCall(NamedTuple):
    """One tool call found in generated text. ``name`` and ``args`` are TOOL_NAME / TOOL_ARGS pieces; ``args``
    is one JSON value, or for key/value arguments key, value, key, value, ... (a value may be empty, and a
    call cut inside a key ends with that key); ``closed``: the call's suffix follows its arguments (a call
    cut short has none); ``end``: where the call's markup ends."""

    name: Located
    args: list[Located]
    closed: bool
    end: int


def parse_calls(text: str, d: Dialect, start: int, stop: int) -> tuple[list[ParsedCall], list[tuple[int, int]]]:
    """The tool calls written in ``text[start:stop]`` in ``d``'s markup, in order, and the (start, end) of
    each run of call markup (one call, or parallel calls with their section markers). Arguments that do not
    parse (cut short, or not JSON) run to ``stop``. An opening not followed by a name is not a call."""
    if not d.call_prefix or d.call_mid is None:
        return [], []
    prefixes = tuple(x for x in (d.call_prefix, d.call_prefix_after_reasoning) if x)
    key_ends = tuple(x for x in (d.arg_key_end, d.arg_key_end_other) if x)
    p = _patterns(prefixes, d.call_mid, d.call_suffix, d.call_next, d.call_end, key_ends, d.arg_pair_sep)
    calls: list[ParsedCall] = []
    regions: list[tuple[int, int]] = []
    pos = start
    while (m := p.open.search(text, pos, stop)) is not None:
        call = _call(text, m.end(), stop, p)
        if call is None:
            pos = m.end()
            continue
        calls.append(call)
        k = call.end
        while p.next is not None and (n := p.next.match(text, k, stop)) is not None:
            if (call := _call(text, n.end(), stop, p)) is None:
                break
            calls.append(call)
            k = call.end
        if p.end is not None and (e := p.end.match(text, k, stop)) is not None:
            k = e.end()
        regions.append((m.start(), k))
        pos = max(k, m.end())
    return calls, regions


def call_pieces(calls: list[ParsedCall]) -> list[Located]:
    """The calls' names and arguments as the pieces labelling sees, in order (empty values left out)."""
    return [piece for c in calls for piece in (c.name, *c.args) if piece.end > piece.start]


def _call(text: str, k: int, stop: int, p: _Patterns) -> ParsedCall | None:
    """Parse one call whose name starts at ``k``; None when no name is there. The name ends at the markup
    before the arguments on its line, else (a call without arguments) after its identifier characters."""
    line = text.find("\n", k, stop)
    line = stop if line < 0 else line
    mm = p.mid.search(text, k, stop)
    if mm is not None and k < mm.start() <= line:
        name = _piece(k, mm.start(), Segment.TOOL_NAME)
        a = mm.end()
        args = _pairs(text, a, stop, p) if p.key_end is not None else _json(text, a, stop)
        ae = args[-1].end if args else a
    else:
        nm = _NAME.match(text, k, stop)
        if nm is None:
            return None
        name, args, ae = _piece(k, nm.end(), Segment.TOOL_NAME), [], nm.end()
    end = _suffix_end(text, ae, stop, p)
    return ParsedCall(name, args, p.suffix is None or end > ae, end)


def _json(text: str, a: int, stop: int) -> list[Located]:
    try:
        ae = min(_DECODER.raw_decode(text, a)[1], stop)
    except ValueError:
        ae = stop
    return [_piece(a, ae)] if ae > a else []


def _pairs(text: str, a: int, stop: int, p: _Patterns) -> list[Located]:
    """Key/value arguments from ``a``: key, key end, value, then the pair separator and the next key, or
    the call's suffix. A key without its key end (cut short, maybe empty) runs to ``stop``."""
    out: list[Located] = []
    while True:
        km = p.key_end.search(text, a, stop)
        if km is None:
            return out + [_piece(a, stop)]
        out.append(_piece(a, km.start()))
        v = km.end()
        sm = p.suffix.search(text, v, stop) if p.suffix is not None else None
        ve = sm.start() if sm is not None else stop
        pm = p.pair_sep.search(text, v, ve) if p.pair_sep is not None else None
        if pm is None:
            return out + [_piece(v, ve)]
        out.append(_piece(v, pm.start()))
        a = pm.end()


def _piece(s: int, e: int, segment: int = Segment.TOOL_ARGS) -> Located:
    return Located(s, e, segment, True)


def _suffix_end(text: str, ae: int, stop: int, p: _Patterns) -> int:
    """End of the call's suffix after its arguments: the suffix right there, else the next occurrence of
    its last characters, else ``ae``."""
    if p.suffix is None:
        return ae
    m = p.suffix.match(text, ae, stop)
    if m is not None:
        return m.end()
    k = text.find(p.suffix_tail, ae, stop) if p.suffix_tail else -1
    return k + len(p.suffix_tail) if k >= 0 else ae
