"""Messages typed as a tool call or a tool result by a message-level ``type`` key, the call or the result written as
the message's content (a JSON text or object). watsonx Orchestrate's evaluation messages write an agent's call as
``{"role": "assistant", "type": "tool_call", "content": "{\\"name\\": ..., \\"args\\": {...}, \\"id\\": ...}"}`` and
its result as ``{"role": "assistant", "type": "tool_response", "content": "{\\"content\\": ..., \\"tool_call_id\\":
...}"}``. Read as text, such messages were assistant turns in a row, joined into one call with the calls lost.

``typed_calls(record)`` rewrites each such message (in the record, or up to three levels down) in the common
spelling: an assistant message with one ``tool_calls`` entry, or a ``tool`` message answering its call id; the
message's other keys are kept. A typed message whose content is not a call or a result object is left as it is.
Not a format (no ``FORMAT``). Torch-free.
"""

from __future__ import annotations

import json
from typing import Any

from drafters.traces.formats._spellings import role_of
from drafters.traces.json_paths import decoded

CALL_TYPES = frozenset({"tool_call", "function_call", "tool_use"})
RESULT_TYPES = frozenset({"tool_response", "tool_result", "function_call_output", "function_response"})
_ARGS = ("args", "arguments", "input", "parameters")
_RESULT = ("content", "output", "result", "response")
_CALL_ID = ("id", "tool_call_id", "call_id", "tool_use_id")


def typed_message(raw: dict) -> dict | None:
    """The common spelling of one message typed as a call or a result (see the module docstring), else None."""
    kind = raw.get("type")
    if kind not in CALL_TYPES | RESULT_TYPES or role_of(raw.get("role")) is None:
        return None
    body = decoded(raw.get("content"))
    if not isinstance(body, dict):
        return None
    rest = {k: v for k, v in raw.items() if k not in ("role", "content", "type")}
    call_id = next((body[k] for k in _CALL_ID if isinstance(body.get(k), str)), None)
    if kind in CALL_TYPES and isinstance(body.get("name"), str) and role_of(raw.get("role")) == "assistant":
        args = next((body[k] for k in _ARGS if k in body), {})
        arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        return {**rest, "role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": body["name"], "arguments": arguments}}]}
    result = next((body[k] for k in _RESULT if k in body), None)
    if kind in RESULT_TYPES and result is not None:
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        return {**rest, "role": "tool", "tool_call_id": call_id, "name": body.get("name"), "content": text}
    return None


def typed_calls(record: Any, depth: int = 0) -> Any:
    """``record`` with every message typed as a call or a result rewritten (``typed_message``), looked for up to
    three levels down; the record itself when none is."""
    if depth > 3:
        return record
    if isinstance(record, dict):
        typed = typed_message(record)
        if typed is not None:
            return typed
        out = {k: typed_calls(v, depth + 1) if isinstance(v, (dict, list)) else v for k, v in record.items()}
        return out if any(out[k] is not v for k, v in record.items()) else record
    if isinstance(record, list):
        items = [typed_calls(v, depth + 1) for v in record]
        return items if any(a is not b for a, b in zip(items, record)) else record
    return record
