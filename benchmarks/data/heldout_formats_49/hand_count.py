"""Hand counts of the forty-ninth held-out set (benchmarks/data/heldout_formats_49/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
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
Rules made explicit for this set (as in earlier sets where noted):
- reasoning written inline in the reply text as a leading ``<think>...</think>`` span belongs to that reply (it is
  one call); the completion text recorded here is the reply without that span (set 8);
- independent runs side by side (one per benchmark question) are separate conversations (set 14);
- an action written only as text in the reply (``execute[...]``, ``submit[...]``, a fenced ``exec_shell(...)`` /
  ``get_logs(...)`` call) with no structured tool-call record is not a tool call (set 14);
- a system prompt or task message the application builds at request time but does not save is not part of the
  recorded context (set 42): a call whose preceding records are all unsaved has an empty recorded context, and it
  is still a recorded call (its reply is kept in the thread that the later calls continue);
- an evaluator's / judge's reply kept beside a run (a verdict text, a reflection, a parsed score) whose prompt is
  not recorded anywhere in the file is mentioned, not recorded, and is not counted; so are token ledgers
  (``usage_summary``, ``in_tokens`` / ``out_tokens``);
- context roles are written as the file records them (``env`` stays ``env``; observations a harness sends back as
  ``user`` messages stay ``user``).

Run: ``python benchmarks/data/heldout_formats_49/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_THINK = re.compile(r"^\s*<think>.*?</think>", re.S)


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


def excytin_agent_log(path: Path) -> dict:
    """ExCyTIn-Bench agent log JSON (microsoft/SecRL, the ``agent_incident_<n>.json`` that ``experiments/run_exp.py``
    writes with ``json.dump(accum_logs, f, indent=4)``): a list of question records ``{nodes, reward, question_dict,
    trials: {"<trial>": {reward, info, messages: [{role, content}], usage_summary}}}``. Every trial's ``messages`` is
    the agent's own chat with the model (the ``system`` prompt, the question as ``user``, then each reply as
    ``assistant`` and each SQL result / error sent back as ``user``):
    one conversation per trial (one trial per record in these files), each ``assistant`` message one call whose
    context is the messages before it (the agents call the model once per step and append its reply; no two
    assistant messages are adjacent here). Actions are text (``Action: execute[<SQL>]`` / ``submit[<answer>]``):
    no tool calls. The judge calls of the evaluator are kept in ``info`` only as their replies and parsed fields
    (``check_ans_response``, ``check_ans_reflection``, ``check_sol_response``, ...) without their prompts:
    mentioned, not counted; ``usage_summary`` is a token ledger. A leading ``<think>...</think>`` span (none here)
    would be left out of the completion text."""
    threads = []
    for rec in json.loads(path.read_text(encoding="utf-8")):
        for key in sorted(rec["trials"], key=int):
            t = _Thread()
            for m in rec["trials"][key]["messages"]:
                if m["role"] == "assistant":
                    t.out(_THINK.sub("", m.get("content") or "", count=1))
                else:
                    t.inp(m["role"])
            threads.append(t)
    return _merge("ExCyTIn-Bench agent log JSON", threads)


def aiopslab_session(path: Path) -> dict:
    """AIOpsLab session JSON (the orchestrator's ``Session.to_json``: ``<session_id>_<start_time>.json`` written with
    ``json.dump(self.to_dict(), f, indent=4)``: ``{agent, session_id, problem_id, start_time, end_time, trace:
    [{role, content}], results}``). One file is one session of one agent on one problem: one conversation. The trace
    alternates ``assistant`` (the agent's reply, one model call per step: ``ask_agent`` records what ``get_action``
    returned) and ``env`` (the orchestrator's answer to the parsed action: telemetry output or a parse error, possibly
    empty). Each ``assistant`` record is one call whose recorded context is the trace before it; the agent's system
    prompt and task message (built by the client at ``init_context``) and the instruction suffix it appends to each
    observation are not saved, so the first call's recorded context is empty. Actions are text in fenced code blocks
    (``get_logs(...)``, ``exec_shell(...)``, ``submit(...)``): no tool calls. ``results`` (score, ``steps``,
    ``in_tokens`` / ``out_tokens``) is a summary, not a call."""
    t = _Thread()
    for m in json.loads(path.read_text(encoding="utf-8"))["trace"]:
        if m["role"] == "assistant":
            t.out(m.get("content") or "")
        else:
            t.inp(m["role"])
    return _merge("AIOpsLab session JSON", [t])


COUNTERS = {
    "excytin-agent-log": excytin_agent_log,
    "aiopslab-session": aiopslab_session,
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
