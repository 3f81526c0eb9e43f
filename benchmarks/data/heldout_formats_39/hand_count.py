"""Hand counts of the thirty-ninth held-out set (benchmarks/data/heldout_formats_39/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (none in this set).

Rules shared by every counter (written before the product was run; the same as the eighth set's):
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
- a state snapshot that repeats an agent's history (a copy of a prefix of the same history, kept beside the final
  history) records no further call: each call is counted once, from the agent's own history;
- a later call whose context is an earlier call's whole context followed by that call's reply (verbatim) and the new
  observation continues the earlier call's thread, also where the tool flattens that history into the text of a
  single user message instead of separate messages (the counter checks the prefix and the reply, it does not assume
  them);
- a tool call is counted once, from the reply that emitted it; the copies of the same call that later contexts
  replay (as assistant messages) are context, not new calls;
- a reply made only of tool calls has the empty string as its completion text.
Context roles: written as the file records them (``system``, ``user``, ``assistant``, ``tool``); a message made only
of tool results is written ``tool``.

Run: ``python benchmarks/data/heldout_formats_39/hand_count.py`` (one JSON line per file).
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


# --- agent-scaling run trace -------------------------------------------------------------------------------------

_LOG_HEAD = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:.]+\]\[[^\]]*\]\[([A-Z]+)\]")
_ROLE_BAR = re.compile(r"^={10,}\[\[(\w+)\]\]={10,}$")
_REPLY_BAR = re.compile(r"^={10,}\[\[ .*? Response \(.*\)\]\]={10,}$")


def _log_blocks(text: str) -> list:
    blocks: list = []
    for line in text.split("\n"):
        m = _LOG_HEAD.match(line)
        if m:
            blocks.append((m.group(1), []))
        elif blocks:
            blocks[-1][1].append(line)
    return blocks


def agent_scaling_trace(path: Path) -> dict:
    """agent-scaling run trace (``run_trace.txt`` of ybkim95/agent-scaling, the experiment framework of "Towards a
    Science of Scaling Agent Systems": a loguru text log; its LiteLLM callback writes each request as a
    ``[PROMPT]`` record whose body is the message list, each message under a ``===[[role]]===`` bar, and each reply
    as an ``[LLM]`` record headed ``===[[ <model> Response (...)]]===``; other records are ``[INFO]`` / ``[DEBUG]``
    lines). Each ``[LLM]`` record is one call; its context is the ``[PROMPT]`` record just before it (the records
    alternate strictly here, checked). A reply whose body is a JSON list of ``{function, id, type}`` entries (braces
    written doubled by the logger) is a reply made only of tool calls: completion text empty, one tool call per
    entry. Context roles are the ``[[role]]`` bars of the prompt. Each later prompt repeats the previous prompt's
    messages and adds the previous reply (as an ``assistant`` message) and its tool result (checked), so the calls
    form one thread: one conversation. The file is the first 395 lines of the trace (the origin stops in the middle
    of a fifth prompt that has no reply)."""
    blocks = _log_blocks(path.read_text(encoding="utf-8"))
    prompt = None
    contexts: list = []
    completions: list = []
    tools = 0
    roots = 0
    prev_ctx: list | None = None
    for kind, body in blocks:
        if kind == "PROMPT":
            assert prompt is None, "two prompts without a reply between them"
            prompt = []
            for line in body:
                m = _ROLE_BAR.match(line)
                if m:
                    prompt.append([m.group(1), []])
                elif prompt:
                    prompt[-1][1].append(line)
            prompt = [(role, "\n".join(text)) for role, text in prompt]
        elif kind == "LLM":
            assert prompt is not None, "a reply without a prompt"
            assert _REPLY_BAR.match(body[0])
            raw = "\n".join(body[1:]).strip().replace("{{", "{").replace("}}", "}")
            try:
                calls = json.loads(raw)
            except json.JSONDecodeError:
                calls = None
            if isinstance(calls, list) and calls and all(isinstance(c, dict) and "function" in c for c in calls):
                completions.append("")
                tools += len(calls)
            else:
                completions.append("\n".join(body[1:]).strip())
            continues = (prev_ctx is not None and prompt[:len(prev_ctx)] == prev_ctx
                         and [role for role, _ in prompt[len(prev_ctx):len(prev_ctx) + 1]] == ["assistant"])
            roots += 0 if continues else 1
            contexts.append([role for role, _ in prompt])
            prev_ctx, prompt = prompt, None
    return _result("agent-scaling run trace (loguru text log of [PROMPT] / [LLM] records)", roots, completions,
                   contexts, tools)


# --- NegotiationArena game_state.json --------------------------------------------------------------------------

def negotiationarena_game_state(path: Path) -> dict:
    """NegotiationArena game state JSON (``game_state.json`` that vinid/NegotiationArena writes for every game:
    ``{class, players: [{class, model, agent_name, ..., conversation: [{role, content}]}], game_state: [...],
    log_dir, log_path, ...}``). Each player is one LLM agent with its own chat history: ``conversation`` holds the
    system prompt (role ``system``), the messages it received (``user``) and its replies (``assistant``). One
    conversation per player; each ``assistant`` message is one call whose completion is its ``content`` and whose
    context is the messages before it. ``game_state`` is the per-iteration record of the game: it repeats each
    reply as ``player_complete_answer`` plus fields parsed from it, and ``player_state`` keeps snapshots of both
    players' histories that are prefixes of the final histories (checked): no further calls. No tool calls (moves
    are tagged text in the replies)."""
    d = json.loads(path.read_text(encoding="utf-8"))
    finals = {p["agent_name"]: p["conversation"] for p in d["players"]}
    for step in d.get("game_state", []):
        for snap in step.get("player_state", []):
            conv = snap["conversation"]
            assert conv == finals[snap["agent_name"]][:len(conv)], "a snapshot that is not a prefix"
    threads = []
    for p in d["players"]:
        t = _Thread()
        for m in p["conversation"]:
            if m["role"] == "assistant":
                t.out(m.get("content") or "")
            else:
                t.inp(m["role"])
        threads.append(t)
    return _merge("NegotiationArena game_state.json (players' chat histories plus per-iteration snapshots)",
                  threads)


# --- TALES episode log -----------------------------------------------------------------------------------------

def tales_episode_log(path: Path) -> dict:
    """TALES (microsoft/tale-suite, text-adventure benchmark) episode log JSONL (one line per game step:
    ``{Step, Score, Max Score, Normalized Score, Moves, Observation, Action, Feedback, Prompt, Response, Token
    Usage}``; here ``Prompt`` is ``{messages: [system, user]}``, the request sent, and ``Response`` the model's
    reply). Each line is one call: context roles as the ``messages`` record them, completion ``Response``. The
    agent runs without chat turns: the ``user`` message carries the whole game transcript, so each later line's
    ``user`` text is the previous line's ``user`` text followed by the previous ``Response`` verbatim and the new
    game output (checked, with the same system prompt): by this set's rule the lines form one thread, one
    conversation. Actions are text replies, not tool calls. The file is the first 30 of the episode's 100 lines."""
    rows = _lines(path)
    completions: list = []
    contexts: list = []
    roots = 0
    prev = None
    for r in rows:
        msgs = r["Prompt"]["messages"]
        contexts.append([m["role"] for m in msgs])
        completions.append(r["Response"])
        if prev is None:
            roots += 1
        else:
            pm = prev["Prompt"]["messages"]
            same_head = [m for m in msgs[:-1]] == [m for m in pm[:-1]]
            before, after = pm[-1]["content"], msgs[-1]["content"]
            continues = same_head and after.startswith(before) and prev["Response"] in after[len(before):]
            roots += 0 if continues else 1
        prev = r
    return _result("TALES episode log JSONL (per-step Prompt messages / Response)", roots, completions, contexts, 0)


COUNTERS = {
    "agent-scaling": agent_scaling_trace,
    "negotiationarena": negotiationarena_game_state,
    "tales": tales_episode_log,
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
