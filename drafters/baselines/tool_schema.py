"""The tool-schema proposer: drafts the text a request's tool schemas fix, with no model and no training.

A tool call is mostly structure: the chat template's call markup, the tool's name (one of the names the
request offers), the argument keys (its JSON-schema properties) and JSON punctuation; only the values are
free. ToolSpec (arXiv 2604.13519) drafts that structure from a schema state machine; this is the same idea
behind the ``drafters.speculate.Proposer`` protocol (docs/dspark.md 5.6):

- the call's syntax is the renderer's ``Dialect`` (``call_prefix``, ``call_mid``, ``call_suffix``,
  ``call_next``, ``call_end`` and the end-of-turn token, learned by probe renders of the target's chat
  template), so every template whose arguments are one JSON object works (``arg_form`` "json");
- each round the answer so far (decoded) is scanned (``fixed_continuation``). Outside a call: the rest of a
  call opening already begun (two characters or more). Inside one: the rest of the tool name once what is
  written leaves one candidate (or the candidates' common prefix), then ``call_mid`` and the opening of the
  first argument; after each value the next key in schema order (``, "key": `` and a string's opening
  quote); with no required property left, the object's close, the call's suffix and the end of the turn.
  Inside a value nothing is fixed and nothing is drafted (suffix decoding or the drafter draft there);
- the draft text is tokenized alone (the target writes this markup in its own canonical tokenization, so
  the pieces line up; a mismatch costs acceptance, never correctness: verification is exact).

Its score (expected accepted drafts, what the cascade ranks proposals by) is the draft's length times the
certainty of the choice it made: 1 where the schema fixes the text, ``GUESS`` where it guessed (the end of
the arguments while optional properties remain, the end of the turn where a parallel call could follow).

It stands aside (an empty proposal every round, counted in ``stood_aside`` by reason, never an error) for a
request without tools (``no_tools``), with a tool whose definition is not a named function with an
object schema (``invalid_schema``), or on a template whose arguments are key/value pairs
(``template_form``: GLM-4.5, DeepSeek DSML; not supported yet).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from drafters.speculate import Proposal

#: Certainty of a guessed continuation (module docstring), against 1 for one the schema fixes.
GUESS = 0.5
#: Fewest characters of a call opening written before the proposer completes it.
MIN_OPENING_CHARS = 2
#: tojson's separators: what every template that writes arguments with tojson / json.dumps emits.
ITEM_SEP, KEY_SEP = ", ", ": "


@dataclass(frozen=True)
class ToolShape:
    """One tool as the proposer sees it: name, properties in schema order, each with whether it is a JSON
    string (its value opens with a quote), and the required ones."""

    name: str
    properties: tuple[tuple[str, bool], ...]
    required: frozenset[str]

    def is_string(self, key: str) -> bool:
        """Whether property ``key`` is a JSON string (False for an unknown key)."""
        return any(k == key and s for k, s in self.properties)


@dataclass(frozen=True)
class CallSyntax:
    """The template's tool-call markup (a ``Dialect``'s, see drafters/render/records.py): ``openers`` end
    just before a tool's name (the first call's, after reasoning, a parallel call's); ``mid`` sits between
    the name and the arguments; ``tail`` follows the arguments of a turn's last call (call suffix, call end
    and the end-of-turn token)."""

    openers: tuple[str, ...]
    mid: str
    tail: str

    @classmethod
    def from_dialect(cls, d: Any) -> CallSyntax | None:
        """The syntax of a template whose arguments are one JSON object, else None (module docstring)."""
        if d.arg_form != "json" or not d.call_prefix or not d.call_mid or d.call_suffix is None:
            return None
        openers = tuple(dict.fromkeys(o for o in (d.call_prefix, d.call_prefix_after_reasoning, d.call_next) if o))
        eot = d.eot_tokens[0] if d.eot_tokens else ""
        return cls(openers, d.call_mid, d.call_suffix + d.call_end + eot)


def tool_shapes(tools: Sequence[Mapping[str, Any]] | None) -> tuple[dict[str, ToolShape], str | None]:
    """({name: ToolShape}, None) for OpenAI-format ``tools`` ({"type": "function", "function": {"name",
    "parameters"}}), or ({}, reason) with reason "no_tools" or "invalid_schema" (module docstring)."""
    if not tools:
        return {}, "no_tools"
    shapes = {}
    for t in tools:
        fn = t.get("function", t) if isinstance(t, Mapping) else None
        params = fn.get("parameters") if isinstance(fn, Mapping) else None
        params = {"type": "object", "properties": {}} if params is None else params
        props = params.get("properties", {}) if isinstance(params, Mapping) else None
        if (not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn["name"]
                or not isinstance(props, Mapping) or not all(isinstance(v, Mapping) for v in props.values())):
            return {}, "invalid_schema"
        required = params.get("required") or []
        if not isinstance(required, list):
            return {}, "invalid_schema"
        shapes[fn["name"]] = ToolShape(fn["name"], tuple((k, v.get("type") == "string") for k, v in props.items()),
                                       frozenset(r for r in required if isinstance(r, str)))
    return shapes, None


@dataclass
class ArgsScan:
    """Where a scan of a call's argument text ended: ``state`` (module constants below), the keys written,
    the key being written (``partial``) and what was written since the last structural character
    (``written``: whitespace, or the text after the closing brace)."""

    state: str = "start"
    keys: list[str] = field(default_factory=list)
    partial: str = ""
    written: str = ""
    after_comma: bool = False


# scan states: before "{", expecting a key, in a key, after a key, after ":", in a string value, in another
# value, after a value, after the closing "}"
START, OBJ, KEY, COLON, VALUE, STRING, OTHER, AFTER, DONE = (
    "start", "obj", "key", "colon", "value", "string", "other", "after", "done")


def scan_arguments(text: str) -> ArgsScan:
    """Scan the argument text of one call (a flat or nested JSON object, possibly unfinished) and say where
    it ended (``ArgsScan``). Nested values are skipped as one value; escapes inside strings are honoured."""
    a = ArgsScan()
    depth, in_str, esc = 0, False, False  # inside a non-string value
    i = 0
    while i < len(text):
        ch = text[i]
        s = a.state
        if s == DONE:
            a.written += ch
        elif s == START:
            if ch == "{":
                a.state, a.written, a.after_comma = OBJ, "", False
            elif not ch.isspace():
                a.state = DONE  # not an object: nothing to follow
        elif s == OBJ:
            if ch == '"':
                a.state, a.partial = KEY, ""
            elif ch == "}":
                a.state, a.written = DONE, ""
            else:
                a.written += ch
        elif s == KEY:
            if ch == "\\" and i + 1 < len(text):
                a.partial += text[i: i + 2]
                i += 1
            elif ch == '"':
                a.keys.append(a.partial)
                a.state, a.written = COLON, ""
            else:
                a.partial += ch
        elif s == COLON:
            if ch == ":":
                a.state, a.written = VALUE, ""
            else:
                a.written += ch
        elif s == VALUE:
            if ch == '"':
                a.state = STRING
            elif not ch.isspace():
                a.state, depth, in_str, esc = OTHER, 0, False, False
                continue  # the value's first character is read in OTHER
            else:
                a.written += ch
        elif s == STRING:
            if ch == "\\":
                i += 1
            elif ch == '"':
                a.state, a.written = AFTER, ""
        elif s == OTHER:
            if in_str:
                esc, in_str = (False, in_str) if esc else (ch == "\\", ch != '"')
            elif ch == '"':
                in_str = True
            elif ch in "{[":
                depth += 1
            elif ch in "}]" and depth:
                depth -= 1
            elif depth == 0 and ch in ",}":
                a.state = AFTER
                continue  # the separator is read in AFTER
        elif s == AFTER:
            if ch == ",":
                a.state, a.written, a.after_comma = OBJ, "", True
            elif ch == "}":
                a.state, a.written = DONE, ""
            else:
                a.written += ch
        i += 1
    return a


def _opening(key: str, shape: ToolShape) -> str:
    """'"key": ' and the opening quote of a string value."""
    return f'"{key}"{KEY_SEP}' + ('"' if shape.is_string(key) else "")


def _next_key(shape: ToolShape, written: Sequence[str]) -> str | None:
    """The first required property (schema order) not yet written, else None (close the arguments)."""
    return next((k for k, _ in shape.properties if k in shape.required and k not in written), None)


def _minus(fixed: str, written: str) -> str:
    """The rest of ``fixed`` after what was already ``written`` of it ('' when the text went elsewhere)."""
    return fixed[len(written):] if fixed.startswith(written) else ""


def args_continuation(a: ArgsScan, shape: ToolShape, tail: str) -> tuple[str, float]:
    """(the text fixed after a call's scanned argument text ``a``, its certainty); ('', 0) inside a value."""
    unsure = GUESS if any(k not in a.keys for k, _ in shape.properties if k not in shape.required) else 1.0
    nxt = _next_key(shape, a.keys)
    if a.state == START:
        if nxt is not None:
            return "{" + _opening(nxt, shape), 1.0
        return ("{", 1.0) if shape.properties else ("{}" + tail, GUESS)
    if a.state == OBJ:
        if nxt is None:
            return ("", 0.0) if a.after_comma else (_minus("}" + tail, a.written), unsure)
        return _minus((" " if a.after_comma else "") + _opening(nxt, shape), a.written), 1.0
    if a.state == KEY:  # the next key in schema order, else the one key that the written part fits
        names = [k for k, _ in shape.properties if k.startswith(a.partial) and k not in a.keys]
        key = nxt if nxt is not None and nxt.startswith(a.partial) else names[0] if len(names) == 1 else None
        return (key[len(a.partial):] + _opening(key, shape)[len(key) + 1:], 1.0) if key else ("", 0.0)
    if a.state in (COLON, VALUE):
        rest = KEY_SEP + ('"' if shape.is_string(a.keys[-1]) else "")
        return _minus(rest if a.state == COLON else rest[1:], a.written), 1.0
    if a.state == AFTER:
        if nxt is None:
            return _minus("}" + tail, a.written), unsure
        return _minus(ITEM_SEP + _opening(nxt, shape), a.written), 1.0
    if a.state == DONE:
        return _minus(tail, a.written), GUESS
    return "", 0.0


def fixed_continuation(text: str, syntax: CallSyntax, shapes: Mapping[str, ToolShape]) -> tuple[tuple[str, ...], float]:
    """(the texts the tool schemas fix after the answer so far ``text``, their certainty in (0, 1]); one
    text, or one per tool whose name is still open (the proposer drafts their common tokens: a common
    *text* prefix such as "get_" can tokenize unlike the same characters inside a name); ((), 0) when nothing
    is fixed (module docstring)."""
    at, opener = max(((text.rfind(o), o) for o in syntax.openers),
                     key=lambda x: x[0] + len(x[1]) if x[0] >= 0 else -1)
    if at < 0:
        return _opening_rest(text, syntax, shapes)
    rest = text[at + len(opener):]
    heads = _heads(rest, syntax, shapes)
    if heads[0]:
        return heads
    if syntax.mid not in rest:
        return (), 0.0
    name, args = rest.split(syntax.mid, 1)
    shape = shapes.get(name)
    if shape is None:
        return (), 0.0
    a = scan_arguments(args)
    cont, certainty = args_continuation(a, shape, syntax.tail)
    if not cont and a.state == DONE:  # the call has ended: a parallel call's opening may have begun
        return _opening_rest(text, syntax, shapes)
    return ((cont,), certainty) if cont else ((), 0.0)


def _heads(rest: str, syntax: CallSyntax, shapes: Mapping[str, ToolShape]) -> tuple[tuple[str, ...], float]:
    """After a call opening and ``rest`` of a name: for each tool whose name and ``mid`` ``rest`` begins,
    the rest of them and of its arguments' opening; certainty that of the one tool, 1.0 for several (only
    their common tokens are drafted)."""
    heads = [n for n in shapes if (n + syntax.mid).startswith(rest)]
    conts = [args_continuation(ArgsScan(), shapes[n], syntax.tail) for n in heads]
    texts = tuple((n + syntax.mid)[len(rest):] + c for n, (c, _) in zip(heads, conts))
    return texts, (conts[0][1] if len(heads) == 1 else 1.0) if heads else 0.0


def _opening_rest(text: str, syntax: CallSyntax,
                  shapes: Mapping[str, ToolShape]) -> tuple[tuple[str, ...], float]:
    """The rest of the call opening ``text`` ends with (at least MIN_OPENING_CHARS of it written), each
    followed by what ``_heads`` drafts after it; ((), 0) when ``text`` does not end with an opening begun."""
    opener = syntax.openers[0]
    for k in range(len(opener) - 1, MIN_OPENING_CHARS - 1, -1):
        if text.endswith(opener[:k]):
            texts, certainty = _heads("", syntax, shapes)
            return tuple(opener[k:] + t for t in texts) or (opener[k:],), certainty if texts else 1.0
    return (), 0.0


def common_prefix(seqs: Sequence[Sequence[int]]) -> list[int]:
    """The longest common prefix of token sequences ([] for none)."""
    if not seqs:
        return []
    n = 0
    while all(len(x) > n and x[n] == seqs[0][n] for x in seqs):
        n += 1
    return list(seqs[0][:n])


@dataclass
class SchemaProposal(Proposal):
    """A Proposal (deterministic) with ``score``: expected accepted drafts (length x certainty)."""

    score: float = 0.0


class ToolSchemaProposer:
    """The tool-schema proposer behind the Proposer protocol (module docstring).

    tokenizer: the target's (HF) tokenizer; dialect: the renderer's ``Dialect`` (``Renderer.dialect``);
    block_size: most drafts per round. ``prepare(request)`` takes the request's OpenAI-format tools
    (``request.tools``, a RenderedPrompt's) before ``start``; without it the proposer stands aside.
    Deterministic (probs None: exact at any temperature), no target features. ``stood_aside`` counts
    requests it could not serve, by reason; ``requests`` those it saw.
    """

    layer_ids = None

    def __init__(self, tokenizer: Any, dialect: Any, block_size: int = 24):
        self.tokenizer = tokenizer
        self.syntax = CallSyntax.from_dialect(dialect)
        self.block_size = block_size
        self.shapes: dict[str, ToolShape] = {}
        self.stood_aside: Counter = Counter()
        self.requests = 0
        self._answer: list[int] = []
        self._encoded: dict[str, list[int]] = {}

    def prepare(self, request: Any) -> None:
        """Read the tools of the next request (``request.tools``: OpenAI-format list or None)."""
        self.requests += 1
        self.shapes, reason = tool_shapes(getattr(request, "tools", None))
        if self.syntax is None:
            self.shapes, reason = {}, "template_form"
        if reason:
            self.stood_aside[reason] += 1

    def start(self, prompt_ids: torch.Tensor, features: torch.Tensor | None = None) -> None:
        """Begin a request (prompt_ids: LongTensor [T]); the answer starts after it."""
        self._answer = []

    def propose(self, anchor: int, temperature: float = 0.0,
                generator: torch.Generator | None = None) -> SchemaProposal:
        """The common tokens of the ``fixed_continuation`` texts after the answer so far and ``anchor`` (up to
        block_size); its score is their number times the certainty."""
        if not self.shapes:
            return SchemaProposal(tokens=torch.zeros(0, dtype=torch.long))
        text = self.tokenizer.decode(self._answer + [int(anchor)])
        conts, certainty = fixed_continuation(text, self.syntax, self.shapes)
        ids = common_prefix([self._encode(c) for c in conts])[: self.block_size]
        return SchemaProposal(tokens=torch.tensor(ids, dtype=torch.long), score=len(ids) * certainty)

    def commit(self, tokens: torch.Tensor, features: torch.Tensor | None = None) -> None:
        """Append the anchor and the accepted drafts (LongTensor [a+1])."""
        self._answer.extend(int(t) for t in tokens.reshape(-1).tolist())

    def _encode(self, text: str) -> list[int]:
        ids = self._encoded.get(text)
        if ids is None:
            ids = self._encoded[text] = list(self.tokenizer(text, add_special_tokens=False).input_ids)
        return ids
