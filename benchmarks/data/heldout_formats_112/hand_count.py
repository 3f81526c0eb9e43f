"""Hand counts of the hundred-and-twelfth held-out set (benchmarks/data/heldout_formats_112/files), computed from the
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
- a reply that asks for a tool through the runtime's own text protocol (squadron's ``<ACTION>name</ACTION>`` followed
  by ``<ACTION_INPUT>{...}</ACTION_INPUT>``, which the runtime executes and answers with an ``<OBSERVATION>`` sent
  back as the next ``User Message``) holds one tool call per ``<ACTION>`` element in the reply; the ``<ACTION>`` tags
  in the system prompt's instructions and examples are not calls; a reply ending in ``<ANSWER>`` is text only;
- a run that builds each request afresh as one user prompt (a game turn's state, notes and rules rendered into one
  message; a pipeline step's template) records single-shot calls, and each is its own conversation, even where a
  later prompt quotes fields of an earlier reply (a note-to-self, a memory): the later context does not continue
  the earlier context and reply as messages (shared rule);
- a reply constrained to JSON (JSON mode or a response schema) that names a game move (``"action": "HINT_COLOR"``,
  a settlement node) is text, not a tool call: nothing was requested through a tool interface;
- a message list saved whole after a feedback loop (PromptingTools.jl's AICodeFixer: the model's code, then a
  ``usermessage`` with the execution feedback, then the model's next code) is one conversation, one call per
  ``aimessage``;
- one run's files are read each on its own: squadron's supervisor file and the sub-agent file of the agent its
  ``call_agent`` launched are one thread each, in two files; the sub-agent's work reaches the supervisor only as the
  ``<OBSERVATION>`` text of its tool result;
- a Markdown log that renders the same reply again after the raw response (PyCatan's "Parse Success", "AI Response"
  and "Raw JSON (Debug)" sections) records one call per request; the response schema shown before the prompt is
  request configuration, not context;
- ids, timestamps, latencies, token counts (PyCatan's are estimates), costs, model names and request numbers are
  metadata, not context.
Context roles: as recorded (squadron's observations arrive as ``User Message`` sections and are written ``user``; the
system message pyhanabi's player sends is not in its log and is not written).

Run: ``python benchmarks/data/heldout_formats_112/hand_count.py`` (one JSON line per file).
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


_SQUADRON_HEAD = re.compile(r"^\[[0-9T:+\-.]+\] === (System Prompt \d+|User Message|LLM Response) ===$", re.M)
_SQUADRON_ACTION = re.compile(r"<ACTION>[^<]*</ACTION>")


def squadron_debug_transcript(path: Path) -> dict:
    """squadron (mlund01/squadron, a Go runtime for declarative multi-agent workflows in HCL) debug transcript,
    plain text / Markdown, one file per agent or supervisor of a workflow run (``debug/<workflow>_<time>/``):
    sections opened by ``[<RFC 3339 time>] === System Prompt N ===``, ``=== User Message ===`` and
    ``=== LLM Response ===`` lines. The system prompts, then the user message (the task), are the first call's
    context; each ``LLM Response`` section is one call (a ``<REASONING>`` block, then ``<ACTION>`` / ``<ACTION_INPUT>``
    or ``<ANSWER>``); each later ``User Message`` (an ``<OBSERVATION>`` with the tool result) is an input. The whole
    file is one thread: one conversation. Tool calls: the ``<ACTION>`` elements inside ``LLM Response`` sections
    (rule above; the system prompt's examples are not counted)."""
    text = path.read_text(encoding="utf-8")
    heads = list(_SQUADRON_HEAD.finditer(text))
    t = _Thread()
    for i, m in enumerate(heads):
        body = text[m.end():heads[i + 1].start() if i + 1 < len(heads) else len(text)].strip("\n")
        kind = m.group(1)
        if kind.startswith("System Prompt"):
            t.inp("system")
        elif kind == "User Message":
            t.inp("user")
        else:
            t.out(body, len(_SQUADRON_ACTION.findall(body)))
    return _merge("squadron debug transcript (text sections)", [t])


def pyhanabi_llm_log(path: Path) -> dict:
    """pyhanabi LLM player log, plain text (``llm_log.txt`` of UofT-Hanabi-Lab/pyhanabi, written by
    ``LLMAgentPlayer.log_llm_output`` in ``players/deepseek_llm.py``): per turn ``=== PLAYER n TURN ===``, ``PROMPT:``
    and the user prompt, a blank line, ``LLM RESPONSE:`` and the raw reply (``deepseek-chat`` in JSON mode: a JSON
    object naming the move, sometimes after leading spaces), then a line of 50 ``=``. Each turn's prompt is built
    afresh from the game state (the player sends a fixed system message, not logged, and this one user message):
    each turn is one single-shot call and its own conversation (rule above). No tool calls (the JSON move is text)."""
    text = path.read_text(encoding="utf-8")
    threads = []
    for block in re.split(r"^=== PLAYER \d+ TURN ===\n", text, flags=re.M)[1:]:
        prompt, sep, rest = block.partition("\nLLM RESPONSE:\n")
        if not sep or not prompt.startswith("PROMPT:\n"):
            continue
        reply = rest.split("\n" + "=" * 50, 1)[0]
        t = _Thread(["user"])
        t.out(reply)
        threads.append(t)
    return _merge("pyhanabi LLM player log (text)", threads)


def promptingtools_conversation(path: Path) -> dict:
    """PromptingTools.jl saved conversation, JSON (``save_conversation``: a list of messages tagged by ``_type``:
    ``systemmessage`` / ``usermessage`` with ``content`` and ``variables``, ``aimessage`` with ``content``,
    ``status``, ``tokens``, ``elapsed``, ``cost``, ``log_prob``, ``finish_reason``, ``run_id``, ``sample_id``), as the
    Julia LLM Leaderboard (svilupp/Julia-LLM-Leaderboard) stores every benchmark run. The list is one conversation;
    each ``aimessage`` is one call whose context is the messages before it; the AICodeFixer's feedback messages are
    ``usermessage`` inputs (rule above). No tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread()
    for msg in data:
        kind = msg.get("_type", "")
        if kind == "aimessage":
            t.out(msg.get("content") or "")
        elif kind == "systemmessage":
            t.inp("system")
        else:
            t.inp("user")
    return _merge("PromptingTools.jl saved conversation JSON", [t])


def pycatan_requests_json(path: Path) -> dict:
    """PyCatan AI live-test request tracker, JSON (``requests.json`` of levinshon-98/PyCatan_AI's
    ``examples/ai_testing``, written by ``RequestTracker``: ``{requests: [{request_id, timestamp, player_name,
    trigger, game_context, prompt: {meta_data, task_context, game_state, ...}, response: {...parsed...},
    raw_response, metadata: {request_num, timestamp, model, latency_seconds, total_tokens, prompt_tokens,
    completion_tokens, parse_success}, is_new, response_timestamp}], total_count, last_updated}``). Each request sent
    ``json.dumps(prompt)`` alone to Gemini (``generate_content`` with a response schema): one single-shot call and its
    own conversation per request with a ``raw_response`` (rule above); the completion is ``raw_response``, the parsed
    ``response`` being the same reply. No tool calls (the chosen move is JSON text)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    threads = []
    for req in data["requests"]:
        if req.get("raw_response"):
            t = _Thread(["user"])
            t.out(req["raw_response"])
            threads.append(t)
    return _merge("PyCatan AI request tracker JSON", threads)


_PYCATAN_RAW = re.compile(r"<summary><strong>📥 Raw Response from Gemini</strong></summary>\n\n```json\n(.*?)\n```",
                          re.S)


def pycatan_player_log(path: Path) -> dict:
    """PyCatan AI per-player agent log, Markdown (``player_<name>.md`` of the same live test, written by
    ``test_ai_live.py``): a header (session, model, start time), then per request ``## 🔄 Request #N``, a timestamp,
    ``<details>`` blocks with the expected response schema and the ``📤 Prompt Sent to Gemini`` (JSON), ``### ✅
    Response Received`` (latency, tokens), the ``📥 Raw Response from Gemini`` fenced block, ``### ✅ Parse Success``
    and the reply rendered again (``🎯 AI Response``, ``🔍 Raw JSON (Debug)``). One call per request section with a raw
    response; each request is single-shot and its own conversation (rules above). No tool calls."""
    text = path.read_text(encoding="utf-8")
    threads = []
    for section in re.split(r"^## 🔄 Request #\d+$", text, flags=re.M)[1:]:
        if "📤 Prompt Sent to Gemini" not in section:
            continue
        m = _PYCATAN_RAW.search(section)
        if m:
            t = _Thread(["user"])
            t.out(m.group(1))
            threads.append(t)
    return _merge("PyCatan AI player log Markdown", threads)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("squadron__"):
        out = squadron_debug_transcript(path)
    elif name.startswith("pyhanabi__"):
        out = pyhanabi_llm_log(path)
    elif name.startswith("Julia-LLM-Leaderboard__"):
        out = promptingtools_conversation(path)
    elif name.startswith("PyCatan_AI__") and name.endswith("requests.json"):
        out = pycatan_requests_json(path)
    else:
        out = pycatan_player_log(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
