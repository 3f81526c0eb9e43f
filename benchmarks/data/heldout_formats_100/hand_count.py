"""Hand counts of the hundredth held-out set (benchmarks/data/heldout_formats_100/files), computed from the raw files
with the standard library only (this script does not import tracedraft), each by its format's layout as read in
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
- a recorded request / response fixture (one file written per model call by the tool's capture client) holds one
  call: its context is the request's messages, its completion the response; an ``ai`` / assistant message inside the
  request (none in this set's request fixtures) would be context sent again, not a call of that file;
- another model's answer quoted as data inside a prompt (Karenina's abstention judge reads the answering model's
  response inside its ``human`` message) is context text, not a recorded call;
- a trace that renders the same messages twice (Karenina's ``trace_messages`` list and its ``raw_trace`` text, the
  LangChain ``pretty_print`` of the same run) holds the calls once: the text rendering is not counted again;
- a trace whose first recorded message is the model's reply (no user message in the list) takes its context from the
  question the file records beside it (``metadata.question_text``), written ``user``; the answering tool's own
  system prompt is not recorded;
- a ``result_metadata`` naming a parsing model (Karenina parses the final answer with a second LLM call) mentions a
  call whose context and reply the file does not record: not counted; ``verify_result`` is the tool's own check;
- the LangChain message types map to roles as ``system`` -> system, ``human`` -> user, ``ai`` -> assistant,
  ``tool`` -> tool; a response whose ``content`` is a list of Anthropic blocks has as completion the text of its
  ``text`` blocks and one tool call per ``tool_use`` block;
- ids, hashes, timestamps, token counts (zeros as captured), model names and tool results are metadata or tool input,
  not completions.
Context roles: as recorded (``user`` for a bare question string).

Run: ``python benchmarks/data/heldout_formats_100/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _reply(content) -> tuple[str, int]:
    """Completion text and tool-call count of a response ``content`` (a string, or a list of Anthropic blocks)."""
    if isinstance(content, str):
        return content, 0
    text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
    return text, sum(1 for b in content if b.get("type") == "tool_use")


def karenina_llm_fixture(path: Path) -> dict:
    """Karenina LLM response fixture (``tests/fixtures/llm_responses/<model>/<scenario>/<prompt sha256>.json``, written
    by ``scripts/capture_fixtures.py``'s ``CaptureLLMClient`` around a real ``ChatAnthropic`` call):
    ``{metadata: {scenario, model, timestamp, prompt_hash}, request: {messages: [LangChain message dumps with
    type system / human / ai / tool], kwargs}, response: {content, id, model, usage}}``. One file is one call and one
    conversation: its context is the roles of ``request.messages`` (types mapped to roles), its completion the
    response text (``content`` a string, or the ``text`` blocks of a block list), its tool calls the ``tool_use``
    blocks of ``response.content``. The two files here hold no ``ai`` message in the request."""
    data = json.loads(path.read_text(encoding="utf-8"))
    context = [_ROLES.get(m.get("type"), m.get("type")) for m in data["request"]["messages"]]
    text, tools = _reply(data["response"]["content"])
    return _result("Karenina LLM response fixture JSON", 1, [text], [context], tools)


def karenina_trace_fixture(path: Path) -> dict:
    """Karenina claude_tool trace fixture (``tests/fixtures/llm_responses/<model>/claude_tool_trace/trace_<hash>.json``,
    written by ``scripts/capture_fixtures.py``'s ``claude_tool_trace`` scenario after a real verification run):
    ``{metadata: {scenario, model, timestamp, question_id, question_text, description}, trace_messages: [{role,
    content, block_index, tool_calls? | tool_result?}], raw_trace, verify_result, result_metadata}``. One run, one
    conversation. Each run of ``assistant`` messages with no ``tool`` message between them is one call (they alternate
    here: 4 calls); its completion is the ``content`` text, each ``tool_calls`` entry one tool call; ``tool`` messages
    are tool input. The first call's context is the question (``user``, from ``metadata.question_text``).
    ``raw_trace`` renders the same messages again and is not counted; the parsing model's call named in
    ``result_metadata`` is mentioned, not recorded."""
    data = json.loads(path.read_text(encoding="utf-8"))
    ctx = ["user"] if data["metadata"].get("question_text") else []
    completions, contexts, tools = [], [], 0
    open_call = False
    for m in data["trace_messages"]:
        if m["role"] == "assistant":
            if not open_call:
                completions.append("")
                contexts.append(list(ctx))
                ctx.append("assistant")
                open_call = True
            completions[-1] += m.get("content") or ""
            tools += len(m.get("tool_calls") or [])
        else:
            ctx.append(m["role"])
            open_call = False
    return _result("Karenina claude_tool trace fixture JSON", 1 if completions else 0, completions, contexts, tools)


def karenina_docs_capture(path: Path) -> dict:
    """Karenina documentation capture (``docs/data/quickstart/NNN_<hash>.json``, written by
    ``docs/data/quickstart/capture_fixtures.py``, which patches ``BaseChatModel.ainvoke`` and runs the quickstart flow
    against Claude): ``{sequence, prompt_hash, model, request: {messages: [{type, content}]}, response: {content, id,
    usage_metadata, response_metadata}}``. One file is one call and one conversation: context the roles of
    ``request.messages`` (types mapped to roles), completion ``response.content``. No tool calls here."""
    data = json.loads(path.read_text(encoding="utf-8"))
    context = [_ROLES.get(m.get("type"), m.get("type")) for m in data["request"]["messages"]]
    text, tools = _reply(data["response"]["content"])
    return _result("Karenina quickstart LLM capture JSON", 1, [text], [context], tools)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("karenina__docs__"):
        out = karenina_docs_capture(path)
    elif "__claude_tool_trace__" in name:
        out = karenina_trace_fixture(path)
    else:
        out = karenina_llm_fixture(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
