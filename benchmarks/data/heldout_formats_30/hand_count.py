"""Hand counts of the thirtieth held-out set (benchmarks/data/heldout_formats_30/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself and in the tool's own source.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; copied from the eighth set's):
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
- the same call recorded twice in one file (a full record with its request and raw response, and a summary copy
  of its prompt and response text elsewhere in the file) is one call;
- the same prompt sent to several models side by side gives one single-shot call per model, each its own
  conversation (no call's context holds another call's reply);
Context roles: written as the file records them; a system prompt kept beside the messages (not in the list) is
written ``system`` at the head of the context.

Run: ``python benchmarks/data/heldout_formats_30/hand_count.py`` (one JSON line per file).
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


def _evalscope_thread(messages: list) -> _Thread:
    t = _Thread()
    for m in messages:
        if m["role"] == "assistant":
            content = m.get("content")
            if isinstance(content, list):  # reasoning / text parts: the text parts are the completion
                content = "".join(p.get("text") or "" for p in content if p.get("type") == "text")
            t.out(content or "", len(m.get("tool_calls") or []))
        else:
            t.inp(m["role"])
    return t


def evalscope_predictions(path: Path) -> dict:
    """EvalScope (modelscope/evalscope, 1.x) predictions JSONL (``outputs/<run>/predictions/<model>/<benchmark>_
    <subset>.jsonl``: one sample per line, ``{index, model, model_output: {model, choices: [{message, stop_reason}],
    usage, ...}, messages: [{id, role, content, source, tool_call_id?, tool_calls?, ...}], metadata}``). ``messages``
    is the sample's whole chat after generation: the inputs (``user``) and every assistant reply the harness
    generated (``source: "generate"``); ``model_output`` is the last generation's response object again (same
    message ``id`` as the last assistant message: the same call, not a new one). Each line is one sample, run
    independently of the others: one conversation per line. Inside a line each assistant message is one call
    whose context is the messages before it (single-turn benchmarks: 1 call; the multi-turn Multi-IF subset:
    3 calls per line, each later turn's context holding the earlier replies). No tool calls in these files (all
    ``tool_calls`` null); no system prompt recorded."""
    threads = [_evalscope_thread(rec["messages"]) for rec in _lines(path)]
    return _merge("EvalScope predictions JSONL", threads)


def evalscope_reviews(path: Path) -> dict:
    """EvalScope (modelscope/evalscope, 1.x) reviews JSONL (``outputs/<run>/reviews/<model>/<benchmark>_<subset>
    .jsonl``: one scored sample per line, ``{index, target, messages: [...], trajectory: [], sample_score: {score:
    {value, extracted_prediction, prediction, ...}, sample_id, ...}}``). ``messages`` is the sample's chat with the
    generated assistant reply (the same layout as the predictions file); ``sample_score.score.prediction`` repeats
    that reply's text and ``extracted_prediction`` is parsed out of it by a rule (no judge model in this benchmark):
    neither is a further call. One conversation per line, one call per assistant message. ``trajectory`` is empty
    here. No tool calls; no system prompt recorded."""
    threads = [_evalscope_thread(rec["messages"]) for rec in _lines(path)]
    return _merge("EvalScope reviews JSONL", threads)


def _cf_tools(raw) -> int:
    n = 0
    if isinstance(raw, list):  # Anthropic: list of Messages API responses
        for msg in raw:
            n += sum(1 for b in msg.get("content") or [] if isinstance(b, dict) and b.get("type") == "tool_use")
    elif isinstance(raw, dict) and "choices" in raw:  # OpenAI chat completion
        for ch in raw["choices"]:
            msg = ch.get("message") or {}
            n += len(msg.get("tool_calls") or []) + (1 if msg.get("function_call") else 0)
    return n


def chainforge_flow(path: Path) -> dict:
    """ChainForge exported flow (``.cforge``: ``{flow: {nodes, edges, viewport}, cache: {<file>.json: ...}}``, written
    by ChainForge's "Export" with the node caches embedded). A Prompt node's own cache record
    (``<node-id>.json``: ``{cache_files, responses_last_run}``) lists its per-model cache files and keeps a summary
    copy of the last run (prompt, vars, response text: the same calls again, not counted twice). Each per-model
    cache file (``<node-id>_<n>.json``) maps a prompt text to one response record (older layout) or a list of
    them; a record holds ``query`` (the request sent: ``messages`` for chat models, with an Anthropic ``system``
    kept beside them when set), ``responses`` (the reply texts, one per sample; one reply per record and ``n`` = 1
    or unset here) and ``raw_response`` (the provider's response: an OpenAI chat completion, or a list holding one
    Anthropic message). In these files every per-model record also appears in the node's last-run summary (no stale
    cache entries). Each record is one call per reply; the same prompt sent to several models
    gives one call per model, each a single-shot conversation of its own. Tool calls: the OpenAI ``tool_calls``
    entries and Anthropic ``tool_use`` blocks of the raw response (ChainForge's ``[[TOOLS]]`` reply text repeats
    them). Evaluator / other node caches (no request and raw response) are not LLM calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    threads = []
    for name, body in data["cache"].items():
        if not isinstance(body, dict) or "cache_files" in body:
            continue
        for prompt, recs in body.items():
            for rec in recs if isinstance(recs, list) else [recs]:
                if not (isinstance(rec, dict) and "query" in rec and "raw_response" in rec):
                    continue
                q = rec["query"]
                head = (["system"] if q.get("system") else []) + [m["role"] for m in q.get("messages") or []]
                replies = rec.get("responses") or []
                for i, text in enumerate(replies):
                    t = _Thread(head)
                    t.out(text if isinstance(text, str) else json.dumps(text), _cf_tools(rec["raw_response"])
                          if i == 0 else 0)
                    threads.append(t)
    return _merge("ChainForge exported flow (.cforge)", threads)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("chainforge__"):
        out = chainforge_flow(path)
    elif name.endswith(".reviews.jsonl"):
        out = evalscope_reviews(path)
    else:
        out = evalscope_predictions(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
