"""Hand counts of the seventy-third held-out set (benchmarks/data/heldout_formats_73/files), computed from the raw
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
Rules made explicit for this set (written before the product was run, and before any count was taken):
- in a saved message list (``[{role, content}, ...]``) each ``assistant`` message is one call; its context is every
  message before it in the list, with the roles as recorded; a list in which the tool appended each reply and the next
  instruction and sent the whole list again (Paper2Code's planning stage) is one conversation;
- in a log of alternating prompt and reply records where the prompt's ``role`` is the tool's own name (LLaMEA writes
  ``"LLaMEA"``) and the reply's ``role`` is the name of the model that answered (``gpt-3.5-turbo``, ``gpt-4o``,
  ``Llama-3.2-3B-Instruct``), each reply record is one call whose context is the prompt record just before it, written
  ``user``; the role value naming the model is metadata of the call, not a speaker in a conversation;
- a prompt the tool builds anew for every call, quoting earlier replies (a "current population" of algorithms with
  their code and scores, an error traceback of an earlier candidate) as text, starts a new single-shot call: its
  context is a new prompt, not a continuation of the earlier call's context and reply, so every reply record of a
  LLaMEA log is its own conversation (the rule of set 71 for pipeline steps that quote earlier replies);
- two prompt records with the same text are two requests; each reply answers the prompt record just before it;
- a prompt record with no reply record after it (the log ends on a prompt: the run stopped, or was cut off when the
  file was committed) holds no recorded reply and is not a call;
- a reply that does not follow the requested format, holds broken code or an example-usage tail is a call all the
  same; the completion is the reply's text as saved;
- timestamps, model names in ``role``, and the tool's own scores quoted in prompts are metadata or context text,
  never calls.
Context roles: as recorded (``system`` / ``user`` / ``assistant`` for a message list; ``user`` for a LLaMEA prompt
record).

Run: ``python benchmarks/data/heldout_formats_73/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def paper2code_trajectories(path: Path) -> dict:
    """Paper2Code (PaperCoder) planning trajectories JSON (``outputs/<paper>/planning_trajectories.json``, written by
    ``codes/1_planning.py``: one JSON array of ``{role, content}`` messages, ``json.dumps`` with ASCII escapes). The
    planning stage sends the growing list four times (overall plan, architecture design, logic design / task list,
    ``config.yaml``), appending each reply and the next instruction: the file is one conversation. Each ``assistant``
    message is one call whose context is the roles of every message before it. No tool calls (replies are plain text
    and ``[CONTENT]`` JSON blocks)."""
    messages = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts, roles = [], [], []
    for message in messages:
        if message["role"] == "assistant":
            completions.append(message["content"])
            contexts.append(list(roles))
        roles.append(message["role"])
    return _result("Paper2Code planning trajectories JSON", 1 if completions else 0, completions, contexts, 0)


def llamea_conversationlog(path: Path) -> dict:
    """LLaMEA conversation log JSONL (``<exp dir>/conversationlog.jsonl``, written line by line by LLaMEA's
    ``ExperimentLogger.log_conversation(role, content)``: ``{role, time, content}`` per line). A line whose ``role``
    is ``"LLaMEA"`` is the prompt LLaMEA sent; a line with any other ``role`` (the model's name) is the model's reply.
    Each reply line is one call whose context is the prompt line just before it (``user``) and its own conversation
    (every prompt is rebuilt, quoting earlier candidates as text: set rules). A trailing prompt with no reply after it
    is not a call. No tool calls."""
    completions, contexts = [], []
    pending_prompt = False
    for record in _lines(path):
        if record["role"] == "LLaMEA":
            pending_prompt = True
            continue
        completions.append(record["content"])
        contexts.append(["user"] if pending_prompt else [])
        pending_prompt = False
    return _result("LLaMEA conversation log JSONL", len(completions), completions, contexts, 0)


COUNTERS = {
    "paper2code": paper2code_trajectories,
    "llamea": llamea_conversationlog,
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
