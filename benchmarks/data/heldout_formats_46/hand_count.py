"""Hand counts of the forty-sixth held-out set (benchmarks/data/heldout_formats_46/files), computed from the raw files
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
Rules made explicit for this set:
- a trace's separate copies of the tool calls already recorded in the chat log (an execution event per tool call)
  are not further tool calls, and its per-call token-usage entries are ledger entries, not calls;
- a provider's own copy of a reply's parts kept beside the reply (its "native" content: part types and signatures) is
  not more output;
- a harness's answer field that repeats the last reply's text, or that holds the assistant's own error speech where
  the run ended without a final reply, is not a further call.
Context roles: a message made only of tool results is written ``tool``; a system prompt kept beside the messages
(not in the list) is written ``system`` at the head of every context; a system prompt the harness built but did not
save is not part of the recorded context.

The Home Assistant reports are YAML; the standard library has no YAML reader, so ``_yaml`` below reads the block
subset their writer (PyYAML's dumper) produces: block mappings and (indentless) sequences, plain, single- and
double-quoted scalars over several lines, literal block scalars, ``[]`` / ``{}``; every scalar is kept as text
(``null`` and ``~`` as None).

Run: ``python benchmarks/data/heldout_formats_46/hand_count.py`` (one JSON line per file).
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


# --- a reader for the YAML block subset PyYAML's dumper writes ------------------------------------------------------

_KEY = re.compile(r"""^( *)((?:'(?:[^']|'')*')|(?:"(?:[^"\\]|\\.)*")"""  # a quoted key or
                  r"""|(?:[^\s'"#\-?:][^:]*?)|(?:-[^\s:][^:]*?)):(?: |$)""")  # a plain one, then ": " or a final ":"
_ESC = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r",
        "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028",
        "P": "\u2029"}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blank(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def _fold(parts: list) -> str:
    """Flow folding: lines joined by one space, each empty line a newline."""
    out, pending = parts[0], 0
    for p in parts[1:]:
        if p == "":
            pending += 1
            continue
        out += ("\n" * pending) if pending else " "
        out += p
        pending = 0
    return out + "\n" * pending if pending else out


class _Yaml:
    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        if self.lines and self.lines[0].strip() == "---":
            self.lines[0] = ""

    def _next(self, i: int) -> int:
        while i < len(self.lines) and _blank(self.lines[i]):
            i += 1
        return i

    def load(self):
        i = self._next(0)
        value, _ = self._block(i, _indent(self.lines[i]))
        return value

    def _is_item(self, i: int, ind: int) -> bool:
        s = self.lines[i]
        return _indent(s) == ind and (s[ind:].startswith("- ") or s[ind:] == "-")

    def _block(self, i: int, ind: int):
        if self._is_item(i, ind):
            return self._seq(i, ind)
        if _KEY.match(self.lines[i]):
            return self._map(i, ind)
        return self._scalar(self.lines[i][ind:], i, ind - 1)

    def _seq(self, i: int, ind: int):
        items = []
        while i < len(self.lines) and self._is_item(i, ind):
            s = self.lines[i]
            if s[ind:] == "-":
                j = self._next(i + 1)
                value, i = self._block(j, _indent(self.lines[j]))
            else:
                self.lines[i] = " " * (ind + 2) + s[ind + 2:]  # the item's content, re-indented past the dash
                value, i = self._block(i, ind + 2)
            items.append(value)
            i = self._next(i)
        return items, i

    def _map(self, i: int, ind: int):
        out = {}
        while i < len(self.lines):
            s = self.lines[i]
            m = _KEY.match(s)
            if _indent(s) != ind or not m:
                break
            key = self._unquote_key(m.group(2).strip())
            rest = s[m.end():].strip()
            if rest and not rest.startswith("#"):
                value, i = self._scalar(rest, i, ind)
            else:
                j = self._next(i + 1)
                if j < len(self.lines) and _indent(self.lines[j]) > ind:
                    value, i = self._block(j, _indent(self.lines[j]))
                elif j < len(self.lines) and self._is_item(j, ind):
                    value, i = self._seq(j, ind)
                else:
                    value, i = None, i + 1
            out[key] = value
            i = self._next(i)
        return out, i

    @staticmethod
    def _unquote_key(k: str) -> str:
        if k.startswith("'"):
            return k[1:-1].replace("''", "'")
        if k.startswith('"'):
            return json.loads(k)
        return k

    def _scalar(self, rest: str, i: int, ind: int):
        """The scalar that starts with ``rest`` on line ``i`` (a value of a key at indent ``ind``): returns the value
        and the index of the line after it."""
        if rest in ("[]", "{}"):
            return ([] if rest == "[]" else {}), i + 1
        if rest[0] in "|>":
            return self._literal(rest, i, ind)
        if rest[0] == "'":
            return self._single(rest, i)
        if rest[0] == '"':
            return self._double(rest, i)
        parts, j = [rest.rstrip()], i + 1
        while j < len(self.lines) and (not self.lines[j].strip() or _indent(self.lines[j]) > ind):
            if not self.lines[j].strip() and (self._next(j) >= len(self.lines)
                                               or _indent(self.lines[self._next(j)]) <= ind):
                break
            parts.append(self.lines[j].strip())
            j += 1
        text = _fold(parts)
        return (None if text in ("null", "~") else text), j

    def _literal(self, head: str, i: int, ind: int):
        """A ``|`` / ``>`` block scalar whose header ``head`` ends line ``i`` (a value of a key at indent ``ind``)."""
        chomp = "-" if "-" in head else "+" if "+" in head else ""
        digits = [c for c in head[1:] if c.isdigit()]
        block_ind = max(ind, 0) + int(digits[0]) if digits else None
        j, body = i + 1, []
        while j < len(self.lines):
            s = self.lines[j]
            if not s.strip():
                body.append("")
                j += 1
                continue
            if block_ind is None:
                block_ind = _indent(s)
            if _indent(s) < block_ind or _indent(s) <= ind:
                break
            body.append(s[block_ind:])
            j += 1
        trailing = 0
        while body and body[-1] == "":
            body.pop()
            trailing += 1
        text = _fold(body) if head[0] == ">" and body else "\n".join(body)
        if chomp == "-":
            return text, j
        if chomp == "+":
            return text + "\n" * (trailing + (1 if body else 0)), j
        return (text + "\n" if body else ""), j

    def _gather(self, rest: str, i: int, quote: str):
        """The raw lines of a quoted scalar that opens on line ``i``."""
        raw, j = [rest], i
        while not self._closed(" ".join(raw), quote):
            j += 1
            raw.append(self.lines[j])
        return raw, j + 1

    @staticmethod
    def _closed(text: str, quote: str) -> bool:
        k = 1
        while k < len(text):
            c = text[k]
            if quote == '"' and c == "\\":
                k += 2
                continue
            if c == quote:
                if quote == "'" and k + 1 < len(text) and text[k + 1] == "'":
                    k += 2
                    continue
                return True
            k += 1
        return False

    def _single(self, rest: str, i: int):
        raw, j = self._gather(rest, i, "'")
        parts = [raw[0][1:]] + [r.strip() for r in raw[1:]]
        parts = [p.rstrip() if n < len(parts) - 1 else p for n, p in enumerate(parts)]
        text = _fold(parts)
        end = text.rfind("'")
        return text[:end].replace("''", "'"), j

    def _double(self, rest: str, i: int):
        raw, j = self._gather(rest, i, '"')
        lines = [raw[0][1:]] + raw[1:]
        text, breaks, joined = "", 0, False
        for n, line in enumerate(lines):
            if n > 0:
                line = line.lstrip(" \t")
            if n < len(lines) - 1 and not line.endswith("\\ "):
                line = line.rstrip(" \t")
            buf, k, escaped_break, closed = "", 0, False, False
            while k < len(line):
                c = line[k]
                if c == "\\":
                    if k + 1 == len(line):  # an escaped line break: no space, the next line's indentation dropped
                        escaped_break = True
                        break
                    e = line[k + 1]
                    width = {"x": 2, "u": 4, "U": 8}.get(e)
                    if width:
                        buf += chr(int(line[k + 2:k + 2 + width], 16))
                        k += 2 + width
                    else:
                        buf += _ESC[e]
                        k += 2
                    continue
                if c == '"':
                    closed = True
                    break
                buf += c
                k += 1
            if n == 0 or joined:
                text += buf
            elif buf == "" and not closed:
                breaks += 1
                continue
            else:
                text += ("\n" * breaks) if breaks else " "
                text += buf
                breaks = 0
            joined = escaped_break
            if closed:
                return text, j
        raise ValueError("unterminated double-quoted scalar")


def _yaml(path: Path):
    return _Yaml(path.read_text(encoding="utf-8")).load()


# --- counters --------------------------------------------------------------------------------------------------------

def ha_datasets_report(path: Path) -> dict:
    """home-assistant-datasets report YAML (allenporter/home-assistant-datasets ``reports/<dataset>/<Home Assistant
    version>/<model>/<task_id>.yaml`` for the ``assist``, ``assist-mini``, ``questions`` and ``automations`` datasets,
    written by the project's collect harness for one task run of a Home Assistant conversation agent: ``{uuid, task_id,
    model_id, category, task, response, context: {unexpected_states?, conversation_trace: [{event_type, data,
    timestamp}], duration_ms, tries}}``). The trace is Home Assistant's conversation trace: ``async_process`` (the
    user's text), ``agent_detail`` and ``tool_call`` events. The ``agent_detail`` event whose data holds ``messages``
    (and ``tools``) is the agent's chat log: ``system`` (the prompt as sent), ``user``, ``assistant`` (``content``,
    ``thinking_content``, ``tool_calls: [{tool_name, tool_args, id, external?}]``, ``native``) and ``tool_result``
    messages. One file is one conversation (one chat log; none here holds two). Each run of assistant messages with no
    input between them is one call (none are adjacent here); its ``content`` is the completion (``thinking_content``
    belongs to it; ``native`` is the provider's copy of the reply's parts, not more output), each ``tool_calls`` entry
    a tool call (all client-side here: ``external`` false or absent). ``tool_result`` messages are tool input, one
    ``tool`` role each. The ``tool_call`` events repeat the chat log's tool calls (the trace's execution record) and
    ``agent_detail`` events holding only ``stats`` are per-call token ledger entries: neither is counted. The top-level
    ``response`` is the speech returned to the user: the last reply's text, or Home Assistant's ``Unable to get
    response`` where the run ended without a final reply (here after the agent's limit of ten tool-call rounds); it
    is not a call. A chat log with no assistant message would hold no call (not readable; none in this set)."""
    doc = _yaml(path)
    threads = []
    for event in doc["context"]["conversation_trace"]:
        data = event.get("data") or {}
        if event["event_type"] != "agent_detail" or "messages" not in data:
            continue
        t = _Thread()
        for m in data["messages"]:
            if m["role"] == "assistant":
                t.out((m.get("content") or ""), len(m.get("tool_calls") or []))
            else:
                t.inp("tool" if m["role"] == "tool_result" else m["role"])
        threads.append(t)
    return _merge("home-assistant-datasets report YAML", threads)


COUNTERS = {
    "ha-datasets-report": ha_datasets_report,
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
