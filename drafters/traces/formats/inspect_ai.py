"""Inspect AI evaluation logs: ``.json`` logs and ``.eval`` archives.

A ``.json`` log is ``{version, status, eval{model, task, ...}, plan, results, samples[]}``; an ``.eval`` log
is a ZIP archive of JSON members (``header.json``, ``samples/<id>_epoch_<n>.json``, journal and summary
files), read as the concatenation of its members (``io.open_text``). One conversation per sample:
``{id, epoch, input, messages[], events[], attachments{}}``.

Messages (``ChatMessage``): ``{role: system|user|assistant|tool, content: str | [{type: text|reasoning|
image|audio|video|document|data, ...}], model?, tool_calls[{id, function, arguments{}}], tool_call_id,
function, error?}``. Long strings are stored once in the sample's ``attachments`` and referenced as
``attachment://<hash>``; references are resolved before reading.

Calls: every ``model`` event of the sample is one LLM call with its exact ``input``, ``tools`` (name,
description, parameters) and ``output.choices[0].message``; model events inside scorer spans (model-graded
scoring) are not the agent's calls and are skipped. A sample without model events (logs written without
events) is read from its ``messages`` transcript.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from drafters.traces.formats._content import (
    as_list,
    content_parts,
    link_models,
    merge_adjacent_tool_messages,
    tool_defs,
)
from drafters.traces.formats._reading import iter_values, src
from drafters.traces.formats._records import RECORD_ERRORS
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import (
    Conversation,
    LLMCall,
    Message,
    Source,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

NAME = "inspect_ai"
_MEDIA = {"image": "image", "audio": "audio", "video": "video", "document": "document"}
_ATTACHMENT = "attachment://"


def sniff(head: str, filename: str) -> bool:
    """``.eval`` archives, or a JSON log with Inspect's ``eval`` header and ``samples`` (or a lone sample)."""
    if filename.endswith(".eval"):
        return True
    window = head[:30000]
    return '"eval"' in window and ('"task_id"' in window or '"task"' in window) and (
        '"samples"' in window or '"plan"' in window) and '"version"' in window


def _resolve(value: Any, attachments: dict) -> Any:
    """``value`` with every ``attachment://<hash>`` string replaced by the attachment's text."""
    if isinstance(value, str):
        if value.startswith(_ATTACHMENT):
            return attachments.get(value[len(_ATTACHMENT):], value)
        return value
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value




def _message(raw: Any, model: str | None = None) -> Message | None:
    if not isinstance(raw, dict) or raw.get("role") not in ("system", "user", "assistant", "tool"):
        return None
    role = raw["role"]
    if role == "tool":
        text = "".join(p.text for p in content_parts(raw.get("content")) if isinstance(p, TextPart))
        return Message("tool", [ToolResultPart(raw.get("tool_call_id"), text, is_error=raw.get("error") is not None,
                                               name=raw.get("function"))])
    parts = content_parts(raw.get("content"))
    if role != "assistant":
        return Message(role, parts)
    for call in as_list(raw.get("tool_calls")):
        if isinstance(call, dict):
            parts.append(ToolCallPart.from_raw(call.get("id"), str(call.get("function")), call.get("arguments")))
    return Message("assistant", parts, model=raw.get("model") if isinstance(raw.get("model"), str) else model)


def _messages(raws: Any, model: str | None = None) -> list[Message]:
    return merge_adjacent_tool_messages([m for m in (_message(r, model) for r in as_list(raws)) if m is not None])


def _scorer_spans(events: list) -> set:
    """Ids of scorer spans and every span nested in one."""
    spans: set = set()
    for ev in events:
        if isinstance(ev, dict) and ev.get("event") == "span_begin" and (
                ev.get("type") in ("scorer", "scorers") or ev.get("parent_id") in spans):
            spans.add(ev.get("id"))
    return spans


def _calls(sample: dict, conv_id: str, model: str | None) -> list[LLMCall]:
    events = as_list(sample.get("events"))
    skip = _scorer_spans(events)
    calls: list[LLMCall] = []
    for ev in events:
        if not isinstance(ev, dict) or ev.get("event") != "model" or ev.get("span_id") in skip:
            continue
        output = ev.get("output") if isinstance(ev.get("output"), dict) else {}
        choices = as_list(output.get("choices"))
        raw = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
        name = output.get("model") if isinstance(output.get("model"), str) else ev.get("model") or model
        completion = _message({**raw, "role": "assistant"} if isinstance(raw, dict) else None, name)
        context = _messages(ev.get("input"))
        if completion is None or not context:
            continue
        calls.append(LLMCall(conv_id, len(calls), tool_defs(ev.get("tools")), context, completion))
    return calls


def _conversation(sample: dict, source: Source, conv_id: str, model: str | None) -> Conversation:
    sample = _resolve(sample, sample.get("attachments") if isinstance(sample.get("attachments"), dict) else {})
    messages = _messages(sample.get("messages"), model)
    calls = _calls(sample, conv_id, model)
    if not calls:
        return Conversation(id=conv_id, source=source, messages=messages)
    link_models(calls)
    tools = next((c.tools for c in reversed(calls) if c.tools), [])
    return Conversation(id=conv_id, source=source, tools=tools, messages=messages, explicit_calls=calls)


def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """One conversation per sample (of a whole log, or of an archive's sample members)."""
    stem = filename.rsplit("/", 1)[-1]
    model: str | None = None
    for line, ordinal, value in iter_values(stream, filename, NAME, problems):
        if not isinstance(value, dict):
            continue  # an archive's summary lists
        header = value.get("eval") if isinstance(value.get("eval"), dict) else None
        if header is not None and isinstance(header.get("model"), str):
            model = header["model"]
        samples = value.get("samples") if isinstance(value.get("samples"), list) else (
            [value] if "messages" in value and ("epoch" in value or "events" in value) else [])
        for i, sample in enumerate(samples):
            where = src(NAME, filename, line=line, record=f"$[{ordinal}].samples[{i}]" if header else f"$[{ordinal}]")
            if not isinstance(sample, dict) or not isinstance(sample.get("messages"), list):
                problems.error("bad_record", "sample without a messages list", where, "messages")
                continue
            conv_id = f"{NAME}:{stem}:{sample.get('id')}:{sample.get('epoch', 1)}"
            try:
                yield _conversation(sample, where, conv_id, model)
            except RECORD_ERRORS as exc:
                problems.error("bad_record", f"sample not understood ({type(exc).__name__}: {exc})", where)


FORMAT = TraceFormat(
    name=NAME,
    description="Inspect AI evaluation logs (.json and .eval): samples, model events, tool calls",
    sniff=sniff,
    parse=parse,
)
