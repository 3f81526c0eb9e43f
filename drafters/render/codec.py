"""The tokenizer as rendering uses it: text to ids with character offsets, the way the serving engine
tokenizes a rendered prompt (``add_special_tokens=False``), and the added tokens a template writes."""

from __future__ import annotations

import re


class TokenCodec:
    """Encode rendered text through a transformers tokenizer.

    ``backend`` is the ``tokenizers.Tokenizer`` of a fast tokenizer (used directly for offsets and
    streaming decode), or ``None``. ``added_re`` matches the tokenizer's added tokens that are not
    whitespace, longest first (end-of-turn markers and other template markup), or is ``None`` when there
    are none.
    """

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.backend = getattr(tokenizer, "_tokenizer", None)  # tokenizers.Tokenizer of a fast tokenizer
        added = sorted(getattr(tokenizer, "added_tokens_encoder", {}) or {}, key=len, reverse=True)
        self.added_tokens = tuple(t for t in added if t and not t.isspace())
        self.added_re = re.compile("|".join(map(re.escape, self.added_tokens))) if self.added_tokens else None

    def encode(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """(token ids [T], character offsets [T] of (start, end)) of ``text``, no special tokens added."""
        if self.backend is not None:
            enc = self.backend.encode(text, add_special_tokens=False)
            return enc.ids, enc.offsets  # each access builds a fresh list
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
