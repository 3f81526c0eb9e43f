"""Hand counts of the fifteenth held-out set (benchmarks/data/heldout_formats_15/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself and in the writing tool's source.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the eighth set's):
- a thinking / reasoning part belongs to the reply it precedes; a reply streamed or split over several records with
  no new input between them (no user, tool-result or system record) is one call;
- text the model writes after it has seen a tool result is a new call;
- a branch the tool marks as discarded (not on the active path) is not counted;
- tool calls are the client-executed calls the model emitted (function / tool_use / toolCall parts and the like);
  calls the provider ran server-side during generation are not counted;
- LLM calls a file only mentions (a usage-ledger entry, a count printed in a tool result) without recording their
  context and reply are not counted;
- a conversation is a thread of calls in which each later call's context continues an earlier call's context and
  reply; single-shot calls recorded side by side with unrelated contexts are separate conversations;
- an LLM call recorded only through fields parsed out of its reply (a judge's extracted score) counts as mentioned,
  not recorded, and is not counted;
- an assistant record with no content at all whose stop reason is an error (the request failed before the model
  produced anything) is a failed request, not a call, and is left out of later contexts as well.
Rules made explicit for this set (observability exports record one record per LLM request, each with its whole
context, rather than one record per message):
- a record is an LLM call only where the file marks it as a model call (Braintrust ``type`` / ``span_attributes.type``
  ``llm``; a Datadog ``<provider>.request`` span with recorded request messages and response; a HoneyHive event of
  type ``model``); root, operation, task, chain, tool and session records are not calls;
- calls are linked into one conversation when a call's context starts with another call's whole context followed by
  that call's reply (compared as recorded, truncated strings included), whatever the order of the records in the
  file; calls whose contexts are identical but neither continues the other are separate conversations (each is its
  own request);
- a tool call written twice inside one reply (LangChain's ``additional_kwargs.tool_calls`` beside ``tool_calls``)
  counts once;
- a completion replaced by the test harness's placeholder (``<llm-response>``) is still a recorded completion;
- the context roles are written as the file records them, except that a message made only of tool results is written
  ``tool`` (as in set 8).

Run: ``python benchmarks/data/heldout_formats_15/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, calls: list) -> dict:
    """``calls``: dicts with ``ctx`` (comparable messages), ``reply`` (comparable reply), ``roles``, ``text``,
    ``tools``. Conversations are the connected groups of calls under the continuation rule."""
    parent = list(range(len(calls)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for b, cb in enumerate(calls):
        for a, ca in enumerate(calls):
            n = len(ca["ctx"])
            if a != b and len(cb["ctx"]) > n and cb["ctx"][:n] == ca["ctx"] and _same(ca["reply"], cb["ctx"][n]):
                parent[find(b)] = find(a)
    convs = len({find(i) for i in range(len(calls))})
    return {"format": fmt, "readable": bool(calls), "conversations": convs, "calls": len(calls),
            "tool_calls": sum(c["tools"] for c in calls), "completions": [c["text"] for c in calls],
            "contexts": [c["roles"] for c in calls]}


def _same(reply, msg) -> bool:
    """A reply matches the message a later context holds in its place: every non-empty field of the reply is
    recorded the same in the message (the message may lack the reply's stop reason and the like)."""
    if isinstance(reply, dict) and isinstance(msg, dict):
        return all(msg.get(k) == v for k, v in reply.items() if v not in (None, "", [], {}))
    return reply == msg


# --- Braintrust ---------------------------------------------------------------------------------------------------


def braintrust_log_payloads(path: Path) -> dict:
    """Braintrust e2e log-payload snapshot (braintrust-sdk ``e2e/scenarios/*/__snapshots__/*.log-payloads.json``: a
    JSON list of the logged rows as the harness normalises them, ``{name, type, input?, output?, metadata,
    metrics}``). Rows of ``type`` ``llm`` are the calls (the ``task`` root and the untyped operation rows are not).
    Context: ``input``, either a list of Anthropic-style messages (``role``, ``content`` string or blocks) or a Google
    GenAI request (``contents`` a single ``{text}`` part, i.e. one user turn, or a list of ``{role, parts}``).
    Completion: ``output`` (an Anthropic message with content blocks, a plain string for streamed text, or a Google
    response whose ``candidates[0].content.parts`` hold text / ``functionCall``). Tool calls: ``tool_use`` blocks and
    ``functionCall`` parts in the output. No row's input continues another's (the repeated prompts are separate
    requests), so each call is its own conversation."""
    calls = []
    for row in json.loads(path.read_text(encoding="utf-8")):
        if row.get("type") != "llm":
            continue
        inp, out = row.get("input"), row.get("output")
        if isinstance(inp, dict) and "contents" in inp:  # Google GenAI request
            contents = inp["contents"]
            contents = [{"role": "user", "parts": [contents]}] if isinstance(contents, dict) else contents
            ctx = contents
            roles = [c.get("role", "user") for c in contents]
            parts = ((out or {}).get("candidates") or [{}])[0].get("content", {}).get("parts", [])
            text = "".join(p.get("text", "") for p in parts)
            tools = sum(1 for p in parts if "functionCall" in p)
            reply = {"role": "model", "parts": parts}
        else:  # Anthropic-style messages
            ctx = inp
            roles = [m["role"] for m in inp]
            if isinstance(out, str):
                text, tools, reply = out, 0, {"role": "assistant", "content": out}
            else:
                blocks = out.get("content") or []
                text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
                tools = sum(1 for b in blocks if b.get("type") == "tool_use")
                reply = out
        calls.append({"ctx": ctx, "reply": reply, "roles": roles, "text": text, "tools": tools})
    return _result("Braintrust e2e log-payload snapshot JSON", calls)


_LC_ROLES = {"HumanMessage": "user", "AIMessage": "assistant", "AIMessageChunk": "assistant",
             "ToolMessage": "tool", "SystemMessage": "system"}


def _lc_msg(m: dict) -> dict:
    kw = m.get("kwargs", {})
    return {"role": _LC_ROLES[m["id"][-1]], "content": kw.get("content"),
            "tool_calls": [(t["name"], json.dumps(t["args"], sort_keys=True)) for t in kw.get("tool_calls") or []]}


def braintrust_logs3_rows(path: Path) -> dict:
    """Braintrust log rows as uploaded by the SDK (braintrust-sdk e2e snapshot of the wrap-langchain-js-traces
    scenario: a JSON list of rows ``{id, span_id, root_span_id, span_parents, span_attributes, input?, output?,
    metrics, _is_merge, ...}``; a span's first row opens it, later rows with the same ``id`` and ``_is_merge: true``
    add its metrics, its output and its end time). Rows are merged by ``id``; spans whose ``span_attributes.type`` is
    ``llm`` are the calls (the LangChain ``RunnableSequence`` / ``ChatPromptTemplate`` task spans and the operation
    spans are not). Context: ``input``, a LangChain batch holding one list of serialised messages (``id[-1]``
    HumanMessage / AIMessage / ToolMessage); completion: ``output.generations[0][0].message.kwargs.content`` (the
    harness's placeholder); tool calls: ``kwargs.tool_calls`` (the same calls repeated under
    ``additional_kwargs.tool_calls`` are not counted again). The last call's context continues the one before it
    (same question, the assistant's tool call, the tool result): one conversation of two calls; the other calls stand
    alone."""
    spans: dict = {}
    order = []
    for row in json.loads(path.read_text(encoding="utf-8")):
        if row["id"] not in spans:
            spans[row["id"]] = {}
            order.append(row["id"])
        spans[row["id"]].update({k: v for k, v in row.items() if k not in ("metrics", "_is_merge")})
    calls = []
    for sid in order:
        span = spans[sid]
        if (span.get("span_attributes") or {}).get("type") != "llm":
            continue
        (prompt,) = span["input"]
        ctx = [_lc_msg(m) for m in prompt]
        msg = span["output"]["generations"][0][0]["message"]
        reply = _lc_msg(msg)
        calls.append({"ctx": ctx, "reply": reply, "roles": [m["role"] for m in ctx], "text": reply["content"] or "",
                      "tools": len(reply["tool_calls"])})
    return _result("Braintrust logs3 row JSON (LangChain spans)", calls)


# --- Datadog ------------------------------------------------------------------------------------------------------

# span name -> (request message prefix, response prefix, role key inside a message)
_DD = {
    "anthropic.request": ("anthropic.request.messages.", "anthropic.response.completions.", "role"),
    "gemini.request": ("google_generativeai.request.contents.", "google_generativeai.response.candidates.0.content.",
                       "role"),
    "openai.request": ("openai.request.messages.", "openai.response.choices.0.message.", "role"),
}


def _dd_reply(meta: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in meta.items()
            if k.startswith(prefix) and k[len(prefix):] not in ("role", "finish_reason")}


def datadog_apm_snapshot(path: Path) -> dict:
    """Datadog APM test-agent snapshot (dd-trace-py ``tests/snapshots/*.json``: a JSON list of traces, each a list of
    spans ``{name, service, resource, trace_id, span_id, parent_id, meta, metrics, ...}``; the LLM integrations write
    the request and the response into ``meta`` as flattened tags, e.g. ``anthropic.request.messages.N.content.M.text``
    / ``.role`` and ``anthropic.response.completions.content.M.*``; Gemini ``google_generativeai.request.contents.N.*``
    and ``google_generativeai.response.candidates.0.content.parts.M.*``; OpenAI ``openai.request.messages.N.*`` and
    ``openai.response.choices.N.message.*``). Each ``<provider>.request`` span is one call; its context is the
    request messages in index order, its completion the response text (``...content.M.text`` / ``parts.M.text`` /
    ``message.content``). Tool calls: response parts of type ``tool_use`` (Anthropic), ``function_call`` parts
    (Gemini), ``message.tool_calls.N`` entries (OpenAI). A request message made only of ``tool_result`` /
    ``function_response`` parts is a tool message. The traces are not in call order (the Anthropic file lists the
    second request first); the second request's context continues the first's (same question, the model's reply with
    its tool call as recorded, the tool result), so both are one conversation."""
    calls = []
    for trace in json.loads(path.read_text(encoding="utf-8")):
        for span in trace:
            if span["name"] not in _DD:
                continue
            req, resp, _ = _DD[span["name"]]
            meta = span["meta"]
            msgs: dict = {}
            for k, v in meta.items():
                m = re.match(re.escape(req) + r"(\d+)\.(.+)$", k)
                if m:
                    msgs.setdefault(int(m.group(1)), {})[m.group(2)] = v
            ctx, roles = [], []
            for i in sorted(msgs):
                msg = msgs[i]
                body = {k: v for k, v in msg.items() if k not in ("role", "name") or (k == "name" and v)}
                kinds = {v for k, v in msg.items() if re.match(r"(content|parts)\.\d+\.type$", k)}
                results = any(".tool_result." in k or ".function_response." in k for k in msg)
                only_results = results and kinds <= {"tool_result"} and not any(
                    re.search(r"\.text$", k) and v for k, v in msg.items() if "tool_result" not in k
                    and "function_response" not in k)
                roles.append("tool" if only_results else msg.get("role", ""))
                ctx.append(body)
            reply = _dd_reply(meta, resp)
            if span["name"] == "anthropic.request":
                text = "".join(v for k, v in reply.items() if re.match(r"content\.\d+\.text$", k))
                tools = sum(1 for k, v in reply.items() if re.match(r"content\.\d+\.type$", k) and v == "tool_use")
            elif span["name"] == "gemini.request":
                text = "".join(v for k, v in reply.items() if re.match(r"parts\.\d+\.text$", k))
                tools = sum(1 for k in reply if re.match(r"parts\.\d+\.function_call\.name$", k))
            else:
                text = reply.get("content", "")
                tools = sum(1 for k in reply if re.match(r"tool_calls\.\d+\.name$", k))
            calls.append({"ctx": ctx, "reply": reply, "roles": roles, "text": text, "tools": tools})
    return _result("Datadog APM test-agent span snapshot JSON", calls)


# --- HoneyHive ----------------------------------------------------------------------------------------------------


def honeyhive_events(path: Path) -> dict:
    """HoneyHive event export (a JSON list of events as the HoneyHive events API returns them: ``{project_id,
    source, event_name, event_type, event_id, session_id, parent_id, children_ids, config, inputs, outputs, error,
    start_time, end_time, duration, metadata, feedback, metrics, user_properties}``). Events of type ``model`` (written
    ``EventType.model`` in the older export) are the calls (every event in these files is one). Context:
    ``inputs.chat_history`` (OpenAI-style messages; an assistant message's tool calls flattened into keys
    ``tool_calls.N.id / .name / .arguments``); completion: ``outputs.content``; tool calls: the distinct ``N`` of
    ``outputs`` keys ``tool_calls.N.name``. Each session is one ReAct agent run whose every call's context is the
    previous call's context plus its reply and the next inputs: one conversation per session (two sessions per file;
    the raw-events file interleaves the two sessions' events)."""
    calls = []
    for ev in json.loads(path.read_text(encoding="utf-8")):
        if ev.get("event_type") not in ("model", "EventType.model"):
            continue
        ctx = ev["inputs"]["chat_history"]
        out = ev["outputs"]
        reply = {k: v for k, v in out.items() if k != "finish_reason"}
        tools = len({k.split(".")[1] for k in out if re.match(r"tool_calls\.\d+\.name$", k)})
        calls.append({"ctx": ctx, "reply": reply, "roles": [m["role"] for m in ctx], "text": out.get("content") or "",
                      "tools": tools})
    return _result("HoneyHive event export JSON", calls)


COUNTERS = {
    "braintrust-log-payloads": braintrust_log_payloads,
    "braintrust-logs3-rows": braintrust_logs3_rows,
    "datadog-apm-snapshot": datadog_apm_snapshot,
    "honeyhive-events": honeyhive_events,
}


def count(path: Path) -> dict:
    out = COUNTERS[path.name.split("__", 1)[0]](path)
    return {"file": path.name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
