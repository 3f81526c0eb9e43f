"""Hand counts of the eighty-second held-out set (benchmarks/data/heldout_formats_82/files), computed from the raw
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
- all four files are test-result files that the Heurist Agent Framework's mesh-agent test scripts wrote with
  ``yaml.dump`` (``mesh/tests/<agent>.py`` runs ``agent.handle_message(input)`` for each test case and dumps the inputs
  with the returned ``{response, data}``); the layouts differ by the script version that wrote them (a
  ``metadata`` / ``results`` wrapper; test names at the top level with ``input`` / ``output``; ``input_<name>`` and
  ``output_<name>`` as separate top-level keys; a single top-level ``input`` / ``output``);
- a test case whose input is a natural-language ``query`` and whose output ``response`` is a non-empty string records
  one LLM call: its completion is the ``response`` text and its recorded context is the ``query`` (``user``) followed,
  where ``output.data`` is not empty, by the tool result the reply was written from (``tool``); the agent's system
  prompt is not recorded. In ``MeshAgent.handle_message`` the reply is either the first model call's text (no tool
  chosen, ``data`` empty) or the text of a second call made after the agent ran the tool the first call chose; in the
  second case the first call's own reply (the tool call) is not recorded (neither tool name nor arguments, only the
  tool's result), so that call is mentioned, not recorded, and neither it nor its tool call is counted;
- a test case whose input names a ``tool`` with ``tool_arguments`` (the test harness calls the tool directly), or a
  query with ``raw_data_only: true``, returns ``response: ''``: no model text is recorded, no call; a test case whose
  output is only an ``error`` (the harness could not build the request) holds no call;
- a reply that explains a tool's error (an HTTP 400 from the data API) is a call like any other;
- each test case is run on its own (a fresh ``handle_message`` with no history): each call is its own conversation;
- the ``input.tool`` / ``tool_arguments`` of direct-tool test cases are issued by the test script, not by a model:
  they are not tool calls; these files hold no recorded tool call;
- ``metadata`` (agent name, test file, timestamp, pass / fail counts), ``description`` and ``status`` fields are the
  test script's, not context; a YAML anchor / alias (``&id001`` / ``*id001``) repeats the same ``data`` object.
Context roles: as recorded (``user`` for the query, ``tool`` for a non-empty ``data`` tool result).

The files are YAML; the standard library has no YAML reader, so ``_Yaml`` below reads the subset these files use
(block mappings, indentless and indented block sequences, plain / single-quoted / double-quoted scalars over several
lines, empty flow collections ``{}`` / ``[]``, anchors and aliases). Scalars are kept as strings (``''`` is the empty
string).

Run: ``python benchmarks/data/heldout_formats_82/hand_count.py`` (one JSON line per file).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FILES = Path(__file__).resolve().parent / "files"
_KEY = re.compile(r"^(?P<key>[^\s'\"#&*!|>%@`{\[-][^:]*?|'(?:[^']|'')*'|\"(?:[^\"\\]|\\.)*\"):(?: (?P<rest>.*))?$")
_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r",
            "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028",
            "P": "\u2029"}


class _Yaml:
    """A reader for the YAML subset written by PyYAML's ``yaml.dump`` in block style."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.anchors: dict = {}

    @staticmethod
    def _indent(line: str) -> int:
        return len(line) - len(line.lstrip(" "))

    def _skip(self, i: int) -> int:
        while i < len(self.lines) and not self.lines[i].strip():
            i += 1
        return i

    def parse(self):
        node, _ = self._block(self._skip(0), 0)
        return node

    def _block(self, i: int, indent: int):
        """The node whose first line is ``i`` at column ``indent`` (a mapping or a sequence)."""
        if self.lines[i][indent:].startswith("- ") or self.lines[i][indent:] == "-":
            return self._sequence(i, indent)
        return self._mapping(i, indent)

    def _mapping(self, i: int, indent: int):
        out: dict = {}
        while i < len(self.lines):
            i = self._skip(i)
            if i >= len(self.lines) or self._indent(self.lines[i]) != indent:
                break
            body = self.lines[i][indent:]
            if body.startswith("- "):
                break
            m = _KEY.match(body)
            if not m:
                raise ValueError(f"line {i + 1}: not a mapping entry: {body[:60]!r}")
            key = self._key(m.group("key"))
            out[key], i = self._value(m.group("rest") or "", i, indent, key_col=indent)
        return out, i

    def _sequence(self, i: int, indent: int):
        out: list = []
        while i < len(self.lines):
            i = self._skip(i)
            if i >= len(self.lines) or self._indent(self.lines[i]) != indent:
                break
            body = self.lines[i][indent:]
            if not (body.startswith("- ") or body == "-"):
                break
            rest = body[2:]
            if _KEY.match(rest):
                # a mapping inside the item: its keys sit at the column after "- "
                self.lines[i] = " " * (indent + 2) + rest
                item, i = self._mapping(i, indent + 2)
            else:
                item, i = self._value(rest, i, indent, key_col=indent)
            out.append(item)
        return out, i

    def _value(self, rest: str, i: int, indent: int, key_col: int):
        """The value after ``key:`` (or ``-``) on line ``i``; returns it and the index of the next line."""
        anchor = None
        if rest.startswith("&"):
            anchor, _, rest = rest.partition(" ")
            anchor = anchor[1:]
        if rest.startswith("*"):
            return self.anchors[rest[1:].strip()], i + 1
        if rest == "":
            j = self._skip(i + 1)
            if j < len(self.lines) and (self._indent(self.lines[j]) > key_col or (
                    self._indent(self.lines[j]) == key_col and self.lines[j][key_col:].startswith("- "))):
                node, j = self._block(j, self._indent(self.lines[j]))
            else:
                node, j = None, i + 1
        elif rest in ("{}", "[]"):
            node, j = ({} if rest == "{}" else []), i + 1
        elif rest[0] in "'\"":
            node, j = self._quoted(rest, i)
        else:
            node, j = self._plain(rest, i, key_col)
        if anchor:
            self.anchors[anchor] = node
        return node, j

    def _plain(self, rest: str, i: int, key_col: int):
        parts = [rest.strip()]
        j = i + 1
        while j < len(self.lines) and (not self.lines[j].strip() or self._indent(self.lines[j]) > key_col):
            parts.append(self.lines[j].strip())
            j += 1
        while parts and parts[-1] == "":
            parts.pop()
            j -= 1
        return self._fold(parts), j

    @staticmethod
    def _fold(parts: list) -> str:
        """Line folding: a break between two non-empty lines is a space, each empty line a newline."""
        out, pending = parts[0], 0
        for p in parts[1:]:
            if p == "":
                pending += 1
                continue
            out += ("\n" * pending if pending else " ") + p
            pending = 0
        return out + "\n" * pending

    def _quoted(self, rest: str, i: int):
        quote, text, j = rest[0], rest[1:], i
        chunks: list = []  # (text of one source line, ends with an escaped line break)
        while True:
            end = self._closing(text, quote)
            if end is not None:
                chunks.append((text[:end], False))
                break
            j += 1
            if text.endswith("\\") and quote == '"' and (len(text) - len(text.rstrip("\\"))) % 2 == 1:
                chunks.append((text[:-1], True))
            else:
                chunks.append((text, False))
            text = self.lines[j].lstrip(" ")
        out, pending, joined = "", 0, True
        for n, (chunk, escaped_break) in enumerate(chunks):
            body = chunk if n == 0 else chunk.lstrip(" \t")
            if n < len(chunks) - 1 and not escaped_break:
                body = body.rstrip(" \t")
            if n > 0 and body == "" and not escaped_break and n < len(chunks) - 1:
                pending += 1
                continue
            if n > 0 and not joined:
                out += "\n" * pending if pending else " "
            pending = 0
            out += self._unescape(body) if quote == '"' else body.replace("''", "'")
            joined = escaped_break
        return out, j + 1

    @staticmethod
    def _closing(text: str, quote: str):
        k = 0
        while k < len(text):
            c = text[k]
            if quote == "'" and c == "'":
                if text[k + 1:k + 2] == "'":
                    k += 2
                    continue
                return k
            if quote == '"':
                if c == "\\":
                    k += 2
                    continue
                if c == '"':
                    return k
            k += 1
        return None

    @staticmethod
    def _unescape(s: str) -> str:
        out, k = [], 0
        while k < len(s):
            c = s[k]
            if c != "\\":
                out.append(c)
                k += 1
                continue
            e = s[k + 1]
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
                k += 2
            elif e in "xuU":
                width = {"x": 2, "u": 4, "U": 8}[e]
                out.append(chr(int(s[k + 2:k + 2 + width], 16)))
                k += 2 + width
            else:
                raise ValueError(f"unknown escape \\{e}")
        return "".join(out)

    def _key(self, raw: str) -> str:
        if raw.startswith("'"):
            return raw[1:-1].replace("''", "'")
        if raw.startswith('"'):
            return self._unescape(raw[1:-1])
        return raw


def _load(path: Path):
    return _Yaml(path.read_text(encoding="utf-8")).parse()


def _result(fmt: str, convs: int, completions: list, contexts: list, tools: int) -> dict:
    return {"format": fmt, "readable": bool(completions), "conversations": convs, "calls": len(completions),
            "tool_calls": tools, "completions": completions, "contexts": contexts}


def _cases(pairs: list) -> tuple[list, list]:
    """``pairs``: (input, output) of each test case in file order. A case with a ``query`` input and a non-empty
    ``response`` is one single-shot call (context: the query, then the tool result where ``data`` is not empty)."""
    completions, contexts = [], []
    for inp, out in pairs:
        if not isinstance(inp, dict) or not isinstance(out, dict) or "query" not in inp:
            continue
        reply = out.get("response") or ""
        if not reply:
            continue
        completions.append(reply)
        contexts.append(["user", "tool"] if out.get("data") else ["user"])
    return completions, contexts


def heurist_results_wrapper(path: Path) -> dict:
    """Heurist mesh-agent test results written by ``mesh/tests/_test_agents.py`` (``AgentTestBase.save_results``):
    ``metadata: {agent, test_file, timestamp, total_tests, passed, failed}`` and ``results: {TEST_NAME: {input,
    output: {response, data}, description, status}}``. Each test case with a ``query`` and a non-empty ``response``
    is one single-shot call, its own conversation. No tool calls recorded."""
    doc = _load(path)
    completions, contexts = _cases([(c.get("input"), c.get("output")) for c in doc["results"].values()])
    return _result("Heurist mesh-agent test results YAML (metadata / results)", len(completions), completions,
                   contexts, 0)


def heurist_named_cases(path: Path) -> dict:
    """Heurist mesh-agent test results written by an earlier per-agent test script (the test-case dict dumped after
    ``output`` was added to each case): ``{TEST_NAME: {input, output: {response, data}}}`` at the top level, no
    metadata; ``data`` objects shared by two cases are written once with an anchor and then as an alias. Counted as
    ``heurist_results_wrapper``."""
    doc = _load(path)
    completions, contexts = _cases([(c.get("input"), c.get("output")) for c in doc.values()])
    return _result("Heurist mesh-agent test results YAML (named cases)", len(completions), completions, contexts, 0)


def heurist_input_output_keys(path: Path) -> dict:
    """Heurist mesh-agent test results written by an earlier per-agent test script that dumps one top-level key per
    input and per output: ``input_NAME: {query | tool, tool_arguments, raw_data_only}`` followed by ``output_NAME:
    {response, data}`` (or ``{error}`` where the script could not build the request). The pair with the same NAME is
    one test case; counted as ``heurist_results_wrapper``."""
    doc = _load(path)
    pairs = [(v, doc.get("output_" + k[len("input_"):])) for k, v in doc.items() if k.startswith("input_")]
    completions, contexts = _cases(pairs)
    return _result("Heurist mesh-agent test results YAML (input_ / output_ keys)", len(completions), completions,
                   contexts, 0)


def heurist_single_case(path: Path) -> dict:
    """Heurist mesh-agent example written by the earliest per-agent test script: one test case, ``input: {query}``
    and ``output: {response, data}`` at the top level. Counted as ``heurist_results_wrapper`` (one call here)."""
    doc = _load(path)
    completions, contexts = _cases([(doc.get("input"), doc.get("output"))])
    return _result("Heurist mesh-agent example YAML (single input / output)", len(completions), completions,
                   contexts, 0)


def count(path: Path) -> dict:
    name = path.name
    if "funding_rate" in name:
        out = heurist_results_wrapper(path)
    elif "cookie_project_info" in name:
        out = heurist_named_cases(path)
    elif "tokenmetrics" in name:
        out = heurist_input_output_keys(path)
    else:
        out = heurist_single_case(path)
    return {"file": name, **out}


def main() -> int:
    for p in sorted(FILES.iterdir()):
        print(json.dumps(count(p), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
