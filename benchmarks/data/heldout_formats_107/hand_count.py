"""Hand counts of the hundred-and-seventh held-out set (benchmarks/data/heldout_formats_107/files), computed from the
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
- a saved assistant session whose history keeps, besides the user and assistant messages, a ``system`` record holding
  the text another model produced from an attachment the file does not hold (an uploaded image's analysis, also kept
  under ``attachments[].analysis``) records that text as an input to the later calls, not as a call: the call that
  produced it has no readable context (its input, the image, is not in the file); the app's own system prompt and
  retrieved manual excerpts, sent with each request but not saved, are not context (context is what is recorded);
- a multi-agent group chat's saved history (named agents taking turns in one shared history) records one call per
  assistant message: each turn is a separate invocation of the agent the group chat selected, whose context is the
  shared history up to that turn, so two assistant messages in a row (same or different agent) are two calls, not
  one reply split over records (the shared rule on split replies is about one invocation's output, which this layout
  never splits); the agents' own function calls and their results, run inside a turn, are not in the history and
  are not counted (not recorded), and the user turns written by the evaluation's simulated user are inputs;
- the plain-text rendering of the same history (blocks ``ROLE:`` / text separated by ``---`` lines; assistant
  blocks headed ``ASSISTANT (agent id: NAME):``) is counted the same way, one call per ``ASSISTANT`` block; a file
  whose bytes are not UTF-8 is read as Windows-1252 (one file of the set was written so);
- ids, timestamps, token usage, model ids, system fingerprints, finish reasons, patient ids and document ids,
  conversation ids, the current appliance model and error code are metadata, not context.
Context roles: as recorded (``user``, ``assistant``, ``system``); an assistant turn of a named agent is written
``assistant``.

Run: ``python benchmarks/data/heldout_formats_107/hand_count.py`` (one JSON line per file).
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
    input), ``inp`` adds an input record (closing the open call), ``turn`` always opens a new call (a separate
    invocation, as in a group chat)."""

    def __init__(self, head: list | None = None) -> None:
        self.ctx: list = list(head or [])
        self.completions: list = []
        self.contexts: list = []
        self.tools = 0
        self._open = False

    def out(self, text: str = "", tools: int = 0) -> None:
        if not self._open:
            self.turn(text, tools)
            return
        self.completions[-1] += text
        self.tools += tools

    def turn(self, text: str = "", tools: int = 0) -> None:
        self.completions.append(text)
        self.contexts.append(list(self.ctx))
        self.ctx.append("assistant")
        self.tools += tools
        self._open = True

    def inp(self, role: str) -> None:
        self.ctx.append(role)
        self._open = False


def _merge(fmt: str, threads: list) -> dict:
    kept = [t for t in threads if t.completions]
    return _result(fmt, len(kept), [c for t in kept for c in t.completions],
                   [c for t in kept for c in t.contexts], sum(t.tools for t in kept))


def svania_chat_history(path: Path) -> dict:
    """Svania technical-support assistant saved session JSON (``logs/chat_history.json`` of Nambu89/Asistente-IA-SAT,
    an appliance repair-service ("SAT", servicio de asistencia tecnica) assistant of a Spanish appliance group, written
    by its chat service: ``{current_model, current_error, history: [{role: user / assistant / system, content}],
    attachments: [{path, timestamp, processed, type, analysis}]}``). One file is one session: one conversation.
    Each ``assistant`` record is one call whose context is the history before it; ``user`` records and the
    ``system`` record carrying an attached image's analysis are inputs (rule above: the analysis is another model's
    output whose input is not in the file, not a counted call; ``attachments[].analysis`` is the same text again).
    No tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for rec in data["history"]:
        if rec["role"] == "assistant":
            t.out(rec["content"])
        else:
            t.inp(rec["role"])
    return _merge("Svania (Asistente-IA-SAT) chat history JSON", [t])


def hao_chat_context(path: Path) -> dict:
    """Healthcare Agent Orchestrator evaluation chat context JSON (``notebooks/evaluations/simulated_chats/<model>/
    chat_context_trial<N>_<conversation id>.json`` of Azure-Samples/healthcare-agent-orchestrator, written by
    ``ChatSimulator.save`` through ``ChatContextAccessor.serialize``: ``{conversation_id, chat_history, patient_id,
    patient_data, display_blob_urls, display_clinical_trials, output_data, healthcare_agents}``, where
    ``chat_history`` is a JSON string of the group chat's history ``{messages: [{role: user / assistant, name?,
    ai_model_id?, metadata: {id, created, system_fingerprint, usage}, content_type, items: [{content_type: text,
    text}], finish_reason?}]}``). One file is one simulated chat: one conversation. Each ``assistant`` message (an
    agent's turn: Orchestrator, PatientHistory, Radiology, ReportCreation, ...) is one call whose context is the
    history before it (rule above); ``user`` messages are inputs. Tool calls: ``function_call`` items, of which the
    files hold none (the agents' tool use inside a turn is not recorded)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    history = json.loads(data["chat_history"])
    t = _Thread()
    for msg in history["messages"]:
        items = msg.get("items") or []
        text = "".join(it.get("text") or "" for it in items if it.get("content_type") == "text")
        if msg["role"] == "assistant":
            t.turn(text, sum(1 for it in items if it.get("content_type") == "function_call"))
        else:
            t.inp(msg["role"])
    return _merge("Healthcare Agent Orchestrator chat context JSON (group-chat history as a JSON string)", [t])


_HEADER = re.compile(r"^(USER|SYSTEM|TOOL|ASSISTANT(?: \(agent id: [^)\n]*\))?):\n")


def hao_readable(path: Path) -> dict:
    """Healthcare Agent Orchestrator readable chat history text (``..._readable.txt`` beside each chat context,
    written by ``chat_history_to_readable_text``: per message with content ``ROLE:\\n<content>\\n\\n---\\n\\n``, the
    role upper-cased and an assistant's written ``ASSISTANT (agent id: NAME)``). One file is one simulated chat: one
    conversation; each ``ASSISTANT`` block is one call (the group-chat rule above), ``USER`` blocks are inputs. No
    tool calls recorded. Decoded as UTF-8, or as Windows-1252 where the bytes are not UTF-8 (the gpt5 file holds
    Windows-1252 quotes and dashes)."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("cp1252")
    t = _Thread()
    for block in text.split("\n\n---\n\n"):
        if not block.strip():
            continue
        m = _HEADER.match(block)
        if not m:
            raise ValueError(f"{path.name}: block without a role header: {block[:60]!r}")
        role, content = m.group(1), block[m.end():]
        if role.startswith("ASSISTANT"):
            t.turn(content)
        else:
            t.inp(role.lower())
    return _merge("Healthcare Agent Orchestrator readable chat history text", [t])


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("Asistente-IA-SAT__"):
        out = svania_chat_history(path)
    elif name.endswith("_readable.txt"):
        out = hao_readable(path)
    else:
        out = hao_chat_context(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
