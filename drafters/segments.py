"""Segment labels of rendered tokens: what part of a conversation each token belongs to.

One small module that rendering (drafters.render) and training (per-segment loss and metrics) both import.
"""

from __future__ import annotations

import enum


class Segment(enum.IntEnum):
    """Per-token labels. Values are stable: they are stored in shards and reports."""

    MARKUP = 0
    SYSTEM = 1
    USER = 2
    TOOL_RESULT = 3
    TEXT = 4
    REASONING = 5
    TOOL_NAME = 6
    TOOL_ARGS = 7
    TOOL_STRUCTURE = 8


#: Segments an assistant generates. A token carries loss only where ``loss_mask`` is 1: in a per-call row the
#: earlier assistant turns of the context keep these labels but have mask 0.
SUPERVISED = frozenset({Segment.TEXT, Segment.REASONING, Segment.TOOL_NAME, Segment.TOOL_ARGS, Segment.TOOL_STRUCTURE})

__all__ = ["SUPERVISED", "Segment"]
