"""OpenTelemetry GenAI spans: Jaeger JSON, OTLP JSON, and console-exporter dumps.

Exporter shapes (each normalised to one span record: trace id, span id, start time, end time,
attributes):

- Jaeger UI export: ``{data[{traceID, spans[{spanID, operationName, references, startTime (us),
  duration, tags[{key, type, value}]}]}]}``;
- OTLP JSON (file exporter, collector): ``{resourceSpans[{scopeSpans[{spans[{traceId, spanId,
  parentSpanId, name, startTimeUnixNano, endTimeUnixNano, attributes[{key, value{stringValue|
  intValue|...}}]}]}]}]}``, one object per file or per line;
- Grafana Tempo: the same OTLP resource spans under ``batches`` (trace-by-id API v1) or
  ``{"trace": {"resourceSpans": [...]}}`` (v2); Jaeger's v3 API under ``{"result": {...}}``;
- any-agent ``AgentTrace`` JSON: ``{spans[{name, context{trace_id, span_id}, start_time (ns), end_time,
  attributes{gen_ai.operation.name: call_llm|execute_tool|invoke_agent, gen_ai.input.messages (OpenAI
  chat messages), gen_ai.output + gen_ai.output.type}}], final_output}``; older any-agent versions record
  no input messages (contexts rebuilt where the tool spans determine them, see below);
- Monocle's spans (``_monocle``: messages in ``data.input`` / ``data.output`` events), as its file exporter writes
  them (console-exporter objects) and as the Okahu service's trace JSON (``{trace_id, spans[{span_name, span_id,
  trace_id, parent_id, attributes, events}]}``);
- console exporter (``ConsoleSpanExporter``): pretty-printed span objects one after another (not
  JSONL) with ``context{trace_id, span_id}``, ``parent_id``, ``start_time``, ``end_time`` and an
  ``attributes`` mapping. It prints spans more than once, including in-progress copies with
  ``end_time: null``: spans are deduplicated on (trace id, span id), the finished copy wins and
  in-progress copies are dropped (``in_progress_span`` warning when no finished copy exists).

An LLM call is a span whose ``gen_ai.operation.name`` is ``chat`` / ``text_completion`` /
``generate_content``. Its messages are JSON *strings* in attributes (GenAI semantic conventions):
``gen_ai.system_instructions``, ``gen_ai.input.messages`` and ``gen_ai.output.messages`` =
``[{role, parts[{type: text|reasoning|tool_call{id, name, arguments}|tool_call_response{id,
response}}], finish_reason}]``, tools in ``gen_ai.tool.definitions``; the older OpenLLMetry flat form
(``gen_ai.prompt.N.role/content``, ``gen_ai.completion.N.*``) is read too. Message content exists only
when the instrumentation's content capture was on: a call span without it is a lost call, a
``content_not_captured`` error. any-agent versions before input capture record a call's output but not
its input: such a call's context is rebuilt from the call before it, that call's output and the
``execute_tool`` spans that ran in between (``context_rebuilt`` warning); where they do not determine it
(the first call, a text answer before, a tool span missing) the call is a ``content_not_captured`` error. The same call described by two spans (nested
instrumentations) is counted once (``duplicate_llm_call``).

Each call records its own context, so calls are explicit ``LLMCall``s. Calls of one trace are
chained into one conversation when a call's context extends the previous call's context plus its
completion (an agent loop); otherwise they start a new conversation (another agent, a rewritten
history).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import IO, Any

from drafters.traces.formats import _genai_events, _monocle
from drafters.traces.formats._chains import CallChains
from drafters.traces.formats._content import as_list, as_text, semconv_parts, tool_defs
from drafters.traces.formats._reading import iter_values, src
from drafters.traces.formats._records import guard_file
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.formats.openai_chat import message_from_openai
from drafters.traces.model import (
    Conversation,
    LLMCall,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

NAME = "otel_genai"
CALL_OPERATIONS = {"chat", "text_completion", "generate_content", "completion", "call_llm"}


def sniff(head: str, filename: str) -> bool:
    """Jaeger (``"traceID"`` + ``"spans"`` + ``"operationName"``), OTLP (``"resourceSpans"``), or console
    dumps (``"context"`` with ``"trace_id"``/``"span_id"`` and ``"attributes"``)."""
    if '"resourceSpans"' in head or ('"batches"' in head and ('"scopeSpans"' in head
                                                             or '"instrumentationLibrarySpans"' in head)):
        return True
    if '"traceID"' in head and '"spans"' in head and '"operationName"' in head:
        return True
    if '"span_name"' in head and '"span_id"' in head and '"trace_id"' in head:  # Okahu's trace JSON (Monocle spans)
        return True
    return '"context"' in head and '"trace_id"' in head and '"span_id"' in head and '"attributes"' in head


# ------------------------------------------------------------------------------------- span readers


def _otlp_value(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return v["intValue"]
    if "arrayValue" in v:
        return [_otlp_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return {kv.get("key"): _otlp_value(kv.get("value")) for kv in (v["kvlistValue"] or {}).get("values", [])}
    return None


def _seconds(value: Any) -> float | None:
    """Seconds since the epoch of an ISO timestamp (console exporter) or integer nanoseconds (any-agent)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value / 1e9
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _spans_of(value: Any, line: int) -> Iterator[dict]:
    """Normalised spans ``{trace, span, name, start, end, attrs, line}`` in one decoded JSON value."""
    if isinstance(value, list):
        for v in value:
            yield from _spans_of(v, line)
        return
    if not isinstance(value, dict):
        return
    if isinstance(value.get("data"), list):  # Jaeger
        for trace in value["data"]:
            for s in (trace or {}).get("spans") or []:
                if not isinstance(s, dict):
                    continue
                attrs = {t["key"]: t.get("value") for t in as_list(s.get("tags")) if isinstance(t, dict) and isinstance(t.get("key"), str)}
                start = s.get("startTime")
                start = start / 1e6 if isinstance(start, (int, float)) else None
                dur = s.get("duration")
                yield {"trace": s.get("traceID"), "span": s.get("spanID"), "name": s.get("operationName"),
                       "start": start, "end": (start + dur / 1e6) if start is not None and isinstance(dur, (int, float)) else start,
                       "attrs": attrs, "line": line}
        return
    for wrapper in ("trace", "result"):  # Tempo v2 / Jaeger v3 API: {"trace"|"result": {"resourceSpans": [...]}}
        if isinstance(value.get(wrapper), dict) and "resourceSpans" in value[wrapper]:
            yield from _spans_of(value[wrapper], line)
            return
    if isinstance(value.get("spans"), list) and not isinstance(value.get("data"), list):  # any-agent AgentTrace
        for v in value["spans"]:
            yield from _spans_of(v, line)
        return
    batches = value.get("resourceSpans") if isinstance(value.get("resourceSpans"), list) else value.get("batches")
    if isinstance(batches, list):  # OTLP JSON; Grafana Tempo writes the same resource spans as "batches"
        for rs in batches:
            for ss in (rs or {}).get("scopeSpans") or (rs or {}).get("instrumentationLibrarySpans") or []:
                for s in (ss or {}).get("spans") or []:
                    if not isinstance(s, dict):
                        continue
                    attrs = {a["key"]: _otlp_value(a.get("value")) for a in as_list(s.get("attributes"))
                             if isinstance(a, dict) and isinstance(a.get("key"), str)}
                    st, en = s.get("startTimeUnixNano"), s.get("endTimeUnixNano")
                    events = {e.get("name"): {a["key"]: _otlp_value(a.get("value")) for a in as_list(e.get("attributes"))
                                              if isinstance(a, dict) and isinstance(a.get("key"), str)}
                              for e in as_list(s.get("events")) if isinstance(e, dict)}
                    ordered = [(e.get("name"), {a["key"]: _otlp_value(a.get("value")) for a in as_list(e.get("attributes"))
                                                if isinstance(a, dict) and isinstance(a.get("key"), str)})
                               for e in as_list(s.get("events")) if isinstance(e, dict)]
                    yield {"trace": s.get("traceId"), "span": s.get("spanId"), "parent": s.get("parentSpanId"),
                           "name": s.get("name"), "start": int(st) / 1e9 if st not in (None, "") else None,
                           "end": int(en) / 1e9 if en not in (None, "", "0", 0) else None,
                           "attrs": attrs, "events": events, "event_list": ordered, "line": line}
        return
    ctx = value.get("context")
    if not isinstance(ctx, dict) and "span_id" in value and isinstance(value.get("attributes"), dict):
        ctx = value  # Okahu's trace JSON: Monocle spans with their ids at the top (span_name, span_id, trace_id)
    if isinstance(ctx, dict) and "span_id" in ctx:  # console exporter
        attrs = value.get("attributes") if isinstance(value.get("attributes"), dict) else {}
        events = {e.get("name"): e.get("attributes") if isinstance(e.get("attributes"), dict) else {}
                  for e in as_list(value.get("events")) if isinstance(e, dict)}
        ordered = [(e.get("name"), e.get("attributes") if isinstance(e.get("attributes"), dict) else {})
                   for e in as_list(value.get("events")) if isinstance(e, dict)]
        yield {"trace": ctx.get("trace_id"), "span": ctx.get("span_id"), "parent": value.get("parent_id"),
               "name": value.get("name", value.get("span_name")), "start": _seconds(value.get("start_time")),
               "end": _seconds(value.get("end_time")), "attrs": attrs, "events": events, "event_list": ordered,
               "line": line}


# -------------------------------------------------------------------------------- message readers


def _json_attr(attrs: dict, key: str) -> Any:
    v = attrs.get(key)
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return None
    return v


def _semconv_messages(raw: Any) -> list[Message]:
    out: list[Message] = []
    for m in raw if isinstance(raw, list) else []:
        if not isinstance(m, dict):
            continue
        role = m.get("role") if m.get("role") in ("system", "user", "assistant", "tool") else "user"
        if "parts" in m:
            parts = semconv_parts(m.get("parts"))
        else:  # some instrumentations (any-agent) log OpenAI chat messages {role, content, tool_calls}
            try:
                out.append(message_from_openai(m))
            except ValueError:
                out.append(Message(role, [TextPart(as_text(m.get("content")))] if m.get("content") else []))
            continue
        if role != "tool" and parts and all(isinstance(p, ToolResultPart) for p in parts):
            role = "tool"
        out.append(Message(role, parts))
    return out


def _any_agent_output(attrs: dict) -> list[Message]:
    """any-agent's completion: ``gen_ai.output`` (older: ``genai.output``) holding text, or with
    ``...output.type == "json"`` a JSON list of tool calls (``{tool.name, tool.args}``, ``{name, arguments}`` or
    OpenAI ``{id, function}``); JSON that is not a list of calls (a structured final answer) is the text."""
    key = "gen_ai.output" if "gen_ai.output" in attrs else "genai.output"
    if key not in attrs:
        return []
    value = _json_attr(attrs, key) if attrs.get(key + ".type") == "json" else None
    if not _is_call_list(value):  # text, or a structured final answer (JSON that is not a list of calls)
        return [Message("assistant", [TextPart(as_text(attrs[key]))])] if attrs[key] else []
    parts: list = []
    for call in value:
        if isinstance(call, dict):
            fn = call.get("function") if isinstance(call.get("function"), dict) else call
            name = fn.get("name", fn.get("tool.name"))  # any-agent 1.x writes {"tool.name", "tool.args"}
            parts.append(ToolCallPart.from_raw(call.get("id"), str(name), fn.get("arguments", fn.get("tool.args"))))
    return [Message("assistant", parts)]


def _is_call_list(value: Any) -> bool:
    """A non-empty list of tool-call objects (``{tool.name, tool.args}``, ``{name, arguments}``, OpenAI's)."""
    return isinstance(value, list) and bool(value) and all(
        isinstance(c, dict) and any(k in c for k in ("tool.name", "name", "function")) for c in value)


def _flat_messages(attrs: dict, prefix: str) -> list[Message]:
    """OpenLLMetry's indexed attributes, e.g. ``gen_ai.prompt.0.role`` / ``.content`` / ``.tool_calls.0.name``."""
    out: list[Message] = []
    i = 0
    while f"{prefix}.{i}.role" in attrs or f"{prefix}.{i}.content" in attrs:
        role = attrs.get(f"{prefix}.{i}.role") or ("assistant" if prefix.endswith("completion") else "user")
        role = role if role in ("system", "user", "assistant", "tool") else "user"
        content = attrs.get(f"{prefix}.{i}.content")
        if role == "tool":
            parts: list = [ToolResultPart(call_id=attrs.get(f"{prefix}.{i}.tool_call_id"), content=as_text(content))]
        else:
            parts = [TextPart(as_text(content))] if content else []
        k = 0
        while f"{prefix}.{i}.tool_calls.{k}.name" in attrs:
            parts.append(ToolCallPart.from_raw(attrs.get(f"{prefix}.{i}.tool_calls.{k}.id"),
                                               str(attrs[f"{prefix}.{i}.tool_calls.{k}.name"]),
                                               attrs.get(f"{prefix}.{i}.tool_calls.{k}.arguments")))
            k += 1
        out.append(Message(role, parts))
        i += 1
    return out


def _call_of(span: dict, filename: str, problems: ProblemSink) -> tuple[list, list[Message] | None, Message] | None:
    """(tools, context, completion) of an LLM-call span, or None (content not captured: an error). The context
    is None for an any-agent span that records its output but not its input: ``_rebuilt_context`` may
    rebuild it from the call before."""
    attrs = span["attrs"]
    source = src(NAME, filename, line=span["line"], record=f"span {span['span']}")
    model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")
    model = model if isinstance(model, str) and model and model != "unknown" else None
    if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
        context = _semconv_messages(_json_attr(attrs, "gen_ai.input.messages"))
        outputs = _semconv_messages(_json_attr(attrs, "gen_ai.output.messages")) or _any_agent_output(attrs)
        system = _json_attr(attrs, "gen_ai.system_instructions")
        if system:
            parts = semconv_parts(system) if isinstance(system, list) else [TextPart(as_text(system))]
            context.insert(0, Message("system", parts))
    elif "gen_ai.input.messages" not in attrs and ("gen_ai.output" in attrs or "genai.output" in attrs):
        context, outputs = None, _any_agent_output(attrs)
    elif "gen_ai.prompt.0.content" in attrs or "gen_ai.completion.0.content" in attrs \
            or "gen_ai.completion.0.tool_calls.0.name" in attrs:
        context = _flat_messages(attrs, "gen_ai.prompt")
        outputs = _flat_messages(attrs, "gen_ai.completion")
    elif _monocle.is_inference(attrs) and _monocle.records_content(span.get("events", {})):
        try:
            context, reply = _monocle.call(span.get("events", {}))
        except ValueError as e:
            problems.error("unknown_content", f"Monocle inference span in a form not read ({e}): the call is lost",
                           source)
            return None
        outputs = [reply] if reply.parts else []
    elif _genai_events.records_messages(span.get("event_list", [])):
        try:
            context, reply = _genai_events.call(span["event_list"])
        except ValueError as e:
            problems.error("content_not_captured", f"GenAI message events not read: {e}; the call is lost", source)
            return None
        outputs = [reply]
    else:
        problems.error("content_not_captured", "LLM call span without message content (content capture off): "
                       "the call is lost", source)
        return None
    if not outputs:
        problems.warning("no_assistant_message", "LLM call span without output messages", source)
        return None
    completion = Message("assistant", [p for m in outputs for p in m.parts], model=model,
                         cut=any(m.cut for m in outputs))
    tools = tool_defs(_json_attr(attrs, "gen_ai.tool.definitions") or [])
    if not tools:
        k, flat = 0, []
        while f"llm.request.functions.{k}.name" in attrs:
            flat.append({"name": attrs[f"llm.request.functions.{k}.name"],
                         "description": attrs.get(f"llm.request.functions.{k}.description", ""),
                         "parameters": _json_attr(attrs, f"llm.request.functions.{k}.parameters")})
            k += 1
        tools = tool_defs(flat)
    return tools, context, completion


# ------------------------------------------------------------------------------------------ parse


def _rebuilt_context(previous: tuple[dict, LLMCall] | None, span: dict, tool_spans: list[dict], filename: str,
                     problems: ProblemSink) -> list[Message] | None:
    """The context of a call whose span records no input (any-agent before input capture): the previous call's
    context and completion, then the results of that completion's tool calls, taken from the tool spans of the
    same trace that ran between the two calls (matched by tool name, in order). A tool call whose output
    recorded empty arguments gets the arguments its tool span ran with. None, after a ``content_not_captured``
    error, when this does not determine the context (no previous call, a text answer before, a tool span
    missing)."""
    source = src(NAME, filename, line=span["line"], record=f"span {span['span']}")
    why = None
    if previous is None or previous[0]["trace"] != span["trace"]:
        why = "no earlier call of its trace records an input to rebuild it from"
    else:
        before, call = previous
        calls = call.completion.tool_calls
        lo, hi = before["start"] or 0.0, span["start"] or 0.0
        ran = [t for t in tool_spans if t["trace"] == span["trace"] and lo <= (t["start"] or 0.0) <= hi]
        if not calls:
            why = "the call before it answered without a tool call, so its next input is unknown"
        elif len(ran) != len(calls) or any(t["attrs"].get("gen_ai.tool.name") != c.name for t, c in zip(ran, calls)):
            why = (f"the call before it made {len(calls)} tool call(s) but {len(ran)} matching tool span(s) ran "
                   "in between")
    if why is not None:
        problems.error("content_not_captured", "LLM span records its output but not its input messages, and "
                       f"its context cannot be rebuilt: {why}; the call is lost", source)
        return None
    results = []
    for t, c in zip(ran, calls):
        args = t["attrs"].get("gen_ai.tool.args")
        if c.raw_arguments.strip() in ("", "{}") and isinstance(args, str) and args.strip() not in ("", "{}"):
            i = call.completion.parts.index(c)
            call.completion.parts[i] = c = ToolCallPart.from_raw(c.id, c.name, args)
        results.append(ToolResultPart(call_id=c.id, content=as_text(t["attrs"].get("gen_ai.output")), name=c.name))
    return [*call.context, call.completion, Message("tool", results)]



@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """Read every span, deduplicate, rebuild LLM calls, chain them into conversations per trace."""
    spans: dict[tuple, dict] = {}
    in_progress: dict[tuple, dict] = {}
    duplicates = 0
    for line, _, value in iter_values(stream, filename, NAME, problems):
        found = False
        for s in _spans_of(value, line):
            found = True
            attrs = s["attrs"]
            op = attrs.get("gen_ai.operation.name")
            if op not in CALL_OPERATIONS and op != "execute_tool" and not _monocle.is_inference(attrs) and \
                    not any(str(k).startswith("gen_ai.prompt.") for k in attrs):
                continue  # only LLM-call and tool spans are kept, so memory follows the number of calls
            key = (s["trace"], s["span"])
            if s["end"] is None:
                in_progress[key] = s
                continue
            if key in spans:
                duplicates += 1
            spans[key] = s  # the last finished copy wins
        if not found:
            problems.warning("unknown_record", "JSON value holds no spans", src(NAME, filename, line=line))
    if duplicates:
        problems.warning("duplicate_span", f"{duplicates} span copies deduplicated on span id",
                         src(NAME, filename))
    for key, s in in_progress.items():
        if key not in spans:
            problems.warning("in_progress_span", "span printed only in progress (end_time null); dropped",
                             src(NAME, filename, line=s["line"], record=f"span {s['span']}"))
    ordered = sorted(spans.values(), key=lambda s: (str(s["trace"]), s["start"] or 0.0, str(s["span"])))
    yield from _conversations(ordered, filename, problems)


def _without_wrapped(ordered: list[dict], filename: str, problems: ProblemSink) -> list[dict]:
    """The spans without Monocle's provider spans that record no content inside (or around) a framework's
    inference span that does: one call described twice (``duplicate_llm_call`` warning)."""
    recorded = {s["span"]: s for s in ordered if _monocle.is_inference(s["attrs"])
                and _monocle.records_content(s.get("events", {}))}
    parents = {s.get("parent") for s in recorded.values()}
    wrapped = [s for s in ordered if _monocle.is_inference(s["attrs"]) and s["span"] not in recorded
               and (s.get("parent") in recorded or s["span"] in parents)]
    if wrapped:
        problems.warning("duplicate_llm_call", f"{len(wrapped)} inference span(s) without content wrap or are wrapped "
                         "by the span that records the same call: counted once", src(NAME, filename))
    return [s for s in ordered if s not in wrapped]


def _lacks_reply(context: list[Message], call: LLMCall) -> bool:
    """Whether ``context`` is ``call``'s context followed only by results of ``call``'s tool calls, the reply that
    made them left out (Microsoft Agent Framework's spans under Monocle): the reply is put back."""
    head, rest = context[: len(call.context)], context[len(call.context):]
    ids = {c.id for c in call.completion.tool_calls}
    return bool(rest) and bool(ids) and head == call.context and all(
        m.role == "tool" and all(isinstance(p, ToolResultPart) for p in m.parts) for m in rest)


def _conversations(ordered: list[dict], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """The LLM calls of the spans (in trace and time order), deduplicated and chained per trace."""
    tool_spans = [s for s in ordered if s["attrs"].get("gen_ai.operation.name") == "execute_tool"]
    ordered = _without_wrapped(ordered, filename, problems)
    chains = CallChains()
    seen_calls: set[str] = set()
    previous: tuple[dict, LLMCall] | None = None  # the last call read (its span), for rebuilding a context
    rebuilt = restored = 0
    for s in ordered:
        if s["attrs"].get("gen_ai.operation.name") == "execute_tool":
            continue
        got = _call_of(s, filename, problems)
        if got is None:
            continue
        tools, context, completion = got
        if context is None:
            context = _rebuilt_context(previous, s, tool_spans, filename, problems)
            if context is None:
                continue
            rebuilt += 1
        elif previous is not None and previous[0]["trace"] == s["trace"] and _lacks_reply(context, previous[1]):
            call = previous[1]  # the results of its tool calls follow its context, without the reply that made them
            context = [*call.context, call.completion, *context[len(call.context):]]
            _monocle.link_results(context)  # the results answer the reply's calls, in order
            restored += 1
        fingerprint = json.dumps([s["trace"], repr(context), repr(completion)])
        if fingerprint in seen_calls:
            problems.warning("duplicate_llm_call", "two spans describe the same LLM call; counted once",
                             src(NAME, filename, line=s["line"], record=f"span {s['span']}"))
            continue
        seen_calls.add(fingerprint)
        source = src(NAME, filename, line=s["line"], record=f"trace {s['trace']}")
        previous = (s, chains.add(f"{s['trace']}/{s['span']}", source, tools, context, completion, key=s["trace"],
                                  shared_history=_monocle.is_inference(s["attrs"])))
    if rebuilt:
        problems.warning("context_rebuilt", f"{rebuilt} LLM call(s) record their output but not their input: each "
                         "context was rebuilt from the call before it, its output and the tool spans in between",
                         src(NAME, filename))
    if restored:
        problems.warning("context_rebuilt", f"{restored} LLM call(s) record the results of the call before's tool "
                         "calls but not the reply that made them: that reply was put back in each context",
                         src(NAME, filename))
    yield from chains.conversations()


FORMAT = TraceFormat(
    name=NAME,
    description="OpenTelemetry GenAI spans (Jaeger/OTLP JSON, console dumps; deduplicated, content where captured)",
    sniff=sniff,
    parse=parse,
)
