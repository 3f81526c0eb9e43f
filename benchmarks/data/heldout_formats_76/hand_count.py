"""Hand counts of the seventy-sixth held-out set (benchmarks/data/heldout_formats_76/files), computed from the raw
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
- a CoverUp log (``coverup-log-N``) is a sequence of sections, each opened by a header line
  ``---- <ISO timestamp> <segment> ----``; the segment is ``startup`` or a code segment ``<file>:<lines>``, and the
  section's body is the text the tool logged (the logger adds one newline after it). The ``startup`` section (the
  command line) is metadata;
- the calls made for one code segment form one conversation: CoverUp keeps one message list per segment and appends
  each reply and each later prompt (a tool result, an error report) to it, so every later request of the segment
  continues the earlier context and reply; a request of a segment that starts again from a single message would be a
  new conversation (none in this set). Sections of different segments may interleave; they are told apart by the
  segment in the header;
- in the JSON layout (prompt family ``gpt-v2``) a request body (a Chat Completions request: ``model``,
  ``temperature``, ``messages``, ``tools``) is the context sent, and the response body that follows it in the same
  segment (a ``chat.completion`` object with ``choices``) is one call: its completion is
  ``choices[0].message.content`` (``null``: the empty string), its tool calls ``choices[0].message.tool_calls``, its
  context the roles of the request's ``messages`` as recorded (``user``, ``assistant``, ``tool``). The ``tools``
  definitions, ``usage`` and ids are metadata;
- in the text layout (older CoverUp, prompt family ``gpt-v1`` or none) each message is logged as plain text with no
  role: a model reply is the section that is immediately followed, in the same segment, by a ``total usage: {...}``
  section (CoverUp writes the running token totals right after each reply); the other message sections of the segment
  (the first prompt, ``Executing the test yields an error ...`` reports) are user prompts. The completion is the
  reply's body without the newline the logger adds. ``total usage`` lines are metadata;
- pytest progress output (``....  [100%]``), ``Saved as ...`` and ``Too many attempts, giving up`` are the tool's own
  status lines, not messages, and take no part in any context (CoverUp does not send them to the model).
Context roles: as recorded (``user`` for the text layout's prompts, ``assistant`` for its replies); no system prompt
is recorded in this set.

Run: ``python benchmarks/data/heldout_formats_76/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_HEADER = re.compile(r"^---- (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d) (.+) ----$", re.M)
_STATUS = re.compile(r"^(Saved as |Too many attempts|[.FEsx]+\s+\[\s*\d+%\])")


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _sections(path: Path) -> list:
    """``[(segment, body)]`` in file order; ``body`` is the logged text without the newline the logger adds."""
    text = path.read_text(encoding="utf-8")
    heads = list(_HEADER.finditer(text))
    out = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        body = text[m.end() + 1:end]
        out.append((m.group(2), body[:-1] if body.endswith("\n") else body))
    return out


def coverup_json_log(path: Path) -> dict:
    """CoverUp log, JSON layout (CoverUp with ``--prompt-family gpt-v2``: each section's body is either a Chat
    Completions request written with ``json.dumps(indent=2)`` (``{model, temperature, messages, tools}``), the
    response that came back (``{id, choices: [{finish_reason, index, message: {content, role, tool_calls,
    function_call}}], created, model, object, system_fingerprint, usage, service_tier}``), or a status line). Each
    response is one call; its context is the roles of the ``messages`` of the request logged before it in the same
    segment; its completion is ``message.content`` (null: empty), its tool calls ``message.tool_calls``. One
    conversation per segment thread (set rules)."""
    threads: dict = {}  # segment -> list of threads; a thread is [completions, contexts]
    pending: dict = {}  # segment -> roles of the last request
    tools = 0
    order = []
    for seg, body in _sections(path):
        if seg == "startup" or not body.lstrip().startswith("{"):
            continue
        obj = json.loads(body)
        if "messages" in obj:
            roles = [m["role"] for m in obj["messages"]]
            if seg not in threads or (len(roles) == 1 and threads[seg][-1][0]):
                threads.setdefault(seg, []).append([[], []])
                order.append((seg, len(threads[seg]) - 1))
            pending[seg] = roles
        elif "choices" in obj:
            msg = obj["choices"][0]["message"]
            thread = threads[seg][-1]
            thread[0].append(msg.get("content") or "")
            thread[1].append(pending[seg])
            tools += len(msg.get("tool_calls") or [])
    completions, contexts, convs = [], [], 0
    for seg, i in order:
        comps, ctxs = threads[seg][i]
        if comps:
            convs += 1
            completions += comps
            contexts += ctxs
    return _result("CoverUp log (JSON request/response layout)", convs, completions, contexts, tools)


def coverup_text_log(path: Path) -> dict:
    """CoverUp log, text layout (older CoverUp, prompt family ``gpt-v1`` or none: every message is logged as plain
    text). In each segment, a section followed by a ``total usage: {...}`` section is a model reply (one call, its
    completion the section's text); the other message sections are user prompts; ``total usage`` lines, pytest output,
    ``Saved as`` and ``Too many attempts`` lines are not messages. A call's context is the segment's messages before
    it, in order. One conversation per segment; no tool calls (this layout has no tools)."""
    by_seg: dict = {}
    order = []
    for seg, body in _sections(path):
        if seg == "startup":
            continue
        if seg not in by_seg:
            by_seg[seg] = []
            order.append(seg)
        by_seg[seg].append(body)
    completions, contexts, convs = [], [], 0
    for seg in order:
        bodies = by_seg[seg]
        roles: list = []
        n_calls = 0
        for i, body in enumerate(bodies):
            if body.startswith("total usage:") or _STATUS.match(body):
                continue
            nxt = bodies[i + 1] if i + 1 < len(bodies) else ""
            if nxt.startswith("total usage:"):
                completions.append(body)
                contexts.append(list(roles))
                roles.append("assistant")
                n_calls += 1
            else:
                roles.append("user")
        convs += 1 if n_calls else 0
    return _result("CoverUp log (plain-text layout)", convs, completions, contexts, 0)


COUNTERS = {
    "1_0.gpt4o-v2": coverup_json_log,
    "1_0": coverup_text_log,
    "cm.gpt4o": coverup_text_log,
}


def count(path: Path) -> dict:
    out = COUNTERS[path.name.split("__")[1]](path)
    return {"file": path.name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
