"""Hand counts of the sixty-first held-out set (benchmarks/data/heldout_formats_61/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself and in the code of the tool that wrote it.

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
- one run file of an agent benchmark (one user task, with or without a prompt-injection attack, run once) is one
  conversation: its message list is one thread, each assistant message continuing the context of the ones before;
- every assistant message is one call (the harnesses append one assistant message per model completion and run the
  requested tools before the next completion; no two assistant messages are adjacent in this set); its tool calls are
  the entries of its structured ``tool_calls`` list, parallel entries counted one by one; an assistant message whose
  only output is tool calls (``content`` null) is a call with an empty completion text;
- a ``tool`` message is the tool result of one call (input of the next call), also where the tool raised an error
  (its ``error`` field set and its content empty); the copy of the call inside it (``tool_call``) is not a new call;
- the attack text (``injections``) and the evaluation fields (``utility``, ``security``, ``duration``,
  ``evaluation_timestamp``) are metadata, not calls;
- DRIFT's extra model calls (the constraint builder, the per-tool privilege assignment, the injection detector, the
  alignment judge) are recorded only through the fields parsed out of their replies (``initial_trajectory``,
  ``initial_checklist``, ``tool_permission``) or not at all, and ``total_tokens`` is a usage ledger: none of them is
  counted (shared rules); the message list under ``conversations`` is the agent's thread;
- in DRIFT's files the model writes its calls inside the reply text as ``<function_call>[name(arg=...), ...]
  </function_call>`` and the harness records the same calls parsed into ``tool_calls``; they are counted once, from
  ``tool_calls`` (in every file of this set the notated calls and the ``tool_calls`` entries agree one to one); the
  ``<function_thought>`` and ``<final_answer>`` spans are parts of the one reply text;
- a system prompt the harness sends but does not save (DRIFT's tool-calling prompt and the execution guidelines it
  appends to the user message at request time) is not part of the recorded context; one saved in the message list
  (AgentDojo's) heads every context.
Context roles: as recorded (``system``, ``user``, ``assistant``, ``tool``).

Run: ``python benchmarks/data/heldout_formats_61/hand_count.py`` (one JSON line per file; ``--tsv`` prints
``file<TAB>conversations<TAB>calls<TAB>tool_calls`` instead).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


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


def _block_text(content) -> str:
    """AgentDojo message content: null, a string, or a list of ``{type: "text", content}`` blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(b.get("content") or "" for b in content if b.get("type") == "text")


def agentdojo_run(path: Path) -> dict:
    """AgentDojo run JSON (written by AgentDojo's benchmark logger, agentdojo 0.1.35, benchmark v1.2.2: one file per
    user task and attack, ``runs/<pipeline>/<suite>/<user_task>/<attack>/<injection_task>.json``, indent 4:
    ``{suite_name, pipeline_name, user_task_id, injection_task_id, attack_type, injections, messages: [{role,
    content, tool_calls?, tool_call_id?, tool_call?, error?}], error, benchmark_version, evaluation_timestamp,
    agentdojo_package_version, duration, utility, security}``). ``messages`` starts with the system prompt and the
    user's task; ``content`` is null or a list of ``{type: "text", content}`` blocks; an assistant message's
    ``tool_calls`` are ``{function, args, id, placeholder_args}``; each ``tool`` message answers one call (its
    ``error`` set when the tool raised). One file is one conversation; each assistant message is one call, its
    completion the text blocks (empty for a tool-call-only message), its tool calls the ``tool_calls`` entries."""
    d = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for m in d["messages"]:
        if m["role"] == "assistant":
            t.out(_block_text(m.get("content")), len(m.get("tool_calls") or []))
        else:
            t.inp(m["role"])
    return _merge("AgentDojo run JSON", [t])


def drift_run(path: Path) -> dict:
    """DRIFT run JSON (written by DRIFT's ``pipeline_main.py``, the AgentDojo harness of the DRIFT prompt-injection
    defense: one file per user task and attack, ``runs/<model>/<suite>/<user_task>/<attack>/<injection_task>.json``,
    indent 4: ``{suite_name, pipeline_name, user_task_id, injection_task_id, attack_type, build_constraints,
    injection_isolation, dynamic_validation, adaptive_attack, tool_permission, initial_trajectory,
    initial_checklist, conversations: [{role, content, tool_calls?, tool_call_id?, tool_call?, error?}],
    benchmark_version, utility, security, total_tokens, duration}``). ``conversations`` holds the user's task, the
    agent's replies (plain strings with ``<function_thought>`` / ``<function_call>`` / ``<final_answer>`` spans and
    the parsed ``tool_calls`` ``{function, args, id}``) and the tool results; no system prompt is saved. One file is
    one conversation; each assistant message is one call, its completion the whole ``content`` string, its tool calls
    the ``tool_calls`` entries (the same calls the ``<function_call>`` span notates, counted once). The fields parsed
    from DRIFT's other model calls (``tool_permission``, ``initial_trajectory``, ``initial_checklist``) and
    ``total_tokens`` are not calls."""
    d = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for m in d["conversations"]:
        if m["role"] == "assistant":
            t.out(m.get("content") or "", len(m.get("tool_calls") or []))
        else:
            t.inp(m["role"])
    return _merge("DRIFT run JSON", [t])


COUNTERS = {
    "agentdojo-run": agentdojo_run,
    "drift-run": drift_run,
}


def count(path: Path) -> dict:
    out = COUNTERS[path.name.split("__", 1)[0]](path)
    return {"file": path.name, **out}


def main(argv: list | None = None) -> int:
    tsv = "--tsv" in (argv if argv is not None else sys.argv[1:])
    for p in sorted(FILES.iterdir()):
        row = count(p)
        if tsv:
            print(f"{row['file']}\t{row['conversations']}\t{row['calls']}\t{row['tool_calls']}")
        else:
            print(json.dumps(row, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
