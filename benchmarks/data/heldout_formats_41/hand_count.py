"""Hand counts of the forty-first held-out set (benchmarks/data/heldout_formats_41/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the seventh and eighth sets'):
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
Rules made explicit for this set:
- a model reply that is only tool calls (no text) is a call, with an empty completion text;
- a tool result fed back to the model between two of its replies is input (a ``tool`` context entry, one per tool
  call it answers), also where the file keeps the call but not the result's payload (the next reply is still a new
  call: the model saw the result);
- a voice agent's transcript counts each run of consecutive assistant utterances (no user utterance between them) as
  one reply, the spoken sentences of one turn being logged line by line; consecutive user utterances are all input
  to the next reply;
- workspace documents or HTTP exchanges a trace keeps for replay (not messages sent to the model) are neither calls
  nor context entries.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context; a system prompt the file does not record is
not written.

Run: ``python benchmarks/data/heldout_formats_41/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_LINE = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\] (User|Assistant): (.*)$")


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


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


def zulip_litellm_fixture(path: Path) -> dict:
    """Zulip LiteLLM fixture JSON (``zerver/tests/fixtures/litellm/summary.json``, written by Zulip's topic-summary
    test with ``GENERATE_LITELLM_FIXTURES`` on: ``{model, messages, response}``; ``messages`` is the exact list
    passed to ``litellm.completion`` (a system message and two user messages), ``response`` the provider's reply as
    LiteLLM returned it, a ``chat.completion`` object). One file is one real request: one call whose context is
    ``messages`` and whose completion is ``response.choices[0].message.content``; its ``tool_calls`` (null here)
    would be the tool calls. One conversation."""
    data = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread([m["role"] for m in data["messages"]])
    for choice in data["response"]["choices"]:
        msg = choice["message"]
        t.out(msg.get("content") or "", len(msg.get("tool_calls") or []))
    return _merge("Zulip LiteLLM fixture JSON", [t])


def ironclaw_trace(path: Path) -> dict:
    """IronClaw LLM trace JSON (``tests/fixtures/llm_traces/``: ``{model_name, steps: [{request_hint?, response:
    {type, ...}, expected_tool_results?}], expects?, memory_snapshot?, http_exchanges?}``; the legacy flat
    ``steps`` layout the recorder writes, ``turns[].steps`` in the other layout). A ``user_input`` step is a user
    message; every ``text`` or ``tool_calls`` step is one response the model returned to one completion request
    (the recorder writes one step per request): one call each, its completion the ``content`` of a ``text`` step
    (empty for a ``tool_calls`` step), each entry of ``tool_calls`` a tool call. After a ``tool_calls`` step the
    agent feeds one tool result per call back before the next request (kept in ``expected_tool_results`` of the
    next step, in ``http_exchanges`` as the HTTP reply the tool got, or removed by the harvester in the live-canary
    file; the request hints' ``min_message_count`` grows accordingly), written ``tool``. One trace is one
    conversation. ``memory_snapshot`` (workspace documents) and ``http_exchanges`` are replay data, not messages.
    The system prompt is not recorded (not written)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    steps = data.get("steps")
    if steps is None:
        steps = []
        for turn in data.get("turns", []):
            steps.append({"response": {"type": "user_input", "content": turn.get("user_input", "")}})
            steps.extend(turn["steps"])
    t = _Thread()
    for step in steps:
        resp = step["response"]
        kind = resp["type"]
        if kind == "user_input":
            t.inp("user")
        elif kind == "text":
            t.out(resp.get("content") or "")
        elif kind == "tool_calls":
            calls = resp.get("tool_calls") or []
            t.out("", len(calls))
            for _ in calls:
                t.inp("tool")
        else:
            raise ValueError(f"unknown step type {kind!r} in {path.name}")
    return _merge("IronClaw LLM trace JSON", [t])


def hume_evi_transcript(path: Path) -> dict:
    """Hume EVI chat-history transcript (text written by Hume's ``evi-python-chat-history`` example from the chat
    events of one EVI chat: one line per ``USER_MESSAGE`` / ``AGENT_MESSAGE`` event, ``[YYYY-MM-DD HH:MM:SS]
    User: text`` or ``... Assistant: text``). One file is one chat: one conversation. EVI logs the assistant's
    spoken reply sentence by sentence, so each run of consecutive ``Assistant`` lines is one call (shared rule; its
    completion is the lines' texts joined by a space) whose context is every line before it; consecutive ``User``
    lines are all input. No tool calls; no system prompt is recorded."""
    t = _Thread()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        m = _LINE.match(line)
        if m is None:
            raise ValueError(f"unexpected line in {path.name}: {line!r}")
        role, text = m.group(2), m.group(3)
        if role == "Assistant":
            t.out((" " if t._open else "") + text)
        else:
            t.inp("user")
    return _merge("Hume EVI chat-history transcript", [t])


COUNTERS = {
    "zulip-litellm-fixture": zulip_litellm_fixture,
    "ironclaw-trace": ironclaw_trace,
    "hume-evi": hume_evi_transcript,
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
