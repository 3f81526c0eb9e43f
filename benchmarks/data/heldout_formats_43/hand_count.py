"""Hand counts of the forty-third held-out set (benchmarks/data/heldout_formats_43/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself.

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
- reasoning written inline in the reply text as a leading ``<think>...</think>`` span belongs to that reply (it is
  one call); the completion text recorded here is the reply without that span (none in this set).
Rules made explicit for this set:
- a copy of a reply or of its tool calls kept beside the thread (a provider's raw response body next to the parsed
  reply, a harness's execution records of the same tool calls, a ``predicted_answer`` / ``final_answer`` field, a
  labelling interface's per-turn slices of the same messages) is the same call, not another one, and its tool calls
  are not counted twice;
- several replies sampled for the same context and recorded side by side (none continues another) are separate
  conversations of one call each, like independent rollouts;
- a generated input whose own generating context the file does not record (Magpie's instruction, kept with its
  sampling parameters only) is the user input of the calls that answer it, not a call; tags a tagger model wrote
  about it (intent, difficulty, quality, category) are fields parsed from replies and are not counted;
- in a chat dataset exported by an annotation tool, each assistant message is a call (the model's reply to the
  messages before it), as in any chat dataset; the annotators' labels are not calls;
- an LLM-as-judge record that keeps the judge's whole prompt and whole reply is a recorded call (one conversation
  per judged item); only judges known through their parsed verdicts alone are "mentioned".
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context; roles are otherwise written as the file
records them (``model`` in a Gemini request is written ``assistant``).

Run: ``python benchmarks/data/heldout_formats_43/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_THINK = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)


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


def _chat(messages: list, head: list | None = None) -> _Thread:
    """One thread from an OpenAI-style message list: each run of assistant messages with no input between them is
    one call (content is the completion, each ``tool_calls`` entry a tool call); any other role is input."""
    t = _Thread(head)
    for m in messages:
        if m.get("role") == "assistant":
            content = m.get("content")
            text = content if isinstance(content, str) else ""
            t.out(_THINK.sub("", text, count=1), len(m.get("tool_calls") or []))
        else:
            t.inp(m["role"])
    return t


def agentflow_rollout_results(path: Path) -> dict:
    """AgentFlow (OpenDCAI) rollout results JSONL (``rollout_results/<env>/results_<benchmark>_<time>.jsonl``: one
    task per line, ``{task_id, question, predicted_answer, success, ground_truth, trajectory: {task_id, question,
    messages, tool_calls, final_answer, total_turns, success, error, start_time, end_time, execution_time_ms}}``).
    Each line is one rollout of an independent task: one conversation per line, its thread
    ``trajectory.messages`` (system, user, then assistant messages with OpenAI ``tool_calls`` and empty content,
    ``tool`` results, and a last assistant message with the answer). Each assistant message is one call (none are
    adjacent: 3, 3, 4, 3, 4 calls), each ``tool_calls`` entry a tool call (2, 2, 3, 2, 3). ``trajectory.tool_calls``
    is the harness's execution record of the same calls (tool name, parameters, result, timing), and
    ``predicted_answer`` / ``final_answer`` are taken from the last reply: copies, not counted again."""
    threads = [_chat(rec["trajectory"]["messages"]) for rec in _lines(path)]
    return _merge("AgentFlow rollout results JSONL", threads)


def agentflow_benchmark_result(path: Path) -> dict:
    """AgentFlow (OpenDCAI) benchmark result JSONL (``results/result_Benchmark_<name>.jsonl.jsonl``, the earlier
    runner's output: one task per line, ``{task_id, question, answer, messages, success, error}``; ``messages`` is
    the OpenAI chat thread: system, user, assistant messages with ``tool_calls`` (and the SDK's null ``refusal``,
    ``audio``, ``function_call``, empty ``annotations``), ``tool`` results, a last assistant message with the
    answer). One conversation per line (independent HotpotQA questions). Each assistant message is one call (none
    adjacent: 2, 4, 2, 2, 2, 2 calls), each ``tool_calls`` entry a tool call (2, 3, 1, 2, 1, 1; two parallel calls
    in the first and fourth). ``answer`` is a copy of the last reply's text, not another call."""
    threads = [_chat(rec["messages"]) for rec in _lines(path)]
    return _merge("AgentFlow benchmark result JSONL", threads)


def curator_responses(path: Path) -> dict:
    """Bespoke Curator cache response file (``<cache>/<run hash>/responses_0.jsonl``, written by Curator's batch
    request processor: one request per line, ``{response_message, response_errors, raw_response, raw_request,
    generic_request: {model, messages, response_format, original_row, original_row_idx, generation_params},
    created_at, finished_at, token_usage, response_cost}``). Each line is one call: context
    ``generic_request.messages`` (one user message here), completion ``response_message``. ``raw_response`` is the
    provider's batch result for the same request (its message is the same reply): a copy, not another call. The
    requests are unrelated dishes sent side by side: one conversation per line. No tool calls; no line has
    ``response_errors``."""
    threads = []
    for rec in _lines(path):
        if rec.get("response_errors") and rec.get("response_message") is None:
            continue
        t = _chat(rec["generic_request"]["messages"])
        reply = rec["response_message"]
        t.out(reply if isinstance(reply, str) else json.dumps(reply))
        threads.append(t)
    return _merge("Bespoke Curator cache responses JSONL", threads)


def gemini_batch_output(path: Path) -> dict:
    """Gemini / Vertex AI batch prediction output JSONL (the fixture Curator's Gemini batch tests replay: one
    request per line, ``{custom_id, status, processed_time, request: {contents: [{role, parts}]}, response:
    {candidates: [{content: {role: model, parts}, finishReason, avgLogprobs}], createTime, modelVersion,
    responseId, usageMetadata}}``). Each line is one call: context ``request.contents`` (one user part each), the
    completion the text parts of the first candidate (one candidate each); a ``functionCall`` part would be a tool
    call (none). Unrelated one-word prompts side by side: one conversation per line."""
    threads = []
    for rec in _lines(path):
        t = _Thread()
        for c in rec["request"]["contents"]:
            t.inp("assistant" if c.get("role") == "model" else c.get("role", "user"))
        cand = rec["response"]["candidates"][0]
        parts = cand["content"]["parts"]
        t.out("".join(p.get("text", "") for p in parts if not p.get("thought")),
              sum(1 for p in parts if "functionCall" in p))
        threads.append(t)
    return _merge("Gemini batch prediction output JSONL", threads)


def magpie_po_responses(path: Path) -> dict:
    """Magpie preference-data responses JSON (``data_po/example_instructions_5res.json``, written by Magpie's
    ``gen_po_multi_res.py``: a list of ``{uuid, instruction, gen_input_configs, intent, knowledge, difficulty,
    input_quality, quality_explanation, task_category, input_length, responses: [5 strings],
    gen_response_configs: {prompt, temperature, ..., output_generator, engine}}``). Each string in ``responses`` is
    one call whose context is the instruction as a user message (``gen_response_configs.prompt`` is that context
    rendered in the Llama-3 template); the five responses to one instruction are samples side by side, none
    continuing another: 5 records x 5 = 25 single-call conversations. The instruction itself was generated by a
    model whose context the file does not keep (only ``gen_input_configs`` temperature / top_p): input, not a
    call; the tags are a tagger's parsed output: not counted. No tool calls; no system prompt recorded."""
    threads = []
    for rec in json.loads(path.read_text(encoding="utf-8")):
        for resp in rec["responses"]:
            t = _Thread(["user"])
            t.out(_THINK.sub("", resp, count=1))
            threads.append(t)
    return _merge("Magpie preference responses JSON", threads)


def labelstudio_chat_export(path: Path) -> dict:
    """Label Studio JSON export of a multi-turn chat labelling project (a list of tasks ``{id, annotations,
    drafts, predictions, data, meta, created_at, ..., project, updated_by, comment_authors}``; ``data.messages``
    is the chat, user / assistant alternating; ``data.turn1_dialogue`` ... ``turn5_dialogue`` are the labelling
    interface's per-turn slices of the same messages, padded with ``{role: "", content: ""}`` pairs;
    ``annotations[].result`` holds the annotators' choices per turn). One conversation per task, from
    ``data.messages``; each assistant message is one call (3 per task, none adjacent). The turn slices are copies
    and the annotations are human labels: neither is counted. No tool calls; no system prompt."""
    threads = [_chat(task["data"]["messages"]) for task in json.loads(path.read_text(encoding="utf-8"))]
    return _merge("Label Studio chat-labelling JSON export", threads)


def toolalpaca_eval_outputs(path: Path) -> dict:
    """ToolAlpaca evaluation output JSON (``evalution_outputs/ToolAlpaca7b.json``, written by ``evaluation.py``:
    an object keyed by API name, each a list of ``{id, input: [{role: user, content}], output,
    process_correctness, final_response_correctness}``, plus a ``statistics`` object of totals). Each record is one
    GPT-4 judge call kept whole: context ``input`` (one user message holding the API documentation, the
    instruction, the standard answer and the assistant's solution as text), completion ``output``; the two
    correctness fields are parsed from that reply. Judged items are independent: one conversation per record
    (10 + 9 + 11 + 12 = 42 in this subset). The function calls written inside the prompt are text, not tool calls
    of the judge: no tool calls. ``statistics`` (totals of the whole file) holds no call."""
    threads = []
    for key, records in json.loads(path.read_text(encoding="utf-8")).items():
        if key == "statistics":
            continue
        for rec in records:
            t = _chat(rec["input"])
            t.out(_THINK.sub("", rec["output"], count=1))
            threads.append(t)
    return _merge("ToolAlpaca evaluation outputs JSON", threads)


COUNTERS = {
    "agentflow__results_web_": agentflow_rollout_results,
    "agentflow__result_Benchmark_": agentflow_benchmark_result,
    "curator__test-cache-": curator_responses,
    "curator__gemini_batch": gemini_batch_output,
    "magpie__": magpie_po_responses,
    "label-studio__": labelstudio_chat_export,
    "toolalpaca__": toolalpaca_eval_outputs,
}


def count(path: Path) -> dict:
    (counter,) = [f for prefix, f in COUNTERS.items() if path.name.startswith(prefix)]
    return {"file": path.name, **counter(path)}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
