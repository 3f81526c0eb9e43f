"""Context handoffs and result lists of agent trajectories (ATIF, docs/traces.md "Files of formats with no
module"): a step whose observation refers the context to another trajectory file (a summarization, a
delegated result), and an observation written as a list of results.
"""

from __future__ import annotations

from typing import Any

from drafters.traces.formats._content import as_text
from drafters.traces.formats._spellings import block_parts, get
from drafters.traces.formats.base import ProblemSink
from drafters.traces.model import Message, Source, TextPart

RESULT_IDS = ("source_call_id", "tool_call_id", "call_id", "tool_use_id", "id")
SUBAGENT_KEYS = ("subagent_trajectory_ref", "subagent_trajectory_refs")  # ATIF: a result kept in another file


def handed_off(raw: dict, observation: str | None, role: str) -> bool:
    """Whether an agent step's observation says the context went on in another trajectory (ATIF
    ``observation.results[].subagent_trajectory_ref``): on a step that is not the agent's (Harbor's
    terminus-2 writes its context summarization as a ``system`` step referring to the summary, questions and
    answers sub-agents, after which the agent starts again from a summary this file does not hold), or as a
    call's result whose content is left to the sub-agent's trajectory (what the agent was shown is not here)."""
    value = get(raw, observation, None) if observation else None
    items = value.get("results") if isinstance(value, dict) else None
    for r in items if isinstance(items, list) else []:
        if isinstance(r, dict) and any(r.get(k) not in (None, [], {}, "") for k in SUBAGENT_KEYS) and \
                (role != "assistant" or all(r.get(k) in (None, "") for k in ("content", "output", "result"))):
            return True
    return False


def cut_at_handoff(messages: list[Message], handoff: tuple[int, str, Any], problems: ProblemSink,
                   source: Source) -> list[Message]:
    """The messages before a context handoff, when calls follow it: their contexts are what the agent saw after
    the handoff (a summary, a sub-agent's answer), which another trajectory file records; reading them on
    from the steps before would give them contexts the model never saw, so they are refused
    (``handoff_context_not_recorded``, naming the file and step). Nothing is cut when no call follows."""
    kept, at, step_id = handoff
    refused = sum(1 for m in messages[kept:] if m.role == "assistant")
    if not refused:
        return messages
    step = f"step {step_id} ({at})" if step_id is not None else at
    problems.error(
        "handoff_context_not_recorded",
        f"{source.where()}: {step} hands the context off to another trajectory (subagent_trajectory_ref: a "
        f"context summarization or a delegated result); the {refused} LLM call(s) after it saw a context this file "
        "does not record, so they are refused (the calls before it are read)", source, at)
    return messages[:kept]


def result_list(value: Any) -> list[tuple[str | None, str]] | None:
    """An observation written as a list of results (ATIF ``{"results": [{"source_call_id", "content"}]}``):
    ``(call id or None, text)`` per result; None for any other observation."""
    items = value.get("results") if isinstance(value, dict) else None
    if not isinstance(items, list) or not items or not all(isinstance(r, dict) for r in items):
        return None
    if not all(any(k in r for k in ("content", "output", "result", *RESULT_IDS)) for r in items):
        return None
    out = []
    for r in items:
        rid = next((r[k] for k in RESULT_IDS if isinstance(r.get(k), str) and r[k]), None)
        content = next((r[k] for k in ("content", "output", "result") if k in r), None)
        text = "".join(p.text for p in block_parts(content) if isinstance(p, TextPart)) \
            if isinstance(content, list) else as_text(content) if content is not None else ""
        out.append((rid, text))
    return out
