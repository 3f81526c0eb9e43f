"""Template probing: the small conversations rendered to learn what a chat template supports (argument
type, empty content, id form, tool support, end-of-turn and reasoning markup)."""

from __future__ import annotations

import json

from drafters.render.labels import _arg_candidates
from drafters.traces.model import ToolDef

_PROBE_TOOL = ToolDef(
    name="probe_lookup_qz",
    description="Probe tool description qz.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what to look up"}},
        "required": ["query"],
    },
)
_PROBE_ARGS = {"query": "probe argument qz", "limit": 3}
_PROBE_RESULT = "probe result qz"
_PROBE_SYSTEM = "Probe system qz."
_PROBE_USER = "Probe user qz?"
_PROBE_ANSWER = "Probe answer qz."
_PROBE_FOLLOWUP = "Probe follow-up qz?"
_PROBE_REASONING = "Probe reasoning qz."
_MARKER = "\u2063Qz7marker"  # an answer text no real answer starts with


def _args_single_encoded(text: str, mode: str) -> bool:
    if mode == "object":
        return any(c in text for c in _arg_candidates(_PROBE_ARGS))
    raw = json.dumps(_PROBE_ARGS, ensure_ascii=False, separators=(",", ":"))
    return raw in text and json.dumps(raw)[1:-1] not in text.replace(raw, "")
