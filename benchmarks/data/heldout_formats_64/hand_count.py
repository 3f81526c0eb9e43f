"""Hand counts of the sixty-fourth held-out set (benchmarks/data/heldout_formats_64/files), computed from the raw
files with the standard library only (this script does not import tracedraft), each by its format's layout as read in
the file itself and in the code of the tool that wrote it.

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
- a cache entry that stores the message list sent and the reply received for it is one recorded call: its
  ``messages`` are the context, its ``response`` the completion; the entry's other keys (transform name, function
  identifier, model id) are metadata, and the reply is not repeated as a message of its own;
- the reply is the whole string the tool saved, Markdown code fences included where the model wrote them; code the
  model wrote inside its reply (a translated function, a C++ program) is text, not a tool call;
- a saved chat whose ``dialog`` list ends with the assistant message is one conversation; each assistant message is
  one call whose context is the messages before it;
- a system prompt or chat template the application adds at request time but does not save is not part of the
  recorded context (the web demo applies the model's chat template; only the dialog is saved).
Context roles: as recorded.

Run: ``python benchmarks/data/heldout_formats_64/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def c2rust_llm_cache(path: Path) -> dict:
    """c2rust-postprocess LLM cache entry TOML (written by ``c2rust-postprocess/postprocess/cache.py`` of
    immunant/c2rust: one entry per request, stored under ``tests/llm-cache/{transform}/{identifier}/`` as
    ``{sha256 of the messages}.toml`` (December 2025 layout) or ``{sha256}/metadata.toml`` (later layout); top-level
    keys ``transform``, ``identifier``, ``model``, ``response`` (multiline basic strings) and an array of tables
    ``[[messages]]`` with ``role`` and ``content``). Each file is one cached LLM call (set rule): context = the roles
    of ``messages`` (one ``user`` message here, the CommentTransfer prompt holding the C function and the
    c2rust-transpiled Rust function), completion = ``response`` (the Rust function with the C comments carried
    over; some replies are wrapped in a ```rust fence). One conversation per file; no tool calls; no system prompt
    is recorded."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data["response"], str) and data["response"].strip()
    roles = [m["role"] for m in data["messages"]]
    assert roles and "assistant" not in roles
    return _result("c2rust-postprocess LLM cache entry TOML", 1, [data["response"]], [roles], 0)


def fortran2cpp_webdemo(path: Path) -> dict:
    """Fortran2Cpp (F2C-Translator) web-demo saved dialog JSON (written by ``Web_demo/chatbot.py``'s ``save_json``
    after every model turn: ``{id, dialog: [{role, content}], mode, datetime}``, one file per chat session, named by
    the session uuid; ``mode`` ``openci_only`` is the OpenCodeInterpreter-based generation without code execution).
    One file is one conversation. Each run of assistant messages with no input between them is one call; its
    ``content`` is the completion (a C++ translation in a Markdown code fence, plain text), its context the roles
    of the messages before it. Here: one user message (the Fortran program), one assistant reply: one call. No tool
    calls; the chat template's system text is applied at request time and not saved."""
    data = json.loads(path.read_text(encoding="utf-8"))
    completions, contexts, ctx, open_call = [], [], [], False
    for m in data["dialog"]:
        if m["role"] == "assistant":
            if not open_call:
                completions.append("")
                contexts.append(list(ctx))
                ctx.append("assistant")
                open_call = True
            completions[-1] += m["content"] or ""
        else:
            ctx.append(m["role"])
            open_call = False
    return _result("Fortran2Cpp web-demo saved dialog JSON", 1 if completions else 0, completions, contexts, 0)


COUNTERS = {
    "c2rust-llm-cache": c2rust_llm_cache,
    "fortran2cpp-webdemo": fortran2cpp_webdemo,
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
