"""Hand counts of the fifty-eighth held-out set (benchmarks/data/heldout_formats_58/files), computed from the raw
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
- a role-tagged message list a tool saved (AutoChip's conversation log and per-response log) counts each assistant
  message as one call whose context is the messages before it, also where the tool saved as that assistant message
  only the Verilog it parsed out of the reply: AutoChip keeps exactly that parsed code as the model's turn and sends it
  back in later contexts, so it is the recorded turn of the conversation, not an extracted score; the summary AutoChip
  appends after the conversation ("Time to Generate", "Best response module" repeating an earlier reply) is tool
  output, not a message and not a call;
- a conversation-restart the tool records (LLM4DV's ``<<<<< RESET >>>>>`` and a new ``Dialog index`` / ``Dialog #``)
  clears the model's context (the generator is reset): each dialog is its own conversation, and a dialog opened by a
  reset right before the stop, holding no call, is no conversation; inside a dialog the tool keeps only a selection
  of earlier turns in later contexts (its "Newest" / "Best3" / "Keep" memory strategies), and the dialog is still
  one conversation;
- in a multi-agent pipeline (MAGE's testbench generator, RTL generator and simulation judge, each with its own system
  prompt), a call whose context holds another agent's output only as text inside a user message does not continue
  that agent's conversation: each agent's thread is its own conversation; a call whose context holds an earlier
  call's reply as an assistant message continues that call's conversation, also where the tool drops its fixed
  output-format instruction from the end of the history and appends it again after the new messages;
- a reply the tool then judged gibberish, or whose parsed code failed to compile, is a call all the same (it is
  recorded with its context);
- commands the harness ran itself and logged beside the calls (iverilog compile and simulation, coverage collection)
  are not tool calls: the model emitted no structured call; no reply in this set holds a tool call;
- a system prompt the tool logged once at the head of the log (LLM4DV's system record and info row) is kept by the
  model wrapper beside its message memory and heads the context of every call, in every dialog.
Context roles: as recorded (``system`` / ``user`` / ``assistant``; MAGE's ``MessageRole`` names lowercased).

Run: ``python benchmarks/data/heldout_formats_58/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


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


_AC_ROLE = re.compile(r"^(system|user|assistant): ", re.M)


def autochip_conversation_log(path: Path) -> dict:
    """AutoChip conversation log (``log.txt`` at the top of a problem's output directory, written by
    ``Conversation.add_message`` in ``autochip_scripts/conversation.py``: each message appended as ``<role>: <content>``
    with its content's own newlines; then ``auto_create_verilog.py``'s summary: ``Time to Generate: ...``, ``Best
    ranked response ...``, ``Rank of best response ...``, ``Best response module:`` and the module again). One file is
    one run of one problem: one conversation. Each ``assistant:`` message is one call (one candidate per iteration
    here, ``can1``), its text the Verilog AutoChip parsed out of the reply and kept as the model's turn; ``system:`` and
    ``user:`` (the design prompt, then the iverilog feedback) are input. The summary after ``Time to Generate`` is not
    a message. No tool calls."""
    text = path.read_text(encoding="utf-8")
    body = text.split("\nTime to Generate: ", 1)[0]
    t = _Thread()
    marks = list(_AC_ROLE.finditer(body))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(body)
        content = body[m.end():end]
        if m.group(1) == "assistant":
            t.out(content)
        else:
            t.inp(m.group(1))
    return _merge("AutoChip conversation log (role: content text)", [t])


def autochip_response_log(path: Path) -> dict:
    """AutoChip per-response log (``iter<N>/response<M>/log.txt``, written by ``verilog_loop`` in
    ``auto_create_verilog.py``: the context sent, one ``str(dict)`` line per message ``{'role': ..., 'content': ...}``,
    then the reply as ``{'assistant': '<reply>'}`` with the reply's raw text (real newlines, unescaped quotes, so not a
    Python literal), then `` Iteration rank: <rank>``). One file: one conversation. The context lines are read with
    ``ast.literal_eval``; each ``assistant`` message among them is an earlier call (here iteration 0's turn: the Verilog
    AutoChip parsed out of that reply, its context the two messages before it), the final ``{'assistant': ...}`` the
    new call (iteration 1's full reply, its context the four messages before it): 2 calls. No tool calls."""
    text = path.read_text(encoding="utf-8")
    head, _, rest = text.partition("\n{'assistant': '")
    reply = rest.rsplit("\n\n Iteration rank: ", 1)[0]
    reply = reply[:-2] if reply.endswith("'}") else reply
    t = _Thread()
    for line in head.splitlines():
        if not line.strip():
            continue
        msg = ast.literal_eval(line)
        if msg["role"] == "assistant":
            t.out(msg["content"])
        else:
            t.inp(msg["role"])
    t.out(reply)
    return _merge("AutoChip per-response log (dict lines + raw reply)", [t])


_LLM4DV_REC = re.compile(
    r"^Dialog index: (\d+)\nMessage index: \d+\nTotal msg cnt: \d+\n(?:Token counts: \d+\n)?Role: (\w+)\nContent: ",
    re.M)
_LLM4DV_END = re.compile(r"^(?:Dialog index: |Coverage rate: |Stop: |<<<<< RESET >>>>>)", re.M)


def llm4dv_txt_log(path: Path) -> dict:
    """LLM4DV TXT log (``loggers/logger_txt.py``'s ``TXTLogger``: an info head ``Prompter / Generator / Temperature /
    Top_p / Extractor``; then records ``Dialog index / Message index / Total msg cnt / [Token counts] / Role /
    Content``, the content running until the next record; ``Coverage rate`` / ``Coverage plan`` lines after each
    reply, ``<<<<< RESET >>>>>`` where the agent restarts the dialog, ``Stop: <reason>`` at the end). Each ``Role:
    assistant`` record is one call, its context the system record (logged once, in dialog 1, and kept by the generator
    for every dialog) and the dialog's user records; each distinct ``Dialog index`` holding a call is one
    conversation. Coverage lines are the harness's, not calls. No tool calls."""
    text = path.read_text(encoding="utf-8")
    recs = list(_LLM4DV_REC.finditer(text))
    system = any(m.group(2) == "system" for m in recs)
    threads: dict[str, _Thread] = {}
    for m in recs:
        end = _LLM4DV_END.search(text, m.end())
        content = text[m.end():end.start() if end else len(text)]
        dialog, role = m.group(1), m.group(2)
        if role == "system":
            continue
        t = threads.setdefault(dialog, _Thread(["system"] if system else []))
        if role == "assistant":
            t.out(content.rstrip("\n"))
        else:
            t.inp(role)
    return _merge("LLM4DV TXT log", list(threads.values()))


def llm4dv_csv_log(path: Path) -> dict:
    """LLM4DV CSV log (``loggers/logger_csv.py``'s ``CSVLogger``: a first row of run info ``Model, <model>, SYSTEM,
    <system prompt>, temperature, ...``, a header row ``Total Message#, Dialog #, Message #, Total Token Cnt, USER,
    Input Token Cnt, ASSISTANT, Output Token Cnt, Action, Coverage Rate, Coverage Plan``, then one row per exchange, the
    USER and ASSISTANT cells wrapped by the logger in an extra pair of ``"``; ``Action`` ``reset`` on a dialog's last
    row, the stop reason on the run's last row; CRLF row ends). Each row is one call (context: the system prompt,
    kept by the generator for every dialog, and the dialog's USER prompts up to it; completion: the ASSISTANT cell
    without the logger's wrapping quotes); each distinct ``Dialog #`` is one conversation. No tool calls."""
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    system = len(rows[0]) > 3 and rows[0][2] == "SYSTEM" and bool(rows[0][3])
    header = rows[1]
    threads: dict[str, _Thread] = {}
    for row in rows[2:]:
        rec = dict(zip(header, row))
        t = threads.setdefault(rec["Dialog #"], _Thread(["system"] if system else []))
        reply = rec["ASSISTANT"]
        reply = reply[1:-1] if len(reply) >= 2 and reply[0] == reply[-1] == '"' else reply
        t.inp("user")
        t.out(reply)
    return _merge("LLM4DV CSV log", list(threads.values()))


_MAGE_REC = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) - ([\w.]+) - (\w+)\] ", re.M)
_MAGE_CALL = re.compile(r"^([A-Za-z ]+) input message: \[ChatMessage\(")
_MAGE_ROLE = re.compile(r"ChatMessage\(role=<MessageRole\.(\w+): ")


def mage_total_log(path: Path) -> dict:
    """MAGE ``mage_rtl_total.log`` (Python ``logging`` records ``[<time> - <logger> - <level>] <message>`` of all of
    MAGE's modules, a message running until the next record). A call is a ``<Agent> input message: [ChatMessage(...),
    ...]`` record (``TB generator`` / ``RTL generator`` / ``Sim judge``, each agent's ``generate``; the context is the
    Python repr of the LlamaIndex ``ChatMessage`` list), followed by that agent's ``Token count: ...`` record and then
    the reply record (the reply's raw text, a JSON object). Each agent's first call opens its own conversation (own
    system prompt; another agent's output appears only inside a user message); a later call whose context holds an
    earlier call's reply as an ``ASSISTANT`` ChatMessage (the RTL generator's retry after a failed syntax check)
    continues that call's conversation. ``mage.agent`` / ``bash_tools`` / ``sim_reviewer`` / ``token_counter`` records
    (the harness's iverilog runs and summaries) are not calls. No tool calls."""
    text = path.read_text(encoding="utf-8")
    marks = list(_MAGE_REC.finditer(text))
    recs = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        recs.append((m.group(2), text[m.end():end].rstrip("\n")))
    calls = []  # (logger, roles, context text, reply)
    for i, (logger, msg) in enumerate(recs):
        if not _MAGE_CALL.match(msg):
            continue
        j = next(k for k in range(i + 1, len(recs)) if recs[k][0] == logger and recs[k][1].startswith("Token count:"))
        reply = recs[j + 1][1] if j + 1 < len(recs) and recs[j + 1][0] == logger else ""
        calls.append((logger, [r.lower() for r in _MAGE_ROLE.findall(msg)], msg, reply))
    threads: list = []
    owner: list = []  # thread index of each call
    for logger, roles, msg, reply in calls:
        prior = [n for n, c in enumerate(calls[:len(owner)]) if c[0] == logger and "assistant" in roles
                 and repr(c[3])[1:-1] in msg]
        if prior:
            t = threads[owner[prior[-1]]]
            owner.append(owner[prior[-1]])
        else:
            t = _Thread()
            threads.append(t)
            owner.append(len(threads) - 1)
        t.ctx = list(roles)  # the context as recorded (the agent rebuilds its message list for every call)
        t._open = False
        t.out(reply)
    return _merge("MAGE mage_rtl_total.log (logging records, ChatMessage reprs)", threads)


COUNTERS = {
    "autochip-conversation-log": autochip_conversation_log,
    "autochip-response-log": autochip_response_log,
    "llm4dv-txt-log": llm4dv_txt_log,
    "llm4dv-csv-log": llm4dv_csv_log,
    "mage-rtl-total-log": mage_total_log,
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
