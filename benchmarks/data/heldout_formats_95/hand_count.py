"""Hand counts of the ninety-fifth held-out set (benchmarks/data/heldout_formats_95/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the seventh set's):
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
Rules made explicit for this set (written before the product was run):
- a recorded HTTP exchange (a VCR cassette's ``http_interactions`` entry) is one call when its response carries the
  model's output (status 200 with a message / response object); the request body is the call's context, the
  response body its reply; a response body stored as ``!binary`` (base64) is decoded first, it is the same reply;
  HTTP headers, rate-limit counters, request ids and ``recorded_at`` are metadata;
- a later exchange whose request repeats an earlier exchange's messages / input items and reply and then adds the
  tool results continues that conversation (the cassettes of this set replay one agent run each);
- an OpenAI Responses ``function_call`` output item and an Anthropic ``tool_use`` content block are tool calls (the
  agent framework runs the function and sends a ``function_call_output`` / ``tool_result`` back); the tools'
  declarations in the request (``tools``) are not calls;
- in an Agent Cassette JSONL file each line is one wrapped function call recorded by the harness; a line whose
  ``call_name`` is an LLM API (``openai.responses.create``) and which holds a ``result`` is one call, its context
  the ``args_preview`` request (``input`` / ``messages`` / ``input_preview``), its reply the result's output text; a
  line holding only an ``error`` (an HTTP 400 raised before the model produced anything) is a failed request, not a
  call; lines of other wrapped functions (``flowfuse.deploy``: the application deploying the generated flow) are
  the application's own work, neither calls nor tool calls of the model; each successful line whose context does
  not contain an earlier line's reply is its own conversation;
- a gpt5mcp agent output file (``gpt5_docs/agent_*.md``, written by the ``gpt5_agent`` tool's ``save_to_file``) is
  one agent run: ``# Task:`` the user's task (the tool's own instructions are not printed: the recorded context is
  that task, written ``user``), an optional ``## Summary`` (the reasoning summary, part of the reply), ``## Full
  Output`` the reply, and a footer ``*Generated: ... | Iterations: N | ...*``; with ``Iterations: 1`` the run is one
  call in one conversation; web search run by the provider is server-side and not a tool call; the footer is
  metadata;
- ids, timestamps, durations, token counts, model names, costs and validation marks are metadata, not context.
Context roles: as recorded; a message or run of input items made only of tool results is written ``tool``; a run of
consecutive ``function_call`` input items (the model's earlier turn, replayed) is written ``assistant``; a bare input
string is ``user``; a ``system`` parameter kept beside the messages is written ``system`` at the head.

Run: ``python benchmarks/data/heldout_formats_95/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


# --- VCR cassette (YAML) reading, limited to the layout these files use -------------------------------------------

def _scalar(lines: list, i: int) -> str:
    """The value of the ``string:`` key on line ``i``: a single-quoted (folded) scalar, a ``|-`` block literal or a
    ``!binary |-`` base64 block."""
    line = lines[i]
    indent = len(line) - len(line.lstrip(" "))
    value = line.split("string:", 1)[1].lstrip(" ")
    if value.startswith("'"):
        parts = [value[1:]]
        j = i
        while "'" not in parts[-1].replace("''", ""):  # the closing quote: a ' that is not part of an escaped ''
            j += 1
            parts.append(lines[j].strip(" "))
        last = parts[-1].replace("''", "\0")
        parts[-1] = last[:last.index("'")].replace("\0", "''")
        folded = ""
        for k, part in enumerate(parts):  # YAML folding: a line break is a space, an empty line a newline
            if k == 0:
                folded = part
            elif part == "":
                folded += "\n"
            elif folded.endswith("\n"):
                folded += part
            else:
                folded += " " + part
        return folded.replace("''", "'")
    binary = value.startswith("!binary")
    if value.rstrip().endswith("|-"):
        block = []
        j = i + 1
        while j < len(lines) and (lines[j].strip() == "" or len(lines[j]) - len(lines[j].lstrip(" ")) > indent):
            block.append(lines[j])
            j += 1
        width = min(len(b) - len(b.lstrip(" ")) for b in block if b.strip())
        text = "\n".join(b[width:] for b in block).rstrip("\n")
        if binary:
            return base64.b64decode("".join(text.split())).decode("utf-8")
        return text
    raise ValueError("unexpected scalar: " + line)


def _vcr_interactions(path: Path) -> list:
    """(request body, response status, response body) per ``http_interactions`` entry."""
    lines = path.read_text(encoding="utf-8").split("\n")
    out, cur, section = [], None, None
    for i, line in enumerate(lines):
        if line.startswith("- request:"):
            cur = {"request": None, "status": None, "response": None}
            out.append(cur)
            section = "request"
        elif line.startswith("  response:"):
            section = "response"
        elif cur is not None and section == "response" and re.match(r"^      code: \d+", line):
            cur["status"] = int(line.split(":")[1])
        elif cur is not None and re.match(r"^      string:", line):
            cur[section] = _scalar(lines, i)
    return [(c["request"], c["status"], c["response"]) for c in out]


def _threads(calls: list) -> int:
    """Conversations: a call continues an earlier call when its context is longer and starts with the same first
    item (the user's task), i.e. it replays that call's context and reply and adds the tool results."""
    heads = []
    for first, length in calls:
        for h in heads:
            if h[0] == first and length > h[1]:
                h[1] = length
                break
        else:
            heads.append([first, length])
    return len(heads)


def activeagent_anthropic_vcr(path: Path) -> dict:
    """ActiveAgent VCR cassette of the Anthropic Messages API (``test/fixtures/vcr_cassettes/anthropic-*/...``, YAML
    written by VCR while ActiveAgent's integration test ran against api.anthropic.com): each interaction's request
    body is the Messages request (``system``? + ``messages``), its response body the message object (``content``
    blocks: ``text`` / ``tool_use``), stored as a quoted string or as ``!binary`` base64. One call per interaction
    with a 200 response; its tool calls the ``tool_use`` blocks; its completion the joined ``text`` blocks; context
    roles from the messages (a user message made only of ``tool_result`` blocks is ``tool``). Conversations by the
    continuation rule."""
    completions, contexts, tools, heads = [], [], 0, []
    for req, status, resp in _vcr_interactions(path):
        if status != 200 or not resp:
            continue
        request, reply = json.loads(req), json.loads(resp)
        roles = ["system"] if request.get("system") else []
        for m in request["messages"]:
            c = m["content"]
            only_results = isinstance(c, list) and c and all(b.get("type") == "tool_result" for b in c)
            roles.append("tool" if only_results else m["role"])
        completions.append("".join(b.get("text", "") for b in reply["content"] if b.get("type") == "text"))
        contexts.append(roles)
        tools += sum(1 for b in reply["content"] if b.get("type") == "tool_use")
        heads.append((json.dumps(request["messages"][0], sort_keys=True), len(request["messages"])))
    return _result("ActiveAgent VCR cassette (Anthropic Messages)", _threads(heads), completions, contexts, tools)


def _responses_roles(inp) -> list:
    if isinstance(inp, str):
        return ["user"]
    roles = []
    for item in inp:
        kind = item.get("type")
        role = {"function_call": "assistant", "function_call_output": "tool"}.get(kind, item.get("role", kind))
        if roles and role in ("assistant", "tool") and roles[-1] == role and kind in ("function_call",
                                                                                       "function_call_output"):
            continue
        roles.append(role)
    return roles


def _responses_text(response: dict) -> str:
    texts = []
    for item in response.get("output", []):
        if item.get("type", "message") == "message" or "content" in item:
            for part in item.get("content") or []:
                if "text" in part:
                    texts.append(part["text"])
    return "".join(texts)


def activeagent_openai_responses_vcr(path: Path) -> dict:
    """ActiveAgent VCR cassette of the OpenAI Responses API (``test/fixtures/vcr_cassettes/integration/open_ai/
    responses/...``): each interaction's request body is the Responses request (``input``: a string, or a list of
    ``{role, content}`` messages, ``function_call`` and ``function_call_output`` items), its response body the
    response object, stored as a ``|-`` block literal. One call per interaction with a 200 response; its tool calls
    the ``function_call`` output items; its completion the text of the ``message`` output items; context roles from
    ``input`` (see the module's role rule). Conversations by the continuation rule."""
    completions, contexts, tools, heads = [], [], 0, []
    for req, status, resp in _vcr_interactions(path):
        if status != 200 or not resp:
            continue
        request, reply = json.loads(req), json.loads(resp)
        inp = request["input"]
        first = inp if isinstance(inp, str) else (inp[0].get("content") if inp else "")
        completions.append(_responses_text(reply))
        contexts.append((["system"] if request.get("instructions") else []) + _responses_roles(inp))
        tools += sum(1 for item in reply.get("output", []) if item.get("type") == "function_call")
        heads.append((json.dumps(first, sort_keys=True), 1 if isinstance(inp, str) else len(inp)))
    return _result("ActiveAgent VCR cassette (OpenAI Responses)", _threads(heads), completions, contexts, tools)


def agent_cassette_jsonl(path: Path) -> dict:
    """Agent Cassette JSONL (``cassettes/*.jsonl``, ``cassette_version`` 1, written by the harness in record mode): one
    line per wrapped call, ``{call_name, request_hash, recorded_at_ms, latency_ms, args_preview, result | error,
    meta}``. A line with ``call_name`` ``openai.responses.create`` and a ``result`` is one call: context the roles of
    the request's ``input`` / ``messages`` / ``input_preview`` (``args_preview`` is the argument tuple, a list, or a
    preview object), completion the response's output text; a line with only an ``error`` is a failed request;
    other ``call_name`` lines are the application's own functions. Each call here is its own conversation (no
    request contains an earlier reply); no tool calls (the model was given no tools)."""
    completions, contexts, tools = [], [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec.get("call_name") != "openai.responses.create" or "result" not in rec:
            continue
        args = rec["args_preview"]
        params = args[0] if isinstance(args, list) else args
        inp = params.get("input", params.get("messages", params.get("input_preview")))
        completions.append(_responses_text(rec["result"]) or rec["result"].get("output_text", ""))
        contexts.append(_responses_roles(inp))
        tools += sum(1 for item in rec["result"].get("output", []) if item.get("type") == "function_call")
    return _result("Agent Cassette JSONL (OpenAI Responses)", len(completions), completions, contexts, tools)


def gpt5mcp_agent_markdown(path: Path) -> dict:
    """gpt5mcp ``gpt5_agent`` output file (``gpt5_docs/agent_<timestamp>_<slug>.md``): ``# Task:`` followed by the task
    (on the same line or on the next lines), optionally ``## Summary`` (reasoning summary), ``## Full Output`` (the
    reply, up to the ``---`` line before the footer), and the footer ``*Generated: ... | Iterations: N | ...*``.
    With ``Iterations: 1`` one call (context the task, ``user``; completion the Full Output text) in one
    conversation; a file without an iteration count or with more than one iteration records its other calls only
    as a number (mentioned, not recorded), and only the final reply would be counted (none such here)."""
    text = path.read_text(encoding="utf-8")
    task = re.search(r"^# Task:[ \n](.*?)\n\n## ", text, flags=re.S | re.M).group(1).strip()
    output = re.search(r"^## Full Output\n(.*?)\n\n---\n\*Generated:", text, flags=re.S | re.M).group(1)
    # the footer's ``Iterations: N`` (1 in both files here); earlier iterations, if any, are only numbered there
    completions = [output]
    contexts = [["user"] if task else []]
    return _result("gpt5mcp gpt5_agent output Markdown", 1, completions, contexts, 0)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("activeagent__") and "anthropic" in name:
        out = activeagent_anthropic_vcr(path)
    elif name.startswith("activeagent__"):
        out = activeagent_openai_responses_vcr(path)
    elif name.startswith("agent-cassette__"):
        out = agent_cassette_jsonl(path)
    else:
        out = gpt5mcp_agent_markdown(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
