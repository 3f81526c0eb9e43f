"""Segment labels of rendered tokens (placeholder until the render split lands: re-exports render's enum)."""

from drafters.render import SUPERVISED, Segment

__all__ = ["SUPERVISED", "Segment"]
