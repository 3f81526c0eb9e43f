"""Hand counts of the fifty-third held-out set (benchmarks/data/heldout_formats_53/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself.

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (one file in this set: a Jupyter AI export that kept none of the model's replies).

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
- an action the model writes only as text in its reply (MLAgentBench's ``Action: ...`` / ``Action Input: ...``
  lines) with no structured tool-call record is not a tool call (as in set 14);
- text an application writes into the chat under the assistant's name without a model call (Jupyter AI's static
  help message, its "Sorry, an error occurred" tracebacks) is not model output, and a user message whose reply the
  file does not keep is input with no call;
- a retry whose prompt repeats the failed call's prompt with a correction note but not the failed reply does not
  continue that call: it is a new single-shot conversation (MLAgentBench's format-check retry);
- a prompt that quotes an earlier reply as text (MLAgentBench's research-log summary prompt quoting the step's
  reply) mentions that reply; it is context of the new call, not a further call;
- the raw provider response a tool stores beside a reply (ellmer's ``json`` property of an ``AssistantTurn``) is a
  copy of the same call's output, not another call;
- a tool-call-only reply is a call (with an empty completion text) and its tool requests are tool calls.
Context roles: a message made only of tool results is written ``tool``; a system prompt the application builds at
request time but does not save is not part of the recorded context (none of these files saves one).

Run: ``python benchmarks/data/heldout_formats_53/hand_count.py`` (one JSON line per file).
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


_PROMPT = "===================prompt====================="
_RESPONSE = re.compile(r"^===================(.+) response \((\d+)\)=====================$")
_TOKENS = "===================tokens====================="


def mlagentbench(path: Path) -> dict:
    """MLAgentBench research-agent LLM log (``agent_log/step_N_log.log``, ``step_N_summary_log.log`` and
    ``env_log/tool_logs/step_N_tool_log.log[_k]``, written by ``MLAgentBench/LLM.py`` ``log_to_file``): one block per
    request, ``===================prompt=====================`` then the whole prompt text, then
    ``===================<model> response (<max tokens>)=====================`` then the reply text, then
    ``===================tokens=====================`` with the prompt / sampled token counts. Each prompt / response
    pair is one call whose context is its prompt, sent as one user message (the research agent rebuilds the whole
    prompt each step, earlier steps written into it as text); each pair is its own single-shot conversation. Three
    files hold one pair each; ``house-price_1__step_7_log.log`` holds two: the agent's reply was refused by its
    format check and the step retried with the same prompt plus ``Your response was in incorrect format. ...``
    appended, the first reply not in it, so the retry does not continue the first call (shared rule): 2
    conversations, 2 calls. Actions are ReAct text (``Action:`` / ``Action Input:`` lines), not structured tool
    calls: 0 tool calls."""
    threads, cur, state = [], None, None
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line == _PROMPT:
            cur = {"prompt": [], "response": []}
            threads.append(cur)
            state = "prompt"
        elif _RESPONSE.match(line) and cur is not None:
            state = "response"
        elif line == _TOKENS:
            state = None
        elif state is not None:
            cur[state].append(line)
    out = []
    for block in threads:
        t = _Thread(["user"])
        t.out("\n".join(block["response"]).strip())
        out.append(t)
    return _merge("MLAgentBench research-agent LLM log", out)


def _text_of(contents: list) -> str:
    return "".join(c.get("text") or "" for c in contents if c.get("content_type") == "text")


def querychat_shinychat_py(path: Path) -> dict:
    """querychat (Python) chat history as saved by shinychat's history store, ``turns.jsonl`` of one conversation
    (``.shinychat/conversations/<app>/<session>/<conversation id>/``; one line per chatlas turn, ``{seq, data:
    {contents: [{content_type, ...}], role, tokens?, finish_reason?, cost?}}``). The conversation's ``record.json``
    beside it (not in the set) shows one linear path holding turns 0 to 5, so no branch is left out. One file is one
    conversation. Each ``assistant`` turn is one model response (one call); its ``text`` parts are the completion,
    its ``thinking`` part (empty text, encrypted reasoning) belongs to it, each ``tool_request`` part is a tool call.
    ``user`` turns made only of ``tool_result`` parts are tool input (role ``tool``), others user input. No system
    prompt is saved. Here: 3 calls (``querychat_get_schema``, then ``querychat_update_dashboard``, then a closing
    reply whose text is the literal ``[empty string]``), 2 tool calls."""
    t = _Thread()
    for rec in sorted(_lines(path), key=lambda r: r["seq"]):
        data = rec["data"]
        contents = data.get("contents") or []
        if data["role"] == "assistant":
            t.out(_text_of(contents), sum(c.get("content_type") == "tool_request" for c in contents))
        elif contents and all(c.get("content_type") == "tool_result" for c in contents):
            t.inp("tool")
        else:
            t.inp(data["role"])
    return _merge("querychat / shinychat (Python) history turns.jsonl", [t])


def _r_unserialize(node: dict):
    """Turns jsonlite ``serializeJSON`` output back into plain values: lists with a ``names`` attribute become
    dicts, other lists lists, atomic vectors their values (a length-one vector its single value)."""
    kind = node.get("type")
    if kind == "NULL":
        return None
    if kind == "list":
        values = [_r_unserialize(v) for v in node.get("value", [])]
        names = (node.get("attributes") or {}).get("names")
        if names is None:
            return values
        keys = names.get("value", [])
        return dict(zip(keys, values))
    value = node.get("value")
    if isinstance(value, list) and len(value) == 1:
        return value[0]
    return value


def querychat_shinychat_r(path: Path) -> dict:
    """querychat (R) chat history as saved by shinychat's R history store, ``turns.jsonl`` of one conversation (one
    line per ellmer turn, ``{seq, data}`` where ``data`` is a JSON string: jsonlite's ``serializeJSON`` of ellmer's
    ``contents_record()`` of the turn, an S7 object ``{version, class, props}`` with class ``ellmer::UserTurn`` or
    ``ellmer::AssistantTurn`` and ``props.contents`` a list of ``ellmer::ContentText`` / ``ContentToolRequest`` /
    ``ContentToolResult`` / ``ContentThinking`` objects). The conversation's ``record.json`` (not in the set) shows
    one linear path over both turns. One file is one conversation; each ``AssistantTurn`` is one call, its
    ``ContentText`` texts the completion, each ``ContentToolRequest`` a tool call; ``UserTurn``s made only of
    ``ContentToolResult`` are tool input. The ``json`` property (the raw OpenAI Responses API response, its
    ``output`` repeating the text, ``tools`` the tool definitions sent) is the same call, not another. No system
    prompt is saved. Here: 1 call, a text reply, 0 tool calls."""
    t = _Thread()
    for rec in sorted(_lines(path), key=lambda r: r["seq"]):
        turn = _r_unserialize(json.loads(rec["data"]))
        contents = [(c["class"], c["props"]) for c in (turn["props"].get("contents") or [])]
        classes = [c for c, _ in contents]
        if turn["class"] == "ellmer::AssistantTurn":
            text = "".join(p.get("text") or "" for c, p in contents if c == "ellmer::ContentText")
            t.out(text, classes.count("ellmer::ContentToolRequest"))
        elif classes and all(c == "ellmer::ContentToolResult" for c in classes):
            t.inp("tool")
        else:
            t.inp("user")
    return _merge("querychat / shinychat (R) history turns.jsonl (ellmer turns, jsonlite-serialized)", [t])


_SPEAKER = re.compile(r"^\*\*([^*]+)\*\*: ", re.MULTILINE)


def jupyter_ai_export(path: Path) -> dict:
    """Jupyter AI 2.x chat export (the ``/export`` command's Markdown: each message a paragraph
    ``**<sender>**: <body>``, the AI persona's sender ``Jupyternaut``, the human's their user name). Jupyternaut's
    messages here are the static help message it posts on start (``Hi there! I'm Jupyternaut, ...``) and two
    ``Sorry, an error occurred. Details below:`` tracebacks (an Ollama ``ResponseError``) - application text, no
    model output, the errors answering the sixth and seventh questions. The first five questions have no reply in the
    file (the export kept no streamed reply), so no call is recorded: 0 conversations, 0 calls, 0 tool calls, not readable. Any other Jupyternaut
    message would be one call, its context the messages before it."""
    text = path.read_text(encoding="utf-8")
    marks = list(_SPEAKER.finditer(text))
    t = _Thread()
    for i, m in enumerate(marks):
        body = text[m.end(): marks[i + 1].start() if i + 1 < len(marks) else len(text)].strip()
        if m.group(1) == "Jupyternaut":
            if body.startswith(("Hi there! I'm Jupyternaut", "Sorry, an error occurred.")):
                continue
            t.out(body)
        else:
            t.inp("user")
    return _merge("Jupyter AI chat export Markdown", [t])


COUNTERS = {
    "mlagentbench": mlagentbench,
    "querychat-shinychat-py": querychat_shinychat_py,
    "querychat-shinychat-r": querychat_shinychat_r,
    "jupyter-ai-export": jupyter_ai_export,
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
