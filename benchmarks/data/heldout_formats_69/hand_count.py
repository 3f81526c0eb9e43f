"""Hand counts of the sixty-ninth held-out set (benchmarks/data/heldout_formats_69/files), computed from the raw
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
- a human judgement stored beside a reply (a ``Helpful`` Yes / No, a pairwise-evaluation instance's place in a
  comparison) is annotation, neither model output nor context; ids, timestamps, model names and session ids are
  metadata;
- one table row or JSONL record holding one prompt and the reply to it is one single-shot call and its own
  conversation, also where two rows carry the same prompt text (a user asking the same question twice gets two
  independent replies) and where two models' replies to one prompt sit in one record (each model's reply is its own
  call with its own context, the prompt; the two are compared by people, neither continues the other);
- in a chat log table whose rows are messages of threads, the thread key (here ``client_id``) delimits the
  conversations; each run of model rows with no input row between them is one call; its context is the thread's
  earlier rows (model rows as ``assistant``, the person's rows as ``user``); a prompt or persona the tool applied at
  request time and did not save is not part of the recorded context, so a thread's first call may have an empty
  recorded context;
- a reply is the whole string the tool saved (a CSV cell after unquoting, a JSON string after unescaping), line
  breaks and markdown kept; no reply in this set holds a structured tool call (the completions are plain text).
Context roles: a prompt or a person's message is written ``user``; earlier model replies ``assistant``.

Run: ``python benchmarks/data/heldout_formats_69/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _rows(path: Path) -> list:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


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


def unibristol_feedback(path: Path) -> dict:
    """UniBristol RAG Assistant feedback log CSV (the Streamlit app's ``feedback_log.csv``: header
    ``Timestamp,Query,Response,Helpful``, rows ended by CRLF, multi-line replies quoted with LF line breaks inside;
    one row per answer a user rated). Each row is one single-shot call: ``Query`` is the context (``user``),
    ``Response`` the completion, ``Helpful`` the user's rating (annotation). Rows 1 and 2 (and 4 and 5) repeat one
    question with two different replies: two independent calls each. The retrieved passages sent with the question
    are not saved. 5 rows: 5 conversations, 5 calls, no tool calls."""
    threads = []
    for row in _rows(path):
        t = _Thread(["user"])
        t.out(row["Response"])
        threads.append(t)
    return _merge("UniBristol RAG Assistant feedback log CSV", threads)


def care_pilot_chat_history(path: Path) -> dict:
    """CarePilot chat history CSV (the study app's ``chat_history.csv`` export: header
    ``session_id,client_id,turn_number,sender,receiver,message,timestamp``; one row per message between a study
    participant, who plays a customer-service representative, and an LLM-simulated customer). As read in the rows,
    ``sender`` ``representative`` rows hold the simulated customer's messages (complaints written in the customer's
    voice, and the model's own refusals such as "I cannot generate a complaint for a product that does not exist"):
    these are the model's replies; ``sender`` ``client`` rows hold the participant's typed replies ("sorry"): input,
    ``user``. One conversation per ``client_id`` (a new simulated customer; several share a ``session_id``); each
    model row is one call (no two are adjacent in a thread); the first call of a thread has an empty recorded
    context (its generation prompt is not saved). The first 24 data rows: 16 threads, 20 model rows, 4 participant
    rows; 16 conversations, 20 calls, no tool calls."""
    threads: dict = {}
    for row in _rows(path):
        t = threads.setdefault(row["client_id"], _Thread())
        if row["sender"] == "representative":
            t.out(row["message"])
        else:
            t.inp("user")
    return _merge("CarePilot chat history CSV", list(threads.values()))


def open_instruct_eval_instances(path: Path) -> dict:
    """open-instruct human-evaluation instances JSONL (``human_eval/data/eval_instances_tulu_1.jsonl``, the instances
    the repository's pairwise human-evaluation app shows annotators: one per line, ``{id, prompt, completions:
    [{model, completion}, {model, completion}]}``). Each ``completion`` is one single-shot call of its ``model``
    whose context is the ``prompt`` (``user``); the two completions of a line answer the same prompt independently
    and are two conversations. The first 4 lines: 8 conversations, 8 calls, no tool calls."""
    threads = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        for comp in rec["completions"]:
            t = _Thread(["user"])
            t.out(comp["completion"])
            threads.append(t)
    return _merge("open-instruct human-evaluation instances JSONL", threads)


COUNTERS = {
    "unibristol-rag-assistant-feedback": unibristol_feedback,
    "care-pilot": care_pilot_chat_history,
    "open-instruct-human-eval": open_instruct_eval_instances,
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
