"""mini-swe-agent trajectories (``*.traj.json``).

Two shapes: ``{info{exit_status, submission, model_stats, mini_version, config}, messages[{role,
content, extra{response}}], trajectory_format: "mini-swe-agent-1", instance_id}``, and older test
fixtures that are a bare list of ``{role, content}`` messages.

There are no structured tool calls: every assistant turn ends in one fenced bash block (the model
writes the command as text), and the result comes back as a ``user`` message with
``<returncode>``/``<output>`` tags. So assistant messages are text only (0 tool calls) and the
observations stay user messages, as the model saw them.

Reasoning is not in ``content``: it lives only in ``extra.response.choices[0].message.reasoning``
(text) and ``reasoning_details`` (``reasoning.text`` and ``reasoning.encrypted`` items). It becomes
a ReasoningPart whose ``signature`` is the encrypted blob, verbatim. The model comes from
``extra.response.model``, else ``info.config.model.model_name``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from drafters.traces.formats._content import content_parts, first_choice_message
from drafters.traces.formats._reading import load_json, src
from drafters.traces.formats._records import guard_file
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import Conversation, Message, ReasoningPart

NAME = "mini_swe_agent"


def sniff(head: str, filename: str) -> bool:
    """``*.traj.json``, or an object with ``"trajectory_format": "mini-swe-agent..."``."""
    if ".traj.json" in filename:
        return True
    return '"trajectory_format"' in head and "mini-swe-agent" in head


def _reasoning(response: Any) -> ReasoningPart | None:
    msg = first_choice_message(response)
    if msg is None:
        return None
    text = msg.get("reasoning") or msg.get("reasoning_content") or ""
    signature = None
    for d in msg.get("reasoning_details") or []:
        if isinstance(d, dict) and d.get("type") == "reasoning.encrypted" and isinstance(d.get("data"), str):
            signature = d["data"]
        elif isinstance(d, dict) and d.get("type") == "reasoning.text" and not text:
            text = d.get("text") or ""
    if not text and signature is None:
        return None
    return ReasoningPart(str(text), signature=signature, redacted=not text)


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """One conversation per file."""
    doc = load_json(stream, filename, problems, NAME)
    if doc is None:
        return
    if isinstance(doc, list):
        raw, record, info = doc, "$", {}
    elif isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        raw, record, info = doc["messages"], "$.messages", doc.get("info") or {}
    else:
        problems.error("bad_record", "expected a message list or an object with 'messages'",
                       src(NAME, filename, record="$"))
        return
    source = src(NAME, filename, record=record)
    default_model = None
    try:
        default_model = info["config"]["model"]["model_name"]
    except (TypeError, KeyError):
        pass
    messages: list[Message] = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            problems.error("bad_record", "message is not {role, content} with a known role", source, f"[{i}]")
            continue
        parts = content_parts(m.get("content"))
        model = None
        if m["role"] == "assistant":
            response = (m.get("extra") or {}).get("response") if isinstance(m.get("extra"), dict) else None
            r = _reasoning(response)
            if r is not None:
                parts.insert(0, r)
            model = (response or {}).get("model") if isinstance(response, dict) else None
            model = model or default_model
        messages.append(Message(m["role"], parts, model=model))
    conv_id = str(doc.get("instance_id")) if isinstance(doc, dict) and doc.get("instance_id") else Path(filename).name
    yield Conversation(id=conv_id, source=source, messages=messages)


FORMAT = TraceFormat(
    name=NAME,
    description="mini-swe-agent .traj.json (bash in text, results as user messages, reasoning in extra)",
    sniff=sniff,
    parse=parse,
)
