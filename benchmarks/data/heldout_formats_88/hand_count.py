"""Hand counts of the eighty-eighth held-out set (benchmarks/data/heldout_formats_88/files), computed from the raw
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
- a results record that keeps the material a tool put into its prompt (a document, a persona and a question) and the
  model's raw reply records a single-shot call even where the tool's own prompt template is not saved: the recorded
  context is that material, written ``user`` (one user message, the template's wrapping not printed);
- a model output kept in a record only as input to a later call (persona-survey's "enriched" persona, written by an
  earlier enrichment call whose own input, the sampled PersonaHub persona, is not in the file) is context of the later
  call, not a call of its own: the earlier call's context is not recorded;
- in a multi-agent group-chat transcript written as ``{speaker, text}`` messages (the Milgram experiment results),
  every message whose speaker is one of the LLM agents is one call of that agent, its context the messages before it
  (every agent sees the whole group chat); the transcript is one conversation; messages the converter dropped (the
  chat manager's opening instruction, tool results, the manager's speaker-selection requests) are not in the file
  and not counted;
- a ``SHOCKING_DEVICE`` / ``ELECTRIC_SHOCK_IMAGE`` message is the Participant agent's reply that emitted the
  ``Administer-shock`` function call, rewritten by the tool's converter into a placeholder for its viewer: one call
  with one tool call, its completion text not kept (written as the empty string);
- a record's ``label`` (TopicGPT's human gold label), ids, costs, timestamps, model names and voltages are metadata.
Context roles: ``user`` for the material put into a single-shot prompt; the speaker names as recorded for the group
chat.

Run: ``python benchmarks/data/heldout_formats_88/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_AGENTS = ("Professor", "Learner", "Participant", "Orchestrator")
_SHOCK = "SHOCKING_DEVICE"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def milgram_results(path: Path) -> dict:
    """Milgram experiment results JSON (frodulec/milgram-experiments ``results/experiment_<uuid>.json``, written by
    ``src/run_experiment.py``: an AutoGen group chat of four LLM agents converted by ``convert_chat_history_to_json``):
    ``{id, messages: [{speaker, text}], config: {max_rounds, participant_model, learner_model, professor_model,
    orchestrator_model}, cost, timestamp, final_voltage}``. Each message by Professor, Learner, Participant or
    Orchestrator is one call, context the speakers of the messages before it; a ``SHOCKING_DEVICE`` message is one
    Participant call with one ``Administer-shock`` tool call (text replaced by ``ELECTRIC_SHOCK_IMAGE``; completion
    written empty). One conversation per file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts, seen, tools = [], [], [], 0
    for message in data["messages"]:
        speaker = message["speaker"]
        if speaker == _SHOCK:
            completions.append("")
            contexts.append(list(seen))
            seen.append("Participant")
            tools += 1
        elif speaker in _AGENTS:
            completions.append(message["text"])
            contexts.append(list(seen))
            seen.append(speaker)
    return _result("Milgram experiment group-chat results JSON", 1 if completions else 0, completions, contexts,
                   tools)


def topicgpt_generation(path: Path) -> dict:
    """TopicGPT first-level topic generation output (``data/output/sample/generation_1.jsonl``, written by
    ``topicgpt_python/generation_1.py`` as ``df.to_json(lines=True)``): one line per document ``{id, text, label,
    responses}``. Each line is one single-shot call: context the document ``text`` (``user``; the prompt template with
    the current topic list is not saved), completion ``responses`` (the raw reply, ``[1] Topic: description``); each
    its own conversation; no tool calls."""
    completions, contexts = [], []
    for row in _lines(path):
        completions.append(row["responses"])
        contexts.append(["user"] if row.get("text") else [])
    return _result("TopicGPT generation_1 JSONL", len(completions), completions, contexts, 0)


def topicgpt_assignment(path: Path) -> dict:
    """TopicGPT topic assignment output (``data/output/sample/assignment.jsonl``, written by
    ``topicgpt_python/assignment.py``): one line per document ``{id, text, label, prompted_docs, responses}``. Each
    line is one single-shot call: context the document as put into the prompt (``prompted_docs``, ``user``; the
    template with the topic list is not saved), completion ``responses`` (the assigned topic with its reason and
    supporting quote); each its own conversation; no tool calls."""
    completions, contexts = [], []
    for row in _lines(path):
        completions.append(row["responses"])
        contexts.append(["user"] if row.get("prompted_docs") else [])
    return _result("TopicGPT assignment JSONL", len(completions), completions, contexts, 0)


def persona_survey(path: Path) -> dict:
    """persona-survey results (``survey_results.json``, written by ``persona_survey.py``'s ``save_results_async``):
    a JSON array of ``{persona, question, response}``. Each element is one single-shot survey call (gpt-4o-mini):
    context one user message made of the persona and the question (``user``), completion ``response``. The ``persona``
    text is the reply of an earlier enrichment call whose input is not in the file: context, not a call. Each element
    its own conversation; no tool calls."""
    completions, contexts = [], []
    for row in json.loads(path.read_text(encoding="utf-8")):
        completions.append(row["response"])
        contexts.append(["user"] if row.get("persona") or row.get("question") else [])
    return _result("persona-survey results JSON", len(completions), completions, contexts, 0)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("milgram-experiments__"):
        out = milgram_results(path)
    elif name.startswith("topicgpt__") and "generation_1" in name:
        out = topicgpt_generation(path)
    elif name.startswith("topicgpt__"):
        out = topicgpt_assignment(path)
    else:
        out = persona_survey(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
