"""Hand counts of the hundred-and-ninth held-out set (benchmarks/data/heldout_formats_109/files), computed from the
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
- a saved story / chat history that keeps one thread of alternating input and model messages is one conversation and
  one call per model message (each model message was produced from the thread before it); ids, dates, scores, token
  counters left at 0, model names, prompt-pattern names, latencies and usage are metadata, not context;
- a game's output fed to the model as the next user message is a ``user`` input, not a tool result: the command the
  model answers with is its reply text, not a tool call (the text-adventure harnesses here send the reply to the game
  themselves; no function / tool part is emitted);
- where a tool keeps both the parsed command and the raw reply of the same call (AdventureAI's ``content`` and
  ``meta``), they are one call; the completion recorded here is the raw reply (``meta``) where it is kept, else the
  stored text;
- a rendered Markdown playthrough (AdventureAI's ``assets/*.md``) is read as: the fenced block after the title is the
  system prompt, each run of lines beginning with ``>`` is one model reply (one call), the text between replies is the
  game output sent as the next ``user`` message;
- a companion agent's chat record that splits one bot turn into ``steps`` (Alice-Single) records one call per step;
  a fenced shell / Python block the model wrote and the client executed (one ``executionResults`` entry each) is a
  client-executed tool call, its result a ``tool`` input before the next step; the turn's ``finalAnswer`` repeats the
  last step's text and is not a further call;
- a completions log of ``request`` / ``response`` events (if-ai-buddy) records one call per request answered by the
  next response; the completion is the response's ``raw`` text as recorded, even where the model ran on past its
  answer; single-shot requests are separate conversations (shared rule).
Context roles: as recorded; a system prompt kept beside the messages (not in the list) is written ``system`` at the
head of every context; an execution result fed back to the model is written ``tool``.

Run: ``python benchmarks/data/heldout_formats_109/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
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


def adventureai_storydump(path: Path) -> dict:
    """AdventureAI story dump JSON (``storydump/<game>_<date>.json`` of s-macke/AdventureAI, Go: written by
    ``StoryHistory.StoreToFile`` after every game turn, ``{promptPattern, model, prompt, date, name, messages:
    [{role: user | assistant, content, completionTokens, promptTokens, meta, score}]}``). One playthrough is one
    conversation: every call is sent the system ``prompt`` and the whole ``messages`` list so far (``ToChatHistory``;
    an assistant message is resent as its ``meta`` where that is set, else as ``content``). Each ``assistant``
    message is one call; each ``user`` message is the game's output (an input). With the ``simple`` pattern the
    stored ``content`` is the reply after the harness's clean-up (newlines to spaces, surrounding quotes and full
    stops removed, ``quit`` turned into ``wait``, ``help`` into ``hint``) and ``meta`` is empty; with ``react`` the
    raw reply (``SITUATION: ... THOUGHT: ... COMMAND: ...``) is in ``meta`` and the parsed command in ``content``:
    one call either way, completion ``meta`` when set. ``completionTokens`` / ``promptTokens`` are always 0 and
    ``score`` is the game score: metadata. The commands are reply text sent to the game by the harness: no tool
    calls (rule above)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    t = _Thread(["system"] if data.get("prompt") else [])
    for msg in data["messages"]:
        if msg["role"] == "assistant":
            t.out(msg.get("meta") or msg.get("content") or "")
        else:
            t.inp(msg["role"])
    return _merge(f"AdventureAI story dump JSON ({data.get('promptPattern')}, {data.get('model')})", [t])


def adventureai_markdown(path: Path) -> dict:
    """AdventureAI rendered playthrough, Markdown (``assets/905_gpt4_call_police.md`` of s-macke/AdventureAI,
    rendered from a 2023 story dump by the repository's ``storydump/extract.go`` ``PrintStory``: ``# <game>`` title,
    a ``* played with <model>`` line, the system prompt in a fenced block, then for every model response the game
    output that preceded it followed by a block quote ``>`` / ``> * **Situation:** ...`` / ``> * **Thought:** ...``
    / ``> * **Command:** ...``). One playthrough is one conversation; each run of consecutive lines beginning with
    ``>`` is one reply (one call), its context the system prompt and the game outputs and replies before it; the game
    outputs are ``user`` inputs. The bare ``>`` line opening each quote is the game's prompt character folded into the
    quote by the renderer. No tool calls (rule above)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    fences = [i for i, ln in enumerate(lines) if ln.strip().startswith("```")]
    body = lines[fences[1] + 1:] if len(fences) >= 2 else lines
    t = _Thread(["system"] if len(fences) >= 2 else [])
    pending_input, reply = False, []
    for ln in body + [""]:
        if ln.startswith(">"):
            if pending_input:
                t.inp("user")
                pending_input = False
            reply.append(ln[1:].strip())
            continue
        if reply:
            t.out("\n".join(r for r in reply if r))
            reply = []
        if ln.strip():
            pending_input = True
    return _merge("AdventureAI rendered playthrough Markdown", [t])


def alice_chat_history(path: Path) -> dict:
    """Alice-Single web chat history JSON (``memory/chat_history.json`` of ArcaneOrion/Alice-Single, written by
    ``api_server.py`` ``save_chat_history`` after each turn: a JSON array of ``{role: user, content}`` and ``{role:
    bot, steps: [{id, thinking, content, executionResults, systemLogs}], finalAnswer, isComplete}``). The agent keeps
    one message list across turns (``AliceAgent.messages``, appended to by ``stream_chat``): the file is one
    conversation. Each step is one streamed model call (``start_step`` per loop iteration); each ``executionResults``
    entry is the output of one fenced shell / Python block of that step's reply that the client ran in its sandbox (a
    tool call), fed back to the model as the next input (written ``tool``); ``systemLogs`` are the client's status
    lines and ``finalAnswer`` repeats the last step's ``content`` (not further calls). The system prompt (persona
    ``prompts/alice.md`` plus memory files) is not in the file. Completion: the step's ``thinking`` (empty here)
    followed by its ``content``."""
    t = _Thread()
    for rec in json.loads(path.read_text(encoding="utf-8")):
        if rec.get("role") == "user":
            t.inp("user")
            continue
        for step in rec.get("steps") or []:
            results = step.get("executionResults") or []
            t.out((step.get("thinking") or "") + (step.get("content") or ""), tools=len(results))
            if results:
                t.inp("tool")
    return _merge("Alice-Single web chat history JSON", [t])


def ifaibuddy_completions_log(path: Path) -> dict:
    """if-ai-buddy completions log, JSON Lines (``log/player_completions.jsonl`` of ElSrJuez/if-ai-buddy, written by
    ``my_logging.log_completion_event``: ``{event: request, provider, model, messages: [{role, content}],
    timestamp}`` then ``{event: response, provider, model, raw, usage, latency_ms, timestamp}``). Each request
    answered by the following response is one call: context the request's ``messages`` roles, completion the
    response's ``raw`` text (here a structured-narration JSON object followed by text the model ran on with; one
    call). Requests are single-shot (the user message is a digest of the game transcript, not a chat history): one
    conversation per request. No tool calls."""
    threads, pending = [], None
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        ev = json.loads(line)
        if ev.get("event") == "request":
            pending = [m.get("role") for m in ev.get("messages") or []]
        elif ev.get("event") == "response" and pending is not None:
            t = _Thread(pending)
            t.out(ev.get("raw") or "")
            threads.append(t)
            pending = None
    return _merge("if-ai-buddy completions log JSONL", threads)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("AdventureAI__storydump__"):
        out = adventureai_storydump(path)
    elif name.startswith("AdventureAI__assets__"):
        out = adventureai_markdown(path)
    elif name.startswith("Alice-Single__"):
        out = alice_chat_history(path)
    else:
        out = ifaibuddy_completions_log(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
