"""Hand counts of the ninety-sixth held-out set (benchmarks/data/heldout_formats_96/files), computed from the raw
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
- several samples drawn for the same prompt (reasoning-gym's ``completions_per_prompt`` / ``eval_repeats``, a math
  harness's ``n_sampling``) are separate calls, each its own single-shot conversation (none continues another's
  context and reply); two samples with the same text are still two calls;
- a field that copies one of the recorded samples (reasoning-gym's ``best_full_model_response`` /
  ``best_model_answer``, the sample its scorer ranked best) is not a call of its own;
- answers, predictions, scores, rewards and verdicts extracted from a reply by the tool's verifier (``model_answer``,
  ``pred``, ``score``, ``report``, ``best_score``, ``mean_score``, ``average_*``) are the tool's computations, not calls;
- a ``<think>...</think>`` / ``<answer>...</answer>`` layout that the prompt asked the model to write is the reply's
  text: one call, and the completion recorded here is the reply as saved (nothing cut);
- a recorded context is what the file itself holds: where a tool sent a system prompt or a prompt template that the
  file does not keep (reasoning-gym's local evaluator, the math harness), the context is the question alone, written
  ``user``; a system prompt kept once at the head of a results file is ``system`` at the head of every context;
- in a Jupyter notebook, calls are read from the cells' saved outputs only (the code in the cells is not a record);
  a conversation printed more than once (a message list printed after each turn) is one conversation whose calls
  are the assistant turns of its longest printing; the same assistant message printed twice is one call;
- in a training log (verl's validation sample printed after ``validation generation end``), each printed sample is one
  single-shot call: the chat-template headers ``<|im_start|>ROLE`` before the last ``<|im_start|>assistant`` give its
  context, the text after that header (up to ``<|im_end|>`` or, where the reply was cut at the response length,
  up to the next log line ``step:N``) its completion; log prefixes ``(main_task pid=N)`` and terminal colour codes
  are the log's, not the model's;
- ids, timestamps, durations, token counts, model names, seeds and configs are metadata, not context.
Context roles: as recorded (``tool`` for a tool-result message).

Run: ``python benchmarks/data/heldout_formats_96/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PREFIX = re.compile(r"^\(main_task pid=\d+\) ?")


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _cell_texts(path: Path) -> list:
    """The saved outputs of each code cell of a notebook, as one text per output (stream text, or the
    ``text/plain`` of an execute result / display data)."""
    texts = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for out in cell.get("outputs", []):
            if "text" in out:
                texts.append("".join(out["text"]))
            elif "text/plain" in out.get("data", {}):
                texts.append("".join(out["data"]["text/plain"]))
    return texts


def reasoning_gym_zero_shot(path: Path) -> dict:
    """reasoning-gym evaluation results JSON, one dataset per file (written by reasoning-gym's ``eval/eval.py``
    through an OpenAI-compatible API, here OpenRouter): ``{name, category, average_best_score, average_mean_score,
    total_examples, config, system_prompt, completions_per_prompt, results: [{question, expected_answer,
    best_model_answer, best_full_model_response, best_score, mean_score, completions: [{model_answer,
    full_model_response, score}]}]}``. The script sent ``[system_prompt, question]`` once per completion: each entry of
    ``completions`` is one single-shot call (its own conversation), context ``system``, ``user``, completion its
    ``full_model_response``. ``best_*`` copies one of them (not a call). A completion with no response text and an
    ``error`` would be a failed request (none in this file). No tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    head = ["system"] if data.get("system_prompt") else []
    completions, contexts = [], []
    for entry in data["results"]:
        for sample in entry["completions"]:
            if not sample.get("full_model_response") and "error" in sample:
                continue
            completions.append(sample["full_model_response"])
            contexts.append(head + ["user"])
    return _result("reasoning-gym eval results JSON (per dataset)", len(completions), completions, contexts, 0)


def reasoning_gym_local_eval(path: Path) -> dict:
    """reasoning-gym local (vLLM) evaluation ``results.json`` (written by ``training/evaluations/evaluate_model.py``
    for an RL-trained checkpoint): ``{metadata: {timestamp, model, device, duration_seconds, max_tokens, temperature,
    top_p, eval_repeats}, categories: [{name, datasets: [{name, category, average_score, total_examples, config,
    results: [{question, expected_answer, best_score, mean_score, completions: [{model_answer, full_model_response,
    score, error?}]}]}]}]}``. Each entry of ``completions`` (``eval_repeats`` = 3 per question) is one single-shot
    call, its own conversation; the file keeps only the question (the system prompt the script added is not saved):
    context ``user``; completion ``full_model_response`` as saved. An entry with an ``error`` and an empty response
    (the script's except branch: the reply was not kept) is not counted (none in this file). No tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts = [], []
    for category in data["categories"]:
        for dataset in category["datasets"]:
            for entry in dataset["results"]:
                for sample in entry["completions"]:
                    if not sample.get("full_model_response") and "error" in sample:
                        continue
                    completions.append(sample["full_model_response"])
                    contexts.append(["user"])
    return _result("reasoning-gym local evaluation results.json", len(completions), completions, contexts, 0)


def math_eval_harness(path: Path) -> dict:
    """Math evaluation harness output JSONL (Zhibin Gou's math-evaluation-harness as vendored in Qwen2.5-Math and in
    reasoning-gym's ``training/evaluations/external_generalisation/math``; ``math_eval.py --save_outputs`` writes
    ``{data_name}/test_{prompt_type}_-1_seed0_t0.0_s0_e-1.jsonl``): one problem per line, ``{idx, question, gt_cot,
    gt, code: [sample, ...], pred: [...], report: [...], score: [...]}``. Each string of ``code`` is one generated
    sample, one single-shot call (``n_sampling`` = 1 here: one per line), its own conversation; the prompt template
    (``qwen25-rg-cot-mcq``) is not saved, so the context is the question (``user``); ``pred`` / ``score`` are the
    harness's extraction and check. No tool calls."""
    completions, contexts = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        for sample in json.loads(line)["code"]:
            completions.append(sample)
            contexts.append(["user"])
    return _result("math-evaluation-harness output JSONL", len(completions), completions, contexts, 0)


def verl_training_log_notebook(path: Path) -> dict:
    """verl getting-started notebook (``examples/ppo_trainer/verl_getting_started.ipynb``, run on Lightning Studio):
    the saved stdout of ``python3 -m verl.trainer.main_ppo`` (PPO on GSM8K with Qwen2.5-0.5B-Instruct) is one cell's
    stream output, Ray log lines prefixed ``(main_task pid=N)`` / ``(WorkerDict pid=N)`` with colour codes. After each
    validation pass the trainer prints ``validation generation end`` and then the reward manager prints one decoded
    validation sample (``num_examine`` = 1): ``<|im_start|>system ...<|im_end|>``, ``<|im_start|>user
    ...<|im_end|>``, ``<|im_start|>assistant`` and the reply (ending ``<|im_end|>``, or cut at 256 tokens, then the
    next ``step:N`` metrics line). Each printed sample is one single-shot call, its own conversation; context
    ``system``, ``user``. The metrics lines (scores, lengths) and the reward function's source printed in another
    cell are not calls. No tool calls."""
    lines = []
    for text in _cell_texts(path):
        lines.extend(_PREFIX.sub("", _ANSI.sub("", line)) for line in text.split("\n"))
    completions, contexts = [], []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "validation generation end":
            i += 1
            continue
        i += 1
        block = []
        while i < len(lines) and not lines[i].startswith("step:") and lines[i].strip() != "validation generation end":
            if lines[i].startswith("(") and " pid=" in lines[i][:40]:  # another process's log line
                break
            block.append(lines[i])
            i += 1
        sample = "\n".join(block)
        head, sep, reply = sample.rpartition("<|im_start|>assistant\n")
        if not sep:
            continue
        contexts.append(re.findall(r"<\|im_start\|>(\w+)\n", head))
        completions.append(reply.split("<|im_end|>")[0])
    return _result("verl training log in a Jupyter notebook (decoded validation samples)", len(completions),
                   completions, contexts, 0)


def verl_agent_loop_notebook(path: Path) -> dict:
    """verl agent-loop tutorial notebook (``examples/tutorial/agent_loop_get_started/agent_loop_tutorial.ipynb``):
    cells query a verl rollout server (Qwen3-1.7B behind verl's OpenAI-compatible endpoint) with the ``openai`` client
    and print the chat history after each turn as a Python list of messages (``pprint(messages)`` stream output, or the
    ``messages`` execute result): ``[{role, content?, tool_calls?: [{id, function: {name, arguments}, type, index}]}]``.
    A printed list that is the start of a longer printed list is the same conversation printed earlier (the weather
    chat printed after its first and its second turn); each longest list is one conversation. In it, each assistant
    message is one call (no two are adjacent), context the roles before it, completion its ``content`` (absent for a
    turn made only of a tool call), tool calls the entries of ``tool_calls`` (run by the notebook: the weather function,
    the code sandbox). Printed tool schemas and sandbox results are not calls."""
    lists = []
    for text in _cell_texts(path):
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, list) and value and all(isinstance(m, dict) and "role" in m for m in value):
            lists.append(value)
    longest = [m for m in lists if not any(len(o) > len(m) and o[:len(m)] == m for o in lists)]
    unique = []
    for messages in longest:
        if messages not in unique:
            unique.append(messages)
    completions, contexts, tools = [], [], 0
    for messages in unique:
        for i, message in enumerate(messages):
            if message["role"] == "assistant":
                completions.append(message.get("content") or "")
                contexts.append([m["role"] for m in messages[:i]])
                tools += len(message.get("tool_calls") or [])
    return _result("verl agent-loop tutorial notebook (printed message lists)", len(unique), completions, contexts,
                   tools)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("reasoning-gym-eval__") and "__zero-shot__" in name:
        out = reasoning_gym_zero_shot(path)
    elif name.startswith("reasoning-gym-eval__") and "__intra-generalisation__" in name:
        out = reasoning_gym_local_eval(path)
    elif name.startswith("reasoning-gym-eval__") and "__math-evals__" in name:
        out = math_eval_harness(path)
    elif name.startswith("verl__") and "agent_loop" in name:
        out = verl_agent_loop_notebook(path)
    else:
        out = verl_training_log_notebook(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
