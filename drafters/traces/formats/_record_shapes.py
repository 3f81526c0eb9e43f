"""What one record holds, for the general path's shape inference (``_shapes.infer``): a message tree (nodes
linked by parent and/or children ids, or nested) and a saved run state (a run's input text beside the model's
Responses API output items), and whether a record holds a message, data, or an assistant object anywhere
(declared mappings ask). The readings themselves: drafters/traces/mapping_tree.py and the declared
mapping's ``response`` (docs/traces.md).
"""

from __future__ import annotations

import json
from typing import Any

from drafters.traces.formats._spellings import (
    CALL_KEYS,
    CONTENT_KEYS,
    ROLE_KEYS,
    block_parts,
    calls_of,
    get,
    is_message,
    role_key,
    role_of,
    role_value,
)
from drafters.traces.json_paths import child_path
from drafters.traces.model import ReasoningPart, TextPart, ToolCallPart, ToolResultPart

RESPONSES_MODEL_ITEMS = ("function_call", "function_call_output", "function_call_result", "reasoning",
                         "custom_tool_call", "custom_tool_call_output", "local_shell_call", "local_shell_call_output",
                         # tools the provider ran while answering (a web search): the reader counts them, unread
                         "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call",
                         "mcp_call")


def is_items(value: Any, loose: bool = False) -> bool:
    """A list of OpenAI Responses API items: every entry a message (role) or a typed item, some of them the
    model's own items (function calls, their outputs, reasoning), which tell it from a plain message list
    (``loose``: not required, for a call's input, which may hold only the user's message)."""
    if not isinstance(value, list) or not value or not all(isinstance(i, dict) for i in value):
        return False
    typed = [i.get("type") for i in value if "role" not in i]
    return all(isinstance(t, str) for t in typed) and (
        loose or any(i.get("type") in RESPONSES_MODEL_ITEMS for i in value))


PARENT_KEYS = ("parent", "parent_id", "parentId", "parent_message_id", "parentMessageId", "parent_uuid",
               "parentUuid", "parent_message_uuid", "parentMessageUuid")  # the last two: Claude.ai's messages
CHILDREN_KEYS = ("children", "child_ids", "childIds", "children_ids", "childrenIds")
CURRENT_KEYS = ("current_node", "currentNode", "current_node_id", "currentNodeId", "current_leaf", "currentLeaf",
                "current_leaf_id", "currentLeafId", "current_message_id", "currentMessageId", "leaf_id", "leafId",
                "current_leaf_message_uuid")
NODE_MESSAGE_KEYS = ("message", "data", "item", "value")


NODE_ID_KEYS = ("id", "messageId", "message_id", "uuid", "nodeId", "node_id")


def node_id_key(nodes: list) -> str | None:
    """The key every node of a list has its id under (``id``, ``messageId``, ...), or None."""
    return next((k for k in NODE_ID_KEYS if nodes and all(isinstance(v, dict) and isinstance(v.get(k), (str, int))
                                                           for v in nodes)), None)


def nested_nodes(value: Any, key: str, depth: int = 0) -> list[dict] | None:
    """The nodes of a NESTED tree (a list of nodes whose ``key`` lists its child nodes themselves, not their
    ids), depth first; None when ``value`` is not one."""
    if not isinstance(value, list) or not all(isinstance(v, dict) and isinstance(v.get(key), list) for v in value) \
            or depth > 200:
        return None
    out: list[dict] = []
    for v in value:
        kids = nested_nodes(v[key], key, depth + 1) if v[key] else []
        if kids is None:
            return None
        out += [v, *kids]
    return out


def node_collection(value: Any) -> list[tuple[str, Any]] | None:
    """(id, node) of an object of nodes keyed by id, or of a list of nodes each with an id (``NODE_ID_KEYS``),
    or of a nested tree of such nodes (children holding the child nodes)."""
    if isinstance(value, dict) and len(value) >= 2 and all(isinstance(v, dict) for v in value.values()):
        return [(str(k), v) for k, v in value.items()]
    for key in CHILDREN_KEYS:
        nested = nested_nodes(value, key)
        if nested is not None and len(nested) >= 2 and any(v[key] for v in value):
            ident = node_id_key(nested)
            return [(str(v[ident]), v) for v in nested] if ident else None
    ident = node_id_key(value) if isinstance(value, list) and len(value) >= 2 else None
    return [(str(v[ident]), v) for v in value] if ident else None


def _tree_keys(nodes: list[tuple[str, Any]]) -> dict[str, str] | None:
    """The ``tree`` keys of a node collection: the key linking a node to its parent and/or children (ids of
    nodes of the collection), and where a node's message sits (``message``; absent: the node is the message).
    None when the nodes are not linked by ids or hold no assistant message."""
    ids = {i for i, _ in nodes}
    out: dict[str, str] = {}
    ident = node_id_key([n for _, n in nodes])
    if ident not in (None, "id"):
        out["id"] = ident
    nested = next((k for k in CHILDREN_KEYS if any(isinstance(n.get(k), list) and n[k] and
                                                   all(isinstance(c, dict) for c in n[k]) for _, n in nodes)), None)
    if nested is not None:  # children hold the child nodes: the nesting links them (a parent key is not needed)
        out["children"] = nested
    parent = None if nested else next((k for k in PARENT_KEYS if all(k in n and (n[k] is None or isinstance(n[k], (str, int)))
                                                 for _, n in nodes)), None)
    if parent and any(n[parent] is not None and str(n[parent]) in ids for _, n in nodes):
        out["parent"] = parent
    children = next((k for k in CHILDREN_KEYS if all(isinstance(n.get(k), list) for _, n in nodes)), None)
    if children and not nested and any(str(c) in ids for _, n in nodes for c in n[children]):
        out["children"] = children
    if "parent" not in out and "children" not in out:
        return None
    key = next((k for k in NODE_MESSAGE_KEYS if all(n.get(k) is None or is_message(n.get(k)) for _, n in nodes)
                and sum(1 for _, n in nodes if n.get(k) is not None) >= 2), None)
    if key is not None:  # each node holds its message (or none: a root)
        out["message"] = key
        msgs = [n[key] for _, n in nodes if n.get(key) is not None]
    elif all(is_message(n) for _, n in nodes):
        msgs = [n for _, n in nodes]
    else:
        return None
    role = role_key(msgs)
    if role is None or not any(role_value(m, role) == "assistant" for m in msgs):
        return None
    return out


def tree_of(value: Any) -> tuple[str, dict[str, str], list] | None:
    """(path, tree keys, node messages) of the message tree a record holds (up to three keys deep).
    Where several are found and one holds the nodes of every other (Open WebUI's ``chat.history.messages`` beside
    ``chat.messages``, the current branch's copy; where both hold the same nodes, the deeper, the store), that one;
    any other several: None (not guessed)."""
    if not isinstance(value, dict):
        return None
    places, level = [], [("$", value)]
    for _ in range(3):
        level = [(child_path(path, k), v) for path, holder in level if isinstance(holder, dict)
                 for k, v in holder.items()]
        places += level
    found = []
    for path, v in places:
        nodes = node_collection(v)
        keys = _tree_keys(nodes) if nodes else None
        if keys is not None:
            msgs = [get(n, keys["message"]) if "message" in keys else n for _, n in nodes]  # type: ignore[union-attr]
            found.append((path, keys, [m for m in msgs if m is not None], {i for i, _ in nodes}))
    whole = [f for f in found if all(g[3] <= f[3] for g in found)]
    if len(whole) > 1:  # the same nodes twice (a branch that is the whole tree): the store, found deepest
        whole = [f for f in whole if f[0].count(".") == max(g[0].count(".") for g in whole)]
    return whole[0][:3] if len(whole) == 1 else None


#: Responses API items that are the model's tool calls (Open WebUI keeps a reply's items under ``output``).
MODEL_CALL_ITEMS = ("function_call", "custom_tool_call", "local_shell_call")
MODEL_OUTPUT_ITEMS = (*MODEL_CALL_ITEMS, "reasoning")
RUN_INPUT_KEYS = ("input", "original_input", "originalInput", "user_input", "userInput", "prompt", "query",
                  "task", "question")


def _model_outputs(value: Any, path: str = "$", depth: int = 0) -> list[tuple[str, list]]:
    """Every list of the model's own Responses API output items (assistant messages, function calls,
    reasoning; nothing the user or a tool wrote) under an output-like key, through objects and lists."""
    if depth > 5:
        return []
    if isinstance(value, list):
        if is_items(value, loose=True) and all(i.get("type") in MODEL_OUTPUT_ITEMS or (
                i.get("type", "message") == "message" and role_of(i.get("role")) == "assistant") for i in value) \
                and any(k in path.rsplit(".", 1)[-1] for k in ("output", "response", "completion", "generation")):
            return [(path, value)]
        return [f for i, v in enumerate(value[:100]) for f in _model_outputs(v, f"{path}[{i}]", depth + 1)]
    if isinstance(value, dict):
        return [f for k, v in value.items() for f in _model_outputs(v, child_path(path, k), depth + 1)]
    return []


def run_state_call(value: Any) -> tuple[str, str] | None:
    """(input path, output path) of a run's saved state holding one LLM call: the run's input as text at a
    top-level input key, and the model's output items at one or more paths that all hold the same items (a
    ``last_model_response`` and ``model_responses[0]`` of one turn). Several different outputs (several turns,
    whose later contexts the state does not hold) or several inputs: None."""
    if not isinstance(value, dict):
        return None
    inputs = [k for k, v in value.items() if (k in RUN_INPUT_KEYS or k.lower().endswith("_input"))
              and isinstance(v, str) and v.strip()]
    outs = _model_outputs(value)
    if len(inputs) != 1 or not outs or len({json.dumps(o, sort_keys=True) for _, o in outs}) != 1:
        return None
    out = min((p for p, _ in outs), key=lambda p: ("[" in p, len(p)))  # a path without an index: every state has it
    return child_path("$", inputs[0]), out


def assistant_path(value: Any, skip: str, role_key: str, assistant: set, path: str = "$", depth: int = 0) -> str | None:
    """The first path (outside ``skip``) of an object whose ``role_key`` is an assistant role value."""
    if depth > 5 or path == skip:
        return None
    if isinstance(value, dict):
        if get(value, role_key) in assistant:
            return path
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value[:50])  # type: ignore[assignment]
    else:
        return None
    for k, v in items:
        hit = assistant_path(v, skip, role_key, assistant, f"{path}[{k}]" if isinstance(k, int) else f"{path}.{k}",
                              depth + 1)
        if hit is not None:
            return hit
    return None


def holds_role_message(value: Any, depth: int = 0) -> bool:
    """Whether a record holds a message anywhere (an object with a role in a known spelling)."""
    if depth > 8:
        return False
    if isinstance(value, dict):
        if any(role_of(value.get(k)) for k in ROLE_KEYS):
            return True
        value = list(value.values())
    return isinstance(value, list) and any(holds_role_message(v, depth + 1) for v in value[:1000])


def holds_data(value: Any) -> bool:
    """True for a value that can hold calls or arguments: a non-empty object or list, or JSON text of one."""
    if isinstance(value, str):
        return value.lstrip()[:1] in ("{", "[")
    return isinstance(value, (dict, list)) and bool(value)


def covering(lists: list[list], copies: bool = False) -> int | None:
    """The index of the one message list holding every message of each other list, alike and in the same order (a
    transcript beside copies of some of its messages: a checkpoint's ``channel_values.messages`` beside the last
    step's ``writes``, a rollout's ``messages`` beside its turns' replies), else None: reading it loses nothing.
    Lists holding each other are copies of one list: with ``copies`` (the caller knows them for one object written
    twice: an HTTP recording's response body beside the client library's object of it, in snake_case) the first is
    taken, else none is. Messages are alike when they read alike (``read_as``)."""
    def within(part: list, whole: list) -> bool:
        it = iter(whole)
        return all(any(p == w for w in it) for p in part)  # a subsequence: in order, each once

    read = [[read_as(m) for m in msgs] for msgs in lists]
    full = [i for i, whole in enumerate(read) if all(j == i or within(part, whole) for j, part in enumerate(read))]
    return full[0] if len(full) == 1 or copies and full else None


def read_as(message: Any) -> Any:
    """A message as the general path reads it, for telling copies from other messages: its role, the texts of its
    parts (text, reasoning, a tool result's content) and how many tool calls it makes; so one message in two
    spellings (``functionCall`` / ``function_call``, a tool result as a block or as the message's text, a signature
    encoded once more) reads alike. A value that is no message: its compact JSON."""
    key = role_key([message]) if isinstance(message, dict) else None
    if key is None:
        return json.dumps(message, sort_keys=True, ensure_ascii=False)
    wrap = key[:key.rindex(".") + 1] if "." in key else ""
    content = next((v for k in CONTENT_KEYS if (v := get(message, wrap + k)) is not None), None)
    calls = next((v for k in CALL_KEYS if (v := get(message, wrap + k)) is not None), None)
    parts = block_parts(content) + (calls_of(calls) if calls is not None else [])
    texts = [p.content if isinstance(p, ToolResultPart) else p.text for p in parts
             if isinstance(p, (TextPart, ReasoningPart, ToolResultPart))]
    return role_of(role_value(message, key)), texts, sum(isinstance(p, ToolCallPart) for p in parts)


#: Keys a message names its conversation by: a session, a thread, a chat, a topic (LobeChat's messages name their
#: ``sessionId`` and ``topicId``). Not a trace's or a run's id: one conversation's calls may each have their own.
MESSAGE_CHAT_KEYS = ("session_id", "sessionId", "conversation_id", "conversationId", "thread_id", "threadId",
                     "chat_id", "chatId", "topic_id", "topicId")


def chats_in_list(messages: list) -> list[tuple[str, list]] | None:
    """A message list whose messages name two conversations or more (``MESSAGE_CHAT_KEYS``, the keys every message
    has, a null topic or session as ``None``, the default one) split into ``(name, messages)`` per conversation, in order of first message;
    None for one conversation (a list of one chat's messages, or messages naming none)."""
    dicts = [m for m in messages if isinstance(m, dict)]
    keys = [k for k in MESSAGE_CHAT_KEYS if dicts and len(dicts) == len(messages) and all(k in m for m in dicts)
            and (all(m[k] is not None for m in dicts) or k not in ("thread_id", "threadId"))]
    # a null thread is the main line a thread branches from (LobeChat's threadId): no conversation of its own
    if not keys or len({tuple(str(m[k]) for k in keys) for m in dicts}) < 2:
        return None
    chats: dict[tuple, list] = {}
    for m in dicts:
        chats.setdefault(tuple(str(m[k]) for k in keys), []).append(m)
    return [("/".join(name), msgs) for name, msgs in chats.items()]
