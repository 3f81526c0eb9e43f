"""Hand counts of the hundred-and-fifth held-out set (benchmarks/data/heldout_formats_105/files), computed from the
raw files with the standard library only (this script does not import tracedraft), each by its format's layout as
read in the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (one file in this set: a streamed reply whose input is not in the file).

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
- an evaluation-run output that keeps, per dataset entry, the conversation sent to the model and the model's last
  message is one call per entry: its context the conversation's messages on the thread from the root (pinocchio's
  ``conversation`` tree lists the child ``user`` message twice, once under its ``system`` parent and once flattened,
  with the same id: it is one message), its completion the ``last_message`` text after the ``[assistant]: `` prefix;
  the dataset's ``input`` variables and ``golden_answer`` keywords, and the ``conversationString`` rendering of the
  same context, are not further context; entries with different inputs that share only the system prompt are separate
  conversations (shared rule);
- a debug-record export that logs the same streamed reply at several layers (the chat pipeline's events, the
  websocket transport's fan-out of those events, and the inference library's provider events with the provider's own
  stream events nested in them) records one call per inference, not one per layer or per event; its context is the
  accepted user message; the reply is the pipeline's finished text (``ChatInferenceFinished``), the partial deltas and
  the provider's ``message_start`` / ``response.completed`` objects being the same reply; an encrypted reasoning item
  belongs to that reply (shared rule);
- a streamed step's event log holding only output events (``start``, ``partial``, ``final``) and step metadata (model,
  settings, usage, a parent message id), without the messages sent to the model, records no call with a readable
  context: ``readable`` false, no call counted; a comment the committer left in place of elided events is not an
  event;
- ids, timestamps, durations, token counts, model names, settings, connection ids and fan-out ordinals are metadata,
  not context.
Context roles: as recorded.

Run: ``python benchmarks/data/heldout_formats_105/hand_count.py`` (one JSON line per file).
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


def _yaml_documents(text: str) -> list:
    """The documents of a multi-document YAML stream (split on ``---`` lines), empty ones dropped."""
    docs, cur = [], []
    for line in text.splitlines():
        if line.rstrip() == "---":
            docs.append(cur)
            cur = []
        else:
            cur.append(line)
    docs.append(cur)
    return [d for d in docs if any(ln.strip() and not ln.lstrip().startswith("#") for ln in d)]


def _yaml_single_quoted(value: str) -> str:
    """A one-line YAML scalar: single-quoted (``''`` is a quote) or plain."""
    value = value.strip()
    if value.startswith("'") and value.endswith("'"):
        return value[1:-1].replace("''", "'")
    return value


def pinocchio_eval_output(path: Path) -> dict:
    """pinocchio eval runner output, multi-document YAML (``cmd/examples/eval`` of go-go-golems/pinocchio, Go: one
    document per dataset entry, ``{conversation: [tree of {parentid, id, time, lastupdate, content: {role, text,
    images}, metadata, llmmessagemetadata, children}], conversationString, entry_id, golden_answer, input,
    last_message, message_metadata}``, documents separated by ``---``). Each document is one call: context the
    thread ``system`` -> ``user`` (the tree lists the ``user`` message under its parent and again at top level with
    the same id: one message; the roles are read from the ``[role]: `` markers of ``conversationString``, the same
    thread rendered), completion the one-line ``last_message`` after ``[assistant]: ``. The five entries share the
    system prompt but not their user prompts, and none holds another's reply: five conversations. No tool calls."""
    threads = []
    for doc in _yaml_documents(path.read_text(encoding="utf-8")):
        roles, reply, in_string = [], None, False
        for line in doc:
            if line.startswith("conversationString:"):
                in_string = True
                continue
            if in_string:
                if line.startswith("    "):
                    m = re.match(r"^    \[(system|user|assistant|tool)\]: ", line)
                    if m:
                        roles.append(m.group(1))
                    continue
                in_string = False
            if line.startswith("last_message:"):
                reply = _yaml_single_quoted(line[len("last_message:"):])
        if reply is not None and reply.startswith("[assistant]: "):
            t = _Thread(roles)
            t.out(reply[len("[assistant]: "):])
            threads.append(t)
    return _merge("pinocchio eval runner output YAML", threads)


def pinocchio_step_event_stream(path: Path) -> dict:
    """pinocchio / geppetto chat-step event stream, multi-document YAML (``ttmp/2024-12-30/02-test-stream.yaml`` of
    go-go-golems/pinocchio: one document per event, ``{type: start | partial | final, content?, metadata: {id,
    parentid}, step_metadata: {stepid, type: claude-chat, inputtype, outputtype, metadata: {claude_message_id,
    claude_model, claude_usage, settings, ...}}}``; one document holds only the comment ``# many more partial
    events``). The events are one streamed reply of ``claude-3-5-haiku``; the conversation sent to the model is not
    in the file (only its ``parentid``), so no call has a readable context: readable false, 0 / 0 / 0 (rule above).
    The reply text (the ``final`` event's ``content``) is kept as a note only."""
    finals = [d for d in _yaml_documents(path.read_text(encoding="utf-8")) if d and d[0].strip() == "type: final"]
    out = _result("pinocchio chat-step event stream YAML", 0, [], [], 0)
    out["note"] = f"{len(finals)} final event(s) of a streamed reply; the input messages are not recorded"
    return out


def pinocchio_webchat_debug_records(path: Path) -> dict:
    """pinocchio web-chat debug-record export JSON (the ``{sessionId, records: [...]}`` body of the web-chat
    observability endpoint that go-go-golems/geppetto's observability work added, saved as evidence under
    ``ttmp/.../sources/``: records of ``kind`` ``transport`` (websocket frames and fan-out), ``pipeline`` (chat
    events with ``payload``: ``ChatUserMessageAccepted``, ``ChatInferenceStarted``, ``ChatReasoningStarted`` /
    ``Finished``, ``ChatTokensDelta``, ``ChatInferenceFinished``) and ``geppetto`` (the inference library's provider
    events, each with the provider's own stream event in ``objectJson``)). One session is one conversation. Each
    ``ChatUserMessageAccepted`` is a ``user`` input; each ``ChatInferenceFinished`` (``final``) closes one call whose
    completion is its ``text``; deltas, reasoning events, provider events and transport records are the same call
    (rule above). No tool calls; no system prompt recorded."""
    data = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for rec in data["records"]:
        if rec.get("kind") != "pipeline":
            continue
        p = rec["pipeline"]
        event, payload = p.get("event"), p.get("payload") or {}
        if event == "ChatUserMessageAccepted":
            t.inp("user")
        elif event == "ChatInferenceFinished":
            t.out(payload.get("text") or payload.get("content") or "")
    provider = {r["geppetto"].get("provider") for r in data["records"] if r.get("kind") == "geppetto"}
    return _merge(f"pinocchio web-chat debug records JSON ({'/'.join(sorted(p for p in provider if p))})", [t])


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("pinocchio__cmd__examples__eval__"):
        out = pinocchio_eval_output(path)
    elif name.startswith("pinocchio__ttmp__"):
        out = pinocchio_step_event_stream(path)
    else:
        out = pinocchio_webchat_debug_records(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
