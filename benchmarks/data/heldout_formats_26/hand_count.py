"""Hand counts of the twenty-sixth held-out set (benchmarks/data/heldout_formats_26/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself and in the source of the tool that wrote it.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as set 8's):
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
Rules made explicit for this set (as in set 14):
- an action the model writes only as text in its reply (special tags, XML-style tool-use blocks) with no structured
  tool-call part or record is not a tool call; the harness's result of such an action, put back into the context, is
  tool input all the same (a later reply is a new call);
- a sub-agent call recorded with its own prompt and reply, whose context does not continue the parent's, is its own
  conversation;
- a call counted is one whose reply the file records; a harness request that left no text in the file is not
  counted;
- context roles are written as the file records them; text appended by the harness into a single prompt string is
  written ``tool`` where it is an action's result.
One rule per format in each counting function's docstring.

Run: ``python benchmarks/data/heldout_formats_26/hand_count.py`` (one JSON line per file).
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


def storm_llm_call_history(path: Path) -> dict:
    """Stanford STORM ``llm_call_history.jsonl`` (written by ``STORMWikiRunner.post_run``: one DSPy LM history entry
    per line, ``{prompt, response, raw_kwargs}``; ``prompt`` is the whole prompt string the model was sent as one user
    message, ``response`` the Chat Completions response object). Each line is one call: context ``[user]``, completion
    ``response.choices[0].message.content`` (one choice per line here; a ``length`` finish still produced a reply).
    Conversations: every prompt is a fresh fill of a DSPy template; where a later prompt quotes earlier replies
    (a writer's conversation history), the earlier prompt is not a prefix of it and the file records no link between
    lines, so each line is its own single-shot conversation. No structured tool calls (``tool_calls`` is null on every
    choice); the search queries STORM's question-to-query step writes are reply text."""
    threads = []
    for rec in _lines(path):
        t = _Thread(["user"])
        for choice in rec["response"]["choices"]:
            msg = choice["message"]
            t.out(msg.get("content") or "", len(msg.get("tool_calls") or []))
        threads.append(t)
    return _merge("STORM llm_call_history JSONL", threads)


_BEGIN_RESULT = "<|begin_search_result|>"
_END_RESULT = "<|end_search_result|>"
_OTHER_STOPS = ("<|end_write_section|>", "<|end_edit_article|>", "<|begin_check_article|>")


def webthinker_report_output(path: Path) -> dict:
    """WebThinker report-mode output JSON (``scripts/run_web_thinker_report.py``: a JSON list of items
    ``{Question, prompt, Output, WebExplorer}``; ``prompt`` is the first prompt rendered in the chat template, one user
    turn; ``Output`` the main reasoning chain as one string: every reply text, with each search result the harness
    appended as ``<|begin_search_result|>...<|end_search_result|>``; ``WebExplorer`` the web-explorer sub-calls, each
    ``{search_query, Input, Output, Extracted_info}`` with its own full prompt and reply). Main chain: the harness
    stops a generation at ``<|end_search_query|>`` and appends the search result, then generates again, so the text
    before the first result is call 1 and the text after each result a new call (9 results: 10 calls); context
    ``[user]`` then ``assistant`` / ``tool`` in turn. Generations also stop at a write-section / edit / check-article
    tag; here the only such tag ends the Output (no text after it, nothing else recorded), so it adds no call (a
    later request that left no text is not counted). Each WebExplorer entry is one call (its Output holds no further
    search or click action) in its own conversation, context ``[user]``. The search plan quoted in ``prompt``, the
    section writer and ``Extracted_info`` are mentioned, not recorded. Searches are special tags in the reply text,
    not tool calls: 0."""
    threads = []
    for item in json.loads(path.read_text(encoding="utf-8")):
        main = _Thread(["user"])
        rest = item["Output"]
        while _BEGIN_RESULT in rest:
            before, after = rest.split(_BEGIN_RESULT, 1)
            main.out(before)
            main.inp("tool")
            rest = after.split(_END_RESULT, 1)[1]
        if rest.strip():
            main.out(rest)
        for stop in _OTHER_STOPS:
            # a write/edit/check stop followed by more reply text would split the reply (none here)
            for c in main.completions:
                idx = c.find(stop)
                if idx != -1 and c[idx + len(stop):].strip():
                    raise SystemExit(f"{path.name}: text after {stop} inside one segment; rule needs review")
        threads.append(main)
        for ex in item.get("WebExplorer") or []:
            sub = _Thread(["user"])
            if "<|begin_search_result|>" in ex["Output"] or "<|begin_click_result|>" in ex["Output"]:
                raise SystemExit(f"{path.name}: explorer with inner actions; rule needs review")
            sub.out(ex["Output"])
            threads.append(sub)
    return _merge("WebThinker report-mode output JSON", threads)


def miroflow_task_result(path: Path) -> dict:
    """MiroFlow ``task_result.json`` (written by ``run_single_task_example.py``: ``{message_history, summary,
    final_boxed_answer}``; ``message_history`` the main agent's messages, roles system / user / assistant, contents as
    strings or ``[{type: text, text}]`` blocks). One file is one conversation. Each run of assistant messages with no
    input between them is one call (none adjacent: 3 calls); the tool results come back as ``user`` messages and are
    written ``user``. Tools are used through ``<use_mcp_tool>`` XML blocks in the reply text, with no structured
    ``tool_calls``: 0 tool calls. ``summary`` is the reply of a summarising call whose prompt is not in the file
    (mentioned, not recorded); ``final_boxed_answer`` is parsed out of it. Neither is counted."""
    data = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for m in data["message_history"]:
        content = m.get("content")
        text = content if isinstance(content, str) else "".join(
            b.get("text", "") for b in content or [] if isinstance(b, dict))
        if m["role"] == "assistant":
            t.out(text, len(m.get("tool_calls") or []))
        else:
            t.inp(m["role"])
    return _merge("MiroFlow task_result JSON", [t])


COUNTERS = {
    "storm": storm_llm_call_history,
    "webthinker": webthinker_report_output,
    "miroflow": miroflow_task_result,
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
