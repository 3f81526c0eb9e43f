"""Hand counts of the eighty-first held-out set (benchmarks/data/heldout_formats_81/files), computed from the raw
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
- a tool's run transcript written as Markdown (a demo script's output, an evaluation script's report) records a call
  where it shows the model's reply to a prompt it also shows; the prompt may be only the user's task (the tool's own
  wrapping prompt is not printed): the recorded context is then that task, written ``user``;
- a request that failed before the model produced anything (an HTTP 502 printed as ``[ERROR] ... ollama_api_post
  failed``, an empty task refused by the tool before any request) is not a call;
- a refusal written by the model in place of a command (``I'm sorry, but I can't help with that.``) is a call;
- in TermGPT's evaluation reports each ``termgpt --eval`` run is one single-shot call whose context is the query
  (``user``): the "LLM" result is a run with post-processing switched off, the "post-processing" result is a second,
  separate run whose reply TermGPT rewrote with its rule-based post-processing before printing it; both are calls
  (two per query), each its own conversation; the report keeps only the first line of each generated command (the
  evaluation script's extraction), which is the completion as recorded; ``Valid`` verdicts, success rates and tables
  are the script's own computations, not calls; two runs that produced the same command are still two calls;
- a shell command or Python script that the model writes as the text of its reply, and that the tool then runs, is
  the reply's text, not a tool call (no function / tool-call part is emitted): such files hold no tool calls;
- in a Rawdog script log (``log_version`` 0.2) an assistant entry whose content is the placeholder ``function_N`` is
  one call whose reply is the body of ``def function_N()`` further down the same file (Rawdog saves the script the
  model wrote there); the ``metadata`` dict (timestamp, model, cost) is metadata;
- ids, timestamps, durations, token counts, model names, costs and validation marks are metadata, not context.
Context roles: as recorded (``user`` for a bare task or query string).

Run: ``python benchmarks/data/heldout_formats_81/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import ast
import json
import re
import sys
import textwrap
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def ollama_bash_lib_eval(path: Path) -> dict:
    """Ollama Bash Lib ``ollama_eval`` demo transcript (``demos/ollama_eval.md``, the output of ``demos/ollama_eval.sh``
    as the demo runner saved it): per task a line `` `oe "TASK"` `` and a fenced output block. A block that shows
    ``MODEL generated the command:`` followed by the command (up to the next blank line) records one single-shot call:
    its context is the task (``user``), its completion the generated command (a refusal included). A block with only
    ``[ERROR] ollama_eval: Task Not Found`` holds no call (the tool refused the empty task before any request). The
    validation lines (``Valid command``, ``Valid Bash Syntax``, ``Run command (y/N)?``) are the library's, not the
    model's. Each call is its own conversation; no tool calls."""
    text = path.read_text(encoding="utf-8")
    completions, contexts = [], []
    for task, block in re.findall(r'^`oe "(.*?)"`\n\n```\n(.*?)```', text, flags=re.S | re.M):
        m = re.search(r"^\S+ generated the command:\n\n(.*?)\n\n", block, flags=re.S | re.M)
        if not m:
            continue
        completions.append(m.group(1))
        contexts.append(["user"] if task else [])
    return _result("Ollama Bash Lib ollama_eval demo Markdown", len(completions), completions, contexts, 0)


def ollama_bash_lib_tools(path: Path) -> dict:
    """Ollama Bash Lib ``ollama_tools`` demo transcript (``demos/ollama_tools_*.md``): a ``--- User Prompt ---`` section
    with the messages sent (a JSON list), a ``--- Model Response (first pass) ---`` section with the Ollama
    ``/api/chat`` reply object (``message: {role, content, thinking, tool_calls}``), the tool run, a ``--- Messages with
    Tool Results ---`` section (the messages the library would send next) and the second request, which failed with an
    HTTP 502 before the model produced anything (``--- Final Model Response ---`` empty): a failed request, not a call.
    So one call: its context the roles of the user-prompt messages, its completion ``message.content`` (empty here; the
    ``thinking`` text belongs to that reply), its tool calls the entries of ``message.tool_calls``."""
    text = path.read_text(encoding="utf-8")
    prompt = json.loads(re.search(r"--- User Prompt ---\n(.*?)\n-{5,}\n", text, flags=re.S).group(1))
    reply = json.loads(re.search(r"--- Model Response \(first pass\) ---\n(.*?)\n-{5,}\n", text, flags=re.S).group(1))
    final = re.search(r"--- Final Model Response ---\n(.*?)-{5,}", text, flags=re.S).group(1).strip()
    completions = [reply["message"].get("content") or ""]
    contexts = [[m["role"] for m in prompt]]
    tools = len(reply["message"].get("tool_calls") or [])
    if final:  # a second reply recorded after the tool results (none in this set)
        completions.append(final)
        contexts.append(contexts[0] + ["assistant", "tool"])
    return _result("Ollama Bash Lib ollama_tools demo Markdown", 1, completions, contexts, tools)


def termgpt_comprehensive(path: Path) -> dict:
    """TermGPT comprehensive evaluation report (``tests/evaluation/results/comprehensive_evaluation_results.md``, written
    by ``run_comprehensive_evaluation.sh``): per ``### Command N: CATEGORY`` section a ``**Query:**`` line, a ``**LLM
    Result:**`` line (a ``termgpt --eval`` run with ``TERMGPT_DISABLE_POSTPROCESSING=1``) and a ``**Post-processing
    Result:**`` line (a second run, post-processed; the script appends two spaces, a Markdown line break, which are not
    part of the reply). Two single-shot calls per section, each its own conversation, context the query (``user``),
    completions the two result lines in file order (LLM, then post-processing). ``Valid`` lines, the category table
    and the overall rates are the script's. No tool calls."""
    text = path.read_text(encoding="utf-8")
    completions, contexts = [], []
    for section in re.split(r"^### Command \d+: ", text, flags=re.M)[1:]:
        query = re.search(r"^\*\*Query:\*\* (.*)$", section, flags=re.M).group(1)
        llm = re.search(r"^\*\*LLM Result:\*\* (.*)$", section, flags=re.M).group(1)
        post = re.search(r"^\*\*Post-processing Result:\*\* (.*)$", section, flags=re.M).group(1)
        for reply in (llm, post[:-2] if post.endswith("  ") else post):
            completions.append(reply)
            contexts.append(["user"] if query else [])
    return _result("TermGPT comprehensive evaluation report Markdown", len(completions), completions, contexts, 0)


def termgpt_enhanced(path: Path) -> dict:
    """TermGPT enhanced post-processing evaluation report (``tests/evaluation/archived/enhanced_evaluation_results.md``,
    ``Runs per command: 3``): per ``### Command N: QUERY`` section, computed success rates and variation counts, then a
    ``**LLM Commands:**`` list and a ``**Post-processed Commands:**`` list, one backticked command per bullet, one bullet
    per ``termgpt --eval`` run (3 without post-processing, 3 with). Each bullet is one single-shot call, its own
    conversation, context the query in the heading (``user``), completion the text between the backticks; a command
    listed twice (two runs with the same output) is two calls. No tool calls."""
    text = path.read_text(encoding="utf-8")
    completions, contexts = [], []
    for section in re.split(r"^### Command \d+: ", text, flags=re.M)[1:]:
        query = section.split("\n", 1)[0].strip()
        for header in (r"\*\*LLM Commands:\*\*", r"\*\*Post-processed Commands:\*\*"):
            block = re.search(header + r" ?\n((?:- `.*`\n)+)", section).group(1)
            for line in block.splitlines():
                completions.append(line[3:-1])
                contexts.append(["user"] if query else [])
    return _result("TermGPT enhanced evaluation report Markdown", len(completions), completions, contexts, 0)


def rawdog_script_log(path: Path) -> dict:
    """Rawdog script log (a Python file Rawdog writes to ``~/.rawdog`` for each run, ``log_version`` 0.2, kept in the
    repository's ``examples/``): ``conversation = [...]`` (the messages sent: three system messages with the
    instructions, the few-shot examples and the machine's state, then user and assistant entries), ``metadata = {...}``,
    then one ``def function_N():`` per script the model wrote and a ``__main__`` call of the last one. Each assistant
    entry ``function_N`` is one call; its context is the roles of the entries before it, its completion the body of
    ``function_N`` (dedented). One conversation per file (each later call would continue the same list). The scripts
    are reply text, not tool calls."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    conversation, functions = [], {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "conversation":
            conversation = ast.literal_eval(node.value)
        if isinstance(node, ast.FunctionDef):
            lines = source.splitlines()[node.body[0].lineno - 1:node.end_lineno]
            functions[node.name] = textwrap.dedent("\n".join(lines))
    completions, contexts = [], []
    for i, message in enumerate(conversation):
        if message["role"] == "assistant":
            completions.append(functions.get(message["content"], message["content"]))
            contexts.append([m["role"] for m in conversation[:i]])
    return _result("Rawdog script log (Python source)", 1 if completions else 0, completions, contexts, 0)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("ollama-bash-lib__") and "ollama_eval" in name:
        out = ollama_bash_lib_eval(path)
    elif name.startswith("ollama-bash-lib__"):
        out = ollama_bash_lib_tools(path)
    elif name.startswith("termgpt__") and "comprehensive" in name:
        out = termgpt_comprehensive(path)
    elif name.startswith("termgpt__"):
        out = termgpt_enhanced(path)
    else:
        out = rawdog_script_log(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
