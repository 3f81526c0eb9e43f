"""Letta agent files (``.af``): an agent's configuration, tools and message history.

Two schema generations:

- older files: one agent at the top level ``{agent_type, system, llm_config{model}, messages[],
  in_context_message_indices[], tools[]}``;
- newer files: ``{agents[{id, system, llm_config, messages[], in_context_message_ids[], tool_ids[]}],
  tools[], blocks[], ...}`` (one conversation per agent).

Messages are ``{id?, role: system|user|assistant|tool, content[{type: text|reasoning|redacted_reasoning|
image, ...}] | text, tool_calls[{id, function{name, arguments}}], tool_call_id, name, model?}``.

``messages`` lists every message the agent ever stored, in creation order, including each superseded
system prompt: Letta rewrites the system prompt when memory changes, and the new one is created in the
middle of the run (often between a tool call and its result). What the model saw is the in-context
list: ``in_context_message_indices`` (or ``_ids``) give the messages and their order (current system
prompt first). That list is honoured; a file without it is read in stored order, with superseded system
prompts dropped (``system_prompt_rewritten`` warning). Stored messages no longer in the context (Letta
evicts old ones and adds a summary) are read as the earlier calls they were, each with the system prompt
then in force and the messages stored before it (``history_rebuilt`` warning, with counts); where a
summary among them shows an earlier eviction, their contexts are unknown and they are an error
(``history_not_read``, with counts).

Tool definitions come from each tool's ``json_schema`` (name, description, parameters). Some published
files store the whole document as a JSON string holding the JSON; it is decoded (warning
``double_encoded``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO

from drafters.traces.formats._content import as_list, content_parts, merge_adjacent_tool_messages, tool_defs
from drafters.traces.formats._reading import load_json, src
from drafters.traces.formats._records import guard_file
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import (
    Conversation,
    LLMCall,
    Message,
    Source,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
)

NAME = "letta"
_MEDIA = {"image": "image", "file": "file", "audio": "audio"}


def sniff(head: str, filename: str) -> bool:
    """``.af`` files, or JSON with Letta's ``in_context_message_*`` and ``llm_config``."""
    if filename.endswith((".af", ".af.gz", ".af.zst")):
        return True
    window = head[:30000].replace('\\"', '"')
    return '"llm_config"' in window and ('"in_context_message_indices"' in window
                                         or '"in_context_message_ids"' in window)




def _message(raw: dict, model: str | None) -> Message:
    role = raw.get("role")
    content = raw.get("content") if raw.get("content") is not None else raw.get("text")
    if role == "tool":
        text = "".join(p.text for p in content_parts(content) if isinstance(p, TextPart))
        return Message("tool", [ToolResultPart(raw.get("tool_call_id"), text, name=raw.get("name"))])
    parts = content_parts(content)
    if role == "assistant":
        for call in as_list(raw.get("tool_calls")):
            fn = call.get("function") if isinstance(call, dict) and isinstance(call.get("function"), dict) else {}
            parts.append(ToolCallPart.from_raw(call.get("id"), str(fn.get("name")), fn.get("arguments")))
        return Message("assistant", parts, model=raw.get("model") if isinstance(raw.get("model"), str) else model)
    return Message(role if role in ("system", "user") else "user", parts)  # type: ignore[arg-type]


def _in_context(agent: dict, messages: list, source: Source, problems: ProblemSink) -> list:
    """The raw messages the model saw, in context order (see module docstring)."""
    indices = agent.get("in_context_message_indices")
    ids = agent.get("in_context_message_ids")
    if isinstance(indices, list) and indices:
        bad = [i for i in indices if not isinstance(i, int) or not 0 <= i < len(messages)]
        if bad:
            problems.error("bad_record", f"in_context_message_indices out of range: {bad[:5]}", source,
                           "in_context_message_indices")
        return [messages[i] for i in indices if i not in bad]
    if isinstance(ids, list) and ids:
        by_id = {m.get("id"): m for m in messages if isinstance(m, dict)}
        missing = [i for i in ids if i not in by_id]
        if missing:
            problems.error("bad_record", f"in_context_message_ids not among the messages: {missing[:5]}", source,
                           "in_context_message_ids")
        return [by_id[i] for i in ids if i in by_id]
    systems = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "system"]
    if len(systems) > 1:
        problems.warning("system_prompt_rewritten", f"{len(systems)} system prompts and no in-context list: "
                         "the last one is used, the superseded ones are dropped", source, "messages")
        keep = systems[-1]
        return [messages[keep]] + [m for i, m in enumerate(messages) if i not in systems]
    return messages


def _tools(doc: dict, agent: dict) -> list[ToolDef]:
    """The agent's tools (``tool_ids`` select from the document's ``tools`` when given), from ``json_schema``."""
    pool = as_list(agent.get("tools")) or as_list(doc.get("tools"))
    wanted = agent.get("tool_ids")
    if isinstance(wanted, list) and wanted:
        pool = [t for t in pool if isinstance(t, dict) and t.get("id") in wanted]
    schemas = []
    for t in pool:
        if not isinstance(t, dict):
            continue
        schema = t.get("json_schema") if isinstance(t.get("json_schema"), dict) else t
        schemas.append({"name": schema.get("name") or t.get("name"),
                        "description": schema.get("description") or t.get("description"),
                        "parameters": schema.get("parameters")})
    return tool_defs(schemas)


@guard_file(NAME)
def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """One conversation per agent of the file."""
    doc = load_json(stream, filename, problems, NAME)
    if isinstance(doc, str):
        problems.warning("double_encoded", "the file is a JSON string holding the agent file; decoded",
                         src(NAME, filename, record="$"))
        try:
            doc = json.loads(doc)
        except ValueError as exc:
            problems.error("invalid_json", f"the JSON string does not hold JSON: {exc.msg}", src(NAME, filename))
            return
    if not isinstance(doc, dict):
        if doc is not None:
            problems.error("bad_record", "an agent file is a JSON object", src(NAME, filename, record="$"))
        return
    agents = doc.get("agents") if isinstance(doc.get("agents"), list) else [doc]
    for k, agent in enumerate(agents):
        path = f"$.agents[{k}]" if "agents" in doc else "$"
        source = src(NAME, filename, record=path)
        if not isinstance(agent, dict) or not isinstance(agent.get("messages"), list):
            problems.error("bad_record", "agent without a messages list", source, "messages")
            continue
        llm = agent.get("llm_config") if isinstance(agent.get("llm_config"), dict) else {}
        model = llm.get("model") if isinstance(llm.get("model"), str) else None
        raw = _in_context(agent, agent["messages"], source, problems)
        merged = merge_adjacent_tool_messages([_message(m, model) for m in raw if isinstance(m, dict)])
        name = agent.get("id") or agent.get("name") or k
        conv = Conversation(id=f"{NAME}:{filename.rsplit('/', 1)[-1]}:{name}", source=source,
                            tools=_tools(doc, agent), messages=merged)
        earlier = _earlier_calls(conv, agent["messages"], raw, model, problems)
        if earlier:
            conv.explicit_calls = [*earlier, *conv.calls()]
            for i, call in enumerate(conv.explicit_calls):
                call.index = i
        yield conv


def _is_summary(raw: dict) -> bool:
    """A ``system_alert`` user message: Letta's summary of messages it evicted from the context."""
    content = raw.get("content") if raw.get("content") is not None else raw.get("text")
    return raw.get("role") == "user" and "system_alert" in "".join(
        p.text for p in content_parts(content) if isinstance(p, TextPart))


def _earlier_calls(conv: Conversation, stored: list, in_context: list, model: str | None,
                   problems: ProblemSink) -> list[LLMCall]:
    """The LLM calls of the stored messages that are no longer in the context (Letta evicts old messages and
    puts a summary in their place). Each such assistant message was a call whose context was the system
    prompt in force then and every non-system message stored before it, exact while no earlier eviction
    happened; a summary among them means one did, and those messages are reported (``history_not_read``)
    instead of read with contexts the model never saw. Superseded system prompts are not content of their
    own (each is the context of the calls made while it was current)."""
    kept = {id(m) for m in in_context}
    out = [m for m in stored if isinstance(m, dict) and id(m) not in kept and m.get("role") != "system"]
    if not out:
        return []
    source = conv.source
    if any(_is_summary(m) for m in out):
        problems.error("history_not_read", f"{len(out)} of {len(stored)} stored messages are no longer in the "
                       "agent's context, and a summary among them shows an earlier eviction: their calls' contexts "
                       "cannot be rebuilt, so they are not read", source, "messages")
        return []
    calls: list[LLMCall] = []
    system: Message | None = None
    before: list[Message] = []
    for m in stored:
        if not isinstance(m, dict) or id(m) in kept:
            continue
        msg = _message(m, model)
        if m.get("role") == "system":
            system = msg
            continue
        if msg.role == "assistant" and (before or system):
            context = merge_adjacent_tool_messages(([system] if system else []) + [Message(x.role, list(x.parts)) for x in before])
            calls.append(LLMCall(conv.id, len(calls), conv.tools, context, msg))
        before.append(msg)
    problems.warning("history_rebuilt", f"{len(out)} of {len(stored)} stored messages are no longer in the agent's "
                     f"context (evicted): read as {len(calls)} earlier call(s), each with the system prompt then in "
                     "force and the messages stored before it", source, "messages")
    return calls


FORMAT = TraceFormat(
    name=NAME,
    description="Letta agent files (.af): in-context messages, tools from json_schema",
    sniff=sniff,
    parse=parse,
)
