"""Hand counts of the hundred-and-sixth held-out set (benchmarks/data/heldout_formats_106/files), computed from the
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
- a chat bot's per-chat history store (a JSON object keyed by the messaging platform's user / chat id, each value the
  list of messages the bot keeps and resends for that chat) holds one conversation per key that has at least one
  assistant message; each ``assistant`` message is one call whose context is the messages before it under the same
  key, as recorded (the bot may have trimmed what it actually sent; the store is what the file records);
- two ``assistant`` messages in a row, each a whole reply on its own (not the pieces of one reply: each starts its
  answer afresh, here two full answers to the same question), are two calls: the shared rule on split replies joins
  the pieces of one streamed reply, not two complete generations; the second call's context is the record before it
  (it holds the first reply);
- ``user`` messages with no ``assistant`` message after them (the bot's request failed and the user wrote again) are
  context of the next call, not calls;
- a thread whose stored list starts with an ``assistant`` message (its opening ``user`` message trimmed from the
  store) records that reply without any of its input: it is not counted as a call (a call is a model invocation
  whose input is recorded), but it is context of the calls after it;
- ids (the Discord user ids used as keys) are metadata, not context.
Rules made explicit for the files added by the second evaluator (LLM developer tools: a code-migration agent and a
unit-test-generation experiment harness; written before the product was run):
- an agent trajectory saved as one message list (a Strands ``Agent``'s ``messages``: ``{role, content: [blocks]}``)
  is one conversation; each ``assistant`` message is one call, its ``reasoningContent``, ``text`` and ``toolUse``
  blocks together (one model turn), its context the messages before it; each ``toolUse`` block is one tool call; a
  ``user`` message made only of ``toolResult`` blocks is tool output (context, not a call); the agent's system
  prompt is not in the file and is not invented; the migration outcome flags beside the list are metadata;
- an experiment-runner record of a chat driven step by step (``raw_results.responses``: ``[{step, prompt, response,
  response_time}]``, all steps sent in one chat) is one conversation with one call per step, each step's context
  the earlier steps' prompts and responses plus its own prompt; ``final_response`` repeats the last step's reply and
  is not another call; a single-prompt record (``raw_results: {prompt, response}``) is one conversation with one
  call; text the page scraper copied into a reply (a code block's language label and button captions) belongs to
  that reply; model name, strategy, context level, timings and file paths are metadata.
Context roles: as recorded, except that a message made only of tool results is written ``tool``.

Run: ``python benchmarks/data/heldout_formats_106/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def bemo_discord_conversations(path: Path) -> dict:
    """BEMO Discord chat bot's memory file ``conversations.json`` (Ammad-Majeed/BEMO-Discord-ChatBot, JavaScript,
    discord.js + the OpenAI SDK: ``{<discord user id>: [{role: user | assistant, content}]}``, written with
    ``JSON.stringify(conversations, null, 2)`` after each ``gpt!ask`` reply). One conversation per user id; each
    ``assistant`` message is one call (``gpt-4o-mini`` per ``index.js``, not recorded in the file) whose context is
    the messages before it under that id; two whole replies in a row are two calls, unanswered ``user`` messages are
    context, a reply opening a list (its input trimmed away) is context only, not a call (rules above). No system
    prompt, no tool calls."""
    data = json.loads(path.read_text(encoding="utf-8"))
    convs, completions, contexts = 0, [], []
    for _key, messages in data.items():
        ctx: list = []
        n = 0
        for m in messages:
            if m["role"] == "assistant" and ctx:
                completions.append(m["content"])
                contexts.append(list(ctx))
                n += 1
            ctx.append(m["role"])
        convs += 1 if n else 0
    return _result("BEMO Discord bot per-user conversation memory JSON", convs, completions, contexts, 0)


def javamigration_strands_trajectory(path: Path) -> dict:
    """JavaMigrationAgent trajectory JSON (amazon-science/JavaMigration, ``data/strands_migration_traces/<strategy>/
    <owner>__<repo>.json``, written by ``BaseMigrationAgent.save_results``: ``{max_migration_success,
    min_migration_success, trajectory}``, ``trajectory`` the Strands ``Agent.messages`` of one Java 8 to 17 migration
    run: ``[{role: user | assistant, content: [{text} | {reasoningContent: {reasoningText}} | {toolUse: {toolUseId,
    name, input}} | {toolResult: {toolUseId, status, content}}]}]``). One conversation per file; each ``assistant``
    message is one call (reasoning, text and tool uses of one turn together), its context the messages before it
    (the opening ``user`` task text, earlier turns, ``user`` messages of tool results written ``tool``); each
    ``toolUse`` block is one tool call (parallel ``toolUse`` blocks of one turn are one call with several tool
    calls). The completion text is the turn's ``text`` blocks joined (reasoning left out). The agent's system prompt
    is not recorded."""
    data = json.loads(path.read_text(encoding="utf-8"))
    ctx: list = []
    completions, contexts, tools = [], [], 0
    for m in data["trajectory"]:
        blocks = m["content"]
        if m["role"] == "assistant":
            completions.append("".join(b["text"] for b in blocks if "text" in b))
            contexts.append(list(ctx))
            tools += sum(1 for b in blocks if "toolUse" in b)
            ctx.append("assistant")
        elif blocks and all("toolResult" in b for b in blocks):
            ctx.append("tool")
        else:
            ctx.append(m["role"])
    return _result("JavaMigrationAgent (Strands) migration trajectory JSON", 1 if completions else 0, completions,
                   contexts, tools)


def llm_analysis_experiment_results(path: Path) -> dict:
    """LLM-analysis experiment result JSON (peetery/LLM-analysis, ``automation/prompts_results/<strategy>/<context>/
    <model>/experiment_results.json``, written by ``ExperimentRunner.save_experiment_results``: ``{model, strategy,
    context_type, timestamp, response_time, test_file, raw_results}``; the prompts were sent to the ChatGPT web UI by
    a Selenium client in a new chat per experiment and the replies scraped from the page). Chain-of-thought layout
    (``raw_results.responses``: three ``{step, prompt, response, response_time}`` sent one after another in the same
    chat, plus ``final_response``, a copy of the last reply): one conversation, one call per step, each step's
    context the earlier prompts and replies and its own prompt; ``final_response`` is not a call. Simple layout
    (``raw_results: {response, response_time, strategy, context_type, prompt}``): one conversation, one call with
    the prompt as its context. No system prompt, no tool calls (none recorded)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    raw = data["raw_results"]
    steps = raw["responses"] if "responses" in raw else [raw]
    ctx: list = []
    completions, contexts = [], []
    for step in steps:
        ctx.append("user")
        completions.append(step["response"])
        contexts.append(list(ctx))
        ctx.append("assistant")
    return _result("LLM-analysis test-generation experiment result JSON", 1 if completions else 0, completions,
                   contexts, 0)


def count(path: Path) -> dict:
    if path.name.startswith("JavaMigration__"):
        out = javamigration_strands_trajectory(path)
    elif path.name.startswith("LLM-analysis__"):
        out = llm_analysis_experiment_results(path)
    else:
        out = bemo_discord_conversations(path)
    return {"file": path.name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
