"""OpenAI Chat Completions messages: ``tools``/``tool_calls`` and the legacy ``function_call``/``function``.

Accepted files:
- JSONL, one record per line: ``{"messages": [...], "tools": [...]}`` (also ``"conversations"`` holding
  role/content messages, legacy ``"functions"``), or a bare list of messages per line;
- a JSON array of such records, or one such object;
- VCR/pydantic-ai YAML cassettes of ``/chat/completions`` recordings (see ``_cassette.py``): every
  request re-sends the history, so each request + response is one explicit ``LLMCall``.

``arguments`` may be a JSON string (the wire format) or an object (many logs); both keep the raw string
and the parsed object (``ToolCallPart.from_raw``). ``to_openai_messages`` is the exact inverse of
``messages_from_openai`` for what the wire format can express (property-tested).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import chain, islice
from typing import IO, Any

from drafters.traces.cut_replies import body_stopped_by_length
from drafters.traces.formats import _cassette, _content, _reading
from drafters.traces.formats._call_io import nested_thread
from drafters.traces.formats._chains import CallChains
from drafters.traces.formats._joined_by_id import join_key
from drafters.traces.formats._record_shapes import covering
from drafters.traces.formats._spellings import args_not_read, media_beside, tool_call
from drafters.traces.formats._system_prompts import sibling_system, system_not_read
from drafters.traces.formats._text_beside import message_texts, text_beside
from drafters.traces.formats._text_calls import with_text_tool_calls
from drafters.traces.formats._turns import display_only, warn_display_only
from drafters.traces.formats.base import ProblemSink, TraceFormat
from drafters.traces.model import (
    Conversation,
    Message,
    ReasoningPart,
    Source,
    TextPart,
    ToolCallPart,
    ToolDef,
    ToolResultPart,
    UnsupportedPart,
)

NAME = "openai_chat"
_SAMPLE = 50  # records looked at to tell a log of requests and responses from chat records
_ROLE_MAP = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
             "tool": "tool", "function": "tool"}
# Keys of an assistant message that the reader takes, or that are metadata by the API's definition; data under
# any other key of a message with no content and no calls is content this reader would lose.
#: Where assistant reasoning is logged as a string (vLLM/DeepSeek/OpenRouter; Ollama writes ``thinking``).
_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")
_ASSISTANT_KEYS = frozenset({
    "role", "content", "tool_calls", "function_call", *_REASONING_KEYS, "refusal", "model", "name",
    "audio", "annotations", "weight", "loss_weight", "train", "training", "id", "prefix", "created", "finish_reason",
    "index", "logprobs", "metadata", "timestamp", "usage", "images",  # images: counted (media_beside)
})
_UNSUPPORTED_PART_KINDS = {"image_url": "image", "input_image": "image", "input_audio": "audio",
                           "audio": "audio", "file": "file", "input_file": "file"}


# ------------------------------------------------------------------------------------------- converters


def tools_from_openai(tools: Any) -> list[ToolDef]:
    """``[{"type":"function","function":{name, description, parameters}}]`` or legacy ``functions``
    (``[{name, description, parameters}]``) -> ToolDefs. Non-function tools are skipped."""
    out: list[ToolDef] = []
    if not isinstance(tools, list):
        return out
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        name = fn.get("name")
        if not isinstance(name, str):
            continue
        params = fn.get("parameters") if isinstance(fn.get("parameters"), dict) else \
            next((tool[k] for k in ("parameters", "input_schema") if isinstance(tool.get(k), dict)), None)
        out.append(ToolDef(
            name=name,
            description=fn.get("description") or tool.get("description") or "",
            parameters=params if isinstance(params, dict) else {"type": "object", "properties": {}},
        ))
    return out


def _content_parts(content: Any) -> list:
    """Message ``content`` (string, null or list of typed parts) -> canonical parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    parts: list = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                parts.append(TextPart(block))
            elif isinstance(block, dict):
                kind = block.get("type")
                if kind in ("text", "input_text", "output_text") and isinstance(block.get("text"), str):
                    parts.append(TextPart(block["text"]))
                elif kind == "refusal" and isinstance(block.get("refusal"), str):
                    parts.append(TextPart(block["refusal"]))
                else:
                    _content.add_unsupported(parts, _UNSUPPORTED_PART_KINDS.get(kind, str(kind)))
        return parts
    if isinstance(content, dict) and isinstance(content.get("parts"), list):
        # a message object of another kind as the content (Mastra's v2 {format: 2, parts, toolInvocations}): its
        # parts are calls and steps this reader does not know; left to the general path
        raise ValueError("content is an object holding parts (not an OpenAI chat content)")  # noqa: TRY004 - "not mine"
    return [TextPart(json.dumps(content, ensure_ascii=False))]


def message_from_openai(msg: dict[str, Any], model: str | None = None) -> Message:
    """One OpenAI chat message -> a canonical Message. Raises ValueError on an unknown role.

    Assistant ``reasoning_content`` / ``reasoning`` (a string, as vLLM, DeepSeek and OpenRouter log it)
    becomes a leading ReasoningPart; legacy ``function_call`` becomes a ToolCallPart with id None. An
    assistant message with OpenAI fine-tuning's ``"weight": 0`` (or another trainer's equivalent, see
    ``_content.trained``) is context only (``supervised=False``).
    Tool (and legacy ``function``) messages become one ToolResultPart. An assistant message gets one
    ``UnsupportedPart`` (kind ``key:NAME``) per non-standard key holding what would be lost: any data when
    it has no content, reasoning, refusal or calls; a list of call-shaped objects (calls under
    ``invocations``, say) when it has; a user or system message with no content, likewise (its text under
    ``text``, say). Ingestion then refuses the conversation with ``unknown_content``
    instead of reading an empty turn or dropping calls (docs/traces.md, the silent-loss rule).
    """
    msg = _items_as_openai(msg)
    role = _ROLE_MAP.get(msg.get("role"))  # type: ignore[arg-type]
    if role is None:
        raise ValueError(f"unknown role {msg.get('role')!r}")
    if role == "tool":
        content = msg.get("content")
        ids = msg.get("tool_call_ids")  # SWE-agent style: a list holding the one id
        parts: list = [ToolResultPart(
            call_id=msg.get("tool_call_id") or (ids[0] if isinstance(ids, list) and ids else None),
            content=content if isinstance(content, str) else _content.text_of(content),
            is_error=bool(msg.get("is_error", False)),
            name=msg.get("name"),
        )]
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") not in ("text", None):
                    _content.add_unsupported(parts, _UNSUPPORTED_PART_KINDS.get(block["type"], str(block["type"])))
        return Message("tool", parts)
    parts = []
    if role == "assistant":
        for key in _REASONING_KEYS:
            if isinstance(msg.get(key), str) and msg[key]:
                parts.append(ReasoningPart(msg[key]))
                break
    parts.extend(_content_parts(msg.get("content")))
    if role == "assistant" and isinstance(msg.get("refusal"), str) and msg["refusal"] and not parts:
        parts.append(TextPart(msg["refusal"]))  # content null, the answer is the refusal
    if role == "assistant":
        for call in msg.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            if args_not_read(call) or (not isinstance(call.get("function"), dict) and not call.get("name")):
                parts.append(UnsupportedPart("tool_call_shape"))  # no name or arguments where any spelling has them
                continue
            parts.append(tool_call(call))  # OpenAI's {id, function: {name, arguments}}, or flat {id, name, args}
        fc = msg.get("function_call")
        if isinstance(fc, dict):
            parts.append(ToolCallPart.from_raw(None, str(fc.get("name", "")), fc.get("arguments")))
    if role == "assistant" or not parts:  # a user / system turn with no content: its text is elsewhere
        for key in _unread_keys(msg, bool(parts)):
            parts.append(UnsupportedPart(f"key:{key}"))  # an unknown kind: ingestion says unknown_content
    msg_model = msg.get("model") if isinstance(msg.get("model"), str) else None
    parts += media_beside(msg)  # Ollama's images beside the text: counted, not quietly unread
    if role != "assistant":
        return Message(role, parts)  # type: ignore[arg-type]
    return Message(role, parts, model=msg_model or model, supervised=_content.trained(msg))


#: Semantic Kernel's content items (``ChatHistory`` dumped: ``items: [{content_type: text | function_call |
#: function_result, ...}]`` in place of ``content``).
_SK_ITEMS = ("text", "function_call", "function_result")


def _items_as_openai(msg: dict[str, Any]) -> dict[str, Any]:
    """A message keeping its content as Semantic Kernel items, in OpenAI's spelling: the text items as ``content``,
    ``function_call`` items as ``tool_calls``, a ``function_result`` item as the tool message's ``tool_call_id`` and
    ``content``; any other message as it is (an item of another kind is left for ``_unread_keys`` to report)."""
    items = msg.get("items")
    if msg.get("content") not in (None, "") or not isinstance(items, list) or not items or not all(
            isinstance(i, dict) and i.get("content_type") in _SK_ITEMS for i in items):
        return msg
    out = {k: v for k, v in msg.items() if k != "items"}
    texts = [i.get("text") for i in items if i["content_type"] == "text" and isinstance(i.get("text"), str)]
    calls = [{"id": i.get("id"), "type": "function", "function": {"name": i.get("name") or i.get("function_name"),
                                                                   "arguments": i.get("arguments")}}
             for i in items if i["content_type"] == "function_call"]
    results = [i for i in items if i["content_type"] == "function_result"]
    if len(results) > 1 or results and (texts or calls):
        return msg  # several results in one message, or mixed with text: not guessed
    if results:
        result = results[0].get("result")
        return {**out, "tool_call_id": results[0].get("id"), "name": results[0].get("name"),
                "content": result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)}
    return {**out, "content": "".join(texts) or None, **({"tool_calls": calls} if calls else {})}


_REASONING_NAME = re.compile(r"think|thought|reason", re.IGNORECASE)


def _unread_keys(msg: dict[str, Any], has_parts: bool) -> list[str]:
    """Keys outside ``_ASSISTANT_KEYS`` that hold content this reader would lose: with no other part, any
    data (not null, empty or false); beside content, a list of tool-call-shaped objects (calls logged under
    a non-standard name such as ``invocations``) or text under a name that says reasoning (``thoughts``)."""
    unknown = [(str(k), v) for k, v in msg.items() if k not in _ASSISTANT_KEYS]
    if not has_parts:
        return [k for k, v in unknown if v not in (None, "", [], {}, False)]
    return [k for k, v in unknown if (isinstance(v, list) and v and all(_call_shaped(c) for c in v))
            or (isinstance(v, str) and v.strip() and _REASONING_NAME.search(k)) or _ui_parts(k, v)]


def _ui_parts(key: str, value: Any) -> bool:
    """A Vercel AI SDK UI message's ``parts`` holding more than its text (tool invocations, steps, reasoning) or its
    ``toolInvocations``, beside the flat ``content`` (AI SDK v4 ``useChat``): the content alone would lose them."""
    if key == "toolInvocations":
        return isinstance(value, list) and bool(value)
    return key == "parts" and isinstance(value, list) and any(
        isinstance(p, dict) and p.get("type") not in ("text", "step-start") for p in value)


def _call_shaped(value: Any) -> bool:
    """An object shaped like a tool call: OpenAI's ``function`` object, or a name with arguments/input."""
    if not isinstance(value, dict):
        return False
    return isinstance(value.get("function"), dict) or (
        "name" in value and any(k in value for k in ("arguments", "input", "args", "parameters")))


def messages_from_openai(
    msgs: list[Any], problems: ProblemSink | None = None, source: Source | None = None, model: str | None = None
) -> list[Message]:
    """A list of OpenAI chat messages -> canonical Messages; bad items are reported (``not_an_object``)
    and skipped when a sink is given, else raise ValueError."""
    out = []
    for i, msg in enumerate(msgs):
        if display_only(msg) and problems is not None and source is not None:
            warn_display_only(1, problems, source, f"messages[{i}]")  # never sent to the model: no context
            continue
        try:
            if not isinstance(msg, dict):
                raise ValueError(f"message is a {type(msg).__name__}, not an object")
            if problems is not None and source is not None and _marker(msg):
                problems.warning("marker_skipped", f"message {i} holds nothing but its role {msg['role']!r} (a "
                                 "session marker): no content, not read", source, field=f"messages[{i}]")
                continue
            out.append(message_from_openai(msg, model))
        except ValueError as exc:
            if problems is None or source is None:
                raise
            problems.error("not_an_object", f"message {i}: {exc}", source, field=f"messages[{i}]")
    return out


def _marker(msg: dict[str, Any]) -> bool:
    """A message of a role no chat API has that holds nothing but the role (Hermes' trailing
    ``{"role": "session_meta"}``): skipping it loses nothing; any other key with data keeps it an error."""
    return isinstance(msg.get("role"), str) and msg["role"] not in _ROLE_MAP and not any(
        v not in (None, "", [], {}) for k, v in msg.items() if k != "role")


def response_to_message(body: dict[str, Any]) -> Message | None:
    """A chat.completion response body -> the assistant Message of its one choice (model filled).

    Raises:
        ValueError for a body of several choices (a request sampled with ``n`` > 1: reading the first would lose the
        others; the general path reads each as a call)."""
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    if len(choices) > 1:
        raise ValueError(f"{len(choices)} choices (answers sampled for one request): each would be a call")
    msg = choices[0].get("message")
    if not isinstance(msg, dict):
        return None
    msg = {**msg, "role": "assistant"}
    return message_from_openai(msg, model=body.get("model"))


def request_to_messages(body: dict[str, Any]) -> tuple[list[ToolDef], list[Message]]:
    """A /chat/completions request body -> (tools, context messages)."""
    tools = tools_from_openai(body.get("tools") or body.get("functions"))
    return tools, [message_from_openai(m) for m in body.get("messages") or [] if isinstance(m, dict)]


def to_openai_messages(conv: Conversation) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The conversation as OpenAI chat ``(messages, tools)``: the inverse of this module's parser.

    Arguments are sent as the raw string exactly as logged (so invalid JSON survives); reasoning as
    ``reasoning_content``; a legacy call (id None) as ``function_call``. Only the first ToolResultPart
    of a tool message is expressible; unsupported parts are dropped (the wire format cannot carry a
    placeholder). Used by the renderer to feed chat templates (which then see string ``arguments``;
    templates wanting a mapping get ``ToolCallPart.arguments`` from the renderer instead).
    """
    messages: list[dict[str, Any]] = []
    for m in conv.messages:
        if m.role == "tool":
            result = next((p for p in m.parts if isinstance(p, ToolResultPart)), None)
            if result is None:
                continue
            out: dict[str, Any] = {"role": "tool", "content": result.content}
            if result.call_id is not None:
                out["tool_call_id"] = result.call_id
            if result.name is not None:
                out["name"] = result.name
            if result.is_error:
                out["is_error"] = True
            messages.append(out)
            continue
        out = {"role": m.role}
        reasoning = [p for p in m.parts if isinstance(p, ReasoningPart)]
        if reasoning:
            out["reasoning_content"] = "".join(p.text for p in reasoning)
        texts = [p.text for p in m.parts if isinstance(p, TextPart)]
        if len(texts) == 1:
            out["content"] = texts[0]
        elif texts:
            out["content"] = [{"type": "text", "text": t} for t in texts]
        else:
            out["content"] = None if m.role == "assistant" else ""
        calls = [p for p in m.parts if isinstance(p, ToolCallPart)]
        if calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
                for c in calls if c.id is not None
            ] or None
            legacy = [c for c in calls if c.id is None]
            if legacy:
                out["function_call"] = {"name": legacy[0].name, "arguments": legacy[0].raw_arguments}
            if out["tool_calls"] is None:
                del out["tool_calls"]
        if m.model and m.role == "assistant":
            out["model"] = m.model
        messages.append(out)
    tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                               "parameters": t.parameters}} for t in conv.tools]
    return messages, tools


# ----------------------------------------------------------------------------------------------- files


def _record_messages(value: Any) -> tuple[list[Any], Any, str | None, str | None] | None:
    """(messages, tools, model, id) of a record, or None when it is not an OpenAI chat record."""
    if isinstance(value, list):
        return (value, None, None, None) if _looks_like_messages(value) else None
    if not isinstance(value, dict):
        return None
    reply = value.get("message")
    if isinstance(reply, dict) and reply.get("role") == "assistant":  # Ollama's reply beside its request: by shape
        return None
    for key in ("messages", "conversations", "conversation"):
        msgs = value.get(key)
        if isinstance(msgs, list) and _looks_like_messages(msgs):
            tools = value.get("tools") if value.get("tools") is not None else value.get("functions")
            if isinstance(tools, str):  # some exports stringify the tool list
                try:
                    tools = json.loads(tools)
                except ValueError:
                    tools = None
            model = value.get("model") if isinstance(value.get("model"), str) else None
            rid = value.get("id")
            return msgs, tools, model, str(rid) if rid is not None else None
    return None


def _looks_like_messages(msgs: list[Any]) -> bool:
    dicts = [m for m in msgs if isinstance(m, dict)]
    if not dicts:
        return not msgs  # an empty list is an (empty) conversation
    return all("role" in m for m in dicts[:3]) and not any("from" in m for m in dicts[:3])


def sniff(head: str, filename: str) -> bool:
    """JSONL/JSON of chat records (messages with ``role``), or a cassette of /chat/completions calls."""
    if _cassette.is_cassette(head):
        return _cassette.sniff_provider(head) == NAME
    stripped = head.lstrip()
    if stripped.startswith("{") or stripped.startswith("["):
        first = _reading.first_json_line(head)
        if first is not None:
            return _record_messages(first) is not None or (
                isinstance(first, list) and bool(first) and _record_messages(first[0]) is not None)
        # A pretty-printed or cut document: look for chat message keys near the start.
        window = stripped[:4000]
        return ('"messages"' in window or window.startswith("[")) and '"role"' in window and (
            '"content"' in window or '"tool_calls"' in window) and '"from"' not in window and \
            '"traj"' not in window and '"task_id"' not in window
    return False


def parse(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    """Yield one Conversation per record (or one per cassette). Bad records are reported and skipped."""
    yield from _cassette.parse_cassette_or_records(
        stream, filename, problems, NAME, lambda s: _parse_records(s, filename, problems))


def _parse_records(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[Conversation]:
    stem = filename.rsplit("/", 1)[-1]
    items = _items(stream, filename, problems)
    head = list(islice(items, _SAMPLE))  # a log of requests and their responses shows in its first records
    key = join_key([v for _, v in head])
    if key is not None:  # paired by an id, not by order: the general path pairs them (_joined_by_id)
        problems.error("not_an_object", f"requests and responses logged apart, paired by {key} (not each request "
                       "followed by its response): read by the general path", Source(NAME, filename))
        return
    if any(_response_message(v) is not None for _, v in head):
        yield from _request_response_pairs(chain(head, items), stem, problems)
        return
    for src, item in chain(head, items):
        rec = _record_messages(item)
        if rec is None:
            problems.error("not_an_object", "record is not an OpenAI chat record (no 'messages' list of "
                           "role/content objects)", src)
            continue
        beside = _response_beside(item)
        if beside is not None:  # a request log's record: the general path reads it as one call, chained
            problems.error("content_not_mapped", f"the record holds a response object beside its messages "
                           f"({beside!r}): a request and its response, which this reader does not pair", src)
            continue
        other = _other_list(item, rec[0])
        if other is not None:  # two conversations in one record: which one was sent is not guessed here
            problems.error("content_not_mapped", f"the record holds another message list under {other!r} beside "
                           "its messages, which they do not hold: reading only one would lose the other", src, other)
            continue
        msgs, tools, model, rid = rec
        nested = _nested_messages(msgs)
        if nested is not None:  # a sub-agent's conversation kept inside a message: its calls would be lost
            problems.error("content_not_mapped", f"a message holds a conversation of its own under {nested!r} (a "
                           "sub-agent's, say), which this reader does not read: its calls would be lost (declare a "
                           "mapping for them: docs/traces.md)", src, nested)
            continue
        messages = _messages(item, msgs, model, src, problems)
        beside = text_beside(item, message_texts(messages), {"messages", "tools", "functions"}) \
            if isinstance(item, dict) else None
        if beside is not None:  # a turn or a retrieved context beside the messages, in none of them
            problems.error("content_not_mapped", f"the record holds text under {beside!r} beside its messages that "
                           "none of them holds: a turn or a context the model read would be lost (declare it: add "
                           f"`prompt: {{system: $.{beside}}}` (or user) to the mapping `tracedraft datasets "
                           "infer-mapping` writes; docs/traces.md, \"Text beside the messages\")", src, beside)
            continue
        loc = f"{src.line}" if src.line is not None else (src.record or "$")
        yield Conversation(id=f"{NAME}:{stem}:{rid or loc}", source=src, tools=tools_from_openai(tools),
                           messages=messages)


def _messages(item: dict, msgs: list, model: str | None, src: Source, problems: ProblemSink) -> list[Message]:
    messages = messages_from_openai(msgs, problems, src, model)
    prompt, not_read = sibling_system(item, messages)  # a system prompt beside the list: the first message
    messages[:0] = prompt
    system_not_read(not_read, src, problems)
    return messages


def _request_response_pairs(items: Iterator[tuple[Source, Any]], stem: str, problems: ProblemSink
                            ) -> Iterator[Conversation]:
    """A recorder's log of each request, then its response object as the next record (CAI's DataRecorder):
    each pair is one LLM call, its context the request's messages; a call whose context extends the previous
    call's context and answer continues its conversation (``_chains``). A record of neither kind, a request
    without its response or a response without its request is reported, and not read."""
    chains = CallChains()
    pending: tuple[Source, dict, tuple] | None = None  # a request waiting for its response
    for src, item in chain(items, [(None, None)]):
        answer = _response_message(item)
        if pending is not None and answer is not None:
            req_src, request, (msgs, tools, model, rid) = pending
            context = _messages(request, msgs, model or item.get("model"), req_src, problems)
            (completion,) = messages_from_openai([answer], problems, src, item.get("model"))
            completion.cut = body_stopped_by_length(item)  # cut_replies: reported
            loc = f"{req_src.line}" if req_src.line is not None else (req_src.record or "$")
            chains.add(f"{NAME}:{stem}:{rid or loc}", req_src, tools_from_openai(tools), context, completion)
            pending = None
            continue
        if pending is not None:
            problems.error("not_an_object", "a request with no response after it: in a log of requests and their "
                           "responses, not read", pending[0])
            pending = None
        if src is None:  # the end of the file
            break
        rec = _record_messages(item)
        if rec is not None:
            pending = (src, item, rec)
            continue
        what = "a Chat Completions response with no request before it" if answer else "neither a request nor a response"
        problems.error("not_an_object", f"{what}: in a log of requests and their responses, not read", src)
    yield from chains.conversations()


def _items(stream: IO[str], filename: str, problems: ProblemSink) -> Iterator[tuple[Source, Any]]:
    """The file's records: JSON Lines, a document's array, or the array under ``data`` / ``records`` /
    ``items``."""
    for source, value in _reading.load_json_or_lines(stream, filename, problems, NAME):
        if source.record == "$" and isinstance(value, dict) and _record_messages(value) is None:
            for key in ("data", "records", "items"):  # {"data": [records]}
                if isinstance(value.get(key), list):
                    value = value[key]
                    break
        if source.record == "$" and isinstance(value, list) and value and _record_messages(value) is None:
            yield from ((Source(NAME, filename, record=f"$[{i}]"), v) for i, v in enumerate(value))
        else:
            yield source, value


def _nested_messages(msgs: list) -> str | None:
    """The path (``$[i].KEY...``) of a message list with an assistant message kept inside one of ``msgs`` under a
    key this reader does not read (a sub-agent's thread on the tool message answering its call), else None."""
    return next((p for i, m in enumerate(msgs) if isinstance(m, dict)
                 for p in [nested_thread(m, ("content", "tool_calls"), f"$[{i}]")] if p), None)


def _other_list(item: Any, msgs: list) -> str | None:
    """The top-level key of a record holding a list of messages (or of objects each wrapping one) with an
    assistant message, beside ``msgs`` and not a copy of some of them in order (a transcript's turns), else None."""
    if not isinstance(item, dict):
        return None
    for key, value in item.items():
        if value is msgs or not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
            continue
        inner = [v if "role" in v else next((w for w in v.values() if isinstance(w, dict) and "role" in w), None)
                 for v in value]
        if None in inner or not any(m.get("role") == "assistant" for m in inner):  # type: ignore[union-attr]
            continue
        if covering([msgs, inner]) != 0:  # not copies of some of the messages, in order
            return key
    return None


def _response_beside(item: Any) -> str | None:
    """The key under which a request record keeps its response object beside its ``messages`` (a proxy's request
    log: ``{"messages": [...], "response": {"choices": [...]}}``, the object perhaps as a JSON string, or null where
    the request failed, or the reply's text where messages end before it), else None; None too where the messages already end with that answer (an eval's record
    keeping the transcript and the raw response: a copy)."""
    msgs = item.get("messages") if isinstance(item, dict) else None
    if not isinstance(msgs, list) or not msgs:
        return None
    last = msgs[-1] if isinstance(msgs[-1], dict) else {}
    answered = last.get("role") == "assistant"
    for key, value in item.items():
        if key in ("response", "response_obj", "completion", "output") and not answered and (
                value is None or isinstance(value, str) and value.strip() and not value.lstrip().startswith("{")):
            return key  # a failed request of such a log (no response), or the reply logged as its text (myagent's)
        if isinstance(value, str) and value.lstrip().startswith("{"):
            try:
                value = _reading.loads(value)
            except ValueError:
                continue
        reply = _response_message(value)
        if reply is not None and not (answered and reply.get("content") == last.get("content")):
            return key
    return None


def _response_message(item: Any) -> dict | None:
    """The assistant message of a Chat Completions response object logged as a record of its own (``{"object":
    "chat.completion", "choices": [{"message": {...}}]}``, no request ``messages``), else None."""
    if not isinstance(item, dict) or item.get("messages") or not isinstance(item.get("choices"), list) \
            or not item["choices"] or not isinstance(item["choices"][0], dict):
        return None
    msg = item["choices"][0].get("message")
    if len(item["choices"]) > 1:  # answers sampled for one request: the general path reads each
        return None
    return msg if isinstance(msg, dict) and msg.get("role") == "assistant" else None


FORMAT = TraceFormat(
    name=NAME,
    description="OpenAI Chat Completions messages with tools/tool_calls (JSONL/JSON records, cassettes)",
    sniff=sniff,
    parse=with_text_tool_calls(parse),
)
