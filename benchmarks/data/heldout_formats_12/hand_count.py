"""Hand counts of the twelfth held-out set (benchmarks/data/heldout_formats_12/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

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
  produced anything) is a failed request, not a call, and is left out of later contexts as well;
- reasoning written inline in the reply text as a leading ``<think>...</think>`` span belongs to that reply (it is
  one call); the completion text recorded here is the reply without that span.
Rules made explicit for this set:
- a function call the model emitted counts as a tool call even when the request forced it (``tool_choice`` naming
  one function, used to get structured output); its arguments are not completion text;
- an action the model writes as markup inside its reply text counts as a tool call only where the producer itself
  records it as a tool use that the client executed (MINT's ``<execute>`` blocks, tallied by the file's own
  ``agent_action_count.use_tool``; every file of that format here has the two agree record by record);
- in a multi-agent log that keeps one shared transcript (one game), the whole transcript is one conversation: every
  speaker's input is drawn from the same transcript, so each later call's context continues the earlier calls'
  contexts and replies (the speakers' private prompts are not recorded); messages the environment writes from a
  template are input, not calls.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context. In the multi-agent logs, a call's context is
the transcript before it, each entry written ``assistant`` when the calling speaker wrote it and ``user`` otherwise.

Run: ``python benchmarks/data/heldout_formats_12/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_EXECUTE = re.compile(r"<execute>")


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


# --- Mirascope e2e snapshots -------------------------------------------------------------------------------------

def _call_name(node: ast.AST) -> str:
    return node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else ""


def _kw(node: ast.Call, name: str):
    for kw in node.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _parts(node: ast.Call) -> list:
    content = _kw(node, "content")
    if content is None and node.args:
        content = node.args[0]
    if isinstance(content, ast.List):
        return list(content.elts)
    return [] if content is None else [content]


def _dict_get(node: ast.Dict, key: str):
    for k, v in zip(node.keys, node.values):
        if isinstance(k, ast.Constant) and k.value == key:
            return v
    return None


def mirascope_e2e_snapshot(path: Path) -> dict:
    """Mirascope e2e test snapshot (a Python module of inline-snapshot values: each top-level ``<name> =
    snapshot({...})`` holds one recorded test run, whose ``"response"`` dict has ``"messages"``: a list of
    ``SystemMessage`` / ``UserMessage`` / ``AssistantMessage`` constructor calls with ``Text`` / ``ToolCall`` /
    ``ToolOutput`` / ``Thought`` parts; ``raw_message`` repeats the provider's own message). Read with ``ast``, never
    executed. Each snapshot is one conversation (sync / async / stream / async_stream runs of the same test are
    separate runs). Each ``AssistantMessage`` is one call (none are adjacent here); its ``Text`` parts joined are the
    completion (``Thought`` parts are reasoning, left out), each ``ToolCall`` part a tool call. A ``UserMessage``
    made only of ``ToolOutput`` parts is a ``tool`` message; ``SystemMessage`` is ``system``. Keys outside
    ``"response"`` (``"tool_outputs"``) repeat the tool results and are not read. An assistant turn written by
    another provider earlier in the same history (a resumed run) is still a call of that conversation."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    threads = []
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and _call_name(stmt.value) == "snapshot"):
            continue
        response = _dict_get(stmt.value.args[0], "response")
        messages = _dict_get(response, "messages")
        t = _Thread()
        for msg in messages.elts:
            kind = _call_name(msg)
            parts = _parts(msg)
            if kind == "AssistantMessage":
                text = "".join(ast.literal_eval(_kw(p, "text")) for p in parts if _call_name(p) == "Text")
                t.out(text, sum(1 for p in parts if _call_name(p) == "ToolCall"))
            elif kind == "SystemMessage":
                t.inp("system")
            elif kind == "UserMessage":
                t.inp("tool" if parts and all(_call_name(p) == "ToolOutput" for p in parts) else "user")
            else:
                raise ValueError(f"unexpected message {kind}")
        threads.append(t)
    return _merge("Mirascope e2e inline snapshot (Python)", threads)


# --- MINT benchmark results --------------------------------------------------------------------------------------

def mint_bench_results(path: Path) -> dict:
    """MINT benchmark ``results.jsonl`` (xingyaoww/mint-bench ``data/outputs/<model>/<feedback>/<setting>/<task>/``:
    one task per line, ``{state: {history: [{role, content}], finished, success, latest_output,
    agent_action_count: {propose_solution, use_tool, invalid_action}, token_counter, terminate_reason, error}, task,
    final_length_exceeds_4096}``). Each line is one conversation (one task run). ``history`` alternates user /
    assistant; the first user message holds the instructions and an in-context example, later user messages the
    observations. Each assistant message is one call (none are adjacent), its ``content`` the completion (the
    inline ``<thought>`` is kept: it is not a leading ``<think>`` span). Tool calls: each ``<execute>`` block, which
    the environment ran; the count is checked against the line's own ``agent_action_count.use_tool`` (shared rule
    of this set). No system prompt is recorded."""
    threads = []
    for rec in _lines(path):
        t = _Thread()
        executes = 0
        for m in rec["state"]["history"]:
            if m["role"] == "assistant":
                n = len(_EXECUTE.findall(m["content"]))
                executes += n
                t.out(m["content"], n)
            else:
                t.inp(m["role"])
        if executes != rec["state"]["agent_action_count"]["use_tool"]:
            raise ValueError("<execute> blocks and use_tool disagree")
        threads.append(t)
    return _merge("MINT benchmark results JSONL", threads)


# --- ChatArena Umshini environment logs ---------------------------------------------------------------------------

def chatarena_umshini_env_log(path: Path) -> dict:
    """ChatArena Umshini environment log (``docs/tutorials/umshini/env_logs``: the message pool of one debate game
    dumped as a list of ``{name, turn, text}``). One file is one game, one conversation (shared rule of this set:
    one shared transcript). The two debaters' messages (``Opponent`` / ``Proponent``) are each one call of that
    speaker's model. ``Moderator`` messages are the environment's: the opening at turn 0 is the game's fixed
    template (input, not a call); the closing message that names the ``WINNER:`` is the judge model's verdict (one
    call, its own speaker). Context of a call: every earlier message, ``assistant`` if the same speaker wrote it,
    ``user`` otherwise (the judge's context is all ``user``). No tool calls."""
    msgs = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts = [], []
    for i, m in enumerate(msgs):
        speaker = m["name"]
        if speaker == "Moderator":
            if "WINNER:" not in m["text"]:
                continue
            speaker = "judge"
        contexts.append(["assistant" if (p["name"] == speaker) else "user" for p in msgs[:i]])
        completions.append(m["text"])
    return _result("ChatArena Umshini env log JSON", 1 if completions else 0, completions, contexts, 0)


# --- Mastra LLM recorder ------------------------------------------------------------------------------------------

def mastra_llm_recording(path: Path) -> dict:
    """Mastra LLM recorder file (``__recordings__/<name>.json`` of Mastra's test recorder: ``{meta: {name, testFile,
    testName, provider, model, createdAt}, recordings: [{hash, request: {url, method, body, timestamp}, response:
    {status, statusText, headers, body, isStreaming}}]}``; bodies are OpenAI Chat Completions requests and
    responses). Each recording is one call: context ``request.body.messages``, completion
    ``response.body.choices[0].message.content`` (empty where the reply is only a function call), tool calls its
    ``tool_calls`` (the forced ``json`` function counts, shared rule of this set). The recordings are single-shot
    judge calls: a later prompt quotes an earlier call's result as text but no request carries an earlier call's
    messages and reply, so each recording is its own conversation."""
    threads = []
    for rec in json.loads(path.read_text(encoding="utf-8"))["recordings"]:
        t = _Thread([m["role"] for m in rec["request"]["body"]["messages"]])
        msg = rec["response"]["body"]["choices"][0]["message"]
        t.out(msg.get("content") or "", len(msg.get("tool_calls") or []))
        threads.append(t)
    return _merge("Mastra LLM recorder JSON", threads)


COUNTERS = {
    "mirascope-e2e-snapshot": mirascope_e2e_snapshot,
    "mint-bench-results": mint_bench_results,
    "chatarena-umshini-env-log": chatarena_umshini_env_log,
    "mastra-llm-recording": mastra_llm_recording,
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
