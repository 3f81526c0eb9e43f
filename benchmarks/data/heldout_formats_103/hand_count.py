"""Hand counts of the hundred-and-third held-out set (benchmarks/data/heldout_formats_103/files), computed from the
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
- a Markdown conversation whose messages are delimited by HTML comments (a line that is exactly
  ``<!--msg role=ROLE -->`` or ``<!--msg role=ROLE name=NAME -->``) holds one message per such line: its role is
  ROLE, its content the text up to the next such line (the blank lines the writer puts between messages are not
  content); a line of that shape inside a message's text would start a new message (no file of this set has one:
  tool output is stored as one escaped Python tuple line, so the ``<!--msg`` example in a file the agent read is not
  at a line start);
- the messages of such a file are one conversation (one agent session: each model turn's context is every message
  before it);
- one LLM call is a maximal run of ``assistant`` messages with no other message between them (gpt-oss / Harmony: one
  completion writes its ``analysis``-channel reasoning message and then its ``final`` answer or its tool-call
  message; the Markdown writer keeps neither the channel nor the recipient); all but the last message of the run are
  the reply's reasoning (shared rule), the last is the answer or the tool call;
- a run followed by a ``tool`` message ends with a tool call: its last message (a JSON arguments object such as
  ``{"command":"ls -R ."}``) is one tool call to the function the ``tool`` message names
  (``functions.execute_zsh_commands``), and the reply has no text besides the call (completion ``""``); a call
  whose arguments the tool could not parse (the tool answers ``Error calling functions.execute_zsh_commands:
  Expecting ',' delimiter ...``) is still a tool call the model emitted; a run followed by a ``user`` message or by
  the end of the file ends with the final answer, whose text is the completion;
- the ``system`` message (a JSON list holding the Harmony system content: identity, reasoning effort, dates,
  channel configuration) and the ``developer`` message (a JSON list holding the instructions and the tool
  namespaces) are context, ``system`` and ``developer``;
- ids, timestamps, durations, token counts, model names, costs and SDK / project metadata are metadata, not context.
Context roles: as recorded (``system``, ``developer``, ``user``, ``assistant`` for each earlier message of the model,
reasoning included, ``tool`` for a tool result).

Run: ``python benchmarks/data/heldout_formats_103/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_MSG = re.compile(r"^<!--msg role=(\w+)(?: name=(\S+))? -->$", re.M)


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _md_messages(text: str) -> list:
    """The ``(role, name, content)`` messages of a ``<!--msg role=... -->`` Markdown conversation."""
    heads = list(_MSG.finditer(text))
    out = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        out.append((m.group(1), m.group(2), text[m.end() + 1:end].rstrip("\n")))
    return out


def oss_agent_markdown(path: Path) -> dict:
    """oss_agent (timstevens1/oss_agent, a gpt-oss-20b general-purpose agent running locally with MLX and
    openai_harmony) conversation Markdown (``convo.md``: the agent's Harmony message list written with its
    ``conversation_to_markdown`` helper, described in the repository's ``utils.py``: one ``<!--msg role=ROLE
    [name=NAME] -->`` line per message, then the message text). Roles: ``system`` and ``developer`` (JSON lists of
    the Harmony system / developer content), ``user``, ``assistant`` (channel and recipient not kept), ``tool`` with
    ``name=functions.execute_zsh_commands`` (the shell tool's ``(stdout, stderr)`` tuple or an error text). One
    session: one conversation. Each run of adjacent ``assistant`` messages is one call (reasoning, then the final
    answer or the tool call); a run followed by a ``tool`` message emitted one tool call (its last message, the JSON
    arguments) and no text; otherwise the run's last message is the completion."""
    msgs = _md_messages(path.read_text(encoding="utf-8"))
    completions, contexts, tools = [], [], 0
    i = 0
    while i < len(msgs):
        if msgs[i][0] != "assistant":
            i += 1
            continue
        j = i
        while j < len(msgs) and msgs[j][0] == "assistant":
            j += 1
        contexts.append([m[0] for m in msgs[:i]])
        if j < len(msgs) and msgs[j][0] == "tool":
            tools += 1
            completions.append("")
        else:
            completions.append(msgs[j - 1][2])
        i = j
    return _result("oss_agent Harmony conversation Markdown (<!--msg role=... --> blocks)", 1 if completions else 0,
                   completions, contexts, tools)


def count(path: Path) -> dict:
    name = path.name
    if name.startswith("oss_agent__"):
        out = oss_agent_markdown(path)
    else:
        raise SystemExit(f"no counter for {name}")
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
