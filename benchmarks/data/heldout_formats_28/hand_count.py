"""Hand counts of the twenty-eighth held-out set (benchmarks/data/heldout_formats_28/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself and in the writing tool's source.

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
Rules made explicit for this set (one per format, also in each counting function's docstring):
- a request / response log (one record for the request sent, one for the reply received) counts one call per reply
  record, with the context of the request record before it; a later request whose messages continue the earlier
  request's messages and reply, with only the system prompt at its head replaced (a hand-off to another agent of
  the same run), continues the same conversation;
- a result record that keeps the same run twice, once as structured messages and once as the text the model was
  given (``conversation`` and ``final_messages``), holds one conversation: its calls are counted once, from the
  structured list.
Context roles: a message made only of tool results is written ``tool``; roles are otherwise written as the file
records them.

Run: ``python benchmarks/data/heldout_formats_28/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class _Thread:
    """Accumulates one thread: ``out`` adds model output to the open call (opening one if the last record was
    input), ``inp`` adds an input record (closing the open call)."""

    def __init__(self, head: list | None = None) -> None:
        self.ctx: list = list(head or [])
        self.completions: list = []
        self.contexts: list = []
        self.tools = 0
        self._open = False

    def out(self, text: str = "", tools: int = 0) -> None:
        if not self._open:
            self.completions.append("")
            self.contexts.append(list(self.ctx))
            self.ctx.append("assistant")
            self._open = True
        self.completions[-1] += text
        self.tools += tools

    def inp(self, role: str) -> None:
        self.ctx.append(role)
        self._open = False


def _merge(fmt: str, threads: list) -> dict:
    kept = [t for t in threads if t.completions]
    return _result(fmt, len(kept), [c for t in kept for c in t.completions],
                   [c for t in kept for c in t.contexts], sum(t.tools for t in kept))


def _same(a: dict, b: dict) -> bool:
    return a.get("role") == b.get("role") and a.get("content") == b.get("content")


def cai_datarecorder(path: Path) -> dict:
    """CAI (Cybersecurity AI, aliasrobotics/cai) DataRecorder JSONL (``cai/datarecorder.py``: for every
    litellm completion, two lines appended to ``logs/cai_<date>_<time>.jsonl``: the request ``{model, messages,
    stream, tools?, tool_choice?}``, then the reply ``{id, object: "chat.completion", created, model, messages: [],
    choices: [{index, message: {role, content, tool_calls}, finish_reason}], usage}``; OpenAI chat layout, assistant
    ``tool_calls`` entries ``{function: {arguments, name}, id, type}``, ``tool`` messages with ``tool_call_id``).
    Rule: each reply line is one call, whose context is the ``messages`` of the request line before it and whose
    completion is ``choices[0].message.content`` (null counted as empty); each entry of its ``tool_calls`` is a tool
    call (a swarm hand-off such as ``transfer_to_flag_discriminator`` is a function call the model emitted and the
    client ran, so it counts). A request whose messages after the system prompt repeat the previous request's and
    go on with the previous reply continues the same conversation, even where the system prompt at its head was
    replaced by a hand-off to another agent; otherwise it opens a new one (none do here: one conversation per
    file). No failed requests are recorded (every reply has a finish reason ``tool_calls`` or ``stop``)."""
    convs = 0
    completions: list = []
    contexts: list = []
    tools = 0
    prev_req: list | None = None
    prev_reply: dict | None = None
    req: list | None = None
    for rec in _lines(path):
        if "choices" in rec:
            msg = rec["choices"][0]["message"]
            completions.append(msg.get("content") or "")
            contexts.append([m["role"] for m in req])
            tools += len(msg.get("tool_calls") or [])
            prev_req, prev_reply = req, msg
            continue
        req = rec["messages"]
        continues = (prev_req is not None and prev_reply is not None and len(req) > len(prev_req)
                     and all(_same(a, b) for a, b in zip(prev_req[1:], req[1:len(prev_req)]))
                     and _same(req[len(prev_req)], {"role": "assistant", "content": prev_reply.get("content")}))
        if not continues:
            convs += 1
    return _result("CAI DataRecorder request / completion JSONL", convs, completions, contexts, tools)


def spider_agent_tc(path: Path) -> dict:
    """Spider 2.0 spider-agent-tc result JSON (xlang-ai/Spider2 ``methods/spider-agent-tc``, the tool-call
    Spider-Agent for Spider2.0-Snow: a list of rollouts ``{instance_id, rollout_idx, conversation, final_messages,
    terminated}``; ``conversation`` holds ``system`` / ``user`` / ``assistant`` / ``tool`` messages, assistant
    messages with ``tool_calls`` entries ``{name, arguments}``; ``final_messages`` is the same run as the model was
    given it, tool calls written as ``<tool_call><function=...>`` text in the assistant content and tool results as
    ``user`` messages). Rule: one conversation per rollout; the calls are counted once, from ``conversation``: each
    run of assistant messages with no input between them is one call (none are adjacent here), its ``content`` the
    completion, each ``tool_calls`` entry a tool call; ``final_messages`` is not a second conversation (its
    assistant turns are the same replies, one ``<tool_call>`` block for each structured call). The run stopped at
    its round limit (``terminated`` false): every reply is still a recorded call."""
    threads = []
    for rollout in json.loads(path.read_text(encoding="utf-8")):
        t = _Thread()
        for m in rollout["conversation"]:
            if m["role"] == "assistant":
                t.out(m.get("content") or "", len(m.get("tool_calls") or []))
            else:
                t.inp(m["role"])
        threads.append(t)
    return _merge("Spider2 spider-agent-tc result JSON", threads)


COUNTERS = {
    "cai-datarecorder": cai_datarecorder,
    "spider-agent-tc": spider_agent_tc,
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
