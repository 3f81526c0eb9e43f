"""Labels of generated text: segment labels for tokens a model generated (no logged message to locate),
its pieces found by the template's reasoning wrapper and tool-call markup learned by probing, labelled by
the rule of training labels (one rule, `drafters.render.labels.completion_spans`). Evaluation uses them to
report accepted length per segment."""

from __future__ import annotations

from drafters.render.codec import TokenCodec
from drafters.render.labels import Located, completion_spans, opened_reasoning, prose_pieces, wrap_reasoning
from drafters.render.markup import ParsedCall, call_pieces, parse_calls
from drafters.render.records import Dialect
from drafters.segments import Segment


def segment_completion(token_ids: list[int], codec: TokenCodec, dialect: Dialect) -> list[int]:
    """Segment labels [n] for generated tokens [n], with the rules used for training labels.

    Decodes the tokens, labels the text per character (`label_generated_text`) and gives each token the
    label of its middle character, as training labels do. End-of-turn tokens follow the training rule
    (TOOL_STRUCTURE after a tool call, else TEXT).
    """
    ids = list(token_ids)
    if not ids:
        return []
    tokenizer = codec.tokenizer
    text = tokenizer.decode(ids, skip_special_tokens=False)
    ends = decode_ends(ids, text, codec)
    seg = label_generated_text(text, dialect) if text else bytearray([Segment.TEXT])
    out = []
    start = 0
    for end in ends:  # each token takes the label of its middle character
        end = min(end, len(text))
        if end > start:
            out.append(int(seg[(start + end - 1) // 2]))
        else:
            out.append(int(seg[min(start, len(seg) - 1)]))
        start = end
    # End-of-turn tokens follow the training rule.
    saw_tool = False
    eot = set(dialect.eot_tokens)
    for i, tok in enumerate(tokenizer.convert_ids_to_tokens(ids)):
        if out[i] in (Segment.TOOL_NAME, Segment.TOOL_ARGS):
            saw_tool = True
        if tok in eot:
            out[i] = int(Segment.TOOL_STRUCTURE if saw_tool else Segment.TEXT)
            saw_tool = False  # the rule is per turn
    return out


def label_generated_text(text: str, dialect: Dialect) -> bytearray:
    """Character-level `Segment` labels [len(text)] of generated text (the rules of `segment_completion`,
    before they are mapped to tokens).

    The pieces of the answer are found in the text: tool calls by the template's markup learned by probing
    (`drafters.render.markup.parse_calls`: names, arguments as one JSON value or as keys and values, with
    indexed or id-carrying markers), and around them text and inline reasoning
    (`drafters.render.labels.prose_pieces`); then the rule of training labels
    (`drafters.render.labels.completion_spans`) labels the pieces, the markup between them and the
    end-of-turn token. Text that goes on after an end-of-turn token (a generation not stopped there) is
    labelled the same way, turn by turn.
    """
    seg = bytearray([Segment.TEXT]) * len(text)
    start = 0
    while start < len(text):
        start = _label_turn(text, start, dialect, seg)
    return seg


def _label_turn(text: str, start: int, dialect: Dialect, seg: bytearray) -> int:
    """Label ``text`` from ``start`` to just after the next end-of-turn token (or its end) into ``seg``;
    returns where that turn ends."""
    stop, end = _end_of_turn(text, start, dialect.eot_tokens)
    opened = opened_reasoning(text, start, stop, dialect) if start == 0 else []  # the prompt's block
    pos = opened[-1].end if opened else start
    calls, regions = parse_calls(text, dialect, pos, stop)
    found = opened + call_pieces(calls)
    for s, e in regions + [(stop, stop)]:
        found += [Located(a, b, g, False) for a, b, g in prose_pieces(text, pos, s, dialect)]
        pos = max(pos, e)
    found = wrap_reasoning(sorted(found), text, start, end, dialect)
    for s, e, lab in completion_spans(found, start, end, bool(calls)):
        seg[s:e] = bytes([lab]) * (e - s)
    return end


def generated_calls(text: str, dialect: Dialect) -> list[ParsedCall]:
    """The tool calls of generated text, in order, as labelling finds them (turn by turn, by the markup
    probing learned: `drafters.render.markup.parse_calls`); what the tool-call checks of regeneration and
    evaluation read (`drafters.toolcalls`)."""
    calls: list[ParsedCall] = []
    start = 0
    while start < len(text):
        stop, end = _end_of_turn(text, start, dialect.eot_tokens)
        opened = opened_reasoning(text, start, stop, dialect) if start == 0 else []
        calls += parse_calls(text, dialect, opened[-1].end if opened else start, stop)[0]
        start = end
    return calls


def _end_of_turn(text: str, start: int, eot_tokens: tuple[str, ...]) -> tuple[int, int]:
    """(start, end) of the first end-of-turn token in ``text[start:]``; (len, len) when there is none."""
    best = (len(text), len(text))
    for t in eot_tokens:
        i = text.find(t, start, best[0])
        if i >= 0:
            best = (i, i + len(t))
    return best


def decode_ends(ids: list[int], text: str, codec: TokenCodec) -> list[int]:
    """Character end offset [n] of each token in ``text == decode(ids)``.

    Linear: the ids go once through the tokenizer's own decoder as a stream
    (``tokenizers.decoders.DecodeStream``); a token that ends inside a character (part of a multi-byte
    UTF-8 sequence) adds nothing, the token completing it gets the character. When the stream does not
    reproduce ``text`` (no fast backend, Python-side space clean-up), each prefix is decoded instead,
    which is exact for byte BPE but quadratic in ``n``.
    """
    ends = _stream_ends(ids, codec.backend) if codec.backend is not None else None
    if ends is not None and ends[1] == text:
        return ends[0]
    decode = codec.tokenizer.decode
    return [len(decode(ids[: i + 1], skip_special_tokens=False)) for i in range(len(ids))]


def _stream_ends(ids: list[int], backend) -> tuple[list[int], str] | None:
    """(cumulative text length after each token, streamed text), or None when streaming fails."""
    try:
        from tokenizers.decoders import DecodeStream

        stream = DecodeStream(skip_special_tokens=False)
        ends, chunks, n = [], [], 0
        for t in ids:
            chunk = stream.step(backend, t)
            if chunk:
                chunks.append(chunk)
                n += len(chunk)
            ends.append(n)
    except Exception:  # noqa: BLE001 - an old tokenizers or an odd decoder: the caller decodes prefixes
        return None
    return ends, "".join(chunks)
