"""Hand counts of the held-out files (benchmarks/data/heldout_formats/files), computed from the raw files with
the standard library only (this script does not import tracedraft), each by its format's documented layout.

Per file: the conversations (one per distinct agent thread that holds at least one LLM call), the LLM calls
(assistant turns the model produced, each with its own recorded context), the tool calls in those completions,
the text of each completion, and the context (message roles, in order) of each call. Where the file records no
LLM call whose context can be read, ``readable`` is false and the file must be refused with a coded error.

Run: ``python benchmarks/data/heldout_formats/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _refuse(fmt: str, why: str) -> dict:
    return {"format": fmt, "readable": False, "why": why, "conversations": 0, "calls": 0, "tool_calls": 0,
            "completions": [], "contexts": []}


def chatgpt_export(doc: list) -> dict:
    """ChatGPT data export (conversations.json): each conversation is a tree in ``mapping`` (parent/children);
    the thread shown is the path from ``current_node`` up to the root. Rule: one conversation per export entry
    whose active path holds an assistant message; each assistant message with text on that path is one call,
    its context the messages before it on the path (a sibling branch, e.g. an edited user turn, is not in it)."""
    convs = calls = 0
    completions, contexts = [], []
    for conv in doc:
        path, node = [], conv["current_node"]
        while node is not None:
            path.append(conv["mapping"][node])
            node = conv["mapping"][node]["parent"]
        path.reverse()
        msgs = [n["message"] for n in path if n.get("message")]
        n_here = 0
        for i, m in enumerate(msgs):
            if m["author"]["role"] == "assistant":
                text = "".join(p for p in m["content"]["parts"] if isinstance(p, str))
                n_here += 1
                completions.append(text)
                contexts.append([x["author"]["role"] for x in msgs[:i]])
        calls += n_here
        convs += 1 if n_here else 0
    return {"format": "ChatGPT data export (conversations.json, message tree)", "readable": calls > 0,
            "conversations": convs, "calls": calls, "tool_calls": 0, "completions": completions,
            "contexts": contexts}


def openai_agents_runstate(doc: dict) -> dict:
    """OpenAI Agents SDK RunState (``RunState.to_json``): ``model_responses`` lists the model's responses of the
    run (Responses API output items); ``original_input`` is the run's input. ``generated_items``,
    ``session_items``, ``last_model_response``, ``last_processed_response`` and ``current_step`` repeat those
    items (an approval's argument override is execution-only and not what the model produced);
    ``pending_session_write.items`` are items waiting to be written to a session, not model responses.
    Rule: one call per entry of ``model_responses``; a state without model responses holds no LLM call."""
    fmt = "OpenAI Agents SDK RunState JSON"
    responses = doc.get("model_responses") or []
    if not responses:
        return _refuse(fmt, "model_responses is empty: no LLM call recorded (only input/pending items)")
    if len(responses) != 1:  # only the single-response layout is needed for these files
        raise SystemExit("more than one model response: extend the rule")
    out = responses[0]["output"]
    text = "".join(c.get("text", "") for o in out if o.get("type") == "message" for c in o.get("content", []))
    n_tools = sum(1 for o in out if o.get("type") == "function_call")
    return {"format": fmt, "readable": True, "conversations": 1, "calls": 1, "tool_calls": n_tools,
            "completions": [text], "contexts": [["user"]],
            "tool_call_arguments": [o["arguments"] for o in out if o.get("type") == "function_call"]}


def openai_batch_input(lines: list) -> dict:
    """OpenAI Batch API input file: one request per line (``custom_id``, ``body`` of a chat completion
    request). No response is in the file, so no LLM call can be read."""
    return _refuse("OpenAI Batch API input JSONL", f"{len(lines)} requests and no responses")


def litellm_standard_logging_payload(doc: dict) -> dict:
    """LiteLLM StandardLoggingPayload: ``messages`` (the request) and ``response`` (a chat completion). One
    call per payload; its completion ``response.choices[0].message``."""
    msg = doc["response"]["choices"][0]["message"]
    return {"format": "LiteLLM StandardLoggingPayload", "readable": True, "conversations": 1, "calls": 1,
            "tool_calls": len(msg.get("tool_calls") or []), "completions": [msg.get("content") or ""],
            "contexts": [[m["role"] for m in doc["messages"]]]}


def litellm_spend_logs_payload(doc: dict) -> dict:
    """LiteLLM SpendLogs row: ``messages`` and ``response`` are JSON strings; here both are ``{}`` (not
    stored), so the row holds no readable call."""
    if json.loads(doc["messages"]) or json.loads(doc["response"]):
        raise SystemExit("spend log with stored messages: extend the rule")
    return _refuse("LiteLLM SpendLogs payload", "messages and response are '{}' (not stored)")


def langfuse_ingestion_batch(doc: dict) -> dict:
    """Langfuse ingestion API batch (``batch`` of events ``trace-create``, ``generation-create``, ...): each
    ``generation-create`` is one LLM call (``input.messages``, ``output``); the ``trace-create`` repeats the
    input/output of its generation and is no call. A generation without ``output`` gives no readable call."""
    fmt = "Langfuse ingestion API batch (trace-create / generation-create events)"
    gens = [e["body"] for e in doc["batch"] if e["type"] == "generation-create"]
    readable = [g for g in gens if g.get("output")]
    if not readable:
        return _refuse(fmt, f"{len(gens)} generation(s) without output")
    return {"format": fmt, "readable": True, "conversations": len(readable), "calls": len(readable),
            "tool_calls": sum(len(g["output"].get("tool_calls") or []) for g in readable),
            "completions": [g["output"].get("content") or "" for g in readable],
            "contexts": [[m["role"] for m in g["input"]["messages"]] for g in readable]}


def moatless_trajectory(doc: dict) -> dict:
    """Moatless Tools trajectory (AgenticLoop, 2024): ``transitions`` of states, each with ``actions`` the
    model produced (with ``completion_cost``). The prompts the model saw (system prompt, file context, message
    history) are not recorded, only the initial issue and each action's parsed output, so no call's context can
    be read; 5 model actions are in the file."""
    n = sum(len(t.get("actions", [])) for t in doc["transitions"])
    return _refuse("Moatless Tools trajectory (transitions/actions)",
                   f"{n} model actions without their prompts (contexts not recorded)")


RULES = {
    "chatgpt-export__": chatgpt_export,
    "openai-agents-runstate__": openai_agents_runstate,
    "openai-batch-input__": openai_batch_input,
    "litellm-standard-logging-payload": litellm_standard_logging_payload,
    "litellm-spend-logs-payload": litellm_spend_logs_payload,
    "langfuse-ingestion-batch__": langfuse_ingestion_batch,
    "moatless-trajectory__": moatless_trajectory,
}


def count(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        doc = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        doc = json.loads(text)
    for prefix, rule in RULES.items():
        if path.name.startswith(prefix):
            row = rule(doc)
            row["rule"] = (rule.__doc__ or "").split("\n\n")[0].strip()
            return {"file": path.name, **row}
    raise SystemExit(f"no rule for {path.name}")


def main() -> int:
    for path in sorted(FILES.iterdir()):
        print(json.dumps(count(path), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
