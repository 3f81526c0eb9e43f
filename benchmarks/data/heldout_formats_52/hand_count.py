"""Hand counts of the fifty-second held-out set (benchmarks/data/heldout_formats_52/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read
in the file itself (and, for the capture files, in the capture script that wrote them).

Per file: the conversations (one per distinct agent thread / session / chat that holds at least one LLM call), the
LLM calls (turns the model produced, each with its own context), the tool calls the model emitted in those turns,
the text of each completion and the roles of each call's context. ``readable`` is false where no LLM call with a
readable context is recorded (one file in this set: a request the provider refused before any reply).

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
Rules made explicit for this set:
- a request answered only by an HTTP error (no stream event from the model) is a failed request: no call, and a file
  holding only that counts 0/0/0 and is not readable;
- the events of one streamed response (``response.created`` ... ``response.completed``) are one call; its completion
  is the concatenated ``response.output_text.delta`` text of its message items (a reply made only of tool calls has
  the empty completion); ``function_call`` output items are tool calls; ``web_search_call`` items are searches the
  provider ran during generation and are not counted;
- a shell transcript's prompt line with no end-of-prompt marker after it (the empty prompt left at the end of a
  saved transcript) was never submitted and is not a call; a prompt the shell marked as failed with no reply is a
  failed request;
- the request's ``instructions`` are the system prompt, written ``system`` at the head of the context; a system
  prompt only named in a file (chatgpt-shell's ``General`` in the prompt label) and not recorded is not in the
  context.
Context roles: a message made only of tool results is written ``tool``; a recorded tool call the model made in an
earlier turn is written ``assistant``.

Run: ``python benchmarks/data/heldout_formats_52/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"

END_OF_PROMPT = "<shell-maker-end-of-prompt>"
FAILED = "<shell-maker-failed-command>"
# chatgpt-shell's prompt: "<Model family>(<model>/<system prompt name>)> " at the start of a line
_PROMPT = re.compile(r"^([A-Za-z][\w .-]*\([^()\n]*\)>) ", re.M)


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def chatgpt_shell_transcript(path: Path) -> dict:
    """chatgpt-shell (Emacs) saved session transcript (``chatgpt-shell-save-session-transcript``: the shell buffer
    written out as text). A welcome banner, then ``<shell-maker-failed-command>`` (the shell's marker closing the
    banner), then rounds: a prompt line ``Claude(opus-4.5/General)> `` followed by the user's text, the marker
    ``<shell-maker-end-of-prompt>``, and the model's reply as plain text up to the next prompt line. The transcript
    ends with an empty prompt (never submitted: not a call). The shell sends the earlier rounds with every request
    (one session), so the file is one conversation whose k-th call's context is the k-1 earlier prompts and replies
    plus the new prompt. The system prompt is only named (``General``) in the prompt label, not recorded. No tool
    calls (the shell has none)."""
    text = path.read_text(encoding="utf-8")
    session = text.split(FAILED + "\n", 1)[1]          # after the banner
    first = _PROMPT.match(session)
    prompt = first.group(1) + " "
    rounds = session[len(prompt):].split("\n" + prompt)
    completions, contexts, ctx = [], [], []
    for chunk in rounds:
        if END_OF_PROMPT not in chunk:
            continue                                   # the empty prompt left at the end
        _user, reply = chunk.split(END_OF_PROMPT, 1)
        reply = reply[1:] if reply.startswith("\n") else reply
        if reply.strip() in ("", FAILED):
            continue                                   # failed command, no reply
        ctx.append("user")
        contexts.append(list(ctx))
        completions.append(reply)
        ctx.append("assistant")
    return _result("chatgpt-shell session transcript", 1 if completions else 0, completions, contexts, 0)


def _input_roles(items: list) -> list:
    roles = []
    for item in items:
        kind = item.get("type")
        if kind == "message":
            roles.append(item["role"])
        elif kind in ("function_call", "web_search_call", "reasoning"):
            roles.append("assistant")
        elif kind == "function_call_output":
            roles.append("tool")
    return roles


def magenta_capture(path: Path) -> dict:
    """magenta.nvim OpenAI capture fixture (written by the plugin's dev capture harness
    ``node/server/src/providers/openai-capture.ts``: ``JSON.stringify({turns}, null, 2)``): ``{turns: [{request,
    events}]}`` where ``request`` is the exact Responses-API body sent (``model``, ``instructions``, ``input``,
    ``tools``, ...) and ``events`` the raw stream events received, in order (``response.created``,
    ``response.output_item.added`` / ``.done``, ``response.output_text.delta``, ``response.function_call_arguments.*``,
    ``response.web_search_call.*``, ``response.completed``), or ``{type: "http_error", status, body}`` when the
    request was refused. Each turn with model events is one call (shared rule: one streamed reply); a turn with only
    an HTTP error is a failed request. Every file here holds one turn: one conversation when it holds a call."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts, tools = [], [], 0
    for turn in data["turns"]:
        events = turn["events"]
        if not any(e.get("type", "").startswith("response.") for e in events):
            continue                                   # refused (http_error): no call
        req = turn["request"]
        ctx = (["system"] if req.get("instructions") else []) + _input_roles(req.get("input", []))
        text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
        tools += sum(1 for e in events
                     if e["type"] == "response.output_item.done" and e["item"]["type"] == "function_call")
        completions.append(text)
        contexts.append(ctx)
    return _result("magenta.nvim OpenAI capture JSON", 1 if completions else 0, completions, contexts, tools)


COUNTERS = {
    "chatgpt-shell-transcript": chatgpt_shell_transcript,
    "magenta-capture": magenta_capture,
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
