"""The common spellings of roles, content blocks, tool calls and tool results across agent frameworks and
provider APIs, mapped onto canonical messages. Used by the general path (``generic.py``) and by declared
mappings (``drafters/traces/mapping.py``); a format module with a documented schema does not need it.

Content blocks understood (``type`` values, case-insensitive, ``-``/``_`` alike):

- text: ``text``, ``input_text``, ``output_text`` with ``text`` / ``value`` / ``content``;
- reasoning: ``reasoning``, ``thinking``, ``redacted_thinking`` with ``text`` / ``thinking`` / ``reasoning``;
- tool call: ``tool_use``, ``tool_call``, ``function_call`` with ``id`` / ``tool_call_id`` / ``toolCallId``
  / ``call_id``, ``name`` / ``toolName`` / ``tool_name``, ``input`` / ``arguments`` / ``args`` /
  ``parameters``;
- tool result: ``tool_result``, ``tool_call_response``, ``function_call_output`` with ``tool_use_id`` /
  ``tool_call_id`` / ``toolCallId`` / ``call_id`` / ``id``, its text under ``content`` / ``output`` / ``result`` /
  ``response`` / ``text`` / ``value`` / ``outputs`` (a string, a nested list of blocks, or JSON); a result block
  with no text under any of them is not read as an empty result: it is a placeholder that ingestion reports
  (``unknown_content``; the general path says ``content_not_mapped``). In an assistant message a result block
  ends the model's call there (``_turns.split_at_results``);
- keyed blocks (the block's only key names its kind): Bedrock Converse ``toolUse`` / ``toolResult`` /
  ``reasoningContent``, Gemini and Google ADK ``functionCall`` / ``function_call`` / ``functionResponse`` /
  ``function_response``; any other single-key wrapper of a typed block (``{"message_content": {type, ...}}``)
  is unwrapped; a whole message given as content (``{role, content}``) reads its content;
- media: ``image``, ``image_url``, ``input_image``, ``audio``, ``input_audio``, ``file``, ``document``,
  ``video`` (counted placeholders); any other type is kept as a placeholder of that type, which
  ingestion reports as lost content.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

from drafters.traces.formats._content import as_list, as_text
from drafters.traces.model import (
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnsupportedPart,
)

ROLE_ALIASES: dict[str, str] = {
    "system": "system", "developer": "system",
    "user": "user", "human": "user", "customer": "user", "prompter": "user", "question": "user",
    "simulated_user": "user", "user_simulator": "user",  # an eval's simulated user is the agent's user (ArkSim)
    "assistant": "assistant", "ai": "assistant", "gpt": "assistant", "model": "assistant", "bot": "assistant",
    "chatbot": "assistant", "agent": "assistant", "answer": "assistant",
    "tool": "tool", "function": "tool", "observation": "tool", "ipython": "tool", "tool_result": "tool",
    "tool-response": "tool", "tool_response": "tool", "function_result": "tool", "function_response": "tool",
    "function_execution_result": "tool", "tool_results": "tool", "prompt": "user",
    # a reasoning record between messages (Responses API reasoning item, Grok CLI): the model's, read as a thought
    # of the assistant turn after it (_turns.turn_kind), never a call of its own
    "reasoning": "assistant", "thinking": "assistant", "thought": "assistant",
}  # role_of also reads camelCase / kebab-case spellings by their snake case (toolResult -> tool_result)
ROLE_KEYS = ("role", "from", "speaker", "author", "sender", "type", "source", "kind",  # source: ATIF (Harbor)
             "_type")  # _type: PromptingTools.jl's serialized messages (``"_type": "usermessage"``)
_CLASS_ROLES = ("system", "user", "human", "ai", "assistant", "tool", "function", "developer")
# A role given by a boolean: the key -> the role when true (false: the other of user / assistant).
ROLE_FLAGS = {"isCreatedByUser": "user", "is_created_by_user": "user", "isUser": "user", "is_user": "user",
              "fromUser": "user", "from_user": "user", "isBot": "assistant", "is_bot": "assistant"}
# blocks / additional_kwargs: LlamaIndex ChatMessage (and LangChain messages' additional_kwargs)
CONTENT_KEYS = ("content", "value", "text", "message", "parts", "data.content", "contents", "blocks",
                "items")  # items: Semantic Kernel's ChatMessageContent, {content_type, text} parts
CALL_KEYS = ("tool_calls", "toolCalls", "function_call", "data.tool_calls", "additional_kwargs.tool_calls")
RESULT_ID_KEYS = ("tool_call_id", "tool_use_id", "toolCallId", "call_id", "data.tool_call_id",
                  "additional_kwargs.tool_call_id")
_CALL_ID = ("id", "tool_call_id", "toolCallId", "call_id", "toolUseId")
_KEYED = {"toolUse": "tool_use", "toolResult": "tool_result", "reasoningContent": "reasoning",
          # Gemini / Google ADK parts, camelCase (API) and snake_case (Python SDK dumps)
          "functionCall": "tool_call", "function_call": "tool_call",
          "functionResponse": "tool_result", "function_response": "tool_result",
          # Haystack's ChatMessage.to_dict: {"tool_call": {tool_name, arguments, id}}, {"tool_call_result": {result,
          # origin: the call, error}}, {"reasoning": {reasoning_text, extra}}
          "tool_call": "tool_call", "tool_call_result": "tool_result", "reasoning": "reasoning"}
# Where a tool-result block keeps its text (Claude.ai exports: ``text``); a result block with none of them is read as
# ``UnsupportedPart(RESULT_NOT_READ)``, which ingestion reports (never an empty result read as ok).
RESULT_TEXT_KEYS = ("content", "output", "result", "response", "text", "value", "outputs")
#: A tool message's result where it has no content in CONTENT_KEYS (Home Assistant's ``tool_result`` object).
TOOL_MESSAGE_RESULT_KEYS = ("tool_result", "result", "output", "tool_output")
RESULT_NOT_READ = "tool_result_text_not_found"
_CALL_NAME = ("name", "toolName", "tool_name", "function_name")
_CALL_ARGS = ("input", "arguments", "args", "parameters", "tool_args", "tool_input",
              "input_parameters", "tool_kwargs")  # input_parameters: DeepEval's ToolCall; tool_kwargs: LlamaIndex
#: Keys of a tool call object that hold no argument (its id, name, kind, position, flags).
_CALL_META = {*_CALL_ID, *_CALL_NAME, "function", "type", "index", "method", "params", "status", "external"}
_MEDIA = {"image": "image", "image_url": "image", "input_image": "image", "audio": "audio",
          "input_audio": "audio", "file": "file", "input_file": "file", "document": "document", "video": "video",
          # the AI SDK's source parts: a provider's citations attached to the reply (search grounding), no token
          "source_url": "source", "source_document": "source"}


#: A message's media kept beside its text as a list (Ollama's ``images``: base64 strings): what the model saw, not
#: read (no text), counted as unsupported parts, never a key quietly not read.
MEDIA_LIST_KEYS = {"images": "image"}


def media_beside(raw: Any) -> list[UnsupportedPart]:
    """The unsupported parts standing for media a message keeps beside its text (``MEDIA_LIST_KEYS``)."""
    if not isinstance(raw, dict):
        return []
    return [UnsupportedPart(kind, count=len(raw[key])) for key, kind in MEDIA_LIST_KEYS.items()
            if isinstance(raw.get(key), list) and raw[key]]


def get(obj: Any, dotted: str, default: Any = None) -> Any:
    """``obj[a][b]`` for ``dotted`` = ``"a.b"``; ``default`` when a step is missing or not an object (a
    sentinel tells an absent key from a present null)."""
    for key in dotted.split("."):
        if not isinstance(obj, dict) or key not in obj:
            return default
        obj = obj[key]
    return obj


def first(obj: Any, keys: tuple[str, ...]) -> Any:
    """The value of the first of ``keys`` (dotted) present in ``obj``, else None."""
    for key in keys:
        value = get(obj, key)
        if value is not None:
            return value
    return None


def role_of(value: Any, aliases: dict[str, str] | None = None) -> str | None:
    """The canonical role of a role value (an ``author`` object's ``role`` too), or None when unknown."""
    if isinstance(value, dict):
        value = value.get("role")
    if not isinstance(value, str):
        return None
    table = aliases if aliases is not None else ROLE_ALIASES
    if aliases is not None:
        return table.get(value) or table.get(value.strip().lower())
    name = snake(value)
    if name.endswith("_message") or name == "aimessage":  # a message class: UserMessage, AIMessage, ToolMessage
        name = name[:-8] if name.endswith("_message") else "ai"
    elif name.endswith("message") and name[:-7] in _CLASS_ROLES:  # lower case (PromptingTools.jl's ``usermessage``)
        name = name[:-7]
    return table.get(value) or table.get(value.strip().lower()) or table.get(name)


# An assistant turn that records its own failure: a stop reason in these spellings, or an error message beside it.
STOP_KEYS = ("stopReason", "stop_reason", "finish_reason", "finishReason")
FAILED_STOPS = {"error", "aborted", "abort", "cancelled", "canceled", "interrupted",
                # the provider withheld the reply (Gemini's FinishReason, OpenAI's content_filter)
                "recitation", "safety", "blocklist", "prohibited_content", "spii", "content_filter",
                "malformed_function_call"}
ERROR_KEYS = ("errorMessage", "error_message", "error", "error_str")  # error_str: LiteLLM's request log


def failed_turn(raw: Any) -> bool:
    """Whether a raw assistant message records that its request failed (``stopReason: error`` / ``aborted``, a
    non-empty ``errorMessage``): its tool calls were never run, and with no content it is no model turn."""
    if not isinstance(raw, dict):
        return False
    stop = first(raw, STOP_KEYS)
    if isinstance(stop, str) and snake(stop) in FAILED_STOPS:
        return True
    return any(raw.get(k) not in (None, "", False, {}, []) for k in ERROR_KEYS)


def snake(value: str) -> str:
    """A spelling's words in snake case: ``toolResult`` / ``tool-result`` / ``Tool_Result`` -> ``tool_result``
    (camelCase split at each lower-to-upper step; ``-`` and spaces as ``_``)."""
    value = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", value.strip())
    return re.sub(r"[-\s]+", "_", value).lower()


def flag_roles(key: str) -> dict[str, str] | None:
    """The ``roles`` of a boolean role key (``{"true": "user", "false": "assistant"}``), else None."""
    role = ROLE_FLAGS.get(key.rsplit(".", 1)[-1])
    if role is None:
        return None
    return {"true": role, "false": "assistant" if role == "user" else "user"}


#: Block kinds also read from a ``kind`` key where a block has no ``type`` (Evener's transcripts); ``kind`` holds
#: other things elsewhere (VS Code chat's ``markdownContent``), so only these.
_KIND_VALUES = ("text", "thinking", "reasoning", "tool_call", "tool_use", "tool_result", "function_call")


def _kind(block: dict) -> str:
    # toolCall, tool-call, tool_call alike; Semantic Kernel's content_type (text, function_call, function_result)
    kind = snake(str(block.get("type") or block.get("block_type") or block.get("content_type") or ""))
    if not kind and isinstance(block.get("kind"), str) and snake(block["kind"]) in _KIND_VALUES:
        kind = snake(block["kind"])
    return kind


def tool_call(block: dict) -> ToolCallPart:
    """A tool call in any of the common spellings (OpenAI ``{id, function{name, arguments}}`` included; an MCP
    request ``{method: tools/call, params: {name, arguments}}``)."""
    fn = block.get("function") if isinstance(block.get("function"), dict) else \
        block["params"] if block.get("method") == "tools/call" and isinstance(block.get("params"), dict) else block
    return ToolCallPart.from_raw(as_text(first(block, _CALL_ID)) or None, str(first(fn, _CALL_NAME)),
                                 first(fn, _CALL_ARGS))


def args_not_read(value: Any) -> list[str]:
    """Keys of message-level tool calls (``calls_of``'s input) with no argument key in a known spelling that hold
    data no key of a call names: the arguments are there, and reading the call as ``{}`` would lose them."""
    found = []
    for c in _call_objects(value):
        fn = c.get("function") if isinstance(c.get("function"), dict) else c
        if first(fn, _CALL_ARGS) is None and not (c.get("method") == "tools/call" and isinstance(c.get("params"), dict)):
            found += [k for k, v in c.items() if k not in _CALL_META and v not in (None, "", [], {}, False)]
    return list(dict.fromkeys(found))


_SIGNATURES = frozenset({"thoughtSignature", "thought_signature"})  # beside a keyed part: not its payload


def block_part(block: Any) -> Any:
    """One content block -> a canonical part (None for an empty text)."""
    if isinstance(block, str):
        return TextPart(block) if block else None
    if not isinstance(block, dict):
        return TextPart(as_text(block))
    if set(block) == {"cachePoint"}:  # Bedrock's prompt-cache marker: no content
        return None
    if _kind(block) == "document" and isinstance(block.get("document"), dict) and "data" in block["document"]:
        return TextPart(as_text(block["document"]["data"]))  # Cohere v2's tool result document: its data
    # Gemini: {"functionCall": {...}, "thoughtSignature": "...", "thought": false}: the payload's key, the marks aside
    keyed = [k for k in block if k not in _SIGNATURES and block[k] is not False and block[k] is not None]
    if len(keyed) == 1 and isinstance(block[keyed[0]], dict):
        key, inner = keyed[0], block[keyed[0]]
        if key in _KEYED:  # Bedrock Converse: {"toolUse": {...}}, {"toolResult": {...}}, {"reasoningContent": ...}
            return block_part({**_flat_keyed(inner), "type": _KEYED[key]})
        if "type" in inner:
            return block_part(inner)  # a wrapped block: {"message_content": {type, text}}
    kind = _kind(block)
    if kind == "tool_result" and isinstance(block.get(kind), dict) and first(block[kind], RESULT_TEXT_KEYS) is None:
        # the payload under its kind's key is the result itself (Azure AI evaluation: {"weather": ...})
        return ToolResultPart(as_text(first(block, _CALL_ID + ("tool_use_id",))) or None, as_text(block[kind]))
    if kind and isinstance(block.get(kind), dict) and kind not in ("text",):  # the payload under its kind's key
        return block_part({**block[kind], "type": kind})  # ({"kind": "tool_call", "tool_call": {id, name, ...}})
    if kind == "redacted_thinking":  # Anthropic's encrypted reasoning: its data is no text (kept as the signature)
        return ReasoningPart("", signature=as_text(block.get("data")) or None, redacted=True)
    if kind and set(block) == {"kind" if "kind" in block else "type", "data"}:  # serde adjacently tagged variant
        data = block["data"]  # ({"kind": "text", "data": "..."}, {"kind": "toolUse", "data": {toolUseId, ...}})
        return block_part({**data, "type": kind} if isinstance(data, dict) else {"type": kind, "text": data})
    if kind == "" and _untyped_call(block):  # AutoGen FunctionCall: {id, name, arguments}, no type
        return tool_call(block)
    if kind == "" and any(block.get(k) is not None for k in RESULT_ID_KEYS[:4]) and "content" in block:
        # AutoGen FunctionExecutionResult: {content, name, call_id, is_error}, no type
        return block_part({**block, "type": "tool_result"})
    if kind in ("text", "") and block.get("thought") is True and isinstance(block.get("text"), str):
        return ReasoningPart(block["text"], signature=block.get("thoughtSignature")) if block["text"] else None
    if kind in ("text", "input_text", "output_text", "") and first(block, ("text", "value", "content")) is not None:
        value = first(block, ("text", "value", "content"))
        if isinstance(value, dict) and isinstance(value.get("value"), str):  # Assistants API: {value, annotations}
            value = value["value"]
        text = as_text(value)
        return TextPart(text) if text else None
    if kind in ("reasoning", "thinking"):  # Mistral's thinking: a list of text chunks; LlamaIndex's: content
        value = first(block, ("text", "thinking", "reasoning", "value", "content"))
        text = "".join(p.text for p in block_parts(value) if isinstance(p, TextPart)) if isinstance(value, list) \
            else as_text(value)
        return ReasoningPart(text, signature=block.get("signature"))
    if kind in ("tool_use", "tool_call", "function_call", "tool_request"):  # tool_request: chatlas, ellmer
        return tool_call(block)
    if kind in ("tool_result", "tool_call_response", "function_call_output", "function_result"):
        output = first(block, RESULT_TEXT_KEYS)
        typed = output if isinstance(output, dict) and set(output) == {"type", "value"} else None
        if typed is not None:  # AI SDK v5: {type: json|text|error-text|error-json, value}: the model is sent the value
            output = typed["value"] if isinstance(typed["value"], str) else as_text(typed["value"])
        text = result_text(output)
        if text is None:  # no result text in a known spelling: never read as an empty result
            return UnsupportedPart(RESULT_NOT_READ)
        asked = block.get("request") if isinstance(block.get("request"), dict) else {}  # chatlas: the call it answers
        return ToolResultPart(as_text(first(block, ("tool_use_id", "tool_call_id", "toolCallId", "call_id", "id",
                                                    "toolUseId")) or asked.get("id")) or None, text,
                              is_error=bool(block.get("is_error")) or block.get("status") == "error"
                              or str((typed or {}).get("type", "")).startswith("error"))
    if kind in _MEDIA:
        return UnsupportedPart(_MEDIA[kind])
    if kind == "" and len(block) == 1 and next(iter(block)) in _MEDIA:  # {"image_url": {...}} with no type
        return UnsupportedPart(_MEDIA[next(iter(block))])
    return UnsupportedPart(kind or "untyped_block")


def _untyped_call(block: dict) -> bool:
    """A block without a type that is a function call: a name (text) and arguments, and nothing of text."""
    return isinstance(block.get("name"), str) and any(k in block for k in ("arguments", "args")) and not any(
        k in block for k in ("text", "value", "content", "role"))


def result_text(value: Any) -> str | None:
    """A tool result's text: a string as is; a list of blocks (or strings) joined, each block's text found in
    the common spellings (a nested result's text, other JSON as compact JSON, media left out); any other
    JSON value as compact JSON. None when there is none (absent)."""
    if value is None:
        return None
    if not isinstance(value, list):
        part = block_part(value) if isinstance(value, dict) and ("type" in value or "text" in value) else None
        return part.text if isinstance(part, TextPart) else part.content if isinstance(part, ToolResultPart) \
            else as_text(value)
    texts = []
    for item in value:
        part = block_part(item)
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, ToolResultPart):
            texts.append(part.content)
        elif isinstance(part, UnsupportedPart) and part.lost:
            texts.append(as_text(item))  # a block of no known kind ({"json": {...}}): its JSON, not lost
    return "".join(texts)


def _flat_keyed(inner: dict) -> dict:
    """A keyed block's payload in the spellings ``block_part`` reads: Bedrock's ``reasoningContent: {reasoningText:
    {text, signature}}`` as ``{text, signature}``, Haystack's ``reasoning_text`` as ``text`` and a result's
    ``origin`` (the call it answers) as its ``tool_call_id``, ``error`` as ``is_error``."""
    text = inner.get("reasoningText")
    flat = {**inner, **text} if isinstance(text, dict) else dict(inner)
    if isinstance(flat.get("reasoning_text"), str) and "text" not in flat:
        flat["text"] = flat["reasoning_text"]
    origin = flat.get("origin")
    if isinstance(origin, dict) and isinstance(origin.get("id"), str) and "tool_call_id" not in flat:
        flat["tool_call_id"] = origin["id"]
    if flat.get("error") is True:
        flat["is_error"] = True
    return flat


def block_parts(content: Any) -> list:
    """A content value (string, one block, or a list of blocks) -> canonical parts, every block kind read
    (text, reasoning, tool calls and results of any vendor's spelling, media as placeholders). The general
    path's reader, where a block can be anything; ``_content.content_parts`` reads a chat format's message
    content, where a typed part that is not text or reasoning is lost content."""
    if isinstance(content, dict) and "type" not in content and "text" not in content and \
            isinstance(content.get("content"), (list, str)):
        content = content["content"]  # a whole message given as content ({role, content}): its content
    blocks = content if isinstance(content, list) else [content] if content is not None else []
    if any(tool_invocation(b) == [] for b in blocks):  # step markers (the AI SDK's step-start): steps say it
        return _by_steps(blocks)
    out: list = []
    run: list[list] = []  # consecutive tool blocks each holding a call and its result: one step's parallel calls
    step = None
    for b in blocks:
        invoked = tool_invocation(b)
        if invoked is not None and len(invoked) == 2:
            inv = b.get("toolInvocation") if isinstance(b.get("toolInvocation"), dict) else b
            if run and inv.get("step") != step:  # AI SDK v4 numbers each invocation's step
                out += _parallel(run)
                run = []
            run.append(invoked)
            step = inv.get("step")
            continue
        out += _parallel(run)
        run = []
        out += invoked if invoked is not None else [p for p in [block_part(b)] if p is not None]
    return out + _parallel(run)


def _by_steps(blocks: list) -> list:
    """Blocks split by step markers (``step-start``), each step read as the model's reply (its text and calls, in
    order) and then its calls' results: a step is one LLM call, its tool parts the calls it made, whatever text
    sits between them."""
    out: list = []
    step: list = []
    for b in [*blocks, None]:
        invoked = tool_invocation(b) if b is not None else []
        if invoked == []:  # a marker, or the end
            out += [p for p in step if not isinstance(p, ToolResultPart)]
            out += [p for p in step if isinstance(p, ToolResultPart)]
            step = []
            continue
        step += invoked if invoked is not None else [p for p in [block_part(b)] if p is not None]
    return out


def _parallel(run: list[list]) -> list:
    """Tool blocks of one step, each a call and its result (the AI SDK's UI parts), as the step's calls and then
    their results: the model asked for all of them in one reply (read call, result, call, result, each result would
    end a call, and the calls after it become replies the model never wrote). A step marker or any other part
    between them ends the run."""
    return [pair[0] for pair in run] + [pair[1] for pair in run]


#: Parts that mark a step and hold no content, only metadata (the AI SDK's UI messages: ``{"type": "step-start"}``;
#: OpenCode's ``step-start`` / ``step-finish`` with ids, a snapshot hash and token counts, its ``patch`` naming the
#: files a step changed by path and hash).
_MARKERS = ("step_start", "step_finish", "patch")
#: Keys that make a part more than a marker: it holds something the model read or wrote.
_MARKER_NOT = frozenset({"text", "content", "input", "output", "state", "parts", "reasoning", "diff", "patch", "data",
                         "value", "args", "arguments", "result"})
#: Block kinds spelled like the AI SDK's ``tool-NAME`` parts that name no tool (TanStack AI's ``tool-result``).
_BLOCK_KINDS = ("tool_result", "tool_call", "tool_use", "tool_output", "tool_error", "tool_input", "tool_response")


def tool_invocation(block: Any) -> list | None:
    """The parts of a block that holds a tool call and, once run, its result (the AI SDK's UI message parts:
    v4 ``{"type": "tool-invocation", "toolInvocation": {toolCallId, toolName, args, state, result}}``, v5
    ``{"type": "tool-NAME" | "dynamic-tool", toolCallId, toolName?, input, state, output}``): ``[call]`` or
    ``[call, result]`` (the result ends the call, as a result block inside a reply does); OpenCode's ``tool``
    parts alike (``_tool_with_state``); ``[]`` for a marker part (``step-start``); None for any other block."""
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return None
    kind = block["type"]
    if snake(kind) in _MARKERS and not block.keys() & _MARKER_NOT:
        return []
    if kind == "tool" and isinstance(block.get("state"), dict):
        return _tool_with_state(block, block["state"])
    named = kind.startswith("tool-") and snake(kind) not in _BLOCK_KINDS  # "tool-result" is a result, no tool
    inv = block.get("toolInvocation") if kind == "tool-invocation" else \
        block if (named or kind == "dynamic-tool") and "toolCallId" in block else None
    if not isinstance(inv, dict) or not isinstance(inv.get("toolCallId"), str):
        return None
    name = inv.get("toolName") or (kind[len("tool-"):] if kind.startswith("tool-") else None)
    call = ToolCallPart.from_raw(inv["toolCallId"], str(name or ""), first(inv, ("args", "input")))
    out = first(inv, ("result", "output"))
    if out is None and inv.get("state") == "output-error":  # v5: the error the tool raised, as its result
        out = inv.get("errorText")
    if out is None:
        return [call]
    # the tool's return value: content blocks are read as text, any other list (["a.txt", "b.txt"]) is JSON
    blocks = not isinstance(out, list) or all(isinstance(o, dict) and "type" in o for o in out)
    text = result_text(out) if blocks else None
    return [call, ToolResultPart(inv["toolCallId"], text if text is not None else as_text(out),
                                 is_error=inv.get("state") == "output-error")]


def _tool_with_state(block: dict, state: dict) -> list | None:
    """OpenCode's ``tool`` part: ``{type: tool, id | callID, name | tool, state: {status, input, output}}``, the
    call and, once the status is completed or error, its result (``output``; v2 keeps a file's text under
    ``structured`` beside an empty ``content`` list). None when it holds no call id or no input."""
    call_id, name = first(block, ("callID", "toolCallId", "id")), first(block, ("tool", "name", "toolName"))
    if not isinstance(call_id, str) or "input" not in state:
        return None
    call = ToolCallPart.from_raw(call_id, str(name or ""), state["input"])
    if state.get("status") not in ("completed", "error"):
        return [call]
    structured = state.get("structured")
    out = next((v for v in (state.get("output"), state.get("result"), state.get("error"), state.get("content"),
                            first(structured, ("content", "text")) if isinstance(structured, dict) else None,
                            structured) if v not in (None, "", [], {})), "")
    text = result_text(out)
    return [call, ToolResultPart(call_id, text if text is not None else as_text(out),
                                 is_error=state.get("status") == "error")]


EXECUTED_CALL_KEYS = ("request", "call", "tool_call", "action")  # where an executed call's record keeps the call
_EXECUTED_RESULT = ("response", "result", "output", "observation")
_EXECUTED_ERROR = ("exception", "error")


def executed_calls(value: Any) -> list | None:
    """The parts of a message-level list of calls recorded with their results, one record per call the harness
    ran (ToolTalk's ``apis``: ``[{request: {api_name, parameters}, response, exception}]``): ``[call, result,
    call, result, ...]``, each result ending its call (``_turns.split_at_results``). None unless every item holds
    a call (a name and arguments, under one of ``EXECUTED_CALL_KEYS``) and a result or an error beside it."""
    if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
        return None
    parts: list = []
    for item in value:
        call = next((item[k] for k in EXECUTED_CALL_KEYS if isinstance(item.get(k), dict)), None)
        if call is None and isinstance(first(item, _CALL_NAME), str):  # the call's keys beside its result (DeepEval)
            call = item
        name = first(call, (*_CALL_NAME, "api_name", "tool")) if call is not None else None
        if not isinstance(name, str) or not any(k in call for k in _CALL_ARGS) or \
                not any(k in item for k in _EXECUTED_RESULT + _EXECUTED_ERROR):
            return None
        call_id = as_text(first(call, _CALL_ID) or first(item, _CALL_ID)) or None
        error = first(item, _EXECUTED_ERROR)
        out = first(item, _EXECUTED_RESULT) if error in (None, "") else error
        text = result_text(out)
        parts += [ToolCallPart.from_raw(call_id, name, first(call, _CALL_ARGS)),
                  ToolResultPart(call_id, text if text is not None else as_text(out), is_error=error not in (None, ""))]
    return parts


def executed_key(raw: dict, skip: set[str]) -> tuple[str, list] | None:
    """``(key, parts)``: the key of a message (outside ``skip``, the keys read otherwise) whose value
    ``executed_calls`` reads, and those parts; None when no key holds such calls."""
    for k, v in raw.items():
        parts = executed_calls(v) if k not in skip else None
        if parts is not None:
            return k, parts
    return None


TIME_KEYS = ("created_at", "createdAt", "timestamp", "created", "time", "ts")


def newest_first(msgs: list) -> bool:
    """Whether a message list is written newest first (the OpenAI Assistants API lists a thread's messages in
    descending ``created_at`` by default): every message carries one time key (``TIME_KEYS``) with values of one
    kind (numbers, or ISO-8601 texts), never rising and falling at least once."""
    if len(msgs) < 2 or not all(isinstance(m, dict) for m in msgs):
        return False
    key = next((k for k in TIME_KEYS if all(m.get(k) is not None for m in msgs)), None)
    if key is None:
        return False
    times = [m[key] for m in msgs]
    if not (all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in times)
            or all(isinstance(t, str) and re.match(r"^\d{4}-\d\d-\d\d", t) for t in times)
            or all(isinstance(t, str) and re.match(r"^\d\d:\d\d:\d\d", t) for t in times)):  # a day's times
        return False
    return all(a >= b for a, b in pairwise(times)) and times[0] > times[-1]


def contents_shorthand(record: Any, depth: int = 0) -> Any:
    """``record`` with each Gemini ``contents`` given in the Python SDK's shorthand (one part ``{"text": ...}``
    or a string, as tracing exports log ``generate_content("...")``) replaced by the one user turn it stands for,
    ``[{"role": "user", "parts": [part]}]``; anything else is left as it is (looked for two objects deep)."""
    if not isinstance(record, dict) or depth > 2:
        return record
    out = {k: contents_shorthand(v, depth + 1) for k, v in record.items()}
    value = out.get("contents")
    if isinstance(value, str) and value.strip():
        value = {"text": value}
    if isinstance(value, dict) and set(value) == {"text"} and isinstance(value["text"], str):
        out["contents"] = [{"role": "user", "parts": [value]}]
    return out if any(out[k] is not v for k, v in record.items()) else record


_RESPONSE_IDS = ("message_id", "messageId", "response_id", "responseId", "requestId", "message.id", "id")


def response_id(raw: Any) -> str | None:
    """The id of the model response an assistant record belongs to, when the record carries one."""
    value = next((get(raw, k) for k in _RESPONSE_IDS if isinstance(get(raw, k), str) and get(raw, k)), None)
    return value if isinstance(value, str) else None


def calls_of(value: Any) -> list[ToolCallPart]:
    """Message-level tool calls (a list, one legacy ``function_call`` object, or a map of call id -> call:
    fast-agent's ``{id: {method: tools/call, params}}``)."""
    return [tool_call(c) for c in _call_objects(value)]


def _call_objects(value: Any) -> list[dict]:
    """The call objects of message-level tool calls (a list, one object, or a map of call id -> call, the id
    written into each)."""
    by_id = keyed_by_id(value)
    if by_id is not None:
        return [{**c, "id": k} for k, c in by_id.items()]
    return [c for c in ([value] if isinstance(value, dict) else as_list(value)) if isinstance(c, dict)]


def keyed_by_id(value: Any) -> dict[str, dict] | None:
    """``value`` when it is a map of ids to objects (calls or results keyed by call id), else None: every value
    an object, and no key a field of a call or a result (``name``, ``arguments``, ``content``, ...)."""
    fields = {*_CALL_ID, *_CALL_NAME, *_CALL_ARGS, "function", "type", "content", "output", "result", "method",
              "params", "outputs", "call", "is_error", "isError"}
    if not isinstance(value, dict) or not value or any(k in fields for k in value):
        return None
    return value if all(isinstance(v, dict) for v in value.values()) else None


def result_parts(raw: dict, text_parts: list) -> list:
    """The parts of a tool message: its text becomes the result of the call it answers (by the common
    id keys, or by position when it has none); results given as blocks or Cohere-style ``tool_results``
    are kept as they are."""
    parts = [p for p in text_parts if not isinstance(p, TextPart)]
    by_id = keyed_by_id(raw.get("tool_results"))
    for call_id, item in (by_id or {}).items():  # results keyed by call id (MCP CallToolResult: content, isError)
        text = result_text(first(item, ("content", "output", "result")))
        parts.append(ToolResultPart(call_id, text if text is not None else as_text(item),
                                    is_error=bool(first(item, ("isError", "is_error")))))
    for item in [] if by_id else as_list(raw.get("tool_results")):  # Cohere: [{call{name, parameters}, outputs[...]}]
        if isinstance(item, dict):
            parts.append(ToolResultPart(None, as_text(first(item, ("outputs", "output", "content", "result"))),
                                        name=as_text(get(item, "call.name")) or None))
    if not any(isinstance(p, ToolResultPart) for p in parts):
        text = "".join(p.text for p in text_parts if isinstance(p, TextPart))
        ids = first(raw, RESULT_ID_KEYS + ("tool_call_ids",))
        call_id = ids[0] if isinstance(ids, list) and ids else ids
        parts.insert(0, ToolResultPart(as_text(call_id) or None, text, name=raw.get("name")
                                       if isinstance(raw.get("name"), str) else None))
    return parts


_THOUGHT_ROLES = ("reasoning", "thinking", "thought")  # = _turns.THOUGHT_TYPES


def summary_texts(raw: dict) -> list[str] | None:
    """The texts of a reasoning record's ``summary`` (a list of ``summary_text`` blocks, or a string) when its role
    value names reasoning (``type: reasoning``: a Responses API reasoning item written as a message line), else
    None."""
    if not any(isinstance(raw.get(k), str) and raw[k].lower() in _THOUGHT_ROLES for k in ROLE_KEYS):
        return None
    summary = raw.get("summary")
    if isinstance(summary, str):
        return [summary] if summary else []
    if isinstance(summary, list) and all(isinstance(b, dict) and isinstance(b.get("text"), str) and
                                         b.get("type") in (None, "summary_text") for b in summary):
        return [b["text"] for b in summary if b["text"]]
    return None


MESSAGE_WRAPPERS = ("", "message.", "data.", "kwargs.", "content.")  # a message's keys, or the object it wraps (ADK: content)


def is_message(value: Any) -> bool:
    """A dict with a role in a known spelling (at the top level or in a ``message``/``data`` wrapper)."""
    return isinstance(value, dict) and role_key([value]) is not None


def role_key(msgs: list) -> str | None:
    for wrapper in MESSAGE_WRAPPERS:
        for key in (*ROLE_KEYS, "author.role"):  # author.role: an author object (ChatGPT's export)
            values = [get(m, wrapper + key) for m in msgs]
            if values and all(isinstance(v, str) and role_of(v) for v in values):
                return wrapper + key
    for key in ROLE_FLAGS:  # a role given by a boolean (isCreatedByUser), when no key spells it as text
        if msgs and all(isinstance(get(m, key), bool) for m in msgs):
            return key
    return None


def role_value(message: Any, key: str) -> str | None:
    """The canonical role of a message under ``key`` (a text role, or a boolean role key)."""
    value = get(message, key)
    if isinstance(value, bool):
        return (flag_roles(key) or {}).get(str(value).lower())
    return role_of(value)
