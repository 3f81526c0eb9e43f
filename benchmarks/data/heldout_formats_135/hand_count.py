"""Hand counts of the hundred-and-thirty-fifth held-out set (benchmarks/data/heldout_formats_135/files), computed from
the raw files with the standard library only (this script does not import tracedraft), each by its format's layout as
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
- dot-ai evaluation dataset JSONL: each line ``{input: {issue, setup_context?}, output, performance, metadata}`` is one
  recorded LLM call and its own conversation: context the ``input.issue`` text (``user``), completion ``output``.
  Both files kept record a single model iteration (``performance.iterations`` 1, ``tool_calls_executed`` 0): no tool
  calls. ``performance`` (tokens, duration, model) and ``metadata`` (timestamp, scenario, failure analysis) are
  metadata, not context;
- phidata debug log (rich console output of a phidata ``Agent`` run with ``debug_mode``, mixed with the test runner's
  stdout): each ``Agent Run Start`` / ``Agent Run End`` span is one conversation (every run here opens a new
  ``AgentSession``; the ``nomem`` runs keep no memory between them). Inside a run, each ``... Response Start`` line
  opens a printout of the whole message list sent (``============== ROLE ==============`` sections); each ``METRICS
  START`` block closes one model call, whose reply is the last message section printed before it (an ``assistant``
  section) and whose context is the sections printed before that one in the same printout. The copies of earlier
  messages re-printed in a later printout are context, not new calls. Tool calls are the entries of the reply's
  ``Tool Calls: [...]`` list (counted by their ``"function": {`` entries). The runner's own lines (``DEBUG:  <prompt
  text>``, ``New Run Response``, ``FINISHED`` banners) and the ``Running:`` / ``Result:`` lines of the tool execution
  are not calls. Rich wraps long lines at 120 columns: the completion text kept here is the section's lines with the
  9-column prefix and trailing blanks removed, joined with newlines (wrapping kept);
- NoteChat notebook (``.ipynb`` written by the jupyterlab-notechat extension, the notebook itself being the chat): each
  markdown cell whose text starts with ``**assistant**`` is one LLM call's reply (its completion the cell text
  without the ``**assistant**`` header line and without the trailing ``<div ...>_ref || _refs["id"]</div>`` line the
  extension appends); every other cell above it is user input. Its context follows NoteChat's cell parameters written
  on the first line of the cell that asked (the nearest non-assistant cell above the reply): by default all cells
  above the reply (a ``user`` for each non-assistant cell, an ``assistant`` for each earlier reply); with ``@refs
  alone`` only the cells referenced by id (none, when only ``@files`` are named) plus the asking cell. A call whose
  context holds an earlier call's context and reply continues that conversation; an ``@refs alone`` call that holds
  no earlier reply opens a conversation of its own. A notebook-level ``notechat`` ``prompt`` / ``add_prompt`` in the
  notebook metadata is a system prompt kept beside the cells (``system`` at the head of every context); the files
  named by ``@files`` are not in the notebook and not counted as context messages. No tool calls.
- ids, timestamps, token counts, durations, model names (``@model``) and settings are metadata, not context.
Context roles: as recorded (a message made only of tool results is written ``tool``).

Run: ``python benchmarks/data/heldout_formats_135/hand_count.py`` (one JSON line per file).
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


def dot_ai_eval_dataset(path: Path) -> dict:
    """dot-ai (vfarcic/dot-ai, DevOps AI Toolkit) evaluation dataset JSONL, written by its integration tests' dataset
    recorder: one line per recorded tool run, ``{input: {issue}, output, performance: {iterations,
    tool_calls_executed, model_version, ...}, metadata}``. One call and one conversation per line."""
    completions, contexts, tools = [], [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        assert rec["performance"]["iterations"] == 1 and rec["performance"]["tool_calls_executed"] == 0
        completions.append(rec["output"])
        contexts.append(["user"])
    return _result("dot-ai evaluation dataset JSONL", len(completions), completions, contexts, tools)


_SECTION = re.compile(r"^DEBUG    =+ (\w+) =+\s*$")
_PREFIX = re.compile(r"^(DEBUG    |INFO     |         )")


def phidata_debug_log(path: Path) -> dict:
    """phidata agent debug log (KubeLLM's ``debug_logs/*/knowledgeAgent.log`` / ``toolsAgent.log``): see the module
    docstring. One conversation per agent run; one call per ``METRICS START`` block."""
    completions, contexts, tools, convs = [], [], 0, 0
    in_run = False
    msgs: list = []  # [role, lines] of the current printout
    section = None
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.rstrip()
        if "*********** Agent Run Start:" in line:
            in_run, msgs, section, run_calls = True, [], None, 0
            continue
        if not in_run:
            continue
        if "*********** Agent Run End:" in line:
            in_run = False
            convs += 1 if run_calls else 0
            continue
        if re.match(r"^DEBUG    -+ \w+ Response Start -+$", line):
            msgs, section = [], None
            continue
        m = _SECTION.match(line)
        if m:
            section = [m.group(1), []]
            msgs.append(section)
            continue
        if line.startswith("DEBUG    **************** METRICS START"):
            role, body = msgs[-1]
            assert role == "assistant", role
            text = "\n".join(body)
            calls_part = text.find("Tool Calls: [")
            n_tools = text[calls_part:].count('"function": {') if calls_part >= 0 else 0
            completions.append((text[:calls_part] if calls_part >= 0 else text).strip())
            contexts.append([r for r, _ in msgs[:-1]])
            tools += n_tools
            run_calls += 1
            section = None
            continue
        if section is not None:
            if line.startswith("DEBUG    ") and not line.startswith("DEBUG    Tool Calls") and section[1] and \
                    not raw.startswith("         "):
                # a new DEBUG record (not a continuation) ends the section's text
                if not (section[0] == "assistant" and not section[1]):
                    section = None
                    continue
            section[1].append(_PREFIX.sub("", line, count=1))
    return _result("phidata agent debug log", convs, completions, contexts, tools)


_REFS = re.compile(r"@refs\s+([^@\n]*)")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def notechat_notebook(path: Path) -> dict:
    """NoteChat (firezym/jupyterlab-notechat) chat notebook: see the module docstring."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    meta = (nb.get("metadata") or {}).get("notechat") or {}
    head = ["system"] if (meta.get("prompt") or meta.get("add_prompt")) else []
    cells = nb["cells"]
    ids = [c.get("id") for c in cells]
    completions, contexts = [], []
    threads: list = []  # sets of reply indices each conversation holds
    for i, c in enumerate(cells):
        src = "".join(c["source"])
        if not (c["cell_type"] == "markdown" and src.lstrip().startswith("**assistant**")):
            continue
        body = src.lstrip()[len("**assistant**"):].strip("\n")
        body = re.sub(r"\n*<div style=\"text-align: right;[^\n]*</div>\s*$", "", body)
        completions.append(body)
        ask = i - 1
        first = "".join(cells[ask]["source"]).split("\n", 1)[0]
        refs = _REFS.search(first)
        if refs and "alone" in refs.group(1):
            idx = sorted({ids.index(u) for u in _UUID.findall(refs.group(1)) if u in ids} | {ask})
        else:
            idx = list(range(i))
        roles = ["assistant" if "".join(cells[j]["source"]).lstrip().startswith("**assistant**") else "user"
                 for j in idx]
        contexts.append(head + roles)
        earlier = {j for j in idx if roles[idx.index(j)] == "assistant"}
        for t in threads:
            if t & earlier:
                t.add(i)
                break
        else:
            threads.append({i})
    return _result("NoteChat chat notebook (ipynb)", len(threads), completions, contexts, 0)


COUNTERS = {
    "dot-ai-eval-dataset": dot_ai_eval_dataset,
    "kubellm-phidata-debug-log": phidata_debug_log,
    "notechat-notebook": notechat_notebook,
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
