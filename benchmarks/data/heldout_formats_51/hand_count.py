"""Hand counts of the fifty-first held-out set (benchmarks/data/heldout_formats_51/files), computed from the raw files
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
Rules made explicit for this set (written before the product was run):
- a log that records the model's reply but not the prompt sent counts the call when the file records what the
  prompt was built from (the task instruction, the feedback of earlier steps, earlier queries and replies); the
  context written is that recorded part, in the order the file gives it;
- a per-step record that repeats the previous record's reply verbatim (the same raw reply string) is a further
  action executed from the same plan, not a new call; a reply whose text differs from the previous one is a new
  call;
- a plan, code block or action list written as text inside the reply (an ``executable_plan`` array in a JSON
  reply, ``put_first_on_second(...)`` lines) is the completion's text, not a structured tool call;
- a reference answer stored beside the reply (a ``gold`` block) is not model output and not context;
- results of other LLM calls (a world-model checker's verdict, a reflector's extracted lessons, a description
  model's observation) recorded only as parsed fields are mentioned, not recorded (shared rule), and not counted;
- one episode file is one conversation when each later call's recorded context continues the earlier ones
  (same instruction and the earlier steps' feedback or queries and replies).
Context roles: the prompt string of a completion-style call with its earlier queries and replies inlined is written
as alternating ``user`` / ``assistant`` entries for the recorded earlier steps, then ``user``; a single prompt
string recorded whole is written ``user``.

Run: ``python benchmarks/data/heldout_formats_51/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_STEP = re.compile(r"^========= step (\d+) =========$", re.M)
_STATLER_BLOCK = re.compile(r"\n# query: (.*)\n```generated:\n(.*?)\n```\n```gold:\n(.*?)\n```\n?", re.S)


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


def worldmind_trajectory(path: Path) -> dict:
    """WorldMind trajectory JSON (zjunlp/WorldMind's per-episode ``trajectory/episode_N_trajectory.json``:
    ``{episode_num, instruction, trajectory: [{step, action_id, action_description, observation_before,
    predicted_state, env_feedback, agent_input_prompt, agent_output, worldmind_info}]}``). Each ``trajectory``
    entry whose ``agent_input_prompt`` and ``agent_output`` are both recorded is one planner call: its context is
    the full prompt string (one ``user`` entry; the images the planner may also send are not recorded) and its
    completion is ``agent_output`` (the raw JSON reply string; its ``executable_plan`` is text, not tool calls).
    One entry here: one call. The episode file is one conversation. ``observation_before`` (a description model's
    output), ``worldmind_info.discrimination_result`` and ``reflection_result`` (the world-model checker's and the
    reflector's parsed results) come from other LLM calls recorded only through their results: mentioned, not
    counted. No tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for entry in data["trajectory"]:
        prompt, reply = entry.get("agent_input_prompt"), entry.get("agent_output")
        if not prompt or reply is None:
            continue
        t.inp("user")
        t.out(reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False))
    return _merge("WorldMind trajectory JSON", [t])


def embodiedbench_step_log(path: Path) -> dict:
    """EmbodiedBench per-step episode log JSON (``episode_N_step_M.json``, written by EmbodiedBench's EB-ALFRED /
    EB-Habitat environments after each executed action: a list of step records, each with ``instruction``,
    ``env_step``, ``env_feedback``, ``action_id``, ``action_description``, ``last_action_success``, ``task_success``
    and ``reasoning``, the planner's raw JSON reply string, plus environment-specific keys). The prompt is not
    saved; the recorded context is the task instruction and the feedback of the steps executed before. The
    planner turns one reply into several executed actions, and each executed action's record repeats that reply
    verbatim: a run of consecutive records with the same ``reasoning`` string is one call (added rule), a record
    whose ``reasoning`` differs from the previous record's opens a new call. The tool's own per-episode summary
    (``results/episode_1_final_res.json``, not included) gives ``planner_steps`` equal to this count for both files
    (3 for the EB-ALFRED file: steps 1 | 2 | 3-13; 2 for the EB-Habitat file: steps 1-21 | 22-30). Context of
    call k: ``user`` (instruction), then for each earlier call its reply and the feedback of its executed actions
    (``assistant``, ``user``). The completion is the ``reasoning`` string; its ``executable_plan`` is text, not
    tool calls. One episode file is one conversation. No tool calls."""
    records = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread(["user"])
    prev = None
    for rec in records:
        reply = rec.get("reasoning")
        if reply is None:
            continue
        if prev is not None and reply != prev:
            t.inp("user")
        if reply != prev:
            t.out(reply)
        prev = reply
    return _merge("EmbodiedBench per-step episode log JSON", [t])


def statler_episode_log(path: Path) -> dict:
    """Statler episode history text (ripl/statler's ``results-reference/<domain>/baseline-episodeNN.txt``, written
    by ``AbstractAgent.save_history`` in ``cap/experiments/evaluate_models.py`` for its ``BaselineAgent``): an empty
    ``========= step 0 =========`` block, then one block per step, ``# query: ...`` (the user's command), a
    fenced ``generated:`` block (the model's completion) and a fenced ``gold:`` block (the reference program, not
    model output). The baseline agent makes one completion call per step and keeps history: each prompt is the
    preprompt and task description (not saved here) followed by every earlier ``# query:`` line and its generated
    code, then the new query. So one file is one conversation, each step with a query one call whose completion is
    the ``generated`` text; the context of call k is ``user``/``assistant`` for the k-1 earlier steps, then
    ``user``. Generated ``put_first_on_second(...)`` / ``say(...)`` / ``noop()`` lines are program text, not
    structured tool calls. No tool calls."""
    text = path.read_text(encoding="utf-8")
    parts = _STEP.split(text)
    t = _Thread()
    for i in range(1, len(parts), 2):
        m = _STATLER_BLOCK.fullmatch(parts[i + 1])
        if not m:
            continue
        t.inp("user")
        t.out(m.group(2))
    return _merge("Statler episode history text", [t])


COUNTERS = {
    "worldmind-trajectory": worldmind_trajectory,
    "embodiedbench-step-log": embodiedbench_step_log,
    "statler-episode-log": statler_episode_log,
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
