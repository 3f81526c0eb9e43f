"""Hand counts of the eighty-fifth held-out set (benchmarks/data/heldout_formats_85/files), computed from the raw
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
- a CompilerGPT conversation history (``query.json``, the ``historyFile`` / ``queryFile`` the tool rewrites after every
  round and sends whole with each request) is one conversation: each message the tool stored under its configured
  ``roleOfAI`` is one call, its context the messages before it; the prompts the tool writes after a round (the first
  prompt with the code, "Make further optimizations to the latest version.", the compile-failure and test-failure
  prompts quoting compiler or test output) are ``user`` messages, not tool results;
- where the run was configured with ``"roleOfAI":"system"`` (the GPT-4o runs), the model's replies were stored (and
  sent back on later rounds) with role ``system``: a leading ``system`` message before the first ``user`` message is
  the system prompt, every later ``system`` message is a reply, one call; the context roles are written as recorded
  (``system`` for the earlier replies, since that is how the model was given them);
- a history that ends with a ``user`` prompt that has no reply (the next request failed: CompilerGPT's ``log.txt`` of
  that run shows an Anthropic ``overloaded_error`` and "terminating") holds no call for that prompt;
- the Claude runs keep the system prompt in a separate file (``systemTextFile: system.txt``, not part of the set): it
  is not in the file, so it is not in the recorded context;
- the pretty-printed history (``query.pretty.json``, CompilerGPT's own ``prettyjson`` rendering of a ``query.json``:
  the same list of ``{role, content}`` objects with the string escapes expanded, so it is no longer valid JSON) is read
  by the same rule: one object per message, the content between ``"content": "`` and the closing ``"`` before the
  object's ``}``;
- in a Slow Query Doctor report (Markdown, written by its report generator) each ``**AI Recommendation:**`` block is
  one single-shot call (one chat completion per top slow query), its own conversation; the prompt is built from the
  query and the statistics printed above the block, so the recorded context is that query (``user``; the tool's
  system prompt is not printed); the summary statistics and the per-query metrics are the tool's own computations;
- code, SQL and shell commands the model writes as the text of its reply are reply text, not tool calls (no function /
  tool-call part is emitted): no file in this set holds a tool call;
- ids, timestamps, durations, impact scores, token counts and model names are metadata, not context.
Context roles: as recorded (``user`` for a prompt printed in a report).

Run: ``python benchmarks/data/heldout_formats_85/hand_count.py`` (one JSON line per file).
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


def _history_calls(messages: list, ai_role: str) -> tuple[list, list]:
    """Calls of one CompilerGPT history: each ``ai_role`` message after the first ``user`` message is a reply."""
    completions, contexts = [], []
    seen_user = False
    for i, message in enumerate(messages):
        if message["role"] == "user":
            seen_user = True
        elif message["role"] == ai_role and seen_user:
            completions.append(message["content"])
            contexts.append([m["role"] for m in messages[:i]])
    return completions, contexts


def compilergpt_history(path: Path) -> dict:
    """CompilerGPT conversation history (``tests/matmul-2/tests.1/<model>.<mode>.<n>/query.json``, written by
    ``compgpt`` as its ``queryFile``): one compact JSON array of ``{"role", "content"}`` messages, the whole history of
    one optimisation run (up to 10 rounds), rewritten after every round. Claude runs (``roleOfAI: assistant``): no
    system message in the file (kept in ``system.txt``), replies under ``assistant``. GPT-4o runs (``roleOfAI:
    system``): a leading ``system`` prompt, then ``user`` prompts and the replies stored under ``system``. Which role
    holds the replies is read from the file: ``assistant`` where any message has it, else ``system``. One conversation
    per file; each reply one call; a trailing unanswered ``user`` prompt is no call. No tool calls."""
    messages = json.loads(path.read_text(encoding="utf-8"))
    ai_role = "assistant" if any(m["role"] == "assistant" for m in messages) else "system"
    completions, contexts = _history_calls(messages, ai_role)
    fmt = f"CompilerGPT query.json history (replies under role {ai_role!r})"
    return _result(fmt, 1 if completions else 0, completions, contexts, 0)


def compilergpt_pretty(path: Path) -> dict:
    """CompilerGPT pretty-printed history (``query.pretty.json``, the output of ``src/prettyjson.py`` over a run's
    ``query.json``, committed as its sample output): a ``[`` line, then per message a four-space-indented ``{`` line,
    ``"role": "ROLE",`` and ``"content": "`` followed by the content with its escapes expanded (real newlines, bare
    quotes), closed by ``"`` and a ``}`` line; not valid JSON. Read by the history rule (Claude run: replies under
    ``assistant``, no system message). One conversation; each ``assistant`` message one call. No tool calls."""
    text = path.read_text(encoding="utf-8")
    pattern = r'^    \{\n        "role": "(\w+)",\n        "content": "(.*?)"\n    \}(?:,$|\n\])'
    messages = [{"role": role, "content": content} for role, content in re.findall(pattern, text, flags=re.S | re.M)]
    if len(messages) != text.count('\n        "role": "'):
        raise ValueError(f"{path.name}: not every message was read")
    completions, contexts = _history_calls(messages, "assistant")
    return _result("CompilerGPT query.pretty.json (pretty-printed history, not JSON)", 1 if completions else 0,
                   completions, contexts, 0)


def slow_query_doctor_report(path: Path) -> dict:
    """Slow Query Doctor PostgreSQL analysis report (``reports/report.md``, written by ``report_generator.py``): a
    header, summary statistics, then per ``### Query #N`` section the query in a ```` ```sql ```` block, its metrics
    (average / max duration, frequency, impact score) and a ``**AI Recommendation:**`` block, ended by ``---``. Each
    block is one single-shot chat completion, its own conversation; context the query (``user``); completion the text
    between the ``**AI Recommendation:**`` line and the closing ``---``. No tool calls."""
    text = path.read_text(encoding="utf-8")
    completions, contexts = [], []
    for section in re.split(r"^### Query #\d+\n", text, flags=re.M)[1:]:
        query = re.search(r"^```sql\n(.*?)\n```", section, flags=re.S | re.M)
        reply = re.search(r"^\*\*AI Recommendation:\*\*\n\n(.*?)\n\n---$", section, flags=re.S | re.M)
        if reply:
            completions.append(reply.group(1))
            contexts.append(["user"] if query else [])
    return _result("Slow Query Doctor report Markdown", len(completions), completions, contexts, 0)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("compilergpt__") and name.endswith("query.pretty.json"):
        out = compilergpt_pretty(path)
    elif name.startswith("compilergpt__"):
        out = compilergpt_history(path)
    else:
        out = slow_query_doctor_report(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
