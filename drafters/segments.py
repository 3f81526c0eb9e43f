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
