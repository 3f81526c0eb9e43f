"""Hand counts of the eighty-fourth held-out set (benchmarks/data/heldout_formats_84/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself.

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
- a HeurAgenix chat dump (the ``.json`` / ``.txt`` pair its GPT helper writes for each named stage of a run:
  ``background``, ``heuristic_pool``, ``step_N``, ``bottleneck_operations``, ``suggestion_N`` ...) is the whole message
  list of one chat at the moment it was saved: each ``assistant`` message is one call whose context is the roles of
  the messages before it; the file is one conversation;
- HeurAgenix saves the chat again at each stage, and a later stage starts from a chat saved earlier in the same run,
  so one file's first exchanges are the same replies (same text, same context) as an earlier file of the run holds;
  counts are per file: every assistant message the file records, with the context it records, is a call of that file;
- the heuristic names, hyper-parameters and Python code the model writes between HeurAgenix's ``***...***`` markers
  are reply text that HeurAgenix parses, not tool calls (no function / tool-call part is emitted): no tool calls;
- the ``.txt`` rendering writes each message as its role on a line of its own, the message text, a line of 84
  hyphens and a blank line; the completion is the text between the role line and the hyphen line (without the
  newline before the hyphens); in the ``.json`` rendering the completion is the ``text`` of the message's
  ``content`` parts, joined (one part per message in this set);
- problem descriptions, heuristic lists and the solver state HeurAgenix pastes into its prompts are context, not
  calls; an assistant message ``Exceeded the maximum number of attempts`` (HeurAgenix's own text after failed
  requests) would be a failed request, not a call (none in this set);
- a pCLIP interaction log (``llm_interactions_<timestamp>.json``, JSON Lines written by ``LLMOperatorInterface``)
  holds one ``{timestamp, prompt, suggestion}`` object per request: each line is one call whose context is the
  ``prompt`` (sent as the only ``user`` message, no system message) and whose completion is the ``suggestion``;
  the ``Interaction history`` block in later prompts is pCLIP's own summary of earlier gains and metrics (numbers
  parsed from replies and simulations), not the earlier replies, so each line is its own conversation; a reply cut
  off by the request's token limit is still one call;
- ids, timestamps, folder names, gains and performance metrics are metadata or context, not calls.
Context roles: as recorded (``user`` / ``assistant``; no system message in these files).

Run: ``python benchmarks/data/heldout_formats_84/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_RULE = "-" * 84 + "\n"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _calls(messages: list) -> tuple:
    """Each assistant message is one call; its context is the roles of the messages before it."""
    completions, contexts = [], []
    for i, (role, text) in enumerate(messages):
        if role == "assistant":
            completions.append(text)
            contexts.append([r for r, _ in messages[:i]])
    return completions, contexts


def heuragenix_chat_txt(path: Path) -> dict:
    """HeurAgenix chat dump, text rendering (``output/<problem>/.../<stage>.txt``, written by
    ``BaseLLMClient.dump``): per message a role line
    (``user`` / ``assistant``), the message text, a line of 84 hyphens and a blank line. Each ``assistant`` message
    is one call (context: the roles before it), completion the text between its role line and the hyphen line. One
    conversation per file; no tool calls (HeurAgenix's ``***...***`` answers are reply text)."""
    text = path.read_text(encoding="utf-8")
    messages = []
    for block in text.split(_RULE):
        block = block.lstrip("\n")
        if not block.strip():
            continue
        role, _, body = block.partition("\n")
        messages.append((role, body[:-1] if body.endswith("\n") else body))
    completions, contexts = _calls(messages)
    return _result("HeurAgenix chat dump (text rendering)", 1 if completions else 0, completions, contexts, 0)


def heuragenix_chat_json(path: Path) -> dict:
    """HeurAgenix chat dump, JSON rendering (``output/<problem>/.../<stage>.json``): a JSON array of
    ``{"role", "content": [{"type": "text", "text"}]}`` messages, indented. Each ``assistant`` message is one call
    (context: the roles before it), completion the joined ``text`` of its parts. One conversation per file; no tool
    calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    messages = []
    for m in data:
        content = m["content"]
        text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
        messages.append((m["role"], text))
    completions, contexts = _calls(messages)
    return _result("HeurAgenix chat dump (JSON rendering)", 1 if completions else 0, completions, contexts, 0)


def pclip_interactions(path: Path) -> dict:
    """pCLIP interaction log (``src/interactions/llm_interactions_<timestamp>.json``): JSON Lines, one
    ``{"timestamp", "prompt", "suggestion"}`` object per Claude request of the PID-tuning assistant. Each line is one
    single-shot call (context ``user``: the prompt; completion: ``suggestion``), its own conversation; no tool
    calls."""
    completions, contexts = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        completions.append(record["suggestion"])
        contexts.append(["user"] if record["prompt"] else [])
    return _result("pCLIP LLM interaction log (JSON Lines)", len(completions), completions, contexts, 0)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("pclip__"):
        out = pclip_interactions(path)
    elif name.endswith(".json"):
        out = heuragenix_chat_json(path)
    else:
        out = heuragenix_chat_txt(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
