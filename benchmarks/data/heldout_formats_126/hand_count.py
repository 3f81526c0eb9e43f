"""Hand counts of the hundred-and-twenty-sixth held-out set (benchmarks/data/heldout_formats_126/files), computed from
the raw files with the standard library only (this script does not import tracedraft), each by its format's layout as
read in the file itself.

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
- a Markdown transcript that records, per round, the full request body sent to the model (a fenced ``json`` block
  under ``### Agent -> Model (request)``) and the reply (a fenced ``json`` block under ``### Model -> Agent
  (response)``) records one call per round: its context the request's ``messages``, its completion the reply's
  ``message.content``; rounds whose message lists continue the previous round's list plus its reply are one
  conversation;
- the reply's tool calls are the ``message.tool_calls`` entries; the reply object's top-level ``tool_calls`` list is
  the same calls copied beside the message (same ids) and is not counted again; the copies of earlier replies inside
  later requests are context, and the ``tools`` definitions sent with each request are not context messages;
- ``reasoning_content`` belongs to the reply it sits in (one call; the completion text kept here is ``content``);
- the ``## Timeline`` table, the ``### Tool Events`` blocks (the agent's own tool start / result events, whose results
  reappear as ``tool`` messages in the next request) and the ``## Turn End`` block are the agent's log, not model
  calls; trace ids, timestamps, usage and cached-token counts are metadata.
Context roles: as recorded (``tool`` messages are tool results; the system prompt is the first message of the list).

Run: ``python benchmarks/data/heldout_formats_126/hand_count.py`` (one JSON line per file on stdout; a table of file,
conversations, calls and tool calls on stderr).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _fenced_json_after(lines: list, heading: str) -> list:
    """Every fenced ``json`` block that follows a line equal to ``heading`` (the next fence after it), parsed."""
    out = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == heading:
            j = i + 1
            while lines[j].strip() != "```json":
                j += 1
            k = j + 1
            while lines[k].strip() != "```":
                k += 1
            out.append(json.loads("\n".join(lines[j + 1:k])))
            i = k
        i += 1
    return out


def starcode_modelio_transcript(path: Path) -> dict:
    """Starcode model I/O round transcript, Markdown (written by starcode's ``src/debug/exportModelIoTranscript.js``
    from its ``.telemetry/model-io.jsonl`` trace: a title, trace id / source / generated-at bullets, a ``## Timeline``
    table, then ``## Round N`` sections each with ``### Agent -> Model (request)`` (the chat-completions request
    body: ``{model, messages, tools}``), ``### Model -> Agent (response)`` (``{finish_reason, usage, message: {role,
    content, reasoning_content, tool_calls?}, tool_calls}``) and ``### Tool Events``, and a closing ``## Turn End``).
    One call per round (4 rounds here, ``kimi-k2.5``); each request's message list is the previous request's list
    plus the previous reply and its tool result: one conversation. Tool calls: ``message.tool_calls`` (one in each of
    rounds 0 to 2, none in round 3)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    requests = _fenced_json_after(lines, "### Agent -> Model (request)")
    responses = _fenced_json_after(lines, "### Model -> Agent (response)")
    assert len(requests) == len(responses)
    completions, contexts, tools = [], [], 0
    threads: list = []  # each thread: the message list of its last call plus that call's reply
    for req, resp in zip(requests, responses):
        msgs = req["messages"]
        msg = resp["message"]
        completions.append(msg.get("content") or "")
        contexts.append([m["role"] for m in msgs])
        tools += len(msg.get("tool_calls") or [])
        for t in threads:
            if msgs[:len(t)] == t:
                t[:] = msgs + [msg]
                break
        else:
            threads.append(msgs + [msg])
    return _result("Starcode model I/O round transcript (Markdown)", len(threads), completions, contexts, tools)


COUNTERS = {
    "starcode-modelio-transcript": starcode_modelio_transcript,
}


def count(path: Path) -> dict:
    out = COUNTERS[path.name.split("__", 1)[0]](path)
    return {"file": path.name, **out}


def main() -> int:
    rows = [count(p) for p in sorted(FILES.iterdir())]
    for r in rows:
        print(json.dumps(r, ensure_ascii=False))
    if True:  # the table goes to stderr: stdout stays one JSON line per file for benchmarks/heldout_formats.py
        print("| file | conversations | calls | tool calls |", file=sys.stderr)
        print("|---|---|---|---|", file=sys.stderr)
        for r in rows:
            print(f"| {r['file']} | {r['conversations']} | {r['calls']} | {r['tool_calls']} |", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
