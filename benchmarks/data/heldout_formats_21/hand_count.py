"""Hand counts of the twenty-first held-out set (benchmarks/data/heldout_formats_21/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself and in the producing tool's source.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (copied from the eighth set's script, written before the product was run):
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
- independent runs side by side (one record per benchmark instance or per simulated conversation) are separate
  conversations;
- an assistant message whose text is empty, with no error recorded, that the harness answered (a verifier's feedback
  follows it and later contexts include it) is a call that returned an empty completion: it is counted;
- the same call recorded twice in one record (the messages list and a per-step log of the request sent and the raw
  response received, with the same context and the same reply) is one call;
- turns written by a user simulator are input to the agent under test (``user`` in its contexts), not calls of this
  file, when the simulator's own rendered prompt is not recorded (only its template and variables are);
- a feedback message written by a plan validator (a program, not a model) is input (``user``).
Context roles: written as the file records them (``system`` / ``user`` / ``assistant``; a user simulator's turns are
written ``user``).

Run: ``python3 benchmarks/data/heldout_formats_21/hand_count.py`` (one JSON line per file).
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


def _load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def _messages_thread(messages: list) -> _Thread:
    t = _Thread()
    for m in messages:
        if m["role"] == "assistant":
            t.out(m.get("content") or "", len(m.get("tool_calls") or []))
        else:
            t.inp(m["role"])
    return t


def planbench_zero_shot(path: Path) -> dict:
    """PlanBench (karthikv792/LLMs-Planning) plan-generation results JSON, one-shot / zero-shot layout
    (``{task, prompt_type, domain, instances: [{instance_id, query, ground_truth_plan, llm_raw_response,
    extracted_llm_plan, llm_correct}], engine}``, written by ``llm_planning_analysis/response_generation.py`` and
    ``response_evaluation.py``). Each instance is one single-shot call: ``query`` is the prompt the model saw (one
    user message; no system prompt is recorded in the file) and ``llm_raw_response`` the reply; ``extracted_llm_plan``
    and ``llm_correct`` are the harness's parse and check of that reply, not further calls. Instances are independent
    problems side by side: one conversation each. No tool calls."""
    threads = []
    for inst in _load(path)["instances"]:
        t = _Thread(["user"])
        t.out(inst.get("llm_raw_response") or "")
        threads.append(t)
    return _merge("PlanBench results JSON (query / llm_raw_response per instance)", threads)


def planbench_backprompting(path: Path) -> dict:
    """PlanBench backprompting results JSON (``{task, engine, prompt_type, domain, instances: [{instance_id,
    example_instance_ids, messages: [{role, content}], steps, correct, extracted_llm_plan, context_window_hit,
    could_not_extract}]}``): each instance is one self-critique loop in which the model proposes a plan and the plan
    validator (VAL, a program) answers with the unmet precondition or goal as a ``user`` message, until the plan is
    valid or the step limit is reached. One conversation per instance; each ``assistant`` message is one call whose
    context is every message before it (the ``system`` prompt, the one-shot problem prompt, earlier replies and
    validator feedback). Three replies in this subset have empty text and are followed by validator feedback: they are
    counted (explicit rule above). No tool calls."""
    threads = [_messages_thread(inst["messages"]) for inst in _load(path)["instances"]]
    return _merge("PlanBench backprompting results JSON (messages per instance)", threads)


def planbench_backprompting_stepwise(path: Path) -> dict:
    """PlanBench backprompting results JSON, later layout with a per-step log (``{task, engine, prompt_type,
    additional_task_info, domain, tempertures, instances: [{instance_id, messages, steps, verifier_states_correct,
    act_correct, step_wise_dict: {"<step>": {time_taken, sent_messages, response_object, llm_plan,
    sound_verifier_json}}, context_window_hit, could_not_extract, feedback_messages}]}``). ``messages`` is the
    instance's conversation (system, user, then assistant replies and validator feedback); ``step_wise_dict`` logs,
    for every step, the request sent (``sent_messages``, equal to the messages before that reply) and the raw chat
    completion received (``response_object``, whose message text equals that reply): the same call recorded twice,
    counted once (explicit rule above; checked below). One conversation per instance; every instance in this file
    stopped after one step. ``tool_calls`` in the raw responses are null: no tool calls."""
    threads = []
    for inst in _load(path)["instances"]:
        msgs = inst["messages"]
        replies = [k for k, m in enumerate(msgs) if m["role"] == "assistant"]
        steps = sorted(inst["step_wise_dict"].items(), key=lambda kv: int(kv[0]))
        assert len(replies) == len(steps), inst["instance_id"]
        for k, (_, step) in zip(replies, steps):
            assert step["sent_messages"] == msgs[:k], inst["instance_id"]
            assert step["response_object"]["choices"][0]["message"]["content"] == msgs[k]["content"]
        threads.append(_messages_thread(msgs))
    return _merge("PlanBench backprompting results JSON (messages + step_wise_dict)", threads)


def arksim_simulation(path: Path) -> dict:
    """ArkSim simulation output JSON (arklexai/arksim, schema v1.1: ``{schema_version, simulator_version,
    simulation_id, generated_at, conversations: [{conversation_id, scenario_id, conversation_history: [{turn_id,
    message_id, role: simulated_user | assistant, content, tool_calls}], simulated_user_prompt:
    {simulated_user_prompt_template, variables}}]}``). Each conversation is one chat between ArkSim's user simulator
    and the agent under test: one conversation each. Each ``assistant`` message is one call of the agent, whose
    context is the chat before it (simulator turns as ``user``; no system prompt of the agent is recorded); its
    ``tool_calls`` list (null throughout here) would hold its tool calls. The simulator's turns are input, not calls
    (its prompt is recorded only as a template and variables; explicit rule above)."""
    threads = []
    for conv in _load(path)["conversations"]:
        t = _Thread()
        for m in conv["conversation_history"]:
            if m["role"] == "assistant":
                t.out(m.get("content") or "", len(m.get("tool_calls") or []))
            else:
                t.inp("user")
        threads.append(t)
    return _merge("ArkSim simulation output JSON (conversations / conversation_history)", threads)


COUNTERS = {
    "planbench__blocksworld_3__claude-3-opus__task_1_plan_generation_zero_shot.json": planbench_zero_shot,
    "planbench__blocksworld__gpt-4_chat__task_1_plan_generation_backprompting__first30.json":
        planbench_backprompting,
    "planbench__blocksworld_hard__gpt-4o-mini_chat__task_1_plan_generation_backprompting_sound_verifier.json":
        planbench_backprompting_stepwise,
    "arksim__financial-research__simulation.json": arksim_simulation,
    "arksim__integration-tests__eval_test_simulation.json": arksim_simulation,
}


def count(path: Path) -> dict:
    out = COUNTERS[path.name](path)
    return {"file": path.name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
