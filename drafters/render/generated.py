"""Labels of generated text: segment labels for tokens a model generated (no logged message to locate),
found from the template's reasoning wrapper and tool-call markup learned by probing, with the same rules as
the training labels. Evaluation uses them to report accepted length per segment."""

from __future__ import annotations

import json

from drafters.render.codec import TokenCodec
from drafters.render.records import Dialect
from drafters.segments import Segment

_SPACE = " \t\n"


def segment_completion(token_ids: list[int], codec: TokenCodec, dialect: Dialect) -> list[int]:
    """Segment labels [n] for generated tokens [n], with the rules used for training labels.

    Decodes the tokens, finds the template's tool-call markup (learned from a probe render, e.g.
    ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``) and labels names TOOL_NAME,
    argument JSON TOOL_ARGS and the markup around them TOOL_STRUCTURE; text inside the reasoning
    wrapper (``<think>...</think>``) is REASONING; the rest TEXT. End-of-turn tokens follow the
    training rule (TOOL_STRUCTURE after a tool call, else TEXT).
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
    return out


def label_generated_text(text: str, dialect: Dialect) -> bytearray:
    """Character-level `Segment` labels [len(text)] of generated text (the rules of `segment_completion`,
    before they are mapped to tokens): tool-call names, arguments and markup, reasoning, text."""
    seg = bytearray([Segment.TEXT]) * len(text)
    _label_reasoning(text, seg, dialect.reasoning_open, dialect.reasoning_close)
    _label_tool_calls(text, seg, dialect)
    return seg


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


def _label_reasoning(text: str, seg: bytearray, open_: str, close: str) -> None:
    """Label each reasoning wrapper (``open_`` to ``close``, or to the end) REASONING, in place."""
    pos = 0
    while True:
        i = text.find(open_, pos)
        if i < 0:
            break
        j = text.find(close, i + len(open_))
        j = len(text) if j < 0 else j + len(close)
        while j < len(text) and text[j] in _SPACE:  # the gap after the wrapper, as in training labels
            j += 1
        seg[i:j] = bytes([Segment.REASONING]) * (j - i)
        pos = j


def _label_tool_calls(text: str, seg: bytearray, dialect: Dialect) -> None:
    """Label each tool call written in the probed markup (prefix, name, mid, JSON arguments, suffix) in
    place: names TOOL_NAME, arguments TOOL_ARGS, the markup TOOL_STRUCTURE."""
    if not dialect.call_prefix or dialect.call_mid is None:
        return
    prefix = dialect.call_prefix.lstrip()
    mid = dialect.call_mid
    suffix = (dialect.call_suffix or "").rstrip()
    decoder = json.JSONDecoder()
    pos = 0
    while True:
        i = text.find(prefix, pos)
        if i < 0:
            break
        ns = i + len(prefix)
        ne = text.find(mid, ns)
        if ne < 0 or "\n" in text[ns:ne]:
            pos = ns
            continue
        while i > 0 and text[i - 1] in _SPACE and seg[i - 1] == Segment.TEXT:
            i -= 1  # the separator before a call is tool structure, as in training labels
        seg[i:ns] = bytes([Segment.TOOL_STRUCTURE]) * (ns - i)
        seg[ns:ne] = bytes([Segment.TOOL_NAME]) * (ne - ns)
        a = ne + len(mid)
        seg[ne:a] = bytes([Segment.TOOL_STRUCTURE]) * (a - ne)
        try:
            _, ae = decoder.raw_decode(text, a)
        except ValueError:
            ae = len(text)  # truncated or invalid arguments: the rest is arguments
        seg[a:ae] = bytes([Segment.TOOL_ARGS]) * (ae - a)
        se = _suffix_end(text, ae, suffix)
        seg[ae:se] = bytes([Segment.TOOL_STRUCTURE]) * (se - ae)
        pos = max(se, i + 1)


def _suffix_end(text: str, ae: int, suffix: str) -> int:
    """End of the call markup after arguments ending at ``ae``: the suffix right there, else the next
    occurrence of its last 12 characters, else ``ae``."""
    if suffix and text.startswith(suffix, ae):
        return ae + len(suffix)
    tail = suffix.strip()[-12:]
    k = text.find(tail, ae) if suffix.strip() else -1
    return k + len(tail) if k >= 0 else ae
