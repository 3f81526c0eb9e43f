"""Hand counts of the fifty-seventh held-out set (benchmarks/data/heldout_formats_57/files), computed from the raw
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
- one record (a JSONL line, a JSON array element, a TSV row) holding one prompt and the model's reply to it is one
  single-shot call and its own conversation, also where two records carry the same prompt text: in these visual
  question answering runs the same question is asked of different images (the image is not recorded), and in the
  translation runs every row is an independent request; no record continues another's context and reply;
- the image a multimodal call was sent is not recorded in these files (only its id or nothing): the recorded
  context is the text prompt, written ``user``; a question asked with no image (``visual_input`` "0") is a call all
  the same;
- a reference answer stored beside the reply (``label`` in the translation TSV, ``gt_answer_details`` in the
  HallusionBench result) is neither model output nor context; ids, model ids and category fields are metadata;
- a translation TSV's ``messages`` cell is the message list sent (written by pandas as the Python ``repr`` of a list
  of dicts, read here with ``ast.literal_eval``); its roles are the context roles; few-shot examples written inside
  one user message are that message's text, not earlier calls;
- a reply is the whole string the tool saved (leading spaces kept); no reply in this set is empty and none holds a
  structured tool call (the completions are plain text).
Context roles: as recorded (``user`` for a bare prompt string).

Run: ``python benchmarks/data/heldout_formats_57/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import ast
import csv
import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def llava_vqa_answers(path: Path) -> dict:
    """LLaVA ``model_vqa`` answers JSONL (written by LLaVA's ``llava/eval/model_vqa.py``, run with ``--conv-mode
    vicuna_v1`` by ``scripts/v1_5/eval/llavabench.sh`` and ``mmvet.sh``: one line per question, ``{question_id, prompt, text, answer_id, model_id, metadata}``; ``prompt`` is the question
    text given with the image, ``text`` the model's answer). Each line is one single-shot call (set rule): context
    ``[user]`` (the prompt), completion ``text``; one conversation per line. No tool calls, no system prompt recorded
    (the ``vicuna_v1`` template's system line, "A chat between a curious human and an artificial intelligence
    assistant. ...", is added at request time and not saved)."""
    completions, contexts = [], []
    for rec in _lines(path):
        assert isinstance(rec["prompt"], str) and isinstance(rec["text"], str) and rec["text"].strip()
        completions.append(rec["text"])
        contexts.append(["user"])
    return _result("LLaVA model_vqa answers JSONL", len(completions), completions, contexts, 0)


def hallusionbench_result(path: Path) -> dict:
    """HallusionBench result JSON (the benchmark's ``HallusionBench_result.json`` layout: a JSON array of the
    benchmark's question records, ``{category, subcategory, visual_input, set_id, figure_id, sample_note, question_id,
    question, gt_answer_details, model_prediction}``, with the model's answer added under ``model_prediction``).
    Each element is one single-shot call (set rule): context ``[user]`` (``question``; the figure, when
    ``visual_input`` is "1", is not recorded), completion ``model_prediction``; one conversation per element.
    ``gt_answer_details`` is the reference answer (neither output nor context). No tool calls."""
    completions, contexts = [], []
    for rec in json.loads(path.read_text(encoding="utf-8")):
        pred = rec["model_prediction"]
        assert isinstance(rec["question"], str) and isinstance(pred, str) and pred.strip()
        completions.append(pred)
        contexts.append(["user"])
    return _result("HallusionBench result JSON", len(completions), completions, contexts, 0)


def chatgpt_mt_tsv(path: Path) -> dict:
    """ChatGPT-MT (cmu-llab/gpt_mt_benchmark) experiment output TSV (written by its ``main.py`` with pandas
    ``DataFrame.to_csv(sep="\\t", index=False)``: header ``messages  label  predictions``; ``messages`` the Python repr
    of the chat message list sent to ``gpt-3.5-turbo``, ``label`` the FLORES-200 reference translation,
    ``predictions`` the model's reply; cells with quotes or line breaks are double-quoted by pandas). Each row is one
    single-shot call (set rule): context the roles of ``messages`` (here always one ``user`` message, the five-shot
    examples inlined in it), completion ``predictions``; one conversation per row. No tool calls."""
    csv.field_size_limit(1 << 30)
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    assert rows[0] == ["messages", "label", "predictions"], rows[0]
    completions, contexts = [], []
    for row in rows[1:]:
        messages, _label, pred = row
        msgs = ast.literal_eval(messages)
        assert pred.strip()
        completions.append(pred)
        contexts.append([m["role"] for m in msgs])
    return _result("ChatGPT-MT experiment output TSV", len(completions), completions, contexts, 0)


COUNTERS = {
    "llava-vqa-answers": llava_vqa_answers,
    "hallusionbench-result": hallusionbench_result,
    "chatgpt-mt-tsv": chatgpt_mt_tsv,
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
