"""Hand counts of the hundred-and-eleventh held-out set (benchmarks/data/heldout_formats_111/files), computed from the
raw files with the standard library only (this script does not import tracedraft), each by its format's layout as
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
- simulated dialogues where both sides are LLMs (an LLM user simulator or testing agent talking to an agent under
  test): the calls counted are those of the side whose input is recorded in the file. In the ragbits simulation result
  that is the agent under test (its tool calls, tool results and per-turn token usage are recorded; the simulated
  user's prompt, persona and model are not, so its messages are inputs to the agent, not counted calls). In the
  Penelope execution trace it is Penelope, the testing agent (its messages and tool calls are recorded; the target
  chatbot's replies arrive inside Penelope's tool results and are tool results, not calls);
- an agent turn recorded as one record holding the user message, the final assistant message and a list of the tool
  calls made in between (each with its result) is, when the turn holds one tool call, two calls: the call that
  emitted the tool call (no text) and the call that wrote the final message after the tool result; a turn with no
  tool call is one call. (A turn listing several tool calls would leave open whether they were emitted in one call
  or in several; no file in this set holds such a turn, and the counter refuses one.)
- a goal checker's / judge's verdicts (``task_completed_reason``, ``goal_evaluation``, ``metrics``, ``findings``)
  are fields parsed out of a judge's reply whose prompt is not recorded: mentioned, not counted;
- a benchmark file that carries, per item, a conversation (``input``), reference answers (``targets``) and one model
  prediction (``predictions``) records one call per item: context the item's input messages (and its retrieved
  passages), completion the prediction's text. The targets are the benchmark's gold references (written during data
  collection, whatever their ``author_type`` says), not calls recorded by this file; the earlier ``agent`` turns
  inside ``input`` are context. Items of the same dataset conversation are separate conversations, because no item's
  context contains another item's prediction (it contains the gold turns instead);
- a run log printed to stdout (IC-DST's experiment runner) that prints, per dialogue turn, the prompt it sends
  (without the SQL table schema part, which the runner strips before printing), then the completion, then
  ``this is the Nth example. <dialogue id>_turn_<n>``: each such block is one single-shot call whose completion is
  the text between the prompt's last line (``SQL: SELECT * FROM``) and the ``this is the`` line. A final block whose
  prompt is printed without a completion (the run was interrupted) is not a call. Turns of the same dialogue are
  separate conversations: a later prompt holds only the last exchange and the dialogue state the runner derived from
  earlier predictions, not an earlier prompt and its reply;
- a results record that keeps the message list sent and received (``message_log``) and, beside it, the final reply
  (``output``, equal to the last assistant message) is one call per record; ``output`` is the same reply, not a
  second call; ``input`` and ``target`` are the dataset item, not context beyond the messages;
- ids, timestamps, durations, token counts, costs, model names, settings and scores are metadata, not context.
Context roles: as recorded; a message made only of tool results is written ``tool``; a test configuration or system
prompt kept beside the messages (not in the list) is written ``system`` at the head of every context.

Run: ``python benchmarks/data/heldout_formats_111/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
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


def ragbits_simulation_result(path: Path) -> dict:
    """ragbits agent-simulation result JSON (``ragbits.evaluate.agent_simulation`` ``SimulationResult`` saved by the
    hotel-booking example of deepsense-ai/ragbits: ``{scenario_name, start_time, end_time, status, agent_model,
    simulated_user_model, checker_model, personality, error, turns: [{turn_index, task_index, user_message,
    assistant_message, tool_calls: [{name, arguments, result}], task_completed, task_completed_reason, token_usage,
    latency_ms}], tasks: [...], metrics: {...}}``). One scenario run is one conversation of the agent under test.
    Per turn: the simulated user's message is a ``user`` input; each tool call is one call emitting it (no text) followed
    by its result (``tool``); the ``assistant_message`` is the call after the last result (rule above; a turn with more
    than one tool call is refused as ambiguous). The goal checker's verdicts are not counted."""
    data = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for turn in data["turns"]:
        calls = turn.get("tool_calls") or []
        if len(calls) > 1:
            raise ValueError(f"turn {turn['turn_index']} lists {len(calls)} tool calls: call count ambiguous")
        t.inp("user")
        for _call in calls:
            t.out("", tools=1)
            t.inp("tool")
        t.out(turn.get("assistant_message") or "")
    return _merge("ragbits agent-simulation result JSON", [t])


def penelope_execution_trace(path: Path) -> dict:
    """Rhesis Penelope execution trace JSON (the test result of rhesis-ai/rhesis's multi-turn testing agent
    ``PenelopeAgent.execute_test``: ``{status, goal_achieved, turns_used, findings, history: [{turn_number, timestamp,
    assistant_message: {role: assistant, content, tool_calls: [{id, type: function, function: {name, arguments}}]},
    tool_message: {role: tool, tool_call_id, name, content}, retrieval_context, reasoning, evaluation}],
    goal_evaluation, metrics, test_configuration, model_info, target_info, execution_stats, metadata, start_time,
    end_time}``). One test run is one conversation of Penelope; each ``history`` entry's ``assistant_message`` is one
    call (its text plus its tool calls), followed by its ``tool_message`` (a ``tool`` input holding the target
    chatbot's reply). ``reasoning`` repeats the call's text; the goal evaluation and metrics are the judge's parsed
    output (not counted). Context head: the test configuration (``system``)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread(["system"])
    for entry in data["history"]:
        msg = entry["assistant_message"]
        t.out(msg.get("content") or "", tools=len(msg.get("tool_calls") or []))
        if entry.get("tool_message"):
            t.inp("tool")
    return _merge("Rhesis Penelope execution trace JSON", [t])


def mtrag_responses(path: Path) -> dict:
    """MT-RAG benchmark evaluation input with predictions, JSONL (IBM/mt-rag-benchmark
    ``scripts/evaluation/sample_data/responses-10.jsonl``: one task per line, ``{conversation_id, task_id, task_type,
    turn, collection, dataset, contexts: [{document_id, text, title, url, score, feedback, query}], input: [{speaker:
    user | agent, text, metadata, enrichments?}], targets: [{speaker: agent, text, metadata}], Question Type,
    answerability, Multi-Turn, Standalone Type, Validity, Ambiguity Type, predictions: [{text, class}]}``; ``NaN``
    literals). Each line is one call (rule above): context the ``input`` messages (``user`` / ``agent`` ->
    ``assistant``) after the retrieved passages (written ``documents`` when present), completion
    ``predictions[0].text``; targets are gold references. Ten lines, ten conversations. No tool calls."""
    threads = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        head = ["documents"] if item.get("contexts") else []
        head += ["user" if m["speaker"] == "user" else "assistant" for m in item["input"]]
        for pred in item.get("predictions") or []:
            t = _Thread(head)
            t.out(pred.get("text") or "")
            threads.append(t)
    return _merge("MT-RAG evaluation input with predictions JSONL", threads)


_ICDST_BLOCK = re.compile(r"Example #1\n(?P<prompt>.*?\nSQL: SELECT \* FROM)\n(?P<completion>.*?)\n"
                          r"this is the (?P<n>\d+)th example\. (?P<turn>\S+)", re.S)


def icdst_run_log(path: Path) -> dict:
    """IC-DST experiment stdout log (``run_zeroshot_gpt_turbo_experiment.py`` of a fork of Yushi-Hu/IC-DST, redirected
    to ``logs/gpt_turbo/*.log``: a header with the arguments, then per MultiWOZ turn a tqdm progress line, the prompt
    printed without its SQL table schema (``Example #1`` a static demonstration, ``Example #2`` the test turn with
    ``[context]`` (the dialogue state so far), ``[system]``, ``Q: [user]`` and ``SQL: SELECT * FROM``), the completion
    (the rest of the SQL query), ``this is the Nth example. <dialogue>_turn_<n>``, the predicted and gold turn changes
    and states, and ``=====correct!=====`` / ``=====wrong!=====``). One call per complete block (rule above), each a
    single-user-message chat call of its own: calls = conversations. The last block, a prompt with no completion, is
    not a call. No tool calls."""
    text = path.read_text(encoding="utf-8")
    threads = []
    for m in _ICDST_BLOCK.finditer(text):
        t = _Thread(["user"])
        t.out(m.group("completion"))
        threads.append(t)
    return _merge("IC-DST experiment run log (text)", threads)


def meta_prompting_outputs(path: Path) -> dict:
    """meta-prompting experiment output JSONL (suzgunmirac/meta-prompting ``outputs/<method>/<task>.jsonl``: one record
    per task item, ``{input, target, message_log: [{role, content}], output}``). Each record is one call: context the
    ``message_log`` messages before the last ``assistant`` message (``system``, ``user``), completion that last
    message; ``output`` equals it (the same reply). Records are independent items: one conversation each. No tool
    calls."""
    threads = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        t = _Thread()
        for msg in rec["message_log"]:
            if msg["role"] == "assistant":
                t.out(msg["content"])
            else:
                t.inp(msg["role"])
        threads.append(t)
    return _merge("meta-prompting output JSONL (message_log records)", threads)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("ragbits__"):
        out = ragbits_simulation_result(path)
    elif name.startswith("rhesis__"):
        out = penelope_execution_trace(path)
    elif name.startswith("mt-rag-benchmark__"):
        out = mtrag_responses(path)
    elif name.startswith("custom-IC-DST__"):
        out = icdst_run_log(path)
    elif name.startswith("meta-prompting__"):
        out = meta_prompting_outputs(path)
    else:
        raise ValueError(f"no counter for {name}")
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
