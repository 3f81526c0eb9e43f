"""Hand counts of the ninetieth held-out set (benchmarks/data/heldout_formats_90/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in the
file itself.

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
- a FlowGPT prompt page as exported into the BlackFriday-GPTs-Prompts collection (``gpts/NAME.md``) holds one chat:
  the page title and description (the prompt author's text, not the model's), a ``# Prompt`` section with the prompt
  in a fenced block, a ``## Welcome Message`` section and a ``## Conversation`` section of turns, each starting at a
  line ``**ASSISTANT**: `` or ``**USER**: `` and running to the line before the next such marker (or the end of the
  file); a turn's text may span many lines, blank lines and its own headings included;
- the prompt is the chat's system prompt: it is the head of every call's context, written ``system``;
- each ASSISTANT turn of the Conversation section is one LLM call; its context is the prompt followed by the turns
  before it (``user`` / ``assistant``); the first ASSISTANT turn, which comes before any USER turn, is the model's
  reply to the prompt alone (a call whose context is only the system prompt);
- the Welcome Message is the page's copy of that first reply (the text is the same in every file of this set), shown
  above the chat: it is not a call of its own and not part of any context;
- two ASSISTANT turns with no USER turn between them would be one call (split reply, shared rule; none in this set);
  a USER turn with no ASSISTANT turn after it would be input with no call (none in this set);
- role names the model writes inside one reply (``RESEARCHER:``, ``PEER REVIEWER:``, ``Revised Answer:`` in the Swarm
  Review chat) are the text of that one reply: simulated speakers in one completion, not separate calls;
- one conversation per file; no tool calls (the pages record no function or tool-call parts);
- the completion recorded here is the turn's text after the ``**ASSISTANT**: `` marker, with the trailing line breaks
  of the turn removed; links, ids and the ``[Start Chat]`` URL are metadata, not context.
Context roles: ``system`` for the prompt, then ``user`` / ``assistant`` for the earlier turns, as recorded.

Run: ``python benchmarks/data/heldout_formats_90/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_TURN = re.compile(r"^\*\*(ASSISTANT|USER)\*\*: ?", re.M)


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def flowgpt_page(path: Path) -> dict:
    """FlowGPT prompt page exported as Markdown (BlackFriday-GPTs-Prompts ``gpts/NAME.md``): ``# Prompt`` with the
    prompt in a fenced block (the system prompt), ``## Welcome Message`` (the page's copy of the first reply, not a
    call), then ``## Conversation`` whose turns start at ``**ASSISTANT**: `` / ``**USER**: `` line markers and run
    to the next marker. Each ASSISTANT turn (consecutive ASSISTANT turns merged, none here) is one call; its context is
    ``system`` plus the roles of the turns before it; its completion the turn's text without trailing line breaks.
    One conversation per file, no tool calls; speaker labels the model writes inside a reply are part of that reply."""
    text = path.read_text(encoding="utf-8")
    prompt = re.search(r"^# Prompt\n\n```\n(.*?)\n```\n", text, flags=re.S | re.M)
    head = ["system"] if prompt and prompt.group(1).strip() else []
    conversation = text.split("\n## Conversation\n", 1)[1]
    marks = list(_TURN.finditer(conversation))
    turns = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(conversation)
        turns.append((m.group(1).lower(), conversation[m.end():end].rstrip("\n")))
    completions, contexts, ctx = [], [], list(head)
    previous = None
    for role, body in turns:
        if role == "assistant" and previous == "assistant":  # a split reply: same call, same context entry
            completions[-1] += "\n" + body
        else:
            if role == "assistant":
                completions.append(body)
                contexts.append(list(ctx))
            ctx.append(role)
        previous = role
    return _result("FlowGPT prompt page Markdown (BlackFriday-GPTs-Prompts export)", 1 if completions else 0,
                   completions, contexts, 0)


def count(path: Path) -> dict:
    return {"file": path.name, **flowgpt_page(path)}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
