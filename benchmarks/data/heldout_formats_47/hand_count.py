"""Hand counts of held-out set 47 (benchmarks/data/heldout_formats_47/files), computed from the raw files with the
standard library only (this script does not import tracedraft), each by its format's layout as read in the file
itself.

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
Rules made explicit for this set:
- single-shot calls logged side by side by one pipeline step are separate conversations even when their prompts come
  from the same source document (split chunks of one transcript): a later prompt that quotes material does not
  continue an earlier call's context and reply as a message thread;
- a system prompt the application sends but the file does not save is not part of the recorded context (the same
  rule as set 42's); context roles are written as the file records them (a record that holds only the prompt text
  sent as the one user message is written ``user``);
- a reply kept both as raw text and as a parsed copy (VideoLingo's ``resp_content`` and ``resp``) is one call whose
  completion is the raw text;
- one saved chat-session file is one conversation when the application sends the whole chat so far with each
  request (read in the application's source), whatever the file's row layout.

Run: ``python benchmarks/data/heldout_formats_47/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def videolingo_gpt_log(path: Path) -> dict:
    """VideoLingo GPT log JSON (``output/gpt_log/<log_title>.json`` as written by VideoLingo's
    ``core/utils/ask_gpt.py``: a JSON array of ``{model, prompt, resp_content, resp_type, resp, message}``, one
    entry appended per successful model request of one pipeline step). ``ask_gpt`` sends ``messages=[{role: user,
    content: prompt}]`` and nothing else, so each entry is one single-shot call: context ``[user]``, completion
    ``resp_content`` (``resp`` is the same reply parsed, not another call; ``message`` is the validation note,
    null in every entry here). No entry's context holds another entry's reply as a message, so each entry is its
    own conversation (shared rule and this set's rule on side-by-side single-shot calls). No tool calls."""
    entries = json.loads(path.read_text(encoding="utf-8"))
    completions = [e.get("resp_content") or "" for e in entries]
    contexts = [["user"] for _ in entries]
    return _result("VideoLingo GPT log JSON", len(entries), completions, contexts, 0)


def educhateval_chat_csv(path: Path) -> dict:
    """EduChatEval chat-UI CSV (the ``<timestamp>.csv`` that EduChatEval's Textual tutor chat app,
    ``educhateval/chat_ui.py``, saves on quit beside the JSON copy: header ``turn,student_msg,tutor_msg``, one row
    per student message paired with the tutor model's reply). One file is one chat session, and the app sends the
    whole chat so far with each request, so one conversation. Each row is one call: its completion is
    ``tutor_msg``; its recorded context is the earlier rows' student and tutor messages and its own student message
    (``user`` / ``assistant`` alternating, ending ``user``). The app's system prompt is saved only in the JSON copy,
    not in this CSV, so it is not part of the recorded context (this set's rule). No tool calls."""
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    completions, contexts, ctx = [], [], []
    for row in rows:
        ctx.append("user")
        contexts.append(list(ctx))
        completions.append(row["tutor_msg"])
        ctx.append("assistant")
    return _result("EduChatEval chat-UI CSV", 1 if completions else 0, completions, contexts, 0)


COUNTERS = {
    "videolingo-gpt-log": videolingo_gpt_log,
    "educhateval-chat-csv": educhateval_chat_csv,
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
