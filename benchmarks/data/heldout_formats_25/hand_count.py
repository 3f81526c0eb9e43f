"""Hand counts of the twenty-fifth held-out set (benchmarks/data/heldout_formats_25/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself and in the tool's own source / docs.

Area of this set: fine-tuning frameworks' committed sample conversation data (training / test data, synthesis and
inference outputs, RL rollout dumps). Most are datasets rather than recorded runs: an assistant turn in a dataset is
counted as an LLM call whose context is the messages before it, as it would be for a recorded run.

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
- one record (line) of a dataset is one conversation, even where several records share the same prompt (samples of
  one prompt, or the same prompt run again, recorded side by side: each is its own single-shot thread);
- a per-turn training flag (a turn excluded from the loss) does not remove the turn: it is still a model turn and a
  call; scores, labels and rewards beside a reply are not calls;
- ``reasoning_content`` beside an assistant message belongs to that reply (same call); a reply that holds a
  ``</think>`` with no leading ``<think>`` (the template opened it) is kept whole as the completion;
- a tool list kept beside the messages is not a context message.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context.

Run: ``python benchmarks/data/heldout_formats_25/hand_count.py`` (one JSON line per file).
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


def _messages_thread(messages: list) -> _Thread:
    """One thread from a list of ``{role, content, tool_calls?}`` messages: each run of assistant messages with no
    input between them is one call, its ``content`` the completion, each ``tool_calls`` entry a tool call; every
    other role is input."""
    t = _Thread()
    for m in messages:
        if m["role"] == "assistant":
            t.out(m.get("content") or "", len(m.get("tool_calls") or []))
        else:
            t.inp(m["role"])
    return t


def ms_swift_query_response(path: Path) -> dict:
    """ms-swift query / response / history JSONL (ms-swift's own custom-dataset layout, a test fixture of its
    dataset loader: one sample per line, ``{system?, query, response, history?: [[query, response], ...]}``). Each
    line is its own conversation. Each ``history`` pair is an earlier exchange: its response is a call whose
    context is the system prompt (if any) and every earlier query / response, then its query; the final
    ``response`` is the last call, its context ending with ``query``. An empty ``history`` adds nothing. No tool
    calls."""
    threads = []
    for rec in _lines(path):
        t = _Thread(["system"] if rec.get("system") else [])
        for q, r in rec.get("history") or []:
            t.inp("user")
            t.out(r or "")
        t.inp("user")
        t.out(rec.get("response") or "")
        threads.append(t)
    return _merge("ms-swift query/response/history JSONL", threads)


def oumi_inference_output(path: Path) -> dict:
    """Oumi inference output JSONL (Oumi ``Conversation`` objects as its inference job writes them: one per line,
    ``{conversation_id, messages: [{id, content, binary, role, type}], metadata}``; here system, user and the
    model's assistant reply). Each line is one single-shot call (context: the messages before the assistant
    message; completion: its ``content``) and its own conversation; 100 distinct prompts appear 167 times (the
    file holds more than one run of the job), each line counted (shared rule, and this set's first rule). No tool
    calls."""
    threads = [_messages_thread(rec["messages"]) for rec in _lines(path)]
    return _merge("Oumi inference output JSONL", threads)


def oumi_synth(path: Path) -> dict:
    """Oumi synthesis output JSONL (``oumi synth`` with a stateful tool environment: one synthesized conversation
    per line under the output key ``db_conversation``, ``{tools, messages}``; messages in the OpenAI layout, assistant
    ``tool_calls`` with string arguments, ``tool`` messages with ``tool_call_id``, ``name`` and the environment's
    ``_environment_state``). Subset: the first of the original's three lines. Each line is one conversation; each
    run of assistant messages with no input between them is one call (none are adjacent here), each ``tool_calls``
    entry a tool call (one per assistant message here). The ``tools`` list is not a context message."""
    threads = []
    for rec in _lines(path):
        for value in rec.values():
            threads.append(_messages_thread(value["messages"]))
    return _merge("Oumi synth output JSONL (db_conversation)", threads)


def tinker_cookbook(path: Path) -> dict:
    """Tinker cookbook example conversations JSONL (``tinker_cookbook/example_data/conversations.jsonl``, the
    sample data of its basic supervised-learning recipe: one ``{messages: [{role, content}]}`` per line, an optional
    system message). Each line is one conversation; each assistant message is one call (one per line here). No tool
    calls."""
    threads = [_messages_thread(rec["messages"]) for rec in _lines(path)]
    return _merge("Tinker cookbook conversations JSONL", threads)


def xtuner_openai_sft(path: Path) -> dict:
    """XTuner OpenAI-style SFT test data JSONL (``tests/resource/openai_sft.jsonl``: each line is a bare JSON list
    of ``{content, role}`` messages, no wrapping object). Each line is one conversation; each assistant message is
    one call (one per line here). No tool calls; no system prompt."""
    threads = [_messages_thread(rec) for rec in _lines(path)]
    return _merge("XTuner openai_sft JSONL (bare message lists)", threads)


def xtuner_rollout_output(path: Path) -> dict:
    """XTuner RL rollout output JSONL (``tests/ray/rollout_output.jsonl``, a GRPO rollout dump kept for its Ray
    tests: one sample per line, ``{prompt, response, label, reward}``; ``prompt`` a string, the user's question;
    ``response`` the model's reply, opened inside the chat template's think block, so most hold a ``</think>`` with
    no leading ``<think>``). Each line is one single-shot call (context: one user message; completion: ``response``,
    kept whole) and its own conversation (8 samples of each of 4 prompts side by side). ``label`` and ``reward``
    are not calls. No tool calls."""
    threads = []
    for rec in _lines(path):
        t = _Thread(["user"])
        t.out(rec.get("response") or "")
        threads.append(t)
    return _merge("XTuner RL rollout output JSONL", threads)


def xtuner_sft_jsonl(path: Path) -> dict:
    """XTuner SFT test data JSONL (``tests/resource/qwen35_tokenize_data.jsonl``, the samples of its Qwen3.5 chat
    tokenization tests: one sample per line, ``{id, messages, tools?}``; messages in the OpenAI layout, assistant
    ``tool_calls`` with object arguments, optional ``reasoning_content`` and ``loss: false`` on an assistant turn).
    Each line is one conversation; each run of assistant messages with no input between them is one call (none
    adjacent here), its ``content`` the completion (``reasoning_content`` belongs to it), each ``tool_calls``
    entry a tool call. A turn with ``loss: false`` is still a call (this set's rule). The ``tools`` list is not a
    context message."""
    threads = [_messages_thread(rec["messages"]) for rec in _lines(path)]
    return _merge("XTuner SFT JSONL (id, messages, tools)", threads)


COUNTERS = {
    "ms-swift-query-response": ms_swift_query_response,
    "oumi-inference-output": oumi_inference_output,
    "oumi-synth": oumi_synth,
    "tinker-cookbook": tinker_cookbook,
    "xtuner-openai-sft": xtuner_openai_sft,
    "xtuner-rollout-output": xtuner_rollout_output,
    "xtuner-sft-jsonl": xtuner_sft_jsonl,
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
